// --failover task in the embedded cluster: only the failed subtask restarts
// (its neighbours keep attempt 0), the records in flight to and from it are
// dropped and counted exactly, and the guarantee of the mode holds:
// at-most-once repeats nothing and loses only what it counts; at-least-once
// restarts the sources upstream of the failed subtask from the checkpoint
// and loses nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "testing/committing_sink.h"
#include "testing/seed.h"
#include "weir/connectors.h"
#include "weir/weir.h"

namespace weir {
namespace task_failover_test {

constexpr int64_t kRecords = 300'000;
constexpr int64_t kKeys = 64;
constexpr int64_t kScale = 1'000'000;  // counter output: count * kScale + value

// Everything a run records, shared by its operators.
struct JobRun : testing::AttemptLog {
  std::mutex mu;                                                 // guards written
  std::vector<int64_t> written;                                  // what reached the sinks
  std::atomic<bool> armed{true};                                 // the one failure is still to come
  std::string fail_stage;                                        // "source", "counter" or "sink"
  int64_t fail_after = 0;                                        // records its subtask 1 takes first
  bool after_checkpoint = false;                                 // and not before one completed
  std::atomic<bool> checkpointed{false};
  // Whether this call, the n-th record of `stage`'s subtask, must fail.
  bool fails(const std::string& stage, int subtask, int64_t n) {
    return stage == fail_stage && subtask == 1 && n >= fail_after && (!after_checkpoint || checkpointed) &&
           armed.exchange(false);
  }
};

// The generator source (positions checkpointed), noting its attempts.
class Numbers final : public Source<int64_t> {
 public:
  // Paced, so that checkpoints complete while it runs.
  explicit Numbers(JobRun* run)
      : run_(run), inner_([](int64_t i) { return i; }, kRecords, /*per_second=*/250'000) {}
  absl::Status open(OperatorContext& ctx) override {
    run_->opened("source", ctx);
    subtask_ = ctx.subtask_index();
    return inner_.open(ctx);
  }
  PollStatus poll(SourceOutput<int64_t>& out, int max_records) override {
    // Fails between two polls, after about fail_after records.
    if (run_->fails("source", subtask_, polled_)) throw std::runtime_error("injected failure");
    polled_ += max_records;
    return inner_.poll(out, max_records);
  }
  absl::Status snapshot_state(int64_t checkpoint_id) override { return inner_.snapshot_state(checkpoint_id); }
  bool bounded() const override { return true; }

 private:
  JobRun* const run_;
  GeneratorSource<int64_t> inner_;
  int subtask_ = 0;
  int64_t polled_ = 0;
};

// Counts records per key; emits count * kScale + value.
class Counter final : public KeyedProcessFunction<int64_t, int64_t, int64_t> {
 public:
  explicit Counter(JobRun* run) : run_(run) {}
  absl::Status open(KeyedRuntimeContext<int64_t>& ctx) override {
    run_->opened("counter", ctx.operator_context());
    subtask_ = ctx.operator_context().subtask_index();
    count_ = &ctx.get_state(ValueStateDescriptor<int64_t>{"count"});
    return absl::OkStatus();
  }
  void process_element(const int64_t& v, Context&, Collector<int64_t>& out) override {
    if (run_->fails("counter", subtask_, ++seen_)) throw std::runtime_error("injected failure");
    const int64_t c = count_->value_or(0) + 1;
    count_->update(c);
    out.collect(c * kScale + v);
  }

 private:
  JobRun* const run_;
  int subtask_ = 0;
  int64_t seen_ = 0;
  ValueState<int64_t>* count_ = nullptr;
};

// Writes each record at once (no transaction: what reached it is output).
class DirectSink final : public Sink<int64_t> {
 public:
  explicit DirectSink(JobRun* run) : run_(run) {}
  absl::Status open(OperatorContext& ctx) override {
    run_->opened("sink", ctx);
    subtask_ = ctx.subtask_index();
    return absl::OkStatus();
  }
  absl::Status write(const int64_t& row) override {
    if (run_->fails("sink", subtask_, ++seen_)) return absl::InternalError("injected failure");
    std::lock_guard lock(run_->mu);
    run_->written.push_back(row);
    return absl::OkStatus();
  }
  void notify_checkpoint_complete(int64_t) override { run_->checkpointed = true; }

