// At-most-once in the embedded cluster: a failed task's sources continue
// after what they emitted, so no input record reaches the output twice; the
// records read ahead and never emitted are counted exactly; restarted
// operators start from empty state; which subtasks restarted is visible in
// their attempt numbers.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "testing/committing_sink.h"
#include "testing/seed.h"
#include "weir/connectors.h"
#include "weir/weir.h"

namespace weir {
namespace at_most_once_test {

// What a sink subtask received: the value and the attempt that wrote it.
struct Written {
  int64_t value = 0;
  int subtask = 0;
  int attempt = 0;
};

struct WrittenLog {
  std::mutex mu;
  std::vector<Written> rows;
  std::vector<Written> all() {
    std::lock_guard lock(mu);
    return rows;
  }
};

// Writes each record to the log at once (no transaction: what reached the
// sink is output, as with a sink that is not transactional).
class DirectSink final : public Sink<int64_t> {
 public:
  explicit DirectSink(WrittenLog* log) : log_(log) {}
  absl::Status open(OperatorContext& ctx) override {
    subtask_ = ctx.subtask_index();
    attempt_ = ctx.attempt();
    return absl::OkStatus();
  }
  absl::Status write(const int64_t& v) override {
    std::lock_guard lock(log_->mu);
    log_->rows.push_back({v, subtask_, attempt_});
    return absl::OkStatus();
  }

 private:
  WrittenLog* const log_;
  int subtask_ = 0, attempt_ = 0;
};

// 0 .. n - 1; subtask s of p emits s, s + p, ...
DataStream<int64_t> numbers(StreamEnvironment& env, int64_t n) {
  return env
      .from_source<int64_t>([n] { return std::make_unique<GeneratorSource<int64_t>>([](int64_t i) { return i; }, n); },
                            "numbers")
      .uid("numbers");
}

// Counts records per key; emits count * scale + record.
class Counter final : public KeyedProcessFunction<int64_t, int64_t, int64_t> {
 public:
  explicit Counter(int64_t scale) : scale_(scale) {}
  absl::Status open(KeyedRuntimeContext<int64_t>& ctx) override {
    count_ = &ctx.get_state(ValueStateDescriptor<int64_t>{"count"});
    return absl::OkStatus();
  }
  void process_element(const int64_t& v, Context&, Collector<int64_t>& out) override {
    const int64_t c = count_->value_or(0) + 1;
    count_->update(c);
    out.collect(c * scale_ + v);
  }

 private:
  const int64_t scale_;
  ValueState<int64_t>* count_ = nullptr;
};

JobConfig at_most_once_config(int parallelism, FailoverStrategy failover) {
  JobConfig config = testing::failure_test_config(parallelism);
  config.checkpoint.mode = CheckpointingMode::kAtMostOnce;
  config.failover = failover;
  return config;
}

// Throws the first time it meets `fail_at`, in any attempt.
auto fail_once_at(int64_t fail_at) {
  auto armed = std::make_shared<std::atomic<bool>>(true);
  return [armed, fail_at](const int64_t& v) -> int64_t {
    if (v == fail_at && armed->exchange(false)) throw std::runtime_error("injected failure");
    return v;
  };
}

// No value twice; returns them as a set.
std::set<int64_t> expect_no_duplicates(const std::vector<Written>& rows) {
  std::set<int64_t> seen;
  for (const Written& w : rows) {
    EXPECT_TRUE(seen.insert(w.value).second) << "value " << w.value << " reached the sink twice";
  }
  return seen;
}

// Source, map and sink chained in one task: the failure stops the task in
// the middle of a released batch. Every record before it was written, the
// failing one is lost with the task, the rest of its batch (and any batch
// confirmed behind it) is counted as lost, and the restart continues after
// them: written + lost + 1 == all, with nothing twice.
TEST(AtMostOnceTest, ChainedFailureLosesExactlyWhatItCounts) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  constexpr int64_t kRecords = 200000;
  const int64_t fail_at = 20000 + static_cast<int64_t>(seed % 100000);
  WrittenLog log;
  StreamEnvironment env(at_most_once_config(1, FailoverStrategy::kRegion));
  numbers(env, kRecords)
      .map(fail_once_at(fail_at), "fail-once")
      .sink_to([&log] { return std::make_unique<DirectSink>(&log); }, "sink");
  auto r = env.execute("at-most-once-chained");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->status, JobStatus::kFinished) << r->failure;
  EXPECT_EQ(r->restarts, 1);
  EXPECT_EQ(r->checkpoints.size(), 1u);  // only the final one: no periodic checkpoints
  const std::vector<Written> rows = log.all();
  const std::set<int64_t> seen = expect_no_duplicates(rows);
  EXPECT_EQ(seen.count(fail_at), 0u);
  for (int64_t i = 0; i < fail_at; ++i) {
    ASSERT_EQ(seen.count(i), 1u) << "value " << i << ", before the failure, is missing";
  }
  for (const Written& w : rows) {
    if (w.attempt == 1) {
      ASSERT_GT(w.value, fail_at) << "the restart went back";
    }
  }
  EXPECT_EQ(static_cast<int64_t>(rows.size()) + r->lost_records + 1, kRecords)
      << "written " << rows.size() << ", counted lost " << r->lost_records;
}

