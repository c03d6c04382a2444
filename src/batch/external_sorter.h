// An external merge sort of (key, value) byte strings within a fixed memory
// budget: what a keyed operator of a batch job reads its input through, so
// that it sees one key's records together whatever the input's size.
//
// Records are added, then read back in key order (bytewise, as memcmp
// compares; a shorter key before its extensions). The sort is stable:
// records with equal keys come out in the order they were added, so a
// caller that wants a secondary order (a timestamp) appends it to the key in
// an order-preserving encoding (big-endian, sign bit flipped).
//
// While records are added they are kept in memory, their bytes in blocks and
// an index entry each. When the next record would take the sorter past
// `memory_bytes`, the records held are sorted (by an index entry of 24 bytes
// with the key's first 8 bytes in it, so that most comparisons do not touch
// the records) and written to a run file in
// `spill_directory`, and memory starts over. At finish() the records still in
// memory are sorted too; if nothing was spilled they are read from memory.
// Otherwise the runs are merged: first, while there are more than
// `max_fan_in`, the oldest runs into one (a merge pass), then all of them as
// they are read. Memory: at most `memory_bytes` for the records (index and
// the stable sort's scratch included), plus one `io_buffer_bytes` buffer per
// run being read or written (a buffer grows to hold a record larger than it).
//
// Run file layout (local, never outlives the sorter): records back to back,
// each `varint key length | varint value length | key | value`.
//
// Not thread-safe: one owner (the task thread). Spilled files are removed
// when a merge has read them and at destruction (the directory stays).
#ifndef WEIR_BATCH_EXTERNAL_SORTER_H_
#define WEIR_BATCH_EXTERNAL_SORTER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace weir::batch {

class ExternalSorter {
 public:
  struct Options {
    // Where runs are spilled; created when the first run is. Required.
    std::string spill_directory;
    // Memory for the records held before a run is spilled: their bytes (in
    // blocks of up to 256 KiB), 24 bytes of index and 12 of sort scratch each. A
    // single record larger than this is held alone. Default: 64 MiB.
    int64_t memory_bytes = int64_t{64} << 20;
    // Runs merged at once; more are first merged in passes. At least 2.
    // Default: 64.
    int max_fan_in = 64;
    // Buffer of each run file being written or read. Default: 64 KiB.
    int io_buffer_bytes = 64 << 10;
  };

  struct Stats {
    int64_t records = 0;
    int64_t spilled_runs = 0;       // runs written from memory
    int64_t spilled_bytes = 0;      // bytes written to run files, merge passes included
    int64_t merge_passes = 0;       // merges of runs into a new run before the final merge
  };

  explicit ExternalSorter(Options options);
  ~ExternalSorter();
  ExternalSorter(const ExternalSorter&) = delete;
  ExternalSorter& operator=(const ExternalSorter&) = delete;

  // Adds a record. An error (a run could not be written: the path and the
  // cause) leaves the sorter unusable.
  absl::Status add(std::string_view key, std::string_view value);
  // Ends the input and positions the sorter at the first record.
  absl::Status finish();

  // Reading, after finish(), as a LevelDB iterator: key() and value() of the
  // current record stay valid until next(). An I/O error or a damaged run
  // file ends the iteration (valid() false) with status() saying why.
  bool valid() const;
  std::string_view key() const;
  std::string_view value() const;
  void next();
  absl::Status status() const;

  const Stats& stats() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace weir::batch

#endif  // WEIR_BATCH_EXTERNAL_SORTER_H_
