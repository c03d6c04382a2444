// Restart strategies: after a failure of the job attempt, whether to restart
// and after how long. Flink's meanings: fixed-delay, exponential-delay,
// failure-rate, none. Confined to the JobManager thread; time comes from the
// caller.
#ifndef WEIR_RUNTIME_RESTART_STRATEGY_H_
#define WEIR_RUNTIME_RESTART_STRATEGY_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <random>

#include "weir/config.h"

namespace weir::runtime {

class RestartStrategy {
 public:
  virtual ~RestartStrategy() = default;
  // Records a failure at `now_ms`; call before the two queries below.
  virtual void notify_failure(int64_t now_ms) = 0;
  virtual bool can_restart() const = 0;
  // Wait before restarting.
  virtual int64_t backoff_ms() const = 0;
};

std::unique_ptr<RestartStrategy> make_restart_strategy(const RestartStrategyConfig& config,
                                                       uint64_t seed = 0);

class NoRestartStrategy final : public RestartStrategy {
 public:
  void notify_failure(int64_t) override {}
  bool can_restart() const override { return false; }
  int64_t backoff_ms() const override { return 0; }
};

class FixedDelayRestartStrategy final : public RestartStrategy {
 public:
  FixedDelayRestartStrategy(int max_attempts, int64_t delay_ms)
      : max_attempts_(max_attempts), delay_ms_(delay_ms) {}
  void notify_failure(int64_t) override { ++failures_; }
  bool can_restart() const override { return max_attempts_ < 0 || failures_ <= max_attempts_; }
  int64_t backoff_ms() const override { return delay_ms_; }

 private:
  const int max_attempts_;  // < 0: unlimited
  const int64_t delay_ms_;
  int failures_ = 0;
};

// Backoff doubles (by `multiplier`) per failure up to `max`, with jitter;
// resets to `initial` after `reset_threshold` without failures. Always
// restarts.
class ExponentialDelayRestartStrategy final : public RestartStrategy {
 public:
  ExponentialDelayRestartStrategy(const RestartStrategyConfig& c, uint64_t seed);
  void notify_failure(int64_t now_ms) override;
  bool can_restart() const override { return true; }
  int64_t backoff_ms() const override { return current_with_jitter_; }

 private:
  const int64_t initial_, max_, reset_threshold_;
  const double multiplier_, jitter_;
  std::mt19937_64 rng_;
  int64_t current_ = 0;
  int64_t current_with_jitter_ = 0;
  int64_t last_failure_ms_ = -1;
};

// Fails the job once more than `max_failures` happened within `interval`.
class FailureRateRestartStrategy final : public RestartStrategy {
 public:
  FailureRateRestartStrategy(int max_failures, int64_t interval_ms, int64_t delay_ms)
      : max_failures_(max_failures), interval_ms_(interval_ms), delay_ms_(delay_ms) {}
  void notify_failure(int64_t now_ms) override;
  bool can_restart() const override { return static_cast<int>(failures_.size()) <= max_failures_; }
  int64_t backoff_ms() const override { return delay_ms_; }

 private:
  const int max_failures_;
  const int64_t interval_ms_, delay_ms_;
  std::deque<int64_t> failures_;  // times within the window
};

}  // namespace weir::runtime

#endif  // WEIR_RUNTIME_RESTART_STRATEGY_H_
