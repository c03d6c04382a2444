#include "cluster/metrics_exposition.h"

#include <gtest/gtest.h>

#include <sstream>

#include <map>

#include <stdexcept>

#include "common/task_metrics.h"
#include "weir/metrics.h"

namespace weir::cluster {
namespace {

// The line of `text` that starts with `prefix` ("" when none does).
std::string line_of(const std::string& text, const std::string& prefix) {
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    if (text.compare(at, prefix.size(), prefix) == 0) return text.substr(at, end - at);
    at = end + 1;
  }
  return "";
}

TEST(MetricGroupTest, ANameIsOneMetricOfOneKind) {
  MetricGroup g;
  Counter& c = g.counter("late.records");
  c.inc();
  c.inc(4);
  EXPECT_EQ(&g.counter("late.records"), &c);  // asked again: the same counter
  EXPECT_EQ(c.count(), 5);
  g.gauge("queue-length").set(7.5);
  EXPECT_THROW(g.gauge("late.records"), std::invalid_argument);
  try {
    g.histogram("late.records");
    FAIL() << "a counter's name was taken for a histogram";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "metric \"late.records\": already registered as a counter, asked for as a histogram");
  }
  EXPECT_THROW(g.counter(""), std::invalid_argument);
  EXPECT_THROW(g.counter("9lives"), std::invalid_argument);
  EXPECT_THROW(g.counter("a b"), std::invalid_argument);
  EXPECT_THROW(g.counter(std::string(129, 'a')), std::invalid_argument);
  EXPECT_THROW(g.histogram("h", 0), std::invalid_argument);
  MetricGroup::Values v = g.values();
  EXPECT_EQ(v.counters.at("late.records"), 5);
  EXPECT_EQ(v.gauges.at("queue-length"), 7.5);
  EXPECT_TRUE(v.histograms.empty());
}

TEST(MetricGroupTest, HistogramQuantilesAreOverItsWindow) {
  Histogram h(100);
  EXPECT_TRUE(h.statistics().quantiles.empty());
  // 1..1000: the window holds 901..1000, count and sum cover all.
  for (int64_t v = 1; v <= 1000; ++v) h.update(v);
  Histogram::Statistics s = h.statistics();
  EXPECT_EQ(s.count, 1000);
  EXPECT_EQ(s.sum, 500500.0);
  ASSERT_EQ(s.quantiles.size(), 6u);
  EXPECT_EQ(s.quantiles[0].first, 0.5);
  EXPECT_EQ(s.quantiles[0].second, 950.0);  // the 50th of 901..1000
  EXPECT_EQ(s.quantiles[2].first, 0.95);
  EXPECT_EQ(s.quantiles[2].second, 995.0);
  EXPECT_EQ(s.quantiles[5].second, 1000.0);
}

