// Blocking and persisted exchanges in the embedded cluster: a job whose
// network edges are blocking runs in stages (each deployed once the stages
// it reads finished); a failed task re-reads its input files and nothing
// upstream runs again; a producer whose files are gone runs again, and only
// it. Which subtasks ran again is visible in their attempt numbers; the
// output is exactly once in every case.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "testing/committing_sink.h"
#include "weir/connectors.h"
#include "weir/weir.h"

namespace weir {
namespace exchange_test {

namespace fs = std::filesystem;

constexpr int64_t kRecords = 40'000;
constexpr int64_t kKeys = 100;
constexpr int64_t kScale = 1'000'000;  // output = count * kScale + value

// Everything a run records, shared by its operators.
struct StageRun : testing::AttemptLog {
  std::atomic<int64_t> emitted{0};    // by the sources, over all attempts
  std::atomic<int64_t> counted{0};    // records the counters processed, over all attempts
  std::atomic<bool> counter_overlapped{false};  // a counter ran while a source still emitted
  std::atomic<bool> sink_overlapped{false};     // a sink ran while a counter still counted
  std::atomic<bool> fail_sink{false};           // sink subtask 0, attempt 0, after 1000 rows
  std::string delete_results_of;                // file name prefix removed when the sink fails
  std::string result_directory;
  JobControl* control = nullptr;                // asked for a savepoint by the first counted record
  std::string savepoint_dir;
  testing::CommitLog<int64_t> log;
};

// Subtask s of p emits s, s + p, ... below kRecords.
class Numbers final : public Source<int64_t> {
 public:
  explicit Numbers(StageRun* run) : run_(run) {}
  absl::Status open(OperatorContext& ctx) override {
    run_->opened("source", ctx);
    next_ = ctx.subtask_index();
    step_ = ctx.parallelism();
    return absl::OkStatus();
  }
  PollStatus poll(SourceOutput<int64_t>& out, int max_records) override {
    for (int i = 0; i < max_records; ++i) {
      if (next_ >= kRecords) return PollStatus::kEndOfInput;
      out.collect(next_);
      next_ += step_;
      run_->emitted.fetch_add(1);
    }
    return PollStatus::kMore;
  }
  bool bounded() const override { return true; }

 private:
  StageRun* const run_;
  int64_t next_ = 0, step_ = 1;
};

// Counts records per key; emits count * kScale + value.
class Counter final : public KeyedProcessFunction<int64_t, int64_t, int64_t> {
 public:
  explicit Counter(StageRun* run) : run_(run) {}
  absl::Status open(KeyedRuntimeContext<int64_t>& ctx) override {
    run_->opened("counter", ctx.operator_context());
    count_ = &ctx.get_state(ValueStateDescriptor<int64_t>{"count"});
    return absl::OkStatus();
  }
  void process_element(const int64_t& v, Context&, Collector<int64_t>& out) override {
    if (run_->emitted.load() < kRecords) run_->counter_overlapped = true;
    if (run_->control != nullptr && run_->counted.load() == 0) run_->control->trigger_savepoint(run_->savepoint_dir);
    const int64_t c = count_->value_or(0) + 1;
    count_->update(c);
    run_->counted.fetch_add(1);
    out.collect(c * kScale + v);
  }

 private:
  StageRun* const run_;
  ValueState<int64_t>* count_ = nullptr;
};

// Commits at the checkpoint its stage's end stands for; sink subtask 0 of
// attempt 0 fails after 1000 rows when asked (and then removes the result
// files named by delete_results_of, as if their disk was lost).
class StageSink final : public Sink<int64_t> {
 public:
  explicit StageSink(StageRun* run) : run_(run) {}
  absl::Status open(OperatorContext& ctx) override {
    run_->opened("sink", ctx);
    subtask_ = ctx.subtask_index();
    fail_ = run_->fail_sink && subtask_ == 0 && ctx.attempt() == 0;
    return absl::OkStatus();
  }
  absl::Status write(const int64_t& row) override {
    if (run_->counted.load() < kRecords) run_->sink_overlapped = true;
    rows_.push_back(row);
    if (fail_ && rows_.size() == 1000) {
      if (!run_->delete_results_of.empty()) {
        for (const auto& f : fs::recursive_directory_iterator(run_->result_directory)) {
          if (f.path().filename().string().rfind(run_->delete_results_of, 0) == 0) fs::remove(f.path());
        }
      }
      return absl::InternalError("injected failure");
    }
    return absl::OkStatus();
  }
  absl::Status snapshot_state(int64_t checkpoint) override {
    checkpoint_ = checkpoint;
    return absl::OkStatus();
  }
  void notify_checkpoint_complete(int64_t checkpoint) override {
    if (checkpoint == checkpoint_) run_->log.commit(subtask_, checkpoint, std::move(rows_));
    rows_.clear();
  }