 private:
  JobRun* const run_;
  int subtask_ = 0;
  int64_t seen_ = 0;
};

// source (2) -> key_by -> counter (2) -> rebalance -> sink (2): every edge
// crosses tasks, so every subtask can restart alone.
absl::StatusOr<JobResult> run_job(JobRun* run, CheckpointingMode mode, StateBackendKind backend) {
  JobConfig config = testing::failure_test_config(2, backend);
  config.checkpoint.mode = mode;
  config.failover = FailoverStrategy::kTask;
  StreamEnvironment env(config);
  env.from_source<int64_t>([run] { return std::make_unique<Numbers>(run); }, "numbers")
      .uid("numbers")
      .key_by([](const int64_t& v) { return v % kKeys; })
      .process<int64_t>([run] { return std::make_unique<Counter>(run); }, "count")
      .uid("count")
      .rebalance()
      .sink_to([run] { return std::make_unique<DirectSink>(run); }, "sink")
      .uid("sink");
  return env.execute("task-failover");
}

// The input values the sinks received (value = output % kScale), by count.
std::map<int64_t, int> inputs_written(JobRun& run) {
  std::lock_guard lock(run.mu);
  std::map<int64_t, int> out;
  for (int64_t row : run.written) ++out[row % kScale];
  return out;
}

struct Case {
  std::string fail_stage;
  StateBackendKind backend;
};

class TaskFailoverTest : public ::testing::TestWithParam<Case> {
 protected:
  // Runs the job in `mode`, subtask 1 of the case's stage failing once after
  // a seeded number of records (under at-least-once, only after a
  // checkpoint completed, so the restarted subtask restores one); checks it
  // finished after one restart, and that exactly the subtasks `restarted`
  // names ran a second attempt.
  JobResult run_failing(CheckpointingMode mode, const std::function<bool(const std::string&, int)>& restarted) {
    run_.fail_stage = GetParam().fail_stage;
    run_.fail_after = 20'000 + static_cast<int64_t>(seed_ % 50'000);
    run_.after_checkpoint = mode == CheckpointingMode::kAtLeastOnce;
    auto r = run_job(&run_, mode, GetParam().backend);
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return JobResult{};
    EXPECT_EQ(r->status, JobStatus::kFinished) << r->failure;
    EXPECT_EQ(r->restarts, 1);
    for (const std::string stage : {"source", "counter", "sink"}) {
      for (int s = 0; s < 2; ++s) {
        const std::set<int> want = restarted(stage, s) ? std::set<int>{0, 1} : std::set<int>{0};
        EXPECT_EQ(run_.of(stage, s), want) << stage << " subtask " << s;
      }
    }
    return *r;
  }

