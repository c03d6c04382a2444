// Wakes a task thread waiting for input or mail. Thread-safe.
#ifndef WEIR_RUNTIME_WAKEUP_H_
#define WEIR_RUNTIME_WAKEUP_H_

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace weir::runtime {

class Wakeup {
 public:
  void notify() {
    {
      std::lock_guard lock(mu_);
      signalled_ = true;
    }
    cv_.notify_one();
  }
  // Waits until notified (a notification before the call counts) or until
  // `deadline`; clears the signal.
  void wait_until(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock lock(mu_);
    cv_.wait_until(lock, deadline, [&] { return signalled_; });
    signalled_ = false;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool signalled_ = false;  // guarded by mu_
};

}  // namespace weir::runtime

#endif  // WEIR_RUNTIME_WAKEUP_H_
