// The JobMaster alone, against a fake TaskManager: the test plays every
// task (it reports their states, acknowledges, declines and ends their
// input) and checks what the JobMaster asks of the TaskManager in return:
// deployments, checkpoint triggers and notifications, cancellations, the
// restart of a failed region from the latest checkpoint, the final
// checkpoint and the end of the job.
#include "runtime/job_master.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "checkpoint/memory_storage.h"
#include "graph/job_graph.h"
#include "weir/connectors.h"
#include "weir/stream.h"

namespace weir::runtime {
namespace {

// Records what the JobMaster asks of the TaskManager; runs nothing.
class FakeTaskExecutor final : public TaskExecutorGateway {
 public:
  struct Call {
    std::string kind;  // submit, cancel, trigger, complete, aborted, finish, stop, confirm
    ExecutionId id;
    int64_t checkpoint_id = -1;
    TaskDeploymentDescriptor tdd;  // submit only
  };

  void submit_task(TaskDeploymentDescriptor tdd) override {
    Call c;
    c.kind = "submit";
    c.id = tdd.execution;
    c.tdd = std::move(tdd);
    record(std::move(c));
  }
  void cancel_task(const ExecutionId& id) override { record("cancel", id); }
  void trigger_checkpoint(const ExecutionId& id, int64_t cp, int64_t, bool, bool) override {
    record("trigger", id, cp);
  }
  void notify_checkpoint_complete(const ExecutionId& id, int64_t cp) override { record("complete", id, cp); }
  void notify_checkpoint_aborted(const ExecutionId& id, int64_t cp) override { record("aborted", id, cp); }
  void finish_task(const ExecutionId& id) override { record("finish", id); }
  void stop_source(const ExecutionId& id) override { record("stop", id); }
  void confirm_source_positions(const ExecutionId& id, int64_t seq) override { record("confirm", id, seq); }

  // The calls of `kind` that `match`, once there are at least `n` of them
  // (waiting up to 20 s); fewer if they do not come.
  std::vector<Call> await(const std::string& kind, size_t n,
                          const std::function<bool(const Call&)>& match = [](const Call&) { return true; }) {
    absl::MutexLock lock(&mu_);
    std::vector<Call> found;
    auto enough = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      found.clear();
      for (const Call& c : calls_) {
        if (c.kind == kind && match(c)) found.push_back(c);
      }
      return found.size() >= n;
    };
    mu_.AwaitWithTimeout(absl::Condition(&enough), absl::Seconds(20));
    return found;
  }

 private:
  void record(Call c) {
    absl::MutexLock lock(&mu_);
    calls_.push_back(std::move(c));
  }
  void record(const char* kind, const ExecutionId& id, int64_t checkpoint_id = -1) {
    Call c;
    c.kind = kind;
    c.id = id;
    c.checkpoint_id = checkpoint_id;
    record(std::move(c));
  }

