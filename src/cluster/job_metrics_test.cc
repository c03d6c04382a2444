#include "cluster/job_metrics.h"

#include <gtest/gtest.h>

#include "cluster/protocol.h"

namespace weir::cluster {
namespace {

TaskMetricsSnapshot counters(int64_t records_in, int64_t records_out, int64_t backpressured_ms,
                                      int64_t idle_ms) {
  TaskMetricsSnapshot m;
  m.records_in = records_in;
  m.records_out = records_out;
  m.bytes_in = records_in * 10;
  m.bytes_out = records_out * 10;
  m.backpressured_ms = backpressured_ms;
  m.idle_ms = idle_ms;
  return m;
}

TEST(JobMetricsTest, RatesNeedTwoReportsASecondApart) {
  JobMetrics metrics;
  const runtime::ExecutionId id{0, 0, 1};
  metrics.report(id, counters(100, 50, 0, 0), 10'000);
  nlohmann::json one = metrics.subtask_json(0, 0, 1);
  EXPECT_EQ(one["records_in"], 100);
  EXPECT_FALSE(one.contains("records_in_per_s"));
  metrics.report(id, counters(150, 60, 0, 0), 10'500);  // half a second: counts, no rates yet
  EXPECT_EQ(metrics.subtask_json(0, 0, 1)["records_in"], 150);
  EXPECT_FALSE(metrics.subtask_json(0, 0, 1).contains("records_in_per_s"));
  metrics.report(id, counters(2100, 1050, 600, 100), 12'000);  // 2 s after the first
  nlohmann::json two = metrics.subtask_json(0, 0, 1);
  EXPECT_EQ(two["records_in_per_s"], 1000);
  EXPECT_EQ(two["records_out_per_s"], 500);
  EXPECT_EQ(two["bytes_in_per_s"], 10000);
  EXPECT_EQ(two["backpressured_ms_per_s"], 300);
  EXPECT_EQ(two["idle_ms_per_s"], 50);
  EXPECT_EQ(two["busy_ms_per_s"], 650);
  EXPECT_EQ(two["backpressure"], "low");
  EXPECT_TRUE(metrics.subtask_json(0, 0, 2).is_null()) << "attempt 2 never reported";
  EXPECT_TRUE(metrics.subtask_json(0, 1, 1).is_null());
}

// A vertex's counters are its current attempts'; all_attempts adds what
// earlier attempts had reported, and appears only after a restart.
TEST(JobMetricsTest, AVertexCountsEveryAttemptApart) {
  JobMetrics metrics;
  metrics.report({0, 0, 0}, counters(100, 40, 0, 0), 1'000);
  metrics.report({0, 1, 0}, counters(7, 3, 0, 0), 1'000);
  EXPECT_FALSE(metrics.vertex_json(0).contains("all_attempts"));
  metrics.report({0, 0, 0}, counters(500, 200, 0, 0), 1'500);  // its last report
  metrics.report({0, 0, 1}, counters(20, 10, 0, 0), 2'000);    // restarted
  metrics.report({0, 0, 2}, counters(30, 12, 0, 0), 3'000);    // and again
  nlohmann::json v = metrics.vertex_json(0);
  EXPECT_EQ(v["records_in"], 30 + 7);
  EXPECT_EQ(v["records_out"], 12 + 3);
  ASSERT_TRUE(v.contains("all_attempts")) << v;
  EXPECT_EQ(v["all_attempts"]["attempts"], 3);
  EXPECT_EQ(v["all_attempts"]["records_in"], 500 + 20 + 30 + 7);
  EXPECT_EQ(v["all_attempts"]["records_out"], 200 + 10 + 12 + 3);
}

TEST(JobMetricsTest, ANewAttemptStartsAfreshAndLateReportsOfOldOnesAreIgnored) {
  JobMetrics metrics;
  metrics.report({0, 0, 1}, counters(5000, 0, 0, 0), 1'000);
  metrics.report({0, 0, 2}, counters(10, 0, 0, 0), 2'000);
  metrics.report({0, 0, 1}, counters(9000, 0, 0, 0), 2'100);  // late, from the old attempt
  EXPECT_EQ(metrics.subtask_json(0, 0, 2)["records_in"], 10);
  EXPECT_TRUE(metrics.subtask_json(0, 0, 1).is_null());
}

TEST(JobMetricsTest, AVertexSumsCountsAndRatesAndTakesTheWorstTimeShares) {
  JobMetrics metrics;
  metrics.report({3, 0, 0}, counters(0, 0, 0, 0), 0);
  metrics.report({3, 1, 0}, counters(0, 0, 0, 0), 0);
  metrics.report({4, 0, 0}, counters(7, 7, 0, 0), 0);  // another vertex
  metrics.report({3, 0, 0}, counters(1000, 0, 900, 0), 1'000);
  metrics.report({3, 1, 0}, counters(3000, 0, 50, 900), 1'000);
  nlohmann::json v = metrics.vertex_json(3);
  EXPECT_EQ(v["records_in"], 4000);
  EXPECT_EQ(v["records_in_per_s"], 4000);
  EXPECT_EQ(v["backpressured_ms_per_s"], 900);
  EXPECT_EQ(v["idle_ms_per_s"], 900);
  EXPECT_EQ(v["backpressure"], "high");
  EXPECT_TRUE(metrics.vertex_json(5).is_null());
}

// Gauges cross the heartbeat and show per subtask; a vertex sums them by name.
TEST(JobMetricsTest, GaugesShowPerSubtaskAndSumPerVertex) {
  TaskMetricsSnapshot a = counters(1, 1, 0, 0), b = counters(1, 1, 0, 0);
  a.gauges = {{"kafka.lag", 5}, {"kafka.lag.t.0", 5}};
  b.gauges = {{"kafka.lag", 7}, {"kafka.lag.t.1", 7}};
  proto::TaskMetrics wire;
  to_proto("job", runtime::ExecutionId{2, 1, 0}, b, &wire);
  TaskMetricsSnapshot b_again = from_proto(wire);
  EXPECT_EQ(b_again.gauges, b.gauges);
  JobMetrics metrics;
  metrics.report(runtime::ExecutionId{2, 0, 0}, a, 1000);
  metrics.report(runtime::ExecutionId{2, 1, 0}, b_again, 1000);
  EXPECT_EQ(metrics.subtask_json(2, 0, 0)["gauges"]["kafka.lag"], 5);
  EXPECT_EQ(metrics.subtask_json(2, 1, 0)["gauges"]["kafka.lag.t.1"], 7);
  nlohmann::json v = metrics.vertex_json(2);
  EXPECT_EQ(v["gauges"]["kafka.lag"], 12);
  EXPECT_EQ(v["gauges"]["kafka.lag.t.0"], 5);
  EXPECT_EQ(v["gauges"]["kafka.lag.t.1"], 7);
}

}  // namespace
}  // namespace weir::cluster
