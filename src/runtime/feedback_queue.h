// What an iteration head read from its feedback channels and has not yet
// processed: framed records (`varint length | bytes`, as in network
// buffers), in memory up to a budget and in a spill file beyond it. The
// head drains its feedback channels into this queue even while its outputs
// are full, so the body of the loop never waits for the head for long and a
// cycle of bounded channels cannot deadlock. Records come out in no
// particular order (an iteration's records have none). Task thread only.
#ifndef WEIR_RUNTIME_FEEDBACK_QUEUE_H_
#define WEIR_RUNTIME_FEEDBACK_QUEUE_H_

#include <cstdint>
#include <cstdio>
#include <deque>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace weir::runtime {

class FeedbackQueue {
 public:
  // Spills to `spill_path` (created when first needed, removed when drained
  // and at destruction) past `memory_bytes` held in memory.
  FeedbackQueue(std::string spill_path, size_t memory_bytes)
      : spill_path_(std::move(spill_path)), memory_bytes_(memory_bytes) {}
  ~FeedbackQueue();
  FeedbackQueue(const FeedbackQueue&) = delete;
  FeedbackQueue& operator=(const FeedbackQueue&) = delete;

  // Adds one record's payload; an I/O error of the spill file names it.
  absl::Status push(std::string_view record);
  bool empty() const { return records_ == 0; }
  int64_t records() const { return records_; }
  int64_t spilled_bytes() const { return spilled_total_; }
  // Takes a chunk of whole framed records, or fails naming the spill file.
  // Empty when the queue is.
  absl::Status pop_chunk(std::string* chunk);
  // Every record queued, framed (the unprocessed part of a snapshot's
  // channel state); the queue keeps them.
  absl::Status contents(std::string* out) const;
  // Forgets everything (a restore starts empty).
  void clear();

 private:
  static constexpr size_t kChunkBytes = 32 * 1024;
  absl::Status spill(std::string chunk);

  const std::string spill_path_;
  const size_t memory_bytes_;
  std::deque<std::string> memory_;  // chunks of framed records, the last being filled
  size_t memory_held_ = 0;
  int64_t records_ = 0;
  // Spilled chunks: `u32 length | framed records`, read from `read_at_`.
  std::FILE* file_ = nullptr;
  int64_t file_end_ = 0;
  int64_t read_at_ = 0;
  int64_t spilled_total_ = 0;
  std::deque<int64_t> spilled_records_;  // records per spilled chunk, in file order
};

}  // namespace weir::runtime

#endif  // WEIR_RUNTIME_FEEDBACK_QUEUE_H_