  absl::Mutex mu_;
  std::vector<Call> calls_ ABSL_GUARDED_BY(mu_);
};

auto of_attempt(int attempt) {
  return [attempt](const FakeTaskExecutor::Call& c) { return c.id.attempt == attempt; };
}
auto of_checkpoint(int64_t id) {
  return [id](const FakeTaskExecutor::Call& c) { return c.checkpoint_id == id; };
}

// A source (one subtask) rebalanced to a map (two): one pipelined region of
// three tasks.
class JobMasterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StreamEnvironment env;
    auto src = env.from_source<int64_t>(
        [] { return std::make_unique<GeneratorSource<int64_t>>([](int64_t i) { return i; }, 10); });
    src.parallelism(1);
    src.rebalance().map([](const int64_t& x) { return x; }).parallelism(2);
    config_ = env.config();
    config_.checkpoint.interval = Duration(20);
    config_.restart.kind = RestartStrategyKind::kFixedDelay;
    config_.restart.max_attempts = 3;
    config_.restart.delay = Duration(1);
    auto graph = graph::build_job_graph(env.graph(), config_);
    ASSERT_TRUE(graph.ok()) << graph.status();
    graph_ = *graph;
    ASSERT_EQ(graph_->total_subtasks(), 3);
    storage_ = std::make_shared<checkpoint::MemoryCheckpointStorage>("job");
    jm_ = std::make_unique<JobMaster>("job", graph_, config_, &tm_, storage_, SystemClock::instance());
  }
  // A test that did not end its job cancels it, answering for its tasks
  // (the status is asked after the cancel, so the tasks' reports are the
  // cancellation's, not failures).
  void TearDown() override {
    if (jm_ == nullptr || ended_) return;
    jm_->cancel();
    for (const auto& e : jm_->status().executions) {
      if (!e.terminal) jm_->update_task_state(e.id, ExecutionState::kCanceled, "", false);
    }
    jm_->wait();
  }

  // Deploys every task of `attempt` (waiting for its three submissions)
  // and reports them running.
  std::vector<ExecutionId> run_attempt(int attempt) {
    std::vector<ExecutionId> ids;
    for (const auto& c : tm_.await("submit", 3, of_attempt(attempt))) ids.push_back(c.id);
    EXPECT_EQ(ids.size(), 3u) << "attempt " << attempt << " was not deployed";
    for (const auto& id : ids) jm_->update_task_state(id, ExecutionState::kRunning, "", false);
    return ids;
  }
  // The next checkpoint triggered on the source of `attempt` after `after`.
  int64_t next_trigger(int attempt, int64_t after) {
    auto triggers = tm_.await("trigger", 1, [&](const FakeTaskExecutor::Call& c) {
      return c.id.attempt == attempt && c.checkpoint_id > after;
    });
    EXPECT_FALSE(triggers.empty()) << "no checkpoint triggered after " << after;
    if (triggers.empty()) return -1;
    EXPECT_EQ(triggers[0].id.vertex, 0) << "a checkpoint is triggered at the sources";
    return triggers[0].checkpoint_id;
  }
  void ack_all(const std::vector<ExecutionId>& ids, int64_t cp) {
    for (const auto& id : ids) jm_->acknowledge_checkpoint(id, cp, checkpoint::TaskAck{});
  }

  JobConfig config_;
  std::shared_ptr<const graph::JobGraph> graph_;
  std::shared_ptr<checkpoint::MemoryCheckpointStorage> storage_;
  FakeTaskExecutor tm_;
  std::unique_ptr<JobMaster> jm_;
  bool ended_ = false;
};

TEST_F(JobMasterTest, ACheckpointAcknowledgedByEveryTaskCompletesAndEachTaskHearsIt) {
  jm_->start(std::nullopt);
  const auto ids = run_attempt(0);
  for (const auto& c : tm_.await("submit", 3, of_attempt(0))) {
    EXPECT_TRUE(c.tdd.restore_location.empty()) << "a fresh start restores nothing";
    EXPECT_EQ(c.tdd.task_index, graph_->task_index(c.id.vertex, c.id.subtask));
  }
  const int64_t cp = next_trigger(0, 0);
  ASSERT_GT(cp, 0);
  // Two of three acknowledged: not complete yet.
  jm_->acknowledge_checkpoint(ids[0], cp, checkpoint::TaskAck{});
  jm_->acknowledge_checkpoint(ids[1], cp, checkpoint::TaskAck{});
  JobMaster::Status s = jm_->status();
  EXPECT_EQ(s.checkpoint_counts.completed, 0);
  jm_->acknowledge_checkpoint(ids[2], cp, checkpoint::TaskAck{});
  EXPECT_EQ(tm_.await("complete", 3, of_checkpoint(cp)).size(), 3u) << "every task is told checkpoint " << cp
                                                                    << " completed";
  s = jm_->status();
  EXPECT_GE(s.checkpoint_counts.completed, 1);
  ASSERT_FALSE(s.checkpoints.empty());
  EXPECT_EQ(s.checkpoints.front().id, cp);
  EXPECT_EQ(s.status, JobStatus::kRunning);
}

TEST_F(JobMasterTest, ADeclinedCheckpointIsAbortedAtEveryTaskAndCounted) {
  config_.checkpoint.tolerable_failed_checkpoints = 5;
  jm_ = std::make_unique<JobMaster>("job", graph_, config_, &tm_, storage_, SystemClock::instance());
  jm_->start(std::nullopt);
  const auto ids = run_attempt(0);
  const int64_t cp = next_trigger(0, 0);
  ASSERT_GT(cp, 0);
  jm_->acknowledge_checkpoint(ids[0], cp, checkpoint::TaskAck{});
  jm_->decline_checkpoint(ids[1], cp, "no room on the disk");
  EXPECT_EQ(tm_.await("aborted", 3, of_checkpoint(cp)).size(), 3u);
  JobMaster::Status s = jm_->status();
  EXPECT_EQ(s.checkpoint_counts.completed, 0);
  EXPECT_GE(s.checkpoint_counts.failed, 1);
  EXPECT_EQ(s.status, JobStatus::kRunning) << "a tolerated checkpoint failure fails nothing";
  EXPECT_TRUE(tm_.await("cancel", 0).empty());
  // The next checkpoint completes as if nothing happened.
  const int64_t next = next_trigger(0, cp);
  ASSERT_GT(next, cp);
  ack_all(ids, next);
  EXPECT_EQ(tm_.await("complete", 3, of_checkpoint(next)).size(), 3u);
}

