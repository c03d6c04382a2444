#include "runtime/restart_strategy.h"

#include <gtest/gtest.h>

namespace weir::runtime {
namespace {

TEST(RestartStrategyTest, FixedDelayAllowsMaxAttempts) {
  FixedDelayRestartStrategy s(2, 50);
  s.notify_failure(0);
  EXPECT_TRUE(s.can_restart());
  EXPECT_EQ(s.backoff_ms(), 50);
  s.notify_failure(1);
  EXPECT_TRUE(s.can_restart());
  s.notify_failure(2);
  EXPECT_FALSE(s.can_restart());
}

TEST(RestartStrategyTest, FixedDelayUnlimited) {
  FixedDelayRestartStrategy s(-1, 0);
  for (int i = 0; i < 1000; ++i) s.notify_failure(i);
  EXPECT_TRUE(s.can_restart());
}

TEST(RestartStrategyTest, NoneNeverRestarts) {
  auto s = make_restart_strategy(RestartStrategyConfig{RestartStrategyKind::kNone});
  s->notify_failure(0);
  EXPECT_FALSE(s->can_restart());
}

TEST(RestartStrategyTest, ExponentialDelayGrowsCapsAndResets) {
  RestartStrategyConfig c;
  c.kind = RestartStrategyKind::kExponentialDelay;
  c.initial_backoff = Duration(100);
  c.max_backoff = Duration(1000);
  c.backoff_multiplier = 2.0;
  c.reset_backoff_threshold = Duration(10000);
  c.jitter_factor = 0;
  ExponentialDelayRestartStrategy s(c, 1);
  std::vector<int64_t> seen;
  for (int i = 0; i < 6; ++i) {
    s.notify_failure(i * 10);
    seen.push_back(s.backoff_ms());
  }
  EXPECT_EQ(seen, (std::vector<int64_t>{100, 200, 400, 800, 1000, 1000}));
  s.notify_failure(50 + 10000);  // quiet long enough
  EXPECT_EQ(s.backoff_ms(), 100);
  EXPECT_TRUE(s.can_restart());
}

TEST(RestartStrategyTest, ExponentialJitterStaysWithinBounds) {
  RestartStrategyConfig c;
  c.initial_backoff = Duration(1000);
  c.max_backoff = Duration(100000);
  c.jitter_factor = 0.1;
  ExponentialDelayRestartStrategy s(c, 42);
  s.notify_failure(0);
  EXPECT_GE(s.backoff_ms(), 900);
  EXPECT_LE(s.backoff_ms(), 1100);
}

TEST(RestartStrategyTest, FailureRateCountsOnlyTheWindow) {
  FailureRateRestartStrategy s(2, 1000, 10);
  s.notify_failure(0);
  s.notify_failure(100);
  EXPECT_TRUE(s.can_restart());
  s.notify_failure(200);
  EXPECT_FALSE(s.can_restart());
  FailureRateRestartStrategy t(2, 1000, 10);
  t.notify_failure(0);
  t.notify_failure(100);
  t.notify_failure(1500);  // the first two left the window
  EXPECT_TRUE(t.can_restart());
}

}  // namespace
}  // namespace weir::runtime