// Two independent pipelines (two regions): only the failed one restarts
// (its attempt becomes 1, the other's stays 0), and each loses only what it
// counts. With full failover both restart.
TEST(AtMostOnceTest, FailoverRestartsOnlyTheFailedRegionAndNeverRepeats) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  constexpr int64_t kRecords = 200000;  // both subtasks together: subtask s emits s, s + 2, ...
  const int64_t fail_at = 2 * (10000 + static_cast<int64_t>(seed % 40000)) + 1;  // in subtask 1
  for (FailoverStrategy failover : {FailoverStrategy::kRegion, FailoverStrategy::kFull}) {
    SCOPED_TRACE("failover " + std::string(to_string(failover)));
    WrittenLog log;
    StreamEnvironment env(at_most_once_config(2, failover));
    numbers(env, kRecords)
        .map(fail_once_at(fail_at), "fail-once")
        .sink_to([&log] { return std::make_unique<DirectSink>(&log); }, "sink");
    auto r = env.execute("at-most-once-regions");
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->status, JobStatus::kFinished) << r->failure;
    EXPECT_EQ(r->restarts, 1);
    const std::vector<Written> rows = log.all();
    expect_no_duplicates(rows);
    std::map<int, std::set<int>> attempts;  // by subtask
    for (const Written& w : rows) {
      ASSERT_EQ(w.value % 2, w.subtask) << "value " << w.value;
      attempts[w.subtask].insert(w.attempt);
    }
    EXPECT_EQ(attempts[1], (std::set<int>{0, 1}));
    if (failover == FailoverStrategy::kRegion) {
      EXPECT_EQ(attempts[0], std::set<int>{0}) << "the region that did not fail restarted";
    }
    // Exactly the failing record is missing beyond what was counted; with
    // full failover subtask 0 is cancelled mid-batch too, and what it had
    // confirmed but not emitted is counted as well.
    EXPECT_EQ(static_cast<int64_t>(rows.size()) + r->lost_records + 1, kRecords)
        << "written " << rows.size() << ", counted lost " << r->lost_records;
  }
}

// Across a network edge records in flight to the failed consumer are lost
// too (they are not counted); still nothing is repeated.
TEST(AtMostOnceTest, RecordsAcrossANetworkEdgeAreNeverRepeated) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  constexpr int64_t kRecords = 300000;
  const int64_t fail_at = 30000 + static_cast<int64_t>(seed % 100000);
  WrittenLog log;
  StreamEnvironment env(at_most_once_config(2, FailoverStrategy::kRegion));
  numbers(env, kRecords)
      .rebalance()
      .map(fail_once_at(fail_at), "fail-once")
      .sink_to([&log] { return std::make_unique<DirectSink>(&log); }, "sink");
  auto r = env.execute("at-most-once-network");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->status, JobStatus::kFinished) << r->failure;
  EXPECT_EQ(r->restarts, 1);
  const std::vector<Written> rows = log.all();
  const std::set<int64_t> seen = expect_no_duplicates(rows);
  EXPECT_EQ(seen.count(fail_at), 0u);
  EXPECT_LE(static_cast<int64_t>(rows.size()) + r->lost_records + 1, kRecords);
  // The restart continued: the end of the input was written.
  EXPECT_EQ(seen.count(kRecords - 1), 1u);
  EXPECT_EQ(seen.count(kRecords - 2), 1u);
}

