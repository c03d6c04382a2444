#include "network/buffer_pool.h"

#include "common/task_metrics.h"

namespace weir::network {

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    release();
    pool_ = o.pool_;
    data_ = o.data_;
    capacity_ = o.capacity_;
    size_ = o.size_;
    continued_bytes_ = o.continued_bytes_;
    o.pool_ = nullptr;
    o.data_ = nullptr;
    o.capacity_ = o.size_ = 0;
    o.continued_bytes_ = 0;
  }
  return *this;
}

void Buffer::release() {
  if (data_ != nullptr && pool_ != nullptr) pool_->recycle(data_);
  data_ = nullptr;
  pool_ = nullptr;
}

NetworkBufferPool::NetworkBufferPool(int num_buffers, int buffer_size)
    : total_(num_buffers),
      buffer_size_(buffer_size),
      memory_(new char[static_cast<size_t>(num_buffers) * buffer_size]) {
  absl::MutexLock lock(&mu_);
  free_.reserve(num_buffers);
  for (int i = num_buffers - 1; i >= 0; --i) {
    free_.push_back(memory_.get() + static_cast<size_t>(i) * buffer_size);
  }
}

Buffer NetworkBufferPool::request(const std::atomic<bool>& cancelled, std::atomic<int64_t>* waited_ns) {
  absl::MutexLock lock(&mu_);
  if (free_.empty() && !cancelled.load()) {
    WaitTimer timer(waited_ns);
    while (free_.empty() && !cancelled.load()) freed_.Wait(&mu_);
  }
  if (free_.empty()) return Buffer();
  char* seg = free_.back();
  free_.pop_back();
  return Buffer(this, seg, buffer_size_);
}

void NetworkBufferPool::wake_all() {
  absl::MutexLock lock(&mu_);
  freed_.SignalAll();
}

int NetworkBufferPool::available() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(free_.size());
}

void NetworkBufferPool::recycle(char* segment) {
  absl::MutexLock lock(&mu_);
  free_.push_back(segment);
  freed_.Signal();
}

}  // namespace weir::network
