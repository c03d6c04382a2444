// Network buffers: fixed-size memory segments from one fixed pool per
// process, so network memory is bounded by configuration, not by input.
//
// NetworkBufferPool is thread-safe. A Buffer is a move-only handle that
// returns its segment to the pool when destroyed.
#ifndef WEIR_NETWORK_BUFFER_POOL_H_
#define WEIR_NETWORK_BUFFER_POOL_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace weir::network {

class NetworkBufferPool;

class Buffer {
 public:
  Buffer() = default;
  Buffer(NetworkBufferPool* pool, char* data, size_t capacity)
      : pool_(pool), data_(data), capacity_(capacity) {}
  Buffer(Buffer&& o) noexcept { *this = std::move(o); }
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { release(); }

  explicit operator bool() const { return data_ != nullptr; }
  char* data() { return data_; }
  const char* data() const { return data_; }
  size_t size() const { return size_; }
  size_t capacity() const { return capacity_; }
  size_t free_space() const { return capacity_ - size_; }
  void set_size(size_t n) { size_ = n; }
  // Bytes that finish a record begun in an earlier buffer, from this
  // buffer's start to that record's end (which may lie in a later buffer);
  // 0 when the buffer starts with a record. Lets a consumer that joins a
  // channel mid-stream skip to the first whole record (--failover task).
  // A remote channel carries it too (network::FrameType::kBufferContinued).
  uint64_t continued_bytes() const { return continued_bytes_; }
  void set_continued_bytes(uint64_t n) { continued_bytes_ = n; }

 private:
  void release();

  NetworkBufferPool* pool_ = nullptr;
  char* data_ = nullptr;
  size_t capacity_ = 0;
  size_t size_ = 0;
  uint64_t continued_bytes_ = 0;
};

class NetworkBufferPool {
 public:
  NetworkBufferPool(int num_buffers, int buffer_size);
  NetworkBufferPool(const NetworkBufferPool&) = delete;
  NetworkBufferPool& operator=(const NetworkBufferPool&) = delete;

  // Blocks until a buffer is free. Returns an empty Buffer once `cancelled`
  // is set (callers wake waiters with wake_all()).
  // `waited_ns`, when given, grows by the time spent waiting for a buffer
  // (a counter only the calling thread writes).
  Buffer request(const std::atomic<bool>& cancelled, std::atomic<int64_t>* waited_ns = nullptr);
  void wake_all();

  int total() const { return total_; }
  int buffer_size() const { return buffer_size_; }
  int available() const;

 private:
  friend class Buffer;
  void recycle(char* segment);

  const int total_;
  const int buffer_size_;
  std::unique_ptr<char[]> memory_;

  mutable absl::Mutex mu_;
  absl::CondVar freed_;
  std::vector<char*> free_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weir::network

#endif  // WEIR_NETWORK_BUFFER_POOL_H_
