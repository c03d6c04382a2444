#include "network/channel.h"

#include <algorithm>
#include <iterator>

#include "common/task_metrics.h"

namespace weir::network {

int64_t count_record_starts(const Buffer& b) {
  return count_record_starts(b.data(), b.size(), static_cast<size_t>(std::min<uint64_t>(b.continued_bytes(), b.size())));
}

int64_t count_record_starts(const char* data, size_t n, size_t pos) {
  int64_t records = 0;
  uint64_t len;
  size_t header;
  while (pos < n) {
    ++records;
    if (!parse_record_header(data + pos, n - pos, &len, &header) || len > n - pos - header) break;
    pos += header + len;
  }
  return records;
}

void append_overtaken(ChannelEvent* ev, std::string_view more) {
  if (more.empty()) return;
  auto bytes = std::make_shared<std::string>();
  if (ev->overtaken != nullptr) bytes->reserve(ev->overtaken->size() + more.size());
  if (ev->overtaken != nullptr) bytes->append(*ev->overtaken);
  bytes->append(more);
  ev->overtaken = std::move(bytes);
}

void prepend_overtaken(ChannelEvent* ev, std::string_view earlier) {
  if (earlier.empty()) return;
  auto bytes = std::make_shared<std::string>(earlier);
  if (ev->overtaken != nullptr) bytes->append(*ev->overtaken);
  ev->overtaken = std::move(bytes);
}

namespace {

// What priority event `p` may not overtake: its order against them
// matters to the consumer (an earlier barrier, a restart; the end of the
// data for the final checkpoint, taken once the input ended).
bool holds_its_place(const ChannelEvent& ev, const ChannelEvent& p) {
  return ev.kind == EventKind::kBarrier || ev.kind == EventKind::kReset ||
         (ev.kind == EventKind::kEndOfData && p.final);
}

}  // namespace

bool LocalChannel::push(ChannelEvent ev, std::atomic<int64_t>* waited_ns, const std::atomic<bool>* abort) {
  absl::MutexLock lock(&mu_);
  if (ev.priority) {
    if (closed_) return false;
    insert_priority(std::move(ev), queue_.end());
    return true;
  }
  auto aborted = [abort] { return abort != nullptr && abort->load(std::memory_order_relaxed); };
  if (ev.kind == EventKind::kBuffer) {
    if (!closed_ && queued_buffers_ >= capacity_) {
      WaitTimer timer(waited_ns);
      while (!closed_ && queued_buffers_ >= capacity_ && !aborted()) not_full_.Wait(&mu_);
      if (!closed_ && queued_buffers_ >= capacity_) return false;
    }
    ++queued_buffers_;
  }
  if (closed_) return false;
  queue_.push_back(std::move(ev));
  // Under the lock, so set_consumer(nullptr) waits for it to finish.
  if (consumer_ != nullptr) consumer_->notify();
  return true;
}

bool LocalChannel::push_now(ChannelEvent ev) {
  absl::MutexLock lock(&mu_);
  if (closed_) return false;
  if (ev.kind == EventKind::kBuffer) ++queued_buffers_;
  queue_.push_back(std::move(ev));
  if (consumer_ != nullptr) consumer_->notify();
  return true;
}

std::optional<ChannelEvent> LocalChannel::poll() { return poll_if(true); }

std::optional<ChannelEvent> LocalChannel::poll_if(bool take_buffer) {
  std::shared_ptr<const std::function<void()>> taken;
  std::optional<ChannelEvent> ev;
  {
    absl::MutexLock lock(&mu_);
    if (queue_.empty()) return std::nullopt;
    if (queue_.front().kind == EventKind::kBuffer && !take_buffer) return std::nullopt;
    ev.emplace(std::move(queue_.front()));
    queue_.pop_front();
    if (ev->kind == EventKind::kBuffer) {
      --queued_buffers_;
      not_full_.Signal();
      taken = on_buffer_taken_;
      if (producer_ != nullptr) producer_->notify();
    } else if (ev->priority) {
      --queued_priority_;
      if (priority_counter_ != nullptr) priority_counter_->fetch_sub(1, std::memory_order_relaxed);
    }
  }
  if (taken) (*taken)();
  return ev;
}

void LocalChannel::insert_priority(ChannelEvent ev, std::deque<ChannelEvent>::iterator end) {
  auto at = end;
  while (at != queue_.begin() && !holds_its_place(*std::prev(at), ev)) --at;
  std::string earlier;
  for (auto it = at; it != end; ++it) {
    if (it->kind == EventKind::kBuffer) earlier.append(it->buffer.data(), it->buffer.size());
  }
  prepend_overtaken(&ev, earlier);
  ev.priority = true;
  queue_.insert(at, std::move(ev));
  ++queued_priority_;
  if (priority_counter_ != nullptr) priority_counter_->fetch_add(1, std::memory_order_relaxed);
  if (consumer_ != nullptr) consumer_->notify();
}

void LocalChannel::promote_barrier(int64_t checkpoint_id) {
  absl::MutexLock lock(&mu_);
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if (it->kind != EventKind::kBarrier || it->checkpoint_id != checkpoint_id || it->priority) continue;
    ChannelEvent ev = std::move(*it);
    it = queue_.erase(it);
    insert_priority(std::move(ev), it);
    return;
  }
}