 private:
  StageRun* const run_;
  int subtask_ = 0;
  bool fail_ = false;
  int64_t checkpoint_ = -1;
  std::vector<int64_t> rows_;
};

// numbers (2) --hash--> counter (2) --rebalance--> sink (2): three stages
// when the exchange is blocking, each subtask a region of its own.
// `to_sink`, when given, is the exchange of the last edge alone.
absl::StatusOr<JobResult> run_job(StageRun* run, const JobConfig& config,
                                  std::optional<ExchangeMode> to_sink = std::nullopt) {
  StreamEnvironment env(config);
  auto counted = env.from_source<int64_t>([run] { return std::make_unique<Numbers>(run); }, "numbers")
                     .uid("numbers")
                     .key_by([](const int64_t& v) { return v % kKeys; })
                     .process<int64_t>([run] { return std::make_unique<Counter>(run); }, "counter")
                     .uid("counter");
  (to_sink ? counted.exchange(*to_sink) : counted)
      .rebalance()
      .sink_to([run] { return std::make_unique<StageSink>(run); }, "sink")
      .uid("sink");
  return env.execute("exchange-test", run->control);
}

// Every value exactly once, and each key's counts exactly 1..n.
void expect_exact_output(const std::vector<int64_t>& rows) {
  ASSERT_EQ(static_cast<int64_t>(rows.size()), kRecords);
  std::set<int64_t> values;
  std::map<int64_t, std::set<int64_t>> counts;  // by key
  for (int64_t r : rows) {
    const int64_t v = r % kScale;
    EXPECT_TRUE(values.insert(v).second) << "value " << v << " twice";
    EXPECT_TRUE(counts[v % kKeys].insert(r / kScale).second) << "count " << r / kScale << " twice for key " << v % kKeys;
  }
  ASSERT_EQ(static_cast<int64_t>(counts.size()), kKeys);
  for (const auto& [key, cs] : counts) {
    EXPECT_EQ(*cs.begin(), 1) << "key " << key;
    EXPECT_EQ(*cs.rbegin(), static_cast<int64_t>(cs.size())) << "key " << key;
  }
}

class ExchangeTest : public ::testing::TestWithParam<StateBackendKind> {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("weir-exchange-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    for (char& c : dir_) {
      if (c == '/' && &c > dir_.data() + fs::temp_directory_path().string().size()) c = '_';
    }
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  JobConfig config(ExchangeMode exchange) {
    JobConfig c = testing::failure_test_config(2, GetParam());
    c.checkpoint.mode = CheckpointingMode::kNone;
    c.exchange = exchange;
    c.result_directory = dir_ + "/results";
    if (exchange == ExchangeMode::kPersisted) c.checkpoint.directory = dir_ + "/checkpoints";
    return c;
  }
  std::string results_of(ExchangeMode exchange) {
    return exchange == ExchangeMode::kPersisted ? dir_ + "/checkpoints/results" : dir_ + "/results";
  }