TEST(MetricsExpositionTest, TaskMetricsAreWrittenWithFlinksNamesAndTheTasksLabels) {
  TaskMetrics task;
  task.records_in.store(120);
  task.records_out.store(80);
  task.input_watermark.store(1'700'000'000'000);
  MetricGroup& op = task.group("enrich orders");
  op.counter("late.records").inc(3);
  op.gauge("cache-size").set(42);
  Histogram& h = op.histogram("batch_size", 10);
  for (int v : {1, 2, 3, 4}) h.update(v);
  TaskMetricsSnapshot m = task.snapshot(/*with_operators=*/true);
  EXPECT_EQ(m.gauges.at("late.records"), 3);  // what the REST API shows
  EXPECT_EQ(m.gauges.at("cache-size"), 42);

  JobMetrics::Rates rates;
  rates.records_in = 1000;
  rates.backpressured_ms = 250;
  rates.busy_ms = 750;
  MetricFamilies out;
  add_task_metrics(out, {{"job_id", "j1"}, {"task_name", "Source: \"orders\""}, {"subtask_index", "3"}}, m, &rates);
  const std::string text = out.text();
  const std::string labels = R"({job_id="j1",task_name="Source: \"orders\"",subtask_index="3"})";
  EXPECT_EQ(line_of(text, "weir_taskmanager_job_task_numRecordsIn{"),
            "weir_taskmanager_job_task_numRecordsIn" + labels + " 120");
  EXPECT_EQ(line_of(text, "weir_taskmanager_job_task_numRecordsOut{"),
            "weir_taskmanager_job_task_numRecordsOut" + labels + " 80");
  EXPECT_EQ(line_of(text, "# TYPE weir_taskmanager_job_task_numRecordsIn "),
            "# TYPE weir_taskmanager_job_task_numRecordsIn counter");
  EXPECT_EQ(line_of(text, "weir_taskmanager_job_task_numRecordsInPerSecond{"),
            "weir_taskmanager_job_task_numRecordsInPerSecond" + labels + " 1000");
  EXPECT_EQ(line_of(text, "weir_taskmanager_job_task_backPressuredTimeMsPerSecond{"),
            "weir_taskmanager_job_task_backPressuredTimeMsPerSecond" + labels + " 250");
  EXPECT_EQ(line_of(text, "weir_taskmanager_job_task_currentInputWatermark{"),
            "weir_taskmanager_job_task_currentInputWatermark" + labels + " 1700000000000");
  EXPECT_EQ(line_of(text, "weir_taskmanager_job_task_currentOutputWatermark"), "");  // none sent yet
  const std::string op_labels = R"({job_id="j1",task_name="Source: \"orders\"",subtask_index="3",operator_id="9088dbdff62c2f564065ee034c9d7972",operator_name="enrich orders"})";
  // operator_id: the uid's MD5 (python3 -c "import hashlib; print(hashlib.md5(b'enrich orders').hexdigest())").
  EXPECT_EQ(line_of(text, "weir_taskmanager_job_task_operator_late_records{"),
            "weir_taskmanager_job_task_operator_late_records" + op_labels + " 3");
  EXPECT_EQ(line_of(text, "# TYPE weir_taskmanager_job_task_operator_cache_size "),
            "# TYPE weir_taskmanager_job_task_operator_cache_size gauge");
  EXPECT_EQ(line_of(text, "# TYPE weir_taskmanager_job_task_operator_batch_size "),
            "# TYPE weir_taskmanager_job_task_operator_batch_size summary");
  EXPECT_EQ(line_of(text, "weir_taskmanager_job_task_operator_batch_size_count{"),
            "weir_taskmanager_job_task_operator_batch_size_count" + op_labels + " 4");
  EXPECT_EQ(line_of(text, "weir_taskmanager_job_task_operator_batch_size_sum{"),
            "weir_taskmanager_job_task_operator_batch_size_sum" + op_labels + " 10");
  const std::string median = R"(weir_taskmanager_job_task_operator_batch_size{job_id="j1",task_name="Source: \"orders\"",subtask_index="3",operator_id="9088dbdff62c2f564065ee034c9d7972",operator_name="enrich orders",quantile="0.5"})";
  EXPECT_EQ(line_of(text, median), median + " 2");

  // Without rates (one heartbeat so far) the per-second gauges are absent.
  MetricFamilies early;
  add_task_metrics(early, {{"job_id", "j1"}}, m, nullptr);
  EXPECT_EQ(line_of(early.text(), "weir_taskmanager_job_task_busyTimeMsPerSecond"), "");
}

// The series of an exposition: each sample line without its value.
std::vector<std::string> series_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    out.push_back(line.substr(0, line.rfind(' ')));
  }
  return out;
}

// Two vertices of one name, each
// with an operator of one metric name: every series is distinct, told
// apart by task_id (and operator_id).
TEST(MetricsExpositionTest, TwoTasksOfOneNameHaveDistinctSeries) {
  TaskMetrics task;
  task.records_in.store(1);
  task.group("to-rows").counter("rows").inc(1);
  const TaskMetricsSnapshot m = task.snapshot(/*with_operators=*/true);
  MetricFamilies out;
  for (int vertex : {0, 2}) {
    for (int subtask : {0, 1}) {
      add_task_metrics(out, task_labels({"h1", "tm-1", "j1", "sql", "nexmark -> to-rows", vertex, subtask, 0}), m, nullptr);
    }
  }
  const std::vector<std::string> series = series_of(out.text());
  ASSERT_GT(series.size(), 8u);
  std::map<std::string, int> seen;
  for (const std::string& s : series) EXPECT_EQ(++seen[s], 1) << "a duplicate series: " << s;
  const MetricLabels labels = task_labels({"h1", "tm-1", "j1", "sql", "q", 2, 1, 3});
  const MetricLabels want = {{"host", "h1"},   {"tm_id", "tm-1"},         {"job_id", "j1"},
                             {"job_name", "sql"}, {"task_id", "2"},        {"task_attempt_id", "j1_2_1_3"},
                             {"task_name", "q"},  {"task_attempt_num", "3"}, {"subtask_index", "1"}};
  EXPECT_EQ(labels, want);
}

TEST(MetricsExpositionTest, ANameUsedForTwoKindsKeepsBoth) {
  MetricFamilies out;
  out.counter("weir_x", "a counter", {{"operator_name", "a"}}, 1);
  out.gauge("weir_x", "a gauge", {{"operator_name", "b"}}, 2);
  const std::string text = out.text();
  EXPECT_EQ(line_of(text, "# TYPE weir_x "), "# TYPE weir_x counter");
  EXPECT_EQ(line_of(text, "# TYPE weir_x_gauge "), "# TYPE weir_x_gauge gauge");
  EXPECT_EQ(line_of(text, "weir_x_gauge{"), R"(weir_x_gauge{operator_name="b"} 2)");
  EXPECT_EQ(prometheus_name("kafka.lag.orders-v2.0"), "kafka_lag_orders_v2_0");
  EXPECT_EQ(prometheus_name("0day"), "_0day");
}

}  // namespace
}  // namespace weir::cluster
