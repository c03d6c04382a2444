// The producer side of one output edge of a task: one channel per consumer
// subtask, records framed as `varint length | bytes` into pooled buffers. A
// record larger than a buffer spans several. Confined to the task thread.
#ifndef WEIR_NETWORK_PARTITION_WRITER_H_
#define WEIR_NETWORK_PARTITION_WRITER_H_

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include "network/buffer_pool.h"
#include "network/channel.h"
#include "common/task_metrics.h"
#include "weir/detail/operator.h"

namespace weir::network {

// Thrown through operator code when the task is cancelled while it waits on
// the network; caught by the task loop, never crosses a module boundary.
class TaskCancelled : public std::runtime_error {
 public:
  TaskCancelled() : std::runtime_error("task cancelled") {}
};

class ResultPartition final : public detail::PartitionWriter {
 public:
  // `metrics` (the task's; may be null) counts records and bytes written
  // and the time spent waiting for buffers or channel space.
  ResultPartition(std::vector<std::shared_ptr<ChannelWriter>> channels, NetworkBufferPool* pool,
                  const std::atomic<bool>* cancelled, TaskMetrics* metrics = nullptr);

  int num_channels() const override { return static_cast<int>(channels_.size()); }
  void emit(int channel, std::string_view record) override;

  // Sends partly filled buffers now (once track_space() was called, those
  // whose channel has space).
  void flush_all();
  // The records begun in buffers not sent yet: lost when the task ends
  // without sending them.
  int64_t unsent_records() const;
  void broadcast_watermark(int64_t watermark) override;
  void broadcast_idle(bool idle) override;
  // Flushes, then sends an event (barrier, end-of-data, ...) to every channel.
  // `flag`: kIdle's idle, kBarrier's savepoint, kRound's dirty; `final`: kBarrier's.
  void broadcast_event(EventKind kind, int64_t checkpoint_id = 0, int64_t timestamp_ms = 0,
                       bool flag = false, bool final = false);
  void close_channels();

  // The barrier of an unaligned checkpoint: to every channel at once, ahead
  // of the data queued there (LocalChannel's priority events), carrying a
  // copy of that data and of the buffer being filled, which stays to be
  // sent after it. A channel that keeps its order (a result file) gets the
  // buffer and then the barrier, as broadcast_event sends them.
  void broadcast_priority_barrier(int64_t checkpoint_id, int64_t timestamp_ms, bool final = false);
  // Whether every channel takes a data buffer without waiting: a task that
  // must stay responsive to priority barriers processes a record only then,
  // so emitting it never blocks (unless one record fills several buffers).
  // Barrier `checkpoint_id`, where still queued, overtakes the data in
  // front of it (its aligned-checkpoint timeout passed).
  void promote_barrier(int64_t checkpoint_id) {
    for (auto& c : channels_) c->promote_barrier(checkpoint_id);
  }
  // Tracked once track_space() was called; true before.
  bool available();
  void track_space() { track_space_ = true; }

 private:
  void write(int channel, const char* p, size_t n);
  // `now`: without waiting for room (ChannelWriter::push_now).
  void flush(int channel, bool now = false);
  void push(int channel, ChannelEvent ev, bool now = false);

  std::vector<std::shared_ptr<ChannelWriter>> channels_;
  std::vector<Buffer> current_;
  // Per channel: the bytes at which its current buffer is sent (the
  // consumer's debloated size, read when the buffer was taken; else the
  // buffer's capacity).
  std::vector<size_t> limit_;
  NetworkBufferPool* pool_;
  const std::atomic<bool>* cancelled_;
  TaskMetrics* const metrics_;
  // The record being written: its framed size, and the bytes of it not
  // yet in a buffer.
  uint64_t record_size_ = 0;
  uint64_t record_left_ = 0;
  bool ended_ = false;  // end-of-data went out
  // A channel filled up since available() last found all with space.
  bool maybe_full_ = false;
  bool track_space_ = false;
};

// Reassembles framed records from a channel's buffers. One per input channel.
class RecordDeserializer {
 public:
  // Calls `fn(std::string_view record)` for each record completed by
  // `buffer`; keeps the head of a spanning record for the next buffer.
  // Returns false when `fn` does. Holding no record's head, it skips the
  // bytes the buffer continues from a record it never saw (a consumer that
  // joined mid-stream, or whose producer restarted).
  template <typename F>
  bool feed(const Buffer& buffer, F&& fn) {
    return feed(buffer.data(), buffer.size(), std::forward<F>(fn), buffer.continued_bytes());
  }
  // As above, for `n` bytes at `data` that begin with `continued` bytes of
  // a record begun earlier.
  template <typename F>
  bool feed(const char* data, size_t n, F&& fn, uint64_t continued = 0);

  bool has_partial() const { return !partial_.empty(); }
  // The head of the record it holds (empty when none).
  std::string_view partial() const { return partial_; }
  // Called from `fn`: feed returns after this record, yielded() says so,
  // and next_record() is where to go on from (a record's start).
  void yield() { yield_ = true; }
  bool yielded() const { return yielded_; }
  // Where in the bytes last fed the record after the one being handed to
  // `fn` begins: what a failure in `fn` leaves unread.
  size_t next_record() const { return next_; }
  // Drops the head of a record whose producer will never send the rest.
  void clear() {
    partial_.clear();
    skipping_ = 0;
  }

 private:
  std::string partial_;
  uint64_t skipping_ = 0;  // bytes of an unseen record still to skip
  size_t next_ = 0;
  bool yield_ = false;
  bool yielded_ = false;
};

template <typename F>
bool RecordDeserializer::feed(const char* data, size_t n, F&& fn, uint64_t continued) {
  size_t pos = 0;
  yielded_ = false;
  auto yielding = [this] {
    if (!yield_) return false;
    yield_ = false;
    yielded_ = true;
    return true;
  };
  if (partial_.empty() && skipping_ == 0) skipping_ = continued;
  if (skipping_ > 0) {
    const size_t skip = static_cast<size_t>(std::min<uint64_t>(skipping_, n));
    skipping_ -= skip;
    pos = skip;
  }
  uint64_t len;
  size_t header;
  // Finish a record that began in an earlier buffer.
  while (!partial_.empty() && pos < n) {
    if (!parse_record_header(partial_.data(), partial_.size(), &len, &header)) {
      partial_.push_back(data[pos++]);
      continue;
    }
    size_t need = header + len - partial_.size();
    size_t take = std::min(need, n - pos);
    partial_.append(data + pos, take);
    pos += take;
    if (take < need) return true;
    next_ = pos;
    bool ok = fn(std::string_view(partial_).substr(header));
    partial_.clear();
    if (!ok) return false;
    if (yielding()) return true;
  }
  while (pos < n) {
    if (!parse_record_header(data + pos, n - pos, &len, &header) || n - pos - header < len) {
      partial_.assign(data + pos, n - pos);
      return true;
    }
    next_ = pos + header + len;
    if (!fn(std::string_view(data + pos + header, len))) return false;
    pos += header + len;
    if (yielding()) return true;
  }
  return true;
}

}  // namespace weir::network

#endif  // WEIR_NETWORK_PARTITION_WRITER_H_