  std::string dir_;
};

TEST_P(ExchangeTest, BlockingStagesRunOneAfterAnotherWithTheSameResultAsPipelined) {
  for (ExchangeMode exchange : {ExchangeMode::kPipelined, ExchangeMode::kBlocking, ExchangeMode::kPersisted}) {
    SCOPED_TRACE(std::string(to_string(exchange)));
    StageRun run;
    auto result = run_job(&run, config(exchange));
    ASSERT_TRUE(result.ok()) << result.status();
    const JobResult& r = *result;
    ASSERT_EQ(r.status, JobStatus::kFinished) << r.failure;
    EXPECT_EQ(r.restarts, 0);
    expect_exact_output(run.log.all());
    if (exchange != ExchangeMode::kPipelined) {
      EXPECT_FALSE(run.counter_overlapped) << "a counter ran before every source finished";
      EXPECT_FALSE(run.sink_overlapped) << "a sink ran before every counter finished";
      EXPECT_TRUE(r.checkpoints.empty()) << "a staged job took a checkpoint";
      EXPECT_FALSE(fs::exists(results_of(exchange) + "/" + r.job_id)) << "result files left behind";
    }
  }
}

TEST_P(ExchangeTest, AFailedLastStageTaskRereadsItsInputAndNothingElseRunsAgain) {
  for (ExchangeMode exchange : {ExchangeMode::kBlocking, ExchangeMode::kPersisted}) {
    SCOPED_TRACE(std::string(to_string(exchange)));
    StageRun run;
    run.fail_sink = true;
    auto result = run_job(&run, config(exchange));
    ASSERT_TRUE(result.ok()) << result.status();
    const JobResult& r = *result;
    ASSERT_EQ(r.status, JobStatus::kFinished) << r.failure;
    EXPECT_EQ(r.restarts, 1);
    expect_exact_output(run.log.all());
    EXPECT_EQ(run.of("sink", 0), (std::set<int>{0, 1}));
    EXPECT_EQ(run.of("sink", 1), std::set<int>{0}) << "the other sink subtask is a region of its own";
    for (int s : {0, 1}) {
      EXPECT_EQ(run.of("source", s), std::set<int>{0}) << "source " << s << " ran again";
      EXPECT_EQ(run.of("counter", s), std::set<int>{0}) << "counter " << s << " ran again";
    }
    EXPECT_EQ(run.emitted.load(), kRecords);
    EXPECT_EQ(run.counted.load(), kRecords);
  }
}

// The counter subtask 0's result files vanish while the sink reads them:
// that counter runs again (re-reading the sources' files), then the sink;
// the sources and the other counter keep attempt 0.
TEST_P(ExchangeTest, AProducerWhoseResultsAreGoneRunsAgainAndOnlyIt) {
  for (ExchangeMode exchange : {ExchangeMode::kBlocking, ExchangeMode::kPersisted}) {
    SCOPED_TRACE(std::string(to_string(exchange)));
    StageRun run;
    run.fail_sink = true;
    run.delete_results_of = "e1-p0-";  // job edge 1: counter -> sink; producer 0
    run.result_directory = results_of(exchange);
    auto result = run_job(&run, config(exchange));
    ASSERT_TRUE(result.ok()) << result.status();
    const JobResult& r = *result;
    ASSERT_EQ(r.status, JobStatus::kFinished) << r.failure;
    expect_exact_output(run.log.all());
    EXPECT_EQ(run.of("counter", 0), (std::set<int>{0, 1}));
    EXPECT_EQ(run.of("counter", 1), std::set<int>{0});
    EXPECT_EQ(run.of("source", 0), std::set<int>{0});
    EXPECT_EQ(run.of("source", 1), std::set<int>{0});
    EXPECT_EQ(run.of("sink", 0), (std::set<int>{0, 1}));
    // Sink subtask 1 read counter 0's files before they went; it may have
    // finished already or fail on the missing file and run again.
    EXPECT_EQ(run.emitted.load(), kRecords);
  }
}

TEST_P(ExchangeTest, FullFailoverRunsEveryStageAgainInOrder) {
  StageRun run;
  run.fail_sink = true;
  JobConfig c = config(ExchangeMode::kBlocking);
  c.failover = FailoverStrategy::kFull;
  auto result = run_job(&run, c);
  ASSERT_TRUE(result.ok()) << result.status();
  const JobResult& r = *result;
  ASSERT_EQ(r.status, JobStatus::kFinished) << r.failure;
  expect_exact_output(run.log.all());
  for (int s : {0, 1}) {
    EXPECT_EQ(run.of("source", s), (std::set<int>{0, 1})) << "source " << s;
    EXPECT_EQ(run.of("counter", s), (std::set<int>{0, 1})) << "counter " << s;
  }
  EXPECT_EQ(run.emitted.load(), 2 * kRecords);
}

// Batch execution makes the (default pipelined) exchange blocking: stages,
// no checkpoints, a failed task re-runs alone.
TEST_P(ExchangeTest, BatchRuntimeModeRunsInStages) {
  StageRun run;
  run.fail_sink = true;
  JobConfig c = config(ExchangeMode::kPipelined);
  c.runtime_mode = RuntimeMode::kBatch;
  c.checkpoint.mode = CheckpointingMode::kExactlyOnce;  // ignored: a staged job takes no checkpoints
  auto result = run_job(&run, c);
  ASSERT_TRUE(result.ok()) << result.status();
  const JobResult& r = *result;
  ASSERT_EQ(r.status, JobStatus::kFinished) << r.failure;
  expect_exact_output(run.log.all());
  EXPECT_FALSE(run.counter_overlapped);
  EXPECT_FALSE(run.sink_overlapped);
  EXPECT_TRUE(r.checkpoints.empty());
  EXPECT_EQ(run.of("sink", 0), (std::set<int>{0, 1}));
  EXPECT_EQ(run.of("counter", 0), std::set<int>{0});
  EXPECT_EQ(run.emitted.load(), kRecords);
}

// A savepoint asked of a running staged job is refused (its stages' results
// are its recovery points); the job runs on to the same output.
TEST_P(ExchangeTest, AStagedJobRefusesSavepoints) {
  StageRun run;
  JobControl control;
  run.control = &control;
  run.savepoint_dir = dir_ + "/savepoints";
  JobConfig c = config(ExchangeMode::kPipelined);
  c.runtime_mode = RuntimeMode::kBatch;
  auto result = run_job(&run, c);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->status, JobStatus::kFinished) << result->failure;
  expect_exact_output(run.log.all());
  ASSERT_GE(result->savepoints.size(), 1u);
  for (const SavepointResult& sp : result->savepoints) {
    EXPECT_NE(sp.error.find("a job with blocking or persisted exchanges takes no savepoints"), std::string::npos) << sp.error;
  }
  EXPECT_FALSE(fs::exists(run.savepoint_dir));
}

// One edge chosen blocking in a pipelined job: sources and counters run
// together (one region, joined by the pipelined hash edge), the sinks after
// them; a failed sink re-runs alone.
TEST_P(ExchangeTest, OneBlockingEdgeInAPipelinedJob) {
  StageRun run;
  run.fail_sink = true;
  auto result = run_job(&run, config(ExchangeMode::kPipelined), ExchangeMode::kBlocking);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->status, JobStatus::kFinished) << result->failure;
  expect_exact_output(run.log.all());
  EXPECT_FALSE(run.sink_overlapped) << "a sink ran before every counter finished";
  EXPECT_EQ(run.of("sink", 0), (std::set<int>{0, 1}));
  EXPECT_EQ(run.of("sink", 1), std::set<int>{0});
  for (int s : {0, 1}) {
    EXPECT_EQ(run.of("source", s), std::set<int>{0});
    EXPECT_EQ(run.of("counter", s), std::set<int>{0});
  }
  EXPECT_FALSE(fs::exists(results_of(ExchangeMode::kBlocking) + "/" + result->job_id));
}

