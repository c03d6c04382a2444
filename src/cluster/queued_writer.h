// Writes messages to a gRPC stream from one thread of its own, so senders
// (the JobMaster's event loop, task threads) only enqueue and never block on
// a slow peer. Thread-safe.
//
// Two lanes: `send` keeps the order of everything sent through it (a
// deployment before the actions on that task); `send_urgent` is for
// heartbeats, which have no order relative to other messages and must not
// wait behind a queue of deployments: the next write takes the urgent lane
// first. Messages are written one at a time, so an urgent message waits at
// most for the one message being written.
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
  // It may stamp the message (the sender's epoch) before writing it.
  explicit QueuedWriter(std::function<bool(Msg&)> write) : write_(std::move(write)) {
    thread_ = std::thread([this] { run(); });
  }
  ~QueuedWriter() { close(); }
  QueuedWriter(const QueuedWriter&) = delete;
  QueuedWriter& operator=(const QueuedWriter&) = delete;

  void send(Msg m) { enqueue(std::move(m), &ordered_); }
  void send_urgent(Msg m) { enqueue(std::move(m), &urgent_); }

  // Writes what is queued unless the stream broke, then ends the thread.
  void close() {
    {
      absl::MutexLock lock(&mu_);
      closed_ = true;
    }
    if (thread_.joinable()) thread_.join();
  }

 private:
  void enqueue(Msg m, std::deque<Msg>* lane) {
    absl::MutexLock lock(&mu_);
    if (closed_) return;
    lane->push_back(std::move(m));
  }

  void run() {
    bool broken = false;
    while (true) {
      Msg m;
      {
        absl::MutexLock lock(&mu_);
        mu_.Await(absl::Condition(
            +[](QueuedWriter* w) ABSL_EXCLUSIVE_LOCKS_REQUIRED(w->mu_) {
              return w->closed_ || !w->urgent_.empty() || !w->ordered_.empty();
            },
            this));
        std::deque<Msg>* lane = !urgent_.empty() ? &urgent_ : &ordered_;
        if (lane->empty()) return;  // closed and drained
        m = std::move(lane->front());
        lane->pop_front();
      }
      if (!broken && !write_(m)) broken = true;
    }
  }

  const std::function<bool(Msg&)> write_;
  absl::Mutex mu_;
  std::deque<Msg> ordered_ ABSL_GUARDED_BY(mu_);
  std::deque<Msg> urgent_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace weir::cluster

#endif  // WEIR_CLUSTER_QUEUED_WRITER_H_
