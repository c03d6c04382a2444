// The producer side of one output edge of a task: one channel per consumer
// subtask, records framed as `varint length | bytes` into pooled buffers. A
// record larger than a buffer spans several. Confined to the task thread.
#ifndef WEIR_NETWORK_PARTITION_WRITER_H_
#define WEIR_NETWORK_PARTITION_WRITER_H_

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string_view>
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

  // Sends partly filled buffers now.
  void flush_all();
  void broadcast_watermark(int64_t watermark) override;
  void broadcast_idle(bool idle) override;
  // Flushes, then sends an event (barrier, end-of-data, ...) to every channel.
  void broadcast_event(EventKind kind, int64_t checkpoint_id = 0, int64_t timestamp_ms = 0,
                       bool flag = false);
  void close_channels();

 private:
  void write(int channel, const char* p, size_t n);
  void flush(int channel);
  void push(int channel, ChannelEvent ev);

  std::vector<std::shared_ptr<ChannelWriter>> channels_;
  std::vector<Buffer> current_;
  NetworkBufferPool* pool_;
  const std::atomic<bool>* cancelled_;
  TaskMetrics* const metrics_;
  bool ended_ = false;  // end-of-data went out
};

// Reassembles framed records from a channel's buffers. One per input channel.
class RecordDeserializer {
 public:
  // Calls `fn(std::string_view record)` for each record completed by
  // `data`; keeps the tail of a spanning record for the next buffer.
  // Returns false when `fn` does.
  template <typename F>
  bool feed(const char* data, size_t n, F&& fn);

  bool has_partial() const { return !partial_.empty(); }

 private:
  // Length of the record at p (header parsed), or -1 when incomplete.
  static bool parse_header(const char* p, size_t n, uint64_t* len, size_t* header);

  std::string partial_;
};

inline bool RecordDeserializer::parse_header(const char* p, size_t n, uint64_t* len,
                                             size_t* header) {
  uint64_t v = 0;
  for (size_t i = 0; i < n && i < 10; ++i) {
    uint8_t b = static_cast<uint8_t>(p[i]);
    v |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
    if ((b & 0x80) == 0) {
      *len = v;
      *header = i + 1;
      return true;
    }
  }
  return false;
}

template <typename F>
bool RecordDeserializer::feed(const char* data, size_t n, F&& fn) {
  size_t pos = 0;
  uint64_t len;
  size_t header;
  // Finish a record that began in an earlier buffer.
  while (!partial_.empty() && pos < n) {
    if (!parse_header(partial_.data(), partial_.size(), &len, &header)) {
      partial_.push_back(data[pos++]);
      continue;
    }
    size_t need = header + len - partial_.size();
    size_t take = std::min(need, n - pos);
    partial_.append(data + pos, take);
    pos += take;
    if (take < need) return true;
    bool ok = fn(std::string_view(partial_).substr(header));
    partial_.clear();
    if (!ok) return false;
  }
  while (pos < n) {
    if (!parse_header(data + pos, n - pos, &len, &header) || n - pos - header < len) {
      partial_.assign(data + pos, n - pos);
      return true;
    }
    if (!fn(std::string_view(data + pos + header, len))) return false;
    pos += header + len;
  }
  return true;
}

}  // namespace weir::network

#endif  // WEIR_NETWORK_PARTITION_WRITER_H_