INSTANTIATE_TEST_SUITE_P(Backends, ExchangeTest, testing::kBothBackends, testing::backend_name);

TEST(ExchangeConfigTest, BatchRefusesAnUnboundedSourceNamingIt) {
  JobConfig c = testing::failure_test_config(1);
  c.runtime_mode = RuntimeMode::kBatch;
  StreamEnvironment env(c);
  testing::CollectingSink<int64_t>::Rows rows;
  env.from_source<int64_t>(
         [] { return std::make_unique<GeneratorSource<int64_t>>([](int64_t i) { return i; }, /*count=*/-1); },
         "endless")
      .sink_to([&rows] { return std::make_unique<testing::CollectingSink<int64_t>>(&rows); });
  auto r = env.execute("batch-unbounded");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "runtime mode batch needs bounded sources; source 'endless' is unbounded");
  EXPECT_FALSE(parse_runtime_mode("bulk").ok());
}

TEST(ExchangeConfigTest, StagedJobsRefuseAtMostOnceAndPersistedNeedsACheckpointDirectory) {
  StageRun run;
  JobConfig c = testing::failure_test_config(2);
  c.exchange = ExchangeMode::kBlocking;
  c.checkpoint.mode = CheckpointingMode::kAtMostOnce;
  auto r = run_job(&run, c);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("exchange blocking cannot run at-most-once"), std::string::npos) << r.status();
  c.checkpoint.mode = CheckpointingMode::kNone;
  c.exchange = ExchangeMode::kPersisted;
  r = run_job(&run, c);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("set --checkpoint-dir"), std::string::npos) << r.status();
  EXPECT_EQ(run.emitted.load(), 0);
  EXPECT_FALSE(parse_exchange_mode("blocked").ok());
  EXPECT_EQ(*parse_exchange_mode("persisted"), ExchangeMode::kPersisted);
}

}  // namespace exchange_test
}  // namespace weir
