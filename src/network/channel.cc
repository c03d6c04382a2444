#include "network/channel.h"

namespace weir::network {

bool LocalChannel::push(ChannelEvent ev) {
  std::unique_lock lock(mu_);
  if (ev.kind == EventKind::kBuffer) {
    not_full_.wait(lock, [&] { return closed_ || queued_buffers_ < capacity_; });
    ++queued_buffers_;
  }
  if (closed_) return false;
  queue_.push_back(std::move(ev));
  // Under the lock, so set_consumer(nullptr) waits for it to finish.
  if (consumer_ != nullptr) consumer_->notify();
  return true;
}

std::optional<ChannelEvent> LocalChannel::poll() {
  std::optional<ChannelEvent> ev;
  {
    std::lock_guard lock(mu_);
    if (queue_.empty()) return std::nullopt;
    ev.emplace(std::move(queue_.front()));
    queue_.pop_front();
    if (ev->kind != EventKind::kBuffer) return ev;
    --queued_buffers_;
  }
  not_full_.notify_one();
  return ev;
}

bool LocalChannel::has_event() const {
  std::lock_guard lock(mu_);
  return !queue_.empty();
}

void LocalChannel::close() {
  std::deque<ChannelEvent> dropped;
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    dropped.swap(queue_);
    queued_buffers_ = 0;
    if (consumer_ != nullptr) consumer_->notify();
  }
  not_full_.notify_all();
}

bool LocalChannel::closed() const {
  std::lock_guard lock(mu_);
  return closed_;
}

void LocalChannel::set_consumer(runtime::Wakeup* wakeup) {
  std::lock_guard lock(mu_);
  consumer_ = wakeup;
}

}  // namespace weir::network
