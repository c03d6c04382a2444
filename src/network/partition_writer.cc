#include "network/partition_writer.h"

#include <algorithm>
#include <cstring>

namespace weir::network {

ResultPartition::ResultPartition(std::vector<std::shared_ptr<ChannelWriter>> channels,
                                 NetworkBufferPool* pool, const std::atomic<bool>* cancelled,
                                 TaskMetrics* metrics)
    : channels_(std::move(channels)),
      current_(channels_.size()),
      limit_(channels_.size(), 0),
      pool_(pool),
      cancelled_(cancelled),
      metrics_(metrics) {}

void ResultPartition::emit(int channel, std::string_view record) {
  char header[10];
  size_t h = 0;
  uint64_t v = record.size();
  while (v >= 0x80) {
    header[h++] = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  header[h++] = static_cast<char>(v);
  record_size_ = record_left_ = h + record.size();
  write(channel, header, h);
  write(channel, record.data(), record.size());
  if (metrics_ != nullptr) TaskMetrics::add(metrics_->records_out, 1);
}

void ResultPartition::write(int channel, const char* p, size_t n) {
  Buffer& b = current_[channel];
  while (n > 0) {
    if (!b) {
      b = pool_->request(*cancelled_, metrics_ != nullptr ? &metrics_->backpressured_ns : nullptr);
      if (!b) throw TaskCancelled();
      // The record began in an earlier buffer: this one continues it.
      if (record_left_ < record_size_) b.set_continued_bytes(record_left_);
      const int target = channels_[channel]->target_buffer_size();
      limit_[channel] = target > 0 ? std::min<size_t>(static_cast<size_t>(target), b.free_space()) : b.free_space();
    }
    size_t take = std::min(n, limit_[channel] - b.size());
    std::memcpy(b.data() + b.size(), p, take);
    b.set_size(b.size() + take);
    record_left_ -= take;
    p += take;
    n -= take;
    if (b.size() >= limit_[channel] || b.free_space() == 0) flush(channel);
  }
}

void ResultPartition::flush(int channel, bool now) {
  Buffer& b = current_[channel];
  if (!b || b.size() == 0) return;
  if (metrics_ != nullptr) TaskMetrics::add(metrics_->bytes_out, static_cast<int64_t>(b.size()));
  ChannelEvent ev;
  ev.kind = EventKind::kBuffer;
  ev.buffer = std::move(b);
  push(channel, std::move(ev), now);
}

int64_t ResultPartition::unsent_records() const {
  int64_t records = 0;
  for (const Buffer& b : current_) {
    if (b) records += count_record_starts(b);
  }
  return records;
}

void ResultPartition::flush_all() {
  for (int c = 0; c < num_channels(); ++c) {
    // A task that must not block (track_space) leaves a buffer for a full
    // channel until it has space.
    if (track_space_) {
      const auto* local = dynamic_cast<const LocalChannel*>(channels_[c].get());
      if (local != nullptr && !local->has_space()) continue;
    }
    flush(c);
  }
}

void ResultPartition::broadcast_event(EventKind kind, int64_t checkpoint_id, int64_t timestamp_ms,
                                      bool flag, bool final) {
  // Every buffer, full channel or not: the event follows the data before
  // it. A task that must not block (track_space) queues it over the
  // channel's capacity.
  for (int c = 0; c < num_channels(); ++c) flush(c, track_space_);
  for (int c = 0; c < num_channels(); ++c) {
    ChannelEvent ev;
    ev.kind = kind;
    ev.checkpoint_id = checkpoint_id;
    ev.timestamp_ms = timestamp_ms;
    ev.idle = kind == EventKind::kIdle && flag;
    ev.dirty = kind == EventKind::kRound && flag;
    ev.savepoint = kind == EventKind::kBarrier && flag;
    ev.final = kind == EventKind::kBarrier && final;
    push(c, std::move(ev));
  }
}

void ResultPartition::broadcast_priority_barrier(int64_t checkpoint_id, int64_t timestamp_ms, bool final) {
  for (int c = 0; c < num_channels(); ++c) {
    ChannelEvent ev;
    ev.kind = EventKind::kBarrier;
    ev.checkpoint_id = checkpoint_id;
    ev.timestamp_ms = timestamp_ms;
    ev.final = final;
    if (channels_[c]->supports_priority()) {
      ev.priority = true;
      if (const Buffer& b = current_[c]; b && b.size() > 0) append_overtaken(&ev, std::string_view(b.data(), b.size()));
    } else {
      flush(c);
    }
    push(c, std::move(ev));
  }
}

bool ResultPartition::available() {
  if (!maybe_full_) return true;
  for (const auto& c : channels_) {
    const auto* local = dynamic_cast<const LocalChannel*>(c.get());
    if (local != nullptr && !local->has_space()) return false;
  }
  maybe_full_ = false;
  return true;
}

void ResultPartition::broadcast_watermark(int64_t watermark) {
  if (metrics_ != nullptr) metrics_->output_watermark.store(watermark, std::memory_order_relaxed);
  broadcast_event(EventKind::kWatermark, 0, watermark);
}

void ResultPartition::broadcast_idle(bool idle) { broadcast_event(EventKind::kIdle, 0, 0, idle); }

void ResultPartition::push(int channel, ChannelEvent ev, bool now) {
  const bool end = ev.kind == EventKind::kEndOfData;
  const bool buffer = ev.kind == EventKind::kBuffer;
  const bool pushed = now ? channels_[channel]->push_now(std::move(ev))
                          : channels_[channel]->push(std::move(ev),
                                                     metrics_ != nullptr ? &metrics_->backpressured_ns : nullptr,
                                                     cancelled_);
  if (!pushed) {
    // After end-of-data a consumer may finish (the final checkpoint is
    // complete) while a barrier of a later checkpoint is still on its way
    // here: it needs nothing more, so that is not a failure. A consumer
    // that failed reports its own failure.
    if (ended_) return;
    throw TaskCancelled();
  }
  if (end) ended_ = true;
  if (track_space_ && !maybe_full_ && buffer) {
    const auto* local = dynamic_cast<const LocalChannel*>(channels_[channel].get());
    maybe_full_ = local != nullptr && !local->has_space();
  }
}

void ResultPartition::close_channels() {
  current_.clear();
  current_.resize(channels_.size());
  for (auto& c : channels_) c->close();
}

}  // namespace weir::network
