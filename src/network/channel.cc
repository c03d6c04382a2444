#include "network/channel.h"

namespace weir::network {

bool LocalChannel::push(ChannelEvent ev) {
  absl::MutexLock lock(&mu_);
  if (ev.kind == EventKind::kBuffer) {
    while (!closed_ && queued_buffers_ >= capacity_) not_full_.Wait(&mu_);
    ++queued_buffers_;
  }
  if (closed_) return false;
  queue_.push_back(std::move(ev));
  // Under the lock, so set_consumer(nullptr) waits for it to finish.
  if (consumer_ != nullptr) consumer_->notify();
  return true;
}

std::optional<ChannelEvent> LocalChannel::poll() {
  absl::MutexLock lock(&mu_);
  if (queue_.empty()) return std::nullopt;
  std::optional<ChannelEvent> ev(std::move(queue_.front()));
  queue_.pop_front();
  if (ev->kind == EventKind::kBuffer) {
    --queued_buffers_;
    not_full_.Signal();
  }
  return ev;
}

bool LocalChannel::has_event() const {
  absl::MutexLock lock(&mu_);
  return !queue_.empty();
}

void LocalChannel::close() {
  std::deque<ChannelEvent> dropped;  // buffers return to the pool outside the lock
  absl::MutexLock lock(&mu_);
  closed_ = true;
  dropped.swap(queue_);
  queued_buffers_ = 0;
  if (consumer_ != nullptr) consumer_->notify();
  not_full_.SignalAll();
}

bool LocalChannel::closed() const {
  absl::MutexLock lock(&mu_);
  return closed_;
}

void LocalChannel::set_consumer(runtime::Wakeup* wakeup) {
  absl::MutexLock lock(&mu_);
  consumer_ = wakeup;
}

}  // namespace weir::network
