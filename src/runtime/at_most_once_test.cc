// At-most-once in the embedded cluster: checkpoints as in the other modes,
// but a restart does not rewind the sources. A restarted region restores
// its latest checkpoint while its sources continue after what they had
// read, so the records read after that checkpoint's snapshot affect neither
// state nor committed output: each is lost, and counted, exactly once; no
// record is ever committed twice.
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

// Records per second per source subtask: the inputs last long enough for
// checkpoints (every 20 ms) to complete before the failure.
constexpr int64_t kRate = 200000;

// 0 .. n - 1; subtask s of p emits s, s + p, ...
DataStream<int64_t> numbers(StreamEnvironment& env, int64_t n) {
  return env
      .from_source<int64_t>(
          [n] { return std::make_unique<GeneratorSource<int64_t>>([](int64_t i) { return i; }, n, kRate); }, "numbers")
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

// Throws once, at the first record at or after `fail_at` (and, when `only`
// is given, for which only(record) holds) that comes once `log` holds
// committed rows, so the restart restores a checkpoint with data in it.
// The record it threw on is stored in `*failed`.
auto fail_once_after_a_commit(int64_t fail_at, const testing::CommitLog<int64_t>* log,
                              std::shared_ptr<std::atomic<int64_t>> failed,
                              std::function<bool(int64_t)> only = nullptr) {
  failed->store(-1);
  return [fail_at, log, failed, only](const int64_t& v) -> int64_t {
    if (v >= fail_at && (!only || only(v)) && failed->load() < 0 && log->rows() > 0) {
      int64_t none = -1;
      if (failed->compare_exchange_strong(none, v)) throw std::runtime_error("injected failure");
    }
    return v;
  };
}

// Each committed value once; returns them as a set.
std::set<int64_t> expect_no_duplicates(const std::vector<int64_t>& rows) {
  std::set<int64_t> seen;
  for (int64_t v : rows) EXPECT_TRUE(seen.insert(v).second) << "value " << v << " was committed twice";
  return seen;
}

// Of 0 .. n - 1 (those with keep(v)), the values `seen` lacks.
std::vector<int64_t> missing(const std::set<int64_t>& seen, int64_t n,
                             const std::function<bool(int64_t)>& keep = [](int64_t) { return true; }) {
  std::vector<int64_t> out;
  for (int64_t v = 0; v < n; ++v) {
    if (keep(v) && seen.count(v) == 0) out.push_back(v);
  }
  return out;
}

// Source, map and sink chained in one task at parallelism 1: the restart
// restores the checkpoint before the failure and the source continues
// after what it had read, so what is missing from the committed output is
// one run of consecutive records, the failing one among them, exactly as
// many as counted; nothing is committed twice and the input's end is there.
TEST(AtMostOnceTest, ChainedFailureLosesExactlyWhatItCounts) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  constexpr int64_t kRecords = 100000;
  const int64_t fail_at = 20000 + static_cast<int64_t>(seed % 50000);
  testing::CommitLog<int64_t> log;
  auto failed = std::make_shared<std::atomic<int64_t>>();
  StreamEnvironment env(at_most_once_config(1, FailoverStrategy::kRegion));
  numbers(env, kRecords)
      .map(fail_once_after_a_commit(fail_at, &log, failed), "fail-once")
      .sink_to([&log] { return std::make_unique<testing::CommittingSink<int64_t>>(&log); }, "sink")
      .uid("sink");
  auto r = env.execute("at-most-once-chained");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->status, JobStatus::kFinished) << r->failure;
  ASSERT_EQ(r->restarts, 1);
  EXPECT_GT(r->checkpoints.size(), 1u);
  const std::set<int64_t> seen = expect_no_duplicates(log.all());
  const std::vector<int64_t> gap = missing(seen, kRecords);
  ASSERT_FALSE(gap.empty());
  EXPECT_EQ(gap.back() - gap.front() + 1, static_cast<int64_t>(gap.size())) << "the lost records are not one run";
  EXPECT_LE(gap.front(), failed->load());
  EXPECT_GE(gap.back(), failed->load());
  EXPECT_EQ(seen.count(kRecords - 1), 1u) << "the restart did not continue to the end";
  EXPECT_EQ(static_cast<int64_t>(seen.size()) + r->lost_records, kRecords)
      << "committed " << seen.size() << ", counted lost " << r->lost_records;
}