// A savepoint taken while a source reads ahead holds the positions after
// the records it emitted, not after those it holds: a job stopped with a
// savepoint and resumed from it commits every record once across both runs.
TEST(AtMostOnceTest, StopWithSavepointAndResumeLosesAndRepeatsNothing) {
  static constexpr int64_t kRecords = 1000000, kHoldAt = 500000, kStopAfter = 50000;
  const std::string dir = ::testing::TempDir() + "/weir-amo-savepoint-" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  testing::CommitLog<int64_t> log;
  auto run = [&](const std::string& restore, bool hold, JobControl* control,
                 const std::function<void(int64_t)>& on_record) {
    JobConfig config = at_most_once_config(1, FailoverStrategy::kRegion);
    config.checkpoint.directory = dir;
    config.restore = restore;
    StreamEnvironment env(config);
    env.from_source<int64_t>(
           [hold] {
             auto s = std::make_unique<GeneratorSource<int64_t>>([](int64_t i) { return i; }, kRecords);
             if (hold) s->hold_while([](int64_t i) { return i >= kHoldAt; });
             return s;
           },
           "numbers")
        .uid("numbers")
        .map([on_record](const int64_t& v) {
          on_record(v);
          return v;
        }, "watch")
        .sink_to([&log] { return std::make_unique<testing::CommittingSink<int64_t>>(&log); }, "sink")
        .uid("sink");
    return env.execute("at-most-once-savepoint", control);
  };
  // Run 1: stopped with a savepoint once kStopAfter records passed, while
  // the source runs ahead (it idles at kHoldAt, so it cannot end first).
  std::mutex mu;
  std::condition_variable cv;
  bool passed = false;
  JobControl control;
  std::thread stopper([&] {
    std::unique_lock lock(mu);
    cv.wait_for(lock, std::chrono::seconds(60), [&] { return passed; });
    control.stop_with_savepoint(dir + "/savepoints", /*drain=*/false);
  });
  auto first = run("", /*hold=*/true, &control, [&](int64_t v) {
    if (v != kStopAfter) return;
    std::lock_guard lock(mu);
    passed = true;
    cv.notify_all();
  });
  stopper.join();
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ(first->status, JobStatus::kFinished) << first->failure;
  ASSERT_FALSE(first->stopped_with_savepoint.empty());
  const size_t committed_first = log.rows();
  EXPECT_GT(committed_first, static_cast<size_t>(kStopAfter));
  // Run 2: from the savepoint to the end.
  auto second = run(first->stopped_with_savepoint, /*hold=*/false, nullptr, [](int64_t) {});
  ASSERT_TRUE(second.ok()) << second.status();
  ASSERT_EQ(second->status, JobStatus::kFinished) << second->failure;
  std::vector<int64_t> all = log.all();
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), static_cast<size_t>(kRecords)) << "committed in run 1: " << committed_first;
  for (int64_t i = 0; i < kRecords; ++i) ASSERT_EQ(all[i], i) << "committed in run 1: " << committed_first;
  std::filesystem::remove_all(dir);
}

// Keyed state is not restored: a restarted counter starts from zero for
// every key, on either backend.
class AtMostOnceStateTest : public ::testing::TestWithParam<StateBackendKind> {};

TEST_P(AtMostOnceStateTest, RestartedOperatorsStartWithEmptyState) {
  static constexpr int64_t kRecords = 100000, kKeys = 10, kFailAt = 40000;
  WrittenLog log;  // value: count * kRecords + input value
  JobConfig config = at_most_once_config(1, FailoverStrategy::kRegion);
  config.state.kind = GetParam();
  StreamEnvironment env(config);
  numbers(env, kRecords)
      .map(fail_once_at(kFailAt), "fail-once")
      .key_by([](const int64_t& v) { return v % kKeys; })
      .process<int64_t>([] { return std::make_unique<Counter>(kRecords); }, "count")
      .uid("count")
      .sink_to([&log] { return std::make_unique<DirectSink>(&log); }, "sink");
  auto r = env.execute("at-most-once-state");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->status, JobStatus::kFinished) << r->failure;
  ASSERT_EQ(r->restarts, 1);
  std::set<int64_t> inputs;
  std::map<int64_t, int64_t> first_count_in_attempt_1;  // by key
  for (const Written& w : log.all()) {
    const int64_t v = w.value % kRecords, count = w.value / kRecords;
    EXPECT_TRUE(inputs.insert(v).second) << "input " << v << " counted twice";
    if (w.attempt == 1) first_count_in_attempt_1.try_emplace(v % kKeys, count);
  }
  ASSERT_EQ(static_cast<int64_t>(first_count_in_attempt_1.size()), kKeys);
  for (const auto& [key, count] : first_count_in_attempt_1) EXPECT_EQ(count, 1) << "key " << key;
}

INSTANTIATE_TEST_SUITE_P(Backends, AtMostOnceStateTest, testing::kBothBackends, testing::backend_name);

}  // namespace at_most_once_test
}  // namespace weir
