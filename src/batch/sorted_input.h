// The input of a keyed operator in batch execution, sorted by key: what lets
// the operator process one key at a time, keeping one key's state, whatever
// the input's size (Flink's sort-based batch input).
//
// The task adds each record of every input as it arrives (a network frame,
// `i64 timestamp | record`, with its key hash, which the record type's
// RecordOps::read_key_hash gives); once every input ended, finish() sorts
// them and the task reads them back: grouped by key group, then by key hash
// (keys whose 64-bit hashes are equal come as one block, which is harmless:
// state and timers are still per key), within a key by timestamp, then by
// input, then in arrival order. Each record comes with the input it arrived
// on, so a two-input operator reads both inputs of a key together.
//
// Sort key: `u16 key group | u64 key hash | u64 timestamp with its sign bit
// flipped | u8 input`, numbers big-endian, so bytewise order is that order.
// Sort value: the frame. The sorting, and spilling to disk beyond the memory
// budget, is ExternalSorter's.
//
// Not thread-safe: the task thread.
#ifndef WEIR_BATCH_SORTED_INPUT_H_
#define WEIR_BATCH_SORTED_INPUT_H_

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "batch/external_sorter.h"

namespace weir::batch {

class SortedInput {
 public:
  SortedInput(ExternalSorter::Options options, int max_parallelism);

  // Adds `frame`, which arrived on input `input` (0..255) and whose key
  // hashes to `key_hash`. A frame shorter than its timestamp, or a spill
  // that failed (its path and cause), is an error.
  absl::Status add(int input, uint64_t key_hash, std::string_view frame);
  // Every input ended: sorts, and positions at the first record.
  absl::Status finish();

  // Reading, after finish(), as ExternalSorter.
  bool valid() const { return sorter_.valid(); }
  int input() const;
  std::string_view frame() const;
  int key_group() const;
  // Whether the current record belongs to the same key block as the
  // previous one (false for the first).
  bool same_key_as_previous() const { return same_key_; }
  void next();
  absl::Status status() const { return sorter_.status(); }

  const ExternalSorter::Stats& stats() const { return sorter_.stats(); }

 private:
  static constexpr size_t kBlockKeySize = 10;  // key group and key hash
  static constexpr size_t kKeySize = 19;       // and timestamp and input
  void read_current();

  ExternalSorter sorter_;
  const int max_parallelism_;
  char previous_[kBlockKeySize] = {};
  bool has_previous_ = false;
  bool same_key_ = false;
};

}  // namespace weir::batch

#endif  // WEIR_BATCH_SORTED_INPUT_H_