  const uint64_t seed_ = testing::test_seed();
  JobRun run_;
};

// Only the failed subtask restarts; nothing reaches the sinks twice, and
// every record that did not is one of those counted as dropped.
TEST_P(TaskFailoverTest, AtMostOnceRestartsOnlyTheFailedSubtaskAndCountsEveryRecordItDrops) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  JobRun& run = run_;
  const JobResult result = run_failing(CheckpointingMode::kAtMostOnce, [&](const std::string& stage, int s) {
    return stage == run.fail_stage && s == 1;
  });
  if (HasFatalFailure() || result.status != JobStatus::kFinished) return;
  const std::map<int64_t, int> written = inputs_written(run);
  for (const auto& [value, times] : written) ASSERT_EQ(times, 1) << "input " << value << " written twice";
  if (run.fail_stage == "source") {
    // A source fails between records: what it had read ahead and the
    // JobManager confirmed is lost, what it had emitted but not sent, or a
    // consumer had half received, is dropped.
    EXPECT_GE(result.lost_records, result.dropped_records);
  } else {
    // The failing record itself is among the dropped.
    EXPECT_GE(result.dropped_records, 1);
    EXPECT_EQ(result.lost_records, result.dropped_records);
  }
  EXPECT_EQ(static_cast<int64_t>(written.size()) + result.lost_records, kRecords)
      << "written " << written.size() << ", counted lost " << result.lost_records << " (dropped "
      << result.dropped_records << ")";
}

// The failed subtask and the sources upstream of it restart (from the
// checkpoint); the rest keep attempt 0, and every input reaches the sinks.
TEST_P(TaskFailoverTest, AtLeastOnceRewindsTheSourcesAndLosesNothing) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  JobRun& run = run_;
  // The failed subtask, and the sources upstream of it.
  const JobResult result = run_failing(CheckpointingMode::kAtLeastOnce, [&](const std::string& stage, int s) {
    return (stage == run.fail_stage && s == 1) || (stage == "source" && run.fail_stage != "source");
  });
  if (HasFatalFailure() || result.status != JobStatus::kFinished) return;
  if (run.fail_stage != "source") {
    EXPECT_GE(result.dropped_records, 1);
  }
  EXPECT_EQ(result.lost_records, 0);
  const std::map<int64_t, int> written = inputs_written(run);
  for (int64_t v = 0; v < kRecords; ++v) ASSERT_EQ(written.count(v), 1u) << "input " << v << " never written";
  // Every record affected the counts at least once: each key's last count
  // reaches its number of inputs (a restored counter went on from the
  // checkpoint, and the rewound sources sent everything after it again).
  std::map<int64_t, int64_t> last_count;
  {
    std::lock_guard lock(run.mu);
    for (int64_t row : run.written) {
      int64_t& c = last_count[(row % kScale) % kKeys];
      c = std::max(c, row / kScale);
    }
  }
  for (int64_t key = 0; key < kKeys; ++key) {
    const int64_t inputs = kRecords / kKeys + (key < kRecords % kKeys ? 1 : 0);
    EXPECT_GE(last_count[key], inputs) << "key " << key;
  }
}

INSTANTIATE_TEST_SUITE_P(Stages, TaskFailoverTest,
                         ::testing::Values(Case{"source", StateBackendKind::kHeap},
                                           Case{"counter", StateBackendKind::kHeap},
                                           Case{"counter", StateBackendKind::kRocksDb},
                                           Case{"sink", StateBackendKind::kHeap}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return info.param.fail_stage + "_" +
                                  (info.param.backend == StateBackendKind::kHeap ? "heap" : "rocksdb");
                         });

// Exactly-once and staged jobs refuse --failover task at build, saying why.
TEST(TaskFailoverConfigTest, ExactlyOnceAndBlockingExchangesAreRefused) {
  JobRun run;
  auto r = run_job(&run, CheckpointingMode::kExactlyOnce, StateBackendKind::kHeap);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("--failover task"), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find("exactly-once"), std::string::npos) << r.status();

  JobConfig config = testing::failure_test_config(1);
  config.checkpoint.mode = CheckpointingMode::kAtLeastOnce;
  config.failover = FailoverStrategy::kTask;
  config.exchange = ExchangeMode::kBlocking;
  StreamEnvironment env(config);
  env.from_source<int64_t>([&run] { return std::make_unique<Numbers>(&run); }, "numbers")
      .rebalance()
      .sink_to([&run] { return std::make_unique<DirectSink>(&run); }, "sink");
  auto staged = env.execute("task-failover-staged");
  ASSERT_FALSE(staged.ok());
  EXPECT_NE(staged.status().message().find("--failover region"), std::string::npos) << staged.status();
}

}  // namespace task_failover_test
}  // namespace weir