TEST_F(JobMasterTest, AFailedTaskRestartsItsRegionFromTheLatestCompletedCheckpoint) {
  jm_->start(std::nullopt);
  const auto first = run_attempt(0);
  const int64_t cp = next_trigger(0, 0);
  ASSERT_GT(cp, 0);
  ack_all(first, cp);
  ASSERT_EQ(tm_.await("complete", 3, of_checkpoint(cp)).size(), 3u);

  // The second map subtask fails; the other two are cancelled (one region).
  const ExecutionId failed = first[2];
  jm_->update_task_state(failed, ExecutionState::kFailed, "boom: the map threw", false);
  auto cancels = tm_.await("cancel", 2, of_attempt(0));
  ASSERT_EQ(cancels.size(), 2u);
  for (const auto& c : cancels) {
    EXPECT_FALSE(c.id == failed) << "the failed task is not cancelled again";
    jm_->update_task_state(c.id, ExecutionState::kCanceled, "", false);
  }
  // Attempt 1 of every task, each restoring checkpoint `cp` (or a later
  // one, if another completed before the failure: there was none).
  auto second = tm_.await("submit", 3, of_attempt(1));
  ASSERT_EQ(second.size(), 3u);
  for (const auto& c : second) {
    EXPECT_FALSE(c.tdd.restore_location.empty()) << c.id.to_string();
    ASSERT_NE(c.tdd.restore, nullptr) << c.id.to_string();
    EXPECT_EQ(c.tdd.restore->checkpoint_id, cp) << c.id.to_string();
  }
  JobMaster::Status s = jm_->status();
  EXPECT_EQ(s.restarts, 1);
  EXPECT_EQ(s.attempt, 1);
  ASSERT_FALSE(s.failures.empty());
  EXPECT_NE(s.failures.back().cause.find("boom: the map threw"), std::string::npos) << s.failures.back().cause;
  EXPECT_EQ(s.last_restored_id, cp);
  // Reports of the old attempt change nothing now.
  jm_->update_task_state(first[0], ExecutionState::kFailed, "late news", false);
  run_attempt(1);
  const int64_t after = next_trigger(1, cp);
  EXPECT_GT(after, cp) << "checkpoint ids go on rising across attempts";
  EXPECT_EQ(jm_->status().restarts, 1);
}

TEST_F(JobMasterTest, WhenTheSourcesEndAFinalCheckpointEndsTheJob) {
  jm_->start(std::nullopt);
  const auto ids = run_attempt(0);
  for (const auto& id : ids) jm_->end_of_data(id);
  // The final checkpoint: triggered at the source like any other (a
  // periodic one may come first; those complete too).
  int64_t cp = 0;
  std::vector<FakeTaskExecutor::Call> finishes;
  for (int round = 0; round < 50 && finishes.empty(); ++round) {
    cp = next_trigger(0, cp);
    ASSERT_GT(cp, 0);
    ack_all(ids, cp);
    ASSERT_EQ(tm_.await("complete", 3, of_checkpoint(cp)).size(), 3u);
    finishes = tm_.await("finish", 3);
    if (finishes.size() < 3) finishes.clear();
  }
  ASSERT_EQ(finishes.size(), 3u) << "the tasks were never told to finish";
  for (const auto& id : ids) jm_->update_task_state(id, ExecutionState::kFinished, "", false);
  JobResult r = jm_->wait();
  ended_ = true;
  EXPECT_EQ(r.status, JobStatus::kFinished) << r.failure;
  EXPECT_EQ(r.restarts, 0);
  ASSERT_FALSE(r.checkpoints.empty());
  EXPECT_TRUE(r.checkpoints.back().is_final);
}

