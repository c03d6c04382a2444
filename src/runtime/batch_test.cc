// Batch execution of keyed operators: their input arrives sorted by key, so
// they see one key at a time (every record of a key, in timestamp order,
// then that key's timers, then the next key), with event time starting over
// at each key; what does not fit the sort's memory spills to disk; the
// results equal streaming mode's final results, and batch mode's without
// sorted inputs. One and two inputs, both
// configured backends (a sorted operator keeps its one key on the heap).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "testing/committing_sink.h"
#include "tests/process.h"
#include "weir/connectors.h"
#include "weir/weir.h"

namespace weir {
namespace batch_test {

namespace fs = std::filesystem;

constexpr int64_t kRecords = 200'000;
constexpr int64_t kKeys = 1'000;
// Beyond every record's timestamp: each key's summary timer.
constexpr int64_t kSummaryTime = kRecords;

// Scattered, so the sources emit out of timestamp order.
int64_t timestamp_of(int64_t v) { return (v * 7919) % kRecords; }

// What the keyed functions saw that batch execution promises not to happen.
struct Violations {
  std::mutex mu;
  std::vector<std::string> seen;
  void add(std::string what) {
    std::lock_guard lock(mu);
    if (seen.size() < 20) seen.push_back(std::move(what));
  }
};

// Checks the order a keyed function sees, when its input is sorted: each
// key's records together, by timestamp, event time not yet advanced, the
// key's timer after its last record and before the next key.
class BlockOrder {
 public:
  BlockOrder(bool sorted, Violations* v) : sorted_(sorted), violations_(v) {}
  void record(int64_t key, int64_t ts, int64_t watermark) {
    if (!sorted_) return;
    if (key != current_) {
      if (current_ >= 0) {
        if (!timer_fired_) violations_->add("key " + std::to_string(current_) + " ended before its timer fired");
        done_.insert(current_);
      }
      if (done_.contains(key)) violations_->add("key " + std::to_string(key) + " came back after another key");
      current_ = key;
      last_ts_ = INT64_MIN;
      timer_fired_ = false;
    }
    if (ts < last_ts_) violations_->add("key " + std::to_string(key) + ": timestamp " + std::to_string(ts) + " after " + std::to_string(last_ts_));
    last_ts_ = ts;
    if (watermark != INT64_MIN) violations_->add("watermark " + std::to_string(watermark) + " during a key's records");
  }
  void timer(int64_t key, int64_t watermark) {
    if (!sorted_) return;
    if (key != current_) violations_->add("timer of key " + std::to_string(key) + " during key " + std::to_string(current_));
    if (watermark != INT64_MAX) violations_->add("timer fired at watermark " + std::to_string(watermark));
    timer_fired_ = true;
  }

 private:
  const bool sorted_;
  Violations* const violations_;
  int64_t current_ = -1;
  int64_t last_ts_ = INT64_MIN;
  bool timer_fired_ = true;
  std::set<int64_t> done_;
};

// (key, count, sum) of one key, emitted by its timer.
using Summary = std::tuple<int64_t, int64_t, int64_t>;

class Summarize final : public KeyedProcessFunction<int64_t, int64_t, Summary> {
 public:
  Summarize(bool sorted, Violations* v) : order_(sorted, v) {}
  absl::Status open(KeyedRuntimeContext<int64_t>& ctx) override {
    count_ = &ctx.get_state(ValueStateDescriptor<int64_t>{"count"});
    sum_ = &ctx.get_state(ValueStateDescriptor<int64_t>{"sum"});
    return absl::OkStatus();
  }
  void process_element(const int64_t& v, Context& ctx, Collector<Summary>&) override {
    order_.record(ctx.current_key(), ctx.timestamp(), ctx.timer_service().current_watermark());
    count_->update(count_->value_or(0) + 1);
    sum_->update(sum_->value_or(0) + v);
    ctx.timer_service().register_event_time_timer(kSummaryTime);
  }
  void on_timer(int64_t, OnTimerContext& ctx, Collector<Summary>& out) override {
    order_.timer(ctx.current_key(), ctx.timer_service().current_watermark());
    out.collect({ctx.current_key(), count_->value_or(0), sum_->value_or(0)});
  }

