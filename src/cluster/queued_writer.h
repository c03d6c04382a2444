// Writes messages to a gRPC stream from one thread of its own, so senders
// (the JobMaster's event loop, task threads) only enqueue and never block on
// a slow peer. Thread-safe.
#ifndef WEIR_CLUSTER_QUEUED_WRITER_H_
#define WEIR_CLUSTER_QUEUED_WRITER_H_

#include <deque>
#include <functional>
#include <thread>

#include "absl/synchronization/mutex.h"

namespace weir::cluster {

template <typename Msg>
class QueuedWriter {
 public:
  // `write` returns false once the stream is broken; later messages drop.
  explicit QueuedWriter(std::function<bool(const Msg&)> write) : write_(std::move(write)) {
    thread_ = std::thread([this] { run(); });
  }
  ~QueuedWriter() { close(); }
  QueuedWriter(const QueuedWriter&) = delete;
  QueuedWriter& operator=(const QueuedWriter&) = delete;

  void send(Msg m) {
    absl::MutexLock lock(&mu_);
    if (closed_) return;
    queue_.push_back(std::move(m));
  }
  // Writes what is queued unless the stream broke, then ends the thread.
  void close() {
    {
      absl::MutexLock lock(&mu_);
      closed_ = true;
    }
    if (thread_.joinable()) thread_.join();
  }

 private:
  void run() {
    bool broken = false;
    while (true) {
      std::deque<Msg> batch;
      {
        absl::MutexLock lock(&mu_);
        mu_.Await(absl::Condition(
            +[](QueuedWriter* w) ABSL_EXCLUSIVE_LOCKS_REQUIRED(w->mu_) { return w->closed_ || !w->queue_.empty(); },
            this));
        if (queue_.empty()) return;  // closed
        batch.swap(queue_);
      }
      for (auto& m : batch) {
        if (!broken && !write_(m)) broken = true;
      }
    }
  }

  const std::function<bool(const Msg&)> write_;
  absl::Mutex mu_;
  std::deque<Msg> queue_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace weir::cluster

#endif  // WEIR_CLUSTER_QUEUED_WRITER_H_