// Two independent pipelines (two regions): with region failover only the
// failed one restarts and loses records (the other commits all of its
// own); with full failover both restart and both may lose. Either way the
// count is exact.
TEST(AtMostOnceTest, FailoverLosesOnlyInTheRestartedRegionsAndCountsExactly) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  constexpr int64_t kRecords = 200000;  // both subtasks together: subtask s emits s, s + 2, ...
  const int64_t fail_at = 2 * (10000 + static_cast<int64_t>(seed % 40000)) + 1;
  for (FailoverStrategy failover : {FailoverStrategy::kRegion, FailoverStrategy::kFull}) {
    SCOPED_TRACE("failover " + std::string(to_string(failover)));
    testing::CommitLog<int64_t> log;
    auto failed = std::make_shared<std::atomic<int64_t>>();
    StreamEnvironment env(at_most_once_config(2, failover));
    numbers(env, kRecords)
        .map(fail_once_after_a_commit(fail_at, &log, failed, [](int64_t v) { return v % 2 == 1; }), "fail-once")
        .sink_to([&log] { return std::make_unique<testing::CommittingSink<int64_t>>(&log); }, "sink")
        .uid("sink");
    auto r = env.execute("at-most-once-regions");
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->status, JobStatus::kFinished) << r->failure;
    EXPECT_EQ(r->restarts, 1);
    const std::set<int64_t> seen = expect_no_duplicates(log.all());
    const std::vector<int64_t> odd_gap = missing(seen, kRecords, [](int64_t v) { return v % 2 == 1; });
    EXPECT_FALSE(odd_gap.empty()) << "the failed region lost nothing";
    if (failover == FailoverStrategy::kRegion) {
      EXPECT_EQ(missing(seen, kRecords, [](int64_t v) { return v % 2 == 0; }).size(), 0u)
          << "the region that did not fail lost records";
    }
    EXPECT_EQ(static_cast<int64_t>(seen.size()) + r->lost_records, kRecords)
        << "committed " << seen.size() << ", counted lost " << r->lost_records;
  }
}

// Across a network edge (the sink's region holds both sources): the records
// in flight to the failed consumer are among those the restored checkpoint
// does not hold, so the count is exact here too, and nothing repeats.
TEST(AtMostOnceTest, RecordsInFlightAcrossANetworkEdgeAreCounted) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  constexpr int64_t kRecords = 200000;
  const int64_t fail_at = 30000 + static_cast<int64_t>(seed % 100000);
  testing::CommitLog<int64_t> log;
  auto failed = std::make_shared<std::atomic<int64_t>>();
  StreamEnvironment env(at_most_once_config(2, FailoverStrategy::kRegion));
  numbers(env, kRecords)
      .rebalance()
      .map(fail_once_after_a_commit(fail_at, &log, failed), "fail-once")
      .sink_to([&log] { return std::make_unique<testing::CommittingSink<int64_t>>(&log); }, "sink")
      .uid("sink");
  auto r = env.execute("at-most-once-network");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->status, JobStatus::kFinished) << r->failure;
  EXPECT_EQ(r->restarts, 1);
  const std::set<int64_t> seen = expect_no_duplicates(log.all());
  EXPECT_EQ(seen.count(failed->load()), 0u);
  EXPECT_EQ(seen.count(kRecords - 1), 1u);
  EXPECT_EQ(seen.count(kRecords - 2), 1u);
  EXPECT_EQ(static_cast<int64_t>(seen.size()) + r->lost_records, kRecords)
      << "committed " << seen.size() << ", counted lost " << r->lost_records;
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

// Keyed state is restored with the checkpoint and agrees with the output:
// for every key the committed counts are exactly 1..n (a restart from empty
// state would count from 1 again, one that kept the lost records' effects
// would skip numbers), and the keys' n add up to the records not lost; on
// either backend.
class AtMostOnceStateTest : public ::testing::TestWithParam<StateBackendKind> {};

TEST_P(AtMostOnceStateTest, RestartedOperatorsRestoreTheLatestCheckpoint) {
  static constexpr int64_t kRecords = 100000, kKeys = 10, kFailAt = 40000;
  testing::CommitLog<int64_t> log;  // value: count * kRecords + input value
  auto failed = std::make_shared<std::atomic<int64_t>>();
  JobConfig config = at_most_once_config(1, FailoverStrategy::kRegion);
  config.state.kind = GetParam();
  StreamEnvironment env(config);
  numbers(env, kRecords)
      .map(fail_once_after_a_commit(kFailAt, &log, failed), "fail-once")
      .key_by([](const int64_t& v) { return v % kKeys; })
      .process<int64_t>([] { return std::make_unique<Counter>(kRecords); }, "count")
      .uid("count")
      .sink_to([&log] { return std::make_unique<testing::CommittingSink<int64_t>>(&log); }, "sink")
      .uid("sink");
  auto r = env.execute("at-most-once-state");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->status, JobStatus::kFinished) << r->failure;
  ASSERT_EQ(r->restarts, 1);
  std::set<int64_t> inputs;
  std::map<int64_t, std::set<int64_t>> counts;  // by key
  for (int64_t w : log.all()) {
    const int64_t v = w % kRecords, count = w / kRecords;
    EXPECT_TRUE(inputs.insert(v).second) << "input " << v << " committed twice";
    EXPECT_TRUE(counts[v % kKeys].insert(count).second) << "key " << v % kKeys << " counted " << count << " twice";
  }
  ASSERT_EQ(static_cast<int64_t>(counts.size()), kKeys);
  for (const auto& [key, c] : counts) {
    EXPECT_EQ(*c.begin(), 1) << "key " << key;
    EXPECT_EQ(*c.rbegin(), static_cast<int64_t>(c.size())) << "key " << key << ": the counts skip numbers";
  }
  EXPECT_EQ(static_cast<int64_t>(inputs.size()) + r->lost_records, kRecords)
      << "committed " << inputs.size() << ", counted lost " << r->lost_records;
}

INSTANTIATE_TEST_SUITE_P(Backends, AtMostOnceStateTest, testing::kBothBackends, testing::backend_name);

}  // namespace at_most_once_test
}  // namespace weir