 private:
  BlockOrder order_;
  ValueState<int64_t>* count_ = nullptr;
  ValueState<int64_t>* sum_ = nullptr;
};

// Two inputs: (key, count of input 1 + 1000 * count of input 2, sum).
class SummarizeBoth final : public KeyedCoProcessFunction<int64_t, int64_t, int64_t, Summary> {
 public:
  SummarizeBoth(bool sorted, Violations* v) : order_(sorted, v) {}
  absl::Status open(KeyedRuntimeContext<int64_t>& ctx) override {
    count_ = &ctx.get_state(ValueStateDescriptor<int64_t>{"count"});
    sum_ = &ctx.get_state(ValueStateDescriptor<int64_t>{"sum"});
    return absl::OkStatus();
  }
  void process_element1(const int64_t& v, Context& ctx, Collector<Summary>&) override { add(v, 1, ctx); }
  void process_element2(const int64_t& v, Context& ctx, Collector<Summary>&) override { add(v, 1000, ctx); }
  void on_timer(int64_t, OnTimerContext& ctx, Collector<Summary>& out) override {
    order_.timer(ctx.current_key(), ctx.timer_service().current_watermark());
    out.collect({ctx.current_key(), count_->value_or(0), sum_->value_or(0)});
  }

 private:
  void add(int64_t v, int64_t weight, Context& ctx) {
    order_.record(ctx.current_key(), ctx.timestamp(), ctx.timer_service().current_watermark());
    count_->update(count_->value_or(0) + weight);
    sum_->update(sum_->value_or(0) + v);
    ctx.timer_service().register_event_time_timer(kSummaryTime);
  }
  BlockOrder order_;
  ValueState<int64_t>* count_ = nullptr;
  ValueState<int64_t>* sum_ = nullptr;
};

DataStream<int64_t> numbers(StreamEnvironment& env, const std::string& name, int64_t offset) {
  auto strategy = WatermarkStrategy<int64_t>::for_bounded_out_of_orderness(
      Duration(kRecords), [](const int64_t& v) { return timestamp_of(v); });
  return env.from_source<int64_t>(
      [offset] {
        return std::make_unique<GeneratorSource<int64_t>>([offset](int64_t i) { return i + offset; }, kRecords);
      },
      name, strategy);
}

class BatchTest : public ::testing::TestWithParam<StateBackendKind> {
 protected:
  void SetUp() override {
    dir_ = std::make_unique<testing::TempDir>(std::string("batch-test-") +
                                              ::testing::UnitTest::GetInstance()->current_test_info()->name());
  }

  JobConfig config(RuntimeMode mode) {
    JobConfig c = testing::failure_test_config(2, GetParam());
    c.checkpoint.mode = CheckpointingMode::kNone;
    c.runtime_mode = mode;
    c.result_directory = dir_->path("results");
    c.state.local_directory = dir_->path("state");
    c.sort_memory_bytes = int64_t{1} << 20;  // a tenth of what the keyed subtasks sort
    return c;
  }

  // The job's summaries, sorted; its result in `result`.
  std::vector<Summary> run(RuntimeMode mode, bool two_inputs, Violations* violations, JobResult* result,
                           bool sorted_inputs = true) {
    const bool sorted = mode == RuntimeMode::kBatch && sorted_inputs;
    JobConfig c = config(mode);
    c.sorted_inputs = sorted_inputs;
    StreamEnvironment env(c);
    DataStream<Summary> out = [&] {
      auto a = numbers(env, "a", 0);
      if (!two_inputs) {
        return a.key_by([](const int64_t& v) { return v % kKeys; })
            .process<Summary>([sorted, violations] { return std::make_unique<Summarize>(sorted, violations); },
                              "summarize");
      }
      auto b = numbers(env, "b", kRecords);
      return a.connect(b)
          .key_by([](const int64_t& v) { return v % kKeys; }, [](const int64_t& v) { return v % kKeys; })
          .process<Summary>(
              [sorted, violations] { return std::make_unique<SummarizeBoth>(sorted, violations); }, "summarize");
    }();
    testing::CollectingSink<Summary>::Rows rows;
    out.sink_to([&rows] { return std::make_unique<testing::CollectingSink<Summary>>(&rows); }, "sink");
    auto r = env.execute("batch-test");
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return {};
    EXPECT_EQ(r->status, JobStatus::kFinished) << r->failure;
    *result = *r;
    std::sort(rows.rows.begin(), rows.rows.end());
    return rows.rows;
  }

