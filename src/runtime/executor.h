// A fixed pool of threads running queued closures (asynchronous snapshot
// parts). Thread-safe; the destructor finishes queued work, then joins.
#ifndef WEIR_RUNTIME_EXECUTOR_H_
#define WEIR_RUNTIME_EXECUTOR_H_

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace weir::runtime {

class ThreadPool {
 public:
  explicit ThreadPool(int threads) {
    for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { loop(); });
  }
  ~ThreadPool() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }
  // Waits until everything posted so far has run.
  void drain() {
    std::unique_lock lock(mu_);
    idle_.wait(lock, [&] { return queue_.empty() && active_ == 0; });
  }
  void post(std::function<void()> fn) {
    {
      std::lock_guard lock(mu_);
      queue_.push_back(std::move(fn));
    }
    cv_.notify_one();
  }

 private:
  void loop() {
    while (true) {
      std::function<void()> fn;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;
        fn = std::move(queue_.front());
        queue_.pop_front();
        ++active_;
      }
      fn();
      {
        std::lock_guard lock(mu_);
        --active_;
      }
      idle_.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_;
  int active_ = 0;                           // guarded by mu_
  std::deque<std::function<void()>> queue_;  // guarded by mu_
  bool stopping_ = false;                    // guarded by mu_
  std::vector<std::thread> workers_;
};

}  // namespace weir::runtime

#endif  // WEIR_RUNTIME_EXECUTOR_H_
