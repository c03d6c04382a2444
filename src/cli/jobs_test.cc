// The job flags' defaults are JobConfig's: a job run without flags gets
// exactly the configuration weir/config.h documents.
#include "cli/jobs.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace weir::cli {
namespace {

TEST(JobFlagsTest, WithoutFlagsAJobGetsJobConfigsDefaults) {
  auto got = JobFlags{}.to_config();
  ASSERT_TRUE(got.ok()) << got.status();
  const JobConfig want;
  EXPECT_EQ(got->default_parallelism, want.default_parallelism);
  EXPECT_EQ(got->max_parallelism, want.max_parallelism);
  EXPECT_EQ(got->checkpoint.interval, want.checkpoint.interval);
  EXPECT_EQ(got->checkpoint.mode, want.checkpoint.mode);
  EXPECT_EQ(got->checkpoint.directory, want.checkpoint.directory);
  EXPECT_EQ(got->checkpoint.incremental, want.checkpoint.incremental);
  EXPECT_EQ(got->checkpoint.retained, want.checkpoint.retained);
  EXPECT_EQ(got->checkpoint.tolerable_failed_checkpoints, want.checkpoint.tolerable_failed_checkpoints);
  EXPECT_EQ(got->state.kind, want.state.kind);
  EXPECT_EQ(got->state.local_directory, want.state.local_directory);
  EXPECT_EQ(got->state.local_recovery, want.state.local_recovery);
  EXPECT_EQ(got->restart.kind, want.restart.kind);
  EXPECT_EQ(got->restart.max_attempts, want.restart.max_attempts);
  EXPECT_EQ(got->restart.delay, want.restart.delay);
  EXPECT_EQ(got->restart.max_failures_without_progress, want.restart.max_failures_without_progress);
  EXPECT_EQ(got->restart.max_failures_per_interval, want.restart.max_failures_per_interval);
  EXPECT_EQ(got->restart.failure_rate_interval, want.restart.failure_rate_interval);
  EXPECT_EQ(got->failover, want.failover);
  EXPECT_EQ(got->exchange, want.exchange);
  EXPECT_EQ(got->runtime_mode, want.runtime_mode);
  EXPECT_EQ(got->result_directory, want.result_directory);
  EXPECT_EQ(got->slot_timeout, want.slot_timeout);
  EXPECT_EQ(got->restore, want.restore);
  EXPECT_EQ(got->allow_non_restored_state, want.allow_non_restored_state);
}

TEST(JobFlagsTest, DurationsFormatInTheirLargestWholeUnitAndParseBack) {
  for (int64_t ms : {0, 1, 5, 100, 999, 1000, 1500, 60000, 90000, 600000, 3600000}) {
    const Duration d(ms);
    auto back = parse_duration(format_duration(d));
    ASSERT_TRUE(back.ok()) << format_duration(d);
    EXPECT_EQ(*back, d) << format_duration(d);
  }
  EXPECT_EQ(format_duration(Duration(100)), "100ms");
  EXPECT_EQ(format_duration(Duration(1000)), "1s");
  EXPECT_EQ(format_duration(Duration(600000)), "10min");
  EXPECT_EQ(format_duration(Duration(90000)), "90s");
}

// Durations as Flink writes them, and sums of them; what is not one is
// refused naming why.
TEST(JobFlagsTest, DurationsParseAsFlinkWritesThem) {
  const std::vector<std::pair<std::string, int64_t>> good = {
      {"250", 250},          {"250ms", 250},      {"1.5s", 1500},      {"1 min", 60000},
      {"1h30m", 5400000},    {"1 min 30 s", 90000}, {"2 Seconds", 2000}, {"0.25h", 900000},
      {"1d", 86400000},      {" 3 hours ", 10800000}, {"10millis", 10},  {"0s", 0}};
  for (const auto& [text, ms] : good) {
    auto d = parse_duration(text);
    ASSERT_TRUE(d.ok()) << text << ": " << d.status();
    EXPECT_EQ(d->count(), ms) << text;
  }
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"", "expected a number"},         {"soon", "expected a number"},   {"-5s", "expected a number"},
      {"5 parsecs", "unknown unit 'parsecs'"}, {"1.5ms", "finer than a millisecond"},
      {"1h 30", "a number without a unit"},    {"200 years", "unknown unit"},
      {"1000000d", "more than 100 years"},     {"1..5s", "expected a number"}};
  for (const auto& [text, why] : bad) {
    auto d = parse_duration(text);
    ASSERT_FALSE(d.ok()) << text << " parsed as " << d->count() << " ms";
    EXPECT_NE(d.status().message().find("invalid duration '" + text + "': " + why), std::string::npos)
        << d.status();
  }
}

}  // namespace
}  // namespace weir::cli
