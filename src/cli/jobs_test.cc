// The job flags' defaults are JobConfig's: a job run without flags gets
// exactly the configuration weir/config.h documents.
#include "cli/jobs.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace weir::cli
