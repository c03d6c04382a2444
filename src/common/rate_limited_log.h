// A warning that may repeat without bound (refused connections, rejected
// requests) is logged at most once per interval; the repeats in between are
// counted and reported with the next one. Thread-safe.
#ifndef WEIR_COMMON_RATE_LIMITED_LOG_H_
#define WEIR_COMMON_RATE_LIMITED_LOG_H_

#include <spdlog/spdlog.h>

#include <chrono>
#include <string>

#include "absl/synchronization/mutex.h"

namespace weir {

class RateLimitedLog {
 public:
  // Default: one line per 10 s.
  explicit RateLimitedLog(std::chrono::milliseconds interval = std::chrono::seconds(10)) : interval_(interval) {}

  // Logs `message()` as a warning unless one was logged within the
  // interval; `message` is called only when it is logged.
  template <typename MessageFn>
  void log(MessageFn&& message) {
    const auto now = std::chrono::steady_clock::now();
    int64_t suppressed;
    {
      absl::MutexLock lock(&mu_);
      if (logged_once_ && now - last_ < interval_) {
        ++suppressed_;
        return;
      }
      logged_once_ = true;
      last_ = now;
      suppressed = suppressed_;
      suppressed_ = 0;
    }
    if (suppressed == 0) {
      spdlog::warn("{}", message());
    } else {
      spdlog::warn("{} (and {} more like it since the last report)", message(), suppressed);
    }
  }

 private:
  const std::chrono::milliseconds interval_;
  absl::Mutex mu_;
  bool logged_once_ ABSL_GUARDED_BY(mu_) = false;
  std::chrono::steady_clock::time_point last_ ABSL_GUARDED_BY(mu_);
  int64_t suppressed_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace weir

#endif  // WEIR_COMMON_RATE_LIMITED_LOG_H_
