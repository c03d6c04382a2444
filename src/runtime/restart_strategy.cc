#include "runtime/restart_strategy.h"

#include <algorithm>

namespace weir::runtime {

std::unique_ptr<RestartStrategy> make_restart_strategy(const RestartStrategyConfig& c,
                                                       uint64_t seed) {
  switch (c.kind) {
    case RestartStrategyKind::kNone:
      return std::make_unique<NoRestartStrategy>();
    case RestartStrategyKind::kFixedDelay:
      return std::make_unique<FixedDelayRestartStrategy>(c.max_attempts, c.delay.count());
    case RestartStrategyKind::kExponentialDelay:
      return std::make_unique<ExponentialDelayRestartStrategy>(c, seed);
    case RestartStrategyKind::kFailureRate:
      return std::make_unique<FailureRateRestartStrategy>(
          c.max_failures_per_interval, c.failure_rate_interval.count(), c.delay.count());
  }
  return std::make_unique<NoRestartStrategy>();
}

ExponentialDelayRestartStrategy::ExponentialDelayRestartStrategy(const RestartStrategyConfig& c,
                                                                 uint64_t seed)
    : initial_(c.initial_backoff.count()),
      max_(c.max_backoff.count()),
      reset_threshold_(c.reset_backoff_threshold.count()),
      multiplier_(c.backoff_multiplier),
      jitter_(c.jitter_factor),
      rng_(seed) {}

void ExponentialDelayRestartStrategy::notify_failure(int64_t now_ms) {
  bool quiet = last_failure_ms_ >= 0 && now_ms - last_failure_ms_ >= reset_threshold_;
  if (current_ == 0 || quiet) {
    current_ = initial_;
  } else {
    current_ = std::min<int64_t>(max_, static_cast<int64_t>(current_ * multiplier_));
  }
  last_failure_ms_ = now_ms;
  int64_t spread = static_cast<int64_t>(current_ * jitter_);
  int64_t jitter = 0;
  if (spread > 0) {
    jitter = std::uniform_int_distribution<int64_t>(-spread, spread)(rng_);
  }
  current_with_jitter_ = std::clamp<int64_t>(current_ + jitter, 0, max_);
}

void FailureRateRestartStrategy::notify_failure(int64_t now_ms) {
  failures_.push_back(now_ms);
  while (!failures_.empty() && now_ms - failures_.front() > interval_ms_) failures_.pop_front();
}

}  // namespace weir::runtime
