// Wakes a task thread waiting for input or mail. Thread-safe.
#ifndef WEIR_COMMON_WAKEUP_H_
#define WEIR_COMMON_WAKEUP_H_

#include <chrono>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"

namespace weir {

class Wakeup {
 public:
  void notify() {
    absl::MutexLock lock(&mu_);
    signalled_ = true;
    cv_.Signal();
  }
  // Waits until notified (a notification before the call counts) or until
  // `deadline`; clears the signal.
  void wait_until(std::chrono::steady_clock::time_point deadline) {
    absl::Time until = absl::Now() + absl::FromChrono(deadline - std::chrono::steady_clock::now());
    absl::MutexLock lock(&mu_);
    while (!signalled_) {
      if (cv_.WaitWithDeadline(&mu_, until)) break;  // timed out
    }
    signalled_ = false;
  }

 private:
  absl::Mutex mu_;
  absl::CondVar cv_;
  bool signalled_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace weir

#endif  // WEIR_COMMON_WAKEUP_H_