TEST_F(JobMasterTest, ATaskFailingBeyondTheRestartStrategyFailsTheJobNamingTheCause) {
  config_.restart.max_attempts = 1;
  jm_ = std::make_unique<JobMaster>("job", graph_, config_, &tm_, storage_, SystemClock::instance());
  jm_->start(std::nullopt);
  for (int attempt = 0; attempt <= 1; ++attempt) {
    const auto ids = run_attempt(attempt);
    ASSERT_EQ(ids.size(), 3u);
    jm_->update_task_state(ids[0], ExecutionState::kFailed, "disk on fire", false);
    for (const auto& c : tm_.await("cancel", 2, of_attempt(attempt))) {
      jm_->update_task_state(c.id, ExecutionState::kCanceled, "", false);
    }
  }
  JobResult r = jm_->wait();
  ended_ = true;
  EXPECT_EQ(r.status, JobStatus::kFailed);
  EXPECT_EQ(r.restarts, 1);
  EXPECT_NE(r.failure.find("disk on fire"), std::string::npos) << r.failure;
  EXPECT_TRUE(tm_.await("submit", 0, of_attempt(2)).empty()) << "no third attempt";
}

// At-most-once: each restart counts as lost the records the source was
// confirmed after the restored checkpoint's snapshot (what the source had
// emitted when it took it, in its acknowledgement), each record once even
// when two restarts restore the same checkpoint.
TEST_F(JobMasterTest, AtMostOnceCountsTheRecordsReadAfterTheRestoredCheckpointOnceEach) {
  config_.checkpoint.mode = CheckpointingMode::kAtMostOnce;
  config_.restart.max_attempts = 5;
  jm_ = std::make_unique<JobMaster>("job", graph_, config_, &tm_, storage_, SystemClock::instance());
  jm_->start(std::nullopt);
  auto source_of = [](const std::vector<ExecutionId>& ids) {
    for (const auto& id : ids) {
      if (id.vertex == 0) return id;
    }
    ADD_FAILURE() << "no source among the tasks";
    return ExecutionId{};
  };
  // A batch of `records` confirmed to `source`.
  auto confirm = [&](const ExecutionId& source, int64_t seq, int64_t records) {
    SourcePositions p;
    p.seq = seq;
    p.records = records;
    jm_->report_source_positions(source, std::move(p));
    EXPECT_EQ(tm_.await("confirm", 1, [&](const FakeTaskExecutor::Call& c) {
                  return c.id == source && c.checkpoint_id == seq;
                }).size(), 1u);
  };
  // Every task acknowledges `cp`, the source having emitted `emitted`.
  auto complete = [&](const std::vector<ExecutionId>& ids, int64_t cp, int64_t emitted) {
    for (const auto& id : ids) {
      checkpoint::TaskAck ack;
      if (id.vertex == 0) ack.source_records = emitted;
      jm_->acknowledge_checkpoint(id, cp, std::move(ack));
    }
    EXPECT_EQ(tm_.await("complete", 3, of_checkpoint(cp)).size(), 3u);
  };
  // A map subtask fails; the region restarts as attempt `attempt` + 1.
  auto fail = [&](const std::vector<ExecutionId>& ids, int attempt) {
    jm_->update_task_state(ids[0].vertex == 0 ? ids[1] : ids[0], ExecutionState::kFailed, "injected", false);
    for (const auto& c : tm_.await("cancel", 2, of_attempt(attempt))) {
      jm_->update_task_state(c.id, ExecutionState::kCanceled, "", false);
    }
    return run_attempt(attempt + 1);
  };

  auto ids = run_attempt(0);
  confirm(source_of(ids), 1, 100);
  confirm(source_of(ids), 2, 50);
  const int64_t cp = next_trigger(0, 0);
  ASSERT_GT(cp, 0);
  complete(ids, cp, 100);  // the second batch still read ahead
  confirm(source_of(ids), 3, 70);
  ids = fail(ids, 0);
  EXPECT_EQ(jm_->status().lost_records, 50 + 70);
  // Again from the same checkpoint: only what came since counts.
  confirm(source_of(ids), 1, 30);
  ids = fail(ids, 1);
  EXPECT_EQ(jm_->status().lost_records, 120 + 30);
  // A newer checkpoint, taken when this attempt had emitted 40.
  confirm(source_of(ids), 1, 40);
  const int64_t next = next_trigger(2, cp);
  ASSERT_GT(next, cp);
  complete(ids, next, 40);
  confirm(source_of(ids), 2, 60);
  fail(ids, 2);
  const JobMaster::Status s = jm_->status();
  EXPECT_EQ(s.lost_records, 150 + 60);
  EXPECT_EQ(s.restarts, 3);
  EXPECT_EQ(s.last_restored_id, next);
}

}  // namespace
}  // namespace weir::runtime