  const VertexStats* vertex(const JobResult& r, const std::string& name) {
    for (const VertexStats& v : r.vertices) {
      if (v.name.rfind(name, 0) == 0) return &v;
    }
    ADD_FAILURE() << "no vertex " << name;
    return nullptr;
  }

  void expect_sorted_and_equal(bool two_inputs) {
    Violations violations;
    JobResult streaming, batch;
    std::vector<Summary> want = run(RuntimeMode::kStreaming, two_inputs, &violations, &streaming);
    std::vector<Summary> got = run(RuntimeMode::kBatch, two_inputs, &violations, &batch);
    ASSERT_EQ(static_cast<int64_t>(want.size()), kKeys);
    EXPECT_EQ(got, want);
    EXPECT_TRUE(violations.seen.empty()) << violations.seen.front();
    const int64_t total = two_inputs ? 2 * kRecords : kRecords;
    const VertexStats* s = vertex(batch, "summarize");
    ASSERT_NE(s, nullptr);
    auto gauge = [&](const char* name) {
      auto it = s->gauges.find(name);
      return it == s->gauges.end() ? int64_t{-1} : it->second;
    };
    EXPECT_EQ(gauge("sort.records"), total);
    EXPECT_GT(gauge("sort.spilled_bytes"), 0) << "the input of ten times the sort memory did not spill";
    EXPECT_EQ(vertex(streaming, "summarize")->gauges.count("sort.records"), 0u) << "streaming sorted its input";
    // Batch without sorted inputs: every key's state in the backend, the
    // same result.
    JobResult unsorted;
    EXPECT_EQ(run(RuntimeMode::kBatch, two_inputs, &violations, &unsorted, /*sorted_inputs=*/false), want);
    EXPECT_EQ(vertex(unsorted, "summarize")->gauges.count("sort.records"), 0u) << "sorted despite sorted_inputs off";
    EXPECT_FALSE(fs::exists(dir_->path("results/" + batch.job_id))) << "sort or result files left behind";
  }

  std::unique_ptr<testing::TempDir> dir_;
};

TEST_P(BatchTest, AKeyedOperatorSeesOneKeyAtATimeAndTheStreamingResult) { expect_sorted_and_equal(false); }

TEST_P(BatchTest, ATwoInputOperatorSeesBothInputsOfAKeyTogether) { expect_sorted_and_equal(true); }

INSTANTIATE_TEST_SUITE_P(Backends, BatchTest, testing::kBothBackends, testing::backend_name);

TEST(BatchConfigTest, RefusesARestoreAndBadSortMemory) {
  JobConfig c = testing::failure_test_config(1);
  c.runtime_mode = RuntimeMode::kBatch;
  c.restore = "/nowhere/chk-1";
  StreamEnvironment env(c);
  testing::CollectingSink<int64_t>::Rows rows;
  numbers(env, "a", 0).sink_to([&rows] { return std::make_unique<testing::CollectingSink<int64_t>>(&rows); });
  auto r = env.execute("batch-restore");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("runtime mode batch does not restore state (--restore /nowhere/chk-1)"),
            std::string::npos)
      << r.status();
  EXPECT_EQ(*parse_memory_size("64mb"), int64_t{64} << 20);
  EXPECT_EQ(*parse_memory_size("1 GiB"), int64_t{1} << 30);
  EXPECT_EQ(*parse_memory_size("512k"), 512 << 10);
  EXPECT_EQ(*parse_memory_size("1048576"), 1048576);
  EXPECT_FALSE(parse_memory_size("64 parsecs").ok());
  EXPECT_FALSE(parse_memory_size("-1mb").ok());
  EXPECT_FALSE(parse_memory_size("99999999999gb").ok());
}

}  // namespace batch_test
}  // namespace weir