std::optional<ChannelEvent> LocalChannel::poll_priority() {
  absl::MutexLock lock(&mu_);
  if (queued_priority_ == 0 || queue_.empty() || !queue_.front().priority) return std::nullopt;
  std::optional<ChannelEvent> ev(std::move(queue_.front()));
  queue_.pop_front();
  --queued_priority_;
  if (priority_counter_ != nullptr) priority_counter_->fetch_sub(1, std::memory_order_relaxed);
  return ev;
}

int LocalChannel::queued_buffers() const {
  absl::MutexLock lock(&mu_);
  return queued_buffers_;
}

bool LocalChannel::has_space() const {
  absl::MutexLock lock(&mu_);
  return closed_ || queued_buffers_ < capacity_;
}

void LocalChannel::drop_priority_count() {
  if (queued_priority_ == 0) return;
  if (priority_counter_ != nullptr) priority_counter_->fetch_sub(queued_priority_, std::memory_order_relaxed);
  queued_priority_ = 0;
}

bool LocalChannel::has_event() const {
  absl::MutexLock lock(&mu_);
  return !queue_.empty();
}

void LocalChannel::close() {
  std::deque<ChannelEvent> dropped;  // buffers return to the pool outside the lock
  std::function<void()> closed;
  {
    absl::MutexLock lock(&mu_);
    if (!closed_) closed.swap(on_closed_);
    closed_ = true;
    dropped.swap(queue_);
    queued_buffers_ = 0;
    drop_priority_count();
    if (consumer_ != nullptr) consumer_->notify();
    if (producer_ != nullptr) producer_->notify();
    not_full_.SignalAll();
  }
  if (closed) closed();
}

void LocalChannel::wake_producer() {
  absl::MutexLock lock(&mu_);
  not_full_.SignalAll();
}

int64_t LocalChannel::detach() {
  std::deque<ChannelEvent> dropped;  // buffers return to the pool outside the lock
  std::shared_ptr<const std::function<void()>> taken;
  {
    absl::MutexLock lock(&mu_);
    dropped.swap(queue_);
    queued_buffers_ = 0;
    drop_priority_count();
    consumer_ = nullptr;
    if (producer_ != nullptr) producer_->notify();
    not_full_.SignalAll();
    taken = on_buffer_taken_;
  }
  int64_t records = 0;
  for (const ChannelEvent& ev : dropped) {
    if (ev.kind != EventKind::kBuffer) continue;
    records += count_record_starts(ev.buffer);
    if (taken) (*taken)();  // a remote producer gets the credit back
  }
  return records;
}

bool LocalChannel::closed() const {
  absl::MutexLock lock(&mu_);
  return closed_;
}

void LocalChannel::set_consumer(Wakeup* wakeup) {
  absl::MutexLock lock(&mu_);
  consumer_ = wakeup;
}

void LocalChannel::set_target_buffer_size(int bytes) {
  if (target_buffer_size_.exchange(bytes, std::memory_order_relaxed) == bytes) return;
  std::function<void(int)> listener;
  {
    absl::MutexLock lock(&mu_);
    listener = on_target_;
  }
  if (listener) listener(bytes);
}

void LocalChannel::set_target_listener(std::function<void(int)> listener) {
  absl::MutexLock lock(&mu_);
  on_target_ = std::move(listener);
}

void LocalChannel::set_producer(Wakeup* wakeup) {
  absl::MutexLock lock(&mu_);
  producer_ = wakeup;
}

void LocalChannel::set_priority_counter(std::atomic<int>* counter) {
  absl::MutexLock lock(&mu_);
  if (priority_counter_ != nullptr && queued_priority_ > 0) {
    priority_counter_->fetch_sub(queued_priority_, std::memory_order_relaxed);
  }
  priority_counter_ = counter;
  if (priority_counter_ != nullptr && queued_priority_ > 0) {
    priority_counter_->fetch_add(queued_priority_, std::memory_order_relaxed);
  }
}

void LocalChannel::set_listener(std::function<void()> on_buffer_taken, std::function<void()> on_closed) {
  bool already_closed;
  {
    absl::MutexLock lock(&mu_);
    already_closed = closed_;
    on_buffer_taken_ = on_buffer_taken
                           ? std::make_shared<const std::function<void()>>(std::move(on_buffer_taken))
                           : nullptr;
    if (!already_closed) on_closed_ = std::move(on_closed);
  }
  if (already_closed && on_closed) on_closed();
}

}  // namespace weir::network
