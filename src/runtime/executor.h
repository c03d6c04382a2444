// A fixed pool of threads running queued closures (asynchronous snapshot
// parts). Thread-safe; the destructor finishes queued work, then joins.
#ifndef WEIR_RUNTIME_EXECUTOR_H_
#define WEIR_RUNTIME_EXECUTOR_H_

#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace weir::runtime {

class ThreadPool {
 public:
  explicit ThreadPool(int threads) {
    for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { loop(); });
  }
  ~ThreadPool() {
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
      cv_.SignalAll();
    }
    for (auto& t : workers_) t.join();
  }
  // Waits until everything posted so far has run.
  void drain() {
    absl::MutexLock lock(&mu_);
    while (!queue_.empty() || active_ != 0) idle_.Wait(&mu_);
  }
  void post(std::function<void()> fn) {
    absl::MutexLock lock(&mu_);
    queue_.push_back(std::move(fn));
    cv_.Signal();
  }

 private:
  void loop() {
    while (true) {
      std::function<void()> fn;
      {
        absl::MutexLock lock(&mu_);
        while (!stopping_ && queue_.empty()) cv_.Wait(&mu_);
        if (queue_.empty()) return;
        fn = std::move(queue_.front());
        queue_.pop_front();
        ++active_;
      }
      fn();
      absl::MutexLock lock(&mu_);
      --active_;
      idle_.SignalAll();
    }
  }

  absl::Mutex mu_;
  absl::CondVar cv_;
  absl::CondVar idle_;
  int active_ ABSL_GUARDED_BY(mu_) = 0;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_;
};

}  // namespace weir::runtime

#endif  // WEIR_RUNTIME_EXECUTOR_H_
