// Tasks on their own in a TaskManager, reporting to a recording JobMaster:
// a chain that cannot be built (an output channel to another process cannot
// connect) fails cleanly and says why; phases follow one another in order;
// processing time is the injected clock; a checkpoint's asynchronous part
// outlives a cancelled task and holds a finishing one back; and a barrier
// of a checkpoint that ended before the attempt started blocks nothing.
#include "runtime/task.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "checkpoint/storage.h"
#include "checkpoint/memory_storage.h"
#include "common/test_points.h"
#include "graph/job_graph.h"
#include "network/buffer_pool.h"
#include "network/data_plane.h"
#include "runtime/task_manager.h"
#include "testing/committing_sink.h"
#include "weir/connectors.h"
#include "weir/stream.h"

namespace weir::runtime {
namespace {

using namespace std::chrono_literals;

// Records the task states a TaskManager reports.
class RecordingJobMaster final : public JobMasterGateway {
 public:
  void update_task_state(const ExecutionId& id, ExecutionState state, const std::string& error, bool) override {
    absl::MutexLock lock(&mu_);
    states_.push_back({id, state, error});
  }
  void acknowledge_checkpoint(const ExecutionId& id, int64_t checkpoint_id, checkpoint::TaskAck ack) override {
    absl::MutexLock lock(&mu_);
    acks_.push_back({id, checkpoint_id, std::move(ack)});
  }
  void decline_checkpoint(const ExecutionId&, int64_t, const std::string&) override {}
  void report_source_positions(const ExecutionId&, SourcePositions) override {}
  void report_dropped_records(const ExecutionId&, int64_t) override {}
  void end_of_data(const ExecutionId&) override {
    absl::MutexLock lock(&mu_);
    ++ended_inputs_;
  }
  // Whether `n` tasks reported the end of their input within `deadline`.
  bool wait_for_end_of_data(int n, absl::Duration deadline) {
    absl::MutexLock lock(&mu_);
    auto reached = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return ended_inputs_ >= n; };
    return mu_.AwaitWithTimeout(absl::Condition(&reached), deadline);
  }

  struct Ack {
    ExecutionId id;
    int64_t checkpoint_id;
    checkpoint::TaskAck ack;
  };
  // The first acknowledgement, waiting up to `deadline`.
  std::optional<Ack> first_ack(absl::Duration deadline) {
    return first_of(&RecordingJobMaster::acks_, [](const Ack&) { return true; }, deadline);
  }

  struct Report {
    ExecutionId id;
    ExecutionState state;
    std::string error;
  };
  // The first report other than kRunning, waiting up to `deadline`.
  std::optional<Report> final_report(absl::Duration deadline) {
    return first_of(&RecordingJobMaster::states_, [](const Report& r) { return r.state != ExecutionState::kRunning; }, deadline);
  }

 private:
  // The first element of the member `list` that satisfies `match`, waiting
  // up to `deadline` for one.
  template <typename T, typename Match>
  std::optional<T> first_of(std::vector<T> RecordingJobMaster::*member, Match match, absl::Duration deadline) {
    absl::MutexLock lock(&mu_);
    const std::vector<T>& list = this->*member;
    auto find = [&]() -> const T* {
      for (const T& e : list) {
        if (match(e)) return &e;
      }
      return nullptr;
    };
    auto found = [&find]() { return find() != nullptr; };
    mu_.AwaitWithTimeout(absl::Condition(&found), deadline);
    const T* e = find();
    return e ? std::optional<T>(*e) : std::nullopt;
  }

  absl::Mutex mu_;
  std::vector<Report> states_ ABSL_GUARDED_BY(mu_);
  int ended_inputs_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<Ack> acks_ ABSL_GUARDED_BY(mu_);
};

// The context of job "job" reporting to `jm`.
TaskManager::JobContext job_context(const std::shared_ptr<const graph::JobGraph>& graph, const JobConfig& config,
                                    RecordingJobMaster* jm) {
  TaskManager::JobContext ctx;
  ctx.graph = graph;
  ctx.job_master = jm;
  ctx.config = config;
  return ctx;
}

TEST(TaskTest, OutputChannelThatCannotConnectFailsTheTaskWithItsCause) {
  StreamEnvironment env;
  auto src = env.from_source<int64_t>(
      [] { return std::make_unique<GeneratorSource<int64_t>>([](int64_t i) { return i; }, 1000); });
  src.parallelism(1);
  src.rebalance().map([](const int64_t& x) { return x; }).parallelism(2);
  auto graph = graph::build_job_graph(env.graph(), env.config());
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ((*graph)->vertices.size(), 2u);

  network::NetworkBufferPool pool(64, 4096);
  network::DataPlane plane("secret", &pool, 4);
  ASSERT_TRUE(plane.listen("127.0.0.1", 0).ok());
  TaskManager tm(&pool, &plane, 1);
  RecordingJobMaster jm;
  tm.register_job("job", job_context(*graph, env.config(), &jm));

  // The source runs here; map subtask 0 on a process whose data port has
  // nothing listening (port 1 on loopback refuses), map subtask 1 here.
  auto locations = std::make_shared<std::vector<std::string>>((*graph)->total_subtasks(), plane.address());
  (*locations)[(*graph)->task_index(1, 0)] = "127.0.0.1:1";
  TaskDeploymentDescriptor tdd;
  tdd.job_id = "job";
  tdd.execution = ExecutionId{0, 0, 0};
  tdd.task_index = (*graph)->task_index(0, 0);
  tdd.task_locations = locations;
  tdd.location = plane.address();
  tm.submit_task(tdd);

  auto report = jm.final_report(absl::Seconds(30));
  ASSERT_TRUE(report.has_value()) << "the task reported no end within 30 s";
  EXPECT_EQ(report->state, ExecutionState::kFailed);
  EXPECT_NE(report->error.find("127.0.0.1:1"), std::string::npos) << report->error;
  tm.unregister_job("job");
}

// The last checkpoint RemindLater was told of: the task thread has handled
// that mail (and looked at its timers right after).
std::atomic<int64_t> g_notified_checkpoint{0};

TEST(TaskTest, PhasesFollowOneAnotherInOrderAndAnyPhaseMayClose) {
  using P = TaskPhase;
  const std::vector<P> all = {P::kCreated, P::kInitializing, P::kRunning, P::kInputEnded, P::kFinishing, P::kClosed};
  const std::set<std::pair<P, P>> allowed = {
      {P::kCreated, P::kInitializing},   {P::kInitializing, P::kRunning}, {P::kRunning, P::kInputEnded},
      {P::kRunning, P::kFinishing},      {P::kInputEnded, P::kFinishing}, {P::kCreated, P::kClosed},
      {P::kInitializing, P::kClosed},    {P::kRunning, P::kClosed},       {P::kInputEnded, P::kClosed},
      {P::kFinishing, P::kClosed}};
  for (P from : all) {
    for (P to : all) {
      EXPECT_EQ(task_phase_may_follow(from, to), allowed.count({from, to}) == 1)
          << to_string(from) << " -> " << to_string(to);
    }
  }
}

// Emits (key, time) when a processing-time timer set 1 s after the record
// fires.
class RemindLater final : public KeyedProcessFunction<int64_t, int64_t, std::pair<int64_t, int64_t>> {
 public:
  void notify_checkpoint_complete(int64_t id) override { g_notified_checkpoint = id; }
  void process_element(const int64_t& key, Context& ctx, Collector<std::pair<int64_t, int64_t>>&) override {
    ctx.timer_service().register_processing_time_timer(ctx.timer_service().current_processing_time() + 1000);
  }
  void on_timer(int64_t at, OnTimerContext& ctx, Collector<std::pair<int64_t, int64_t>>& out) override {
    out.collect({ctx.current_key(), at});
  }
};

// A task's processing time is the injected clock: a timer fires when that
// clock passes it, not when the machine's does.
TEST(TaskTest, ProcessingTimeIsTheInjectedClock) {
  ManualClock clock(5'000'000);
  testing::CollectingSink<std::pair<int64_t, int64_t>>::Rows rows;
  StreamEnvironment env;
  env.from_source<int64_t>([] { return std::make_unique<GeneratorSource<int64_t>>([](int64_t i) { return i % 3; }, 30); })
      .parallelism(1)
      .key_by([](const int64_t& k) { return k; })
      .process<std::pair<int64_t, int64_t>>([] { return std::make_unique<RemindLater>(); })
      .parallelism(1)
      .sink_to([&rows] { return std::make_unique<testing::CollectingSink<std::pair<int64_t, int64_t>>>(&rows); });
  auto graph = graph::build_job_graph(env.graph(), env.config());
  ASSERT_TRUE(graph.ok()) << graph.status();

  TaskManager tm(env.config().network, 1);
  RecordingJobMaster jm;
  TaskManager::JobContext ctx = job_context(*graph, env.config(), &jm);
  ctx.clock = &clock;
  tm.register_job("job", std::move(ctx));
  for (const auto& v : (*graph)->vertices) {
    TaskDeploymentDescriptor tdd;
    tdd.job_id = "job";
    tdd.execution = ExecutionId{v.id, 0, 0};
    tdd.task_index = (*graph)->task_index(v.id, 0);
    tdd.key_groups = KeyGroupRange{0, (*graph)->max_parallelism};
    tm.submit_task(tdd);
  }
  auto fired = [&] {
    std::lock_guard lock(rows.mu);
    return rows.rows;
  };
  // Mail to the keyed task, handled once the function saw it: the task has
  // run its due timers after the mail before it takes the next one.
  const ExecutionId keyed{1, 0, 0};
  auto handled = [&](int64_t id) {
    tm.notify_checkpoint_complete(keyed, id);
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (g_notified_checkpoint < id && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    return g_notified_checkpoint >= id;
  };
  g_notified_checkpoint = 0;
  // Every record is in (both tasks saw the end of their input) while the
  // manual clock stands still: nothing fires, however long that takes.
  ASSERT_TRUE(jm.wait_for_end_of_data(2, absl::Seconds(30)));
  clock.advance(999);
  ASSERT_TRUE(handled(1));
  ASSERT_TRUE(handled(2));  // the timers were looked at after mail 1
  EXPECT_TRUE(fired().empty()) << "a timer fired before its time";
  clock.advance(1);
  ASSERT_TRUE(handled(3));
  ASSERT_TRUE(handled(4));
  auto got = fired();
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<std::pair<int64_t, int64_t>>{{0, 5'001'000}, {1, 5'001'000}, {2, 5'001'000}}));
  for (const auto& v : (*graph)->vertices) tm.finish_task(ExecutionId{v.id, 0, 0});
  tm.unregister_job("job");
}

class DropSink final : public Sink<int64_t> {
 public:
  absl::Status open(OperatorContext&) override { return absl::OkStatus(); }
  absl::Status write(const int64_t&) override { return absl::OkStatus(); }
};

// One job of a single task, `source` chained to a sink that drops what it
// gets, in a TaskManager of its own, its checkpoints in memory, its reports
// recorded.
class SingleTaskJob {
 public:
  // Builds the graph and deploys the task; ok() says whether it could.
  explicit SingleTaskJob(SourceFactory<int64_t> source)
      : tm_(StreamEnvironment().config().network, 1) {
    StreamEnvironment env;
    env.from_source<int64_t>(std::move(source))
        .parallelism(1)
        .sink_to([] { return std::make_unique<DropSink>(); })
        .parallelism(1);
    auto graph = graph::build_job_graph(env.graph(), env.config());
    if (!graph.ok() || (*graph)->vertices.size() != 1) return;  // source and sink chained, or not ok()
    TaskManager::JobContext ctx = job_context(*graph, env.config(), &jm);
    ctx.storage = storage;
    tm_.register_job("job", std::move(ctx));
    registered_ = true;
    TaskDeploymentDescriptor tdd;
    tdd.job_id = "job";
    tdd.execution = id;
    tdd.task_index = (*graph)->task_index(0, 0);
    tm_.submit_task(tdd);
  }
  ~SingleTaskJob() {
    if (registered_) tm_.unregister_job("job");
  }
  bool ok() const { return registered_; }
  TaskManager& tm() { return tm_; }

  const ExecutionId id{0, 0, 0};
  const std::shared_ptr<checkpoint::MemoryCheckpointStorage> storage =
      std::make_shared<checkpoint::MemoryCheckpointStorage>("job");
  RecordingJobMaster jm;

 private:
  TaskManager tm_;
  bool registered_ = false;
};

// The asynchronous part of a checkpoint outlives its task: held back (by a
// sync point) until the task was cancelled and reported so, it still writes
// the state files and acknowledges, touching nothing of the ended task.
TEST(TaskTest, AsynchronousPartOfACheckpointRunsAfterItsTaskWasCancelled) {
  if (!WEIR_TEST_POINTS) GTEST_SKIP() << "test points are compiled out of Release builds";
  SyncPoints::reset();
  SyncPoints::load_dependencies({{"SubtaskCheckpointer::async_part_posted", "TaskTest:cancel"},
                                 {"TaskTest:task_cancelled", "SubtaskCheckpointer::async_part"}});
  SyncPoints::enable();
  SingleTaskJob job(
      [] { return std::make_unique<GeneratorSource<int64_t>>([](int64_t i) { return i; }, INT64_MAX); });
  ASSERT_TRUE(job.ok());
  RecordingJobMaster& jm = job.jm;

  job.tm().trigger_checkpoint(job.id, 1, 0, /*savepoint=*/false, /*final=*/false);
  WEIR_SYNC_POINT("TaskTest:cancel");  // once the synchronous part is done
  job.tm().cancel_task(job.id);
  auto report = jm.final_report(absl::Seconds(30));
  ASSERT_TRUE(report.has_value()) << "the task did not end while its checkpoint's upload was held back";
  EXPECT_EQ(report->state, ExecutionState::kCanceled);
  EXPECT_FALSE(jm.first_ack(absl::ZeroDuration()).has_value()) << "acknowledged before the upload ran";
  WEIR_SYNC_POINT("TaskTest:task_cancelled");

  auto ack = jm.first_ack(absl::Seconds(30));
  SyncPoints::reset();
  ASSERT_TRUE(ack.has_value()) << "the held-back upload never acknowledged";
  EXPECT_EQ(ack->checkpoint_id, 1);
  ASSERT_FALSE(ack->ack.states.empty());
  EXPECT_EQ(job.storage->num_checkpoints(), 1u);
}

// A task whose input ends while its checkpoint's asynchronous part is still
// to run reports FINISHED only after that part acknowledged: otherwise its
// state file could land in storage after the job is over, an incomplete
// checkpoint nothing removes.
TEST(TaskTest, AFinishingTaskWaitsForItsCheckpointsAsynchronousPart) {
  if (!WEIR_TEST_POINTS) GTEST_SKIP() << "test points are compiled out of Release builds";
  SyncPoints::reset();
  SyncPoints::load_dependencies({{"SubtaskCheckpointer::async_part_posted", "TaskTest:end_input"},
                                 {"Task::waiting_for_checkpoints", "TaskTest:input_ended"},
                                 {"TaskTest:checked", "SubtaskCheckpointer::async_part"}});
  SyncPoints::enable();
  auto released = std::make_shared<std::atomic<bool>>(false);
  SingleTaskJob job([released] {
    auto s = std::make_unique<GeneratorSource<int64_t>>([](int64_t i) { return i; }, 10);
    s->hold_while([released](int64_t i) { return i == 5 && !released->load(); });
    return s;
  });
  ASSERT_TRUE(job.ok());
  RecordingJobMaster& jm = job.jm;

  job.tm().trigger_checkpoint(job.id, 1, 0, /*savepoint=*/false, /*final=*/false);
  WEIR_SYNC_POINT("TaskTest:end_input");  // the synchronous part is done, the upload held back
  released->store(true);
  ASSERT_TRUE(jm.wait_for_end_of_data(1, absl::Seconds(30)));
  job.tm().finish_task(job.id);  // as the JobMaster does once the input ended everywhere
  WEIR_SYNC_POINT("TaskTest:input_ended");  // the task closed its operators
  EXPECT_FALSE(jm.final_report(absl::ZeroDuration()).has_value()) << "reported before its checkpoint acknowledged";
  EXPECT_FALSE(jm.first_ack(absl::ZeroDuration()).has_value());
  WEIR_SYNC_POINT("TaskTest:checked");

  auto report = jm.final_report(absl::Seconds(30));
  SyncPoints::reset();
  ASSERT_TRUE(report.has_value()) << "the task never ended";
  EXPECT_EQ(report->state, ExecutionState::kFinished) << report->error;
  auto ack = jm.first_ack(absl::ZeroDuration());
  ASSERT_TRUE(ack.has_value()) << "FINISHED came before the acknowledgement";
  EXPECT_EQ(ack->checkpoint_id, 1);
}

// A sink attempt deployed when checkpoint 4 was next finds, at the head of
// one input channel, barrier 3 of a checkpoint that had ended before the
// attempt started (under --failover task a channel outlives the attempts
// at either end, and its producer passed barrier 3 on after the earlier
// attempt left). Aligning on it would block that channel for a barrier 3
// that never comes on the other, and the backpressure would stall the job:
// the attempt ignores it, and the records behind it reach the sink.
// Keeps the records it is given, for a test to wait for.
class AwaitedSink final : public Sink<int64_t> {
 public:
  struct Received {
    absl::Mutex mu;
    std::vector<int64_t> rows ABSL_GUARDED_BY(mu);
    // The rows, sorted, once there are `n` of them or `deadline` passed.
    std::vector<int64_t> wait_for(size_t n, absl::Duration deadline) {
      absl::MutexLock lock(&mu);
      auto enough = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return rows.size() >= n; };
      mu.AwaitWithTimeout(absl::Condition(&enough), deadline);
      std::vector<int64_t> got = rows;
      std::sort(got.begin(), got.end());
      return got;
    }
  };
  explicit AwaitedSink(Received* out) : out_(out) {}
  absl::Status open(OperatorContext&) override { return absl::OkStatus(); }
  absl::Status write(const int64_t& v) override {
    absl::MutexLock lock(&out_->mu);
    out_->rows.push_back(v);
    return absl::OkStatus();
  }

 private:
  Received* out_;
};

TEST(TaskTest, ABarrierOfACheckpointThatEndedBeforeTheAttemptBlocksNothing) {
  AwaitedSink::Received rows;
  StreamEnvironment env;
  env.config().checkpoint.mode = CheckpointingMode::kExactlyOnce;  // barriers align
  env.from_source<int64_t>([] { return std::make_unique<GeneratorSource<int64_t>>([](int64_t i) { return i; }, 100); })
      .parallelism(2)
      .rebalance()
      .sink_to([&rows] { return std::make_unique<AwaitedSink>(&rows); })
      .parallelism(1);
  auto graph = graph::build_job_graph(env.graph(), env.config());
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ((*graph)->vertices.size(), 2u);

  network::NetworkBufferPool pool(64, 4096);
  network::DataPlane plane("secret", &pool, 4);
  TaskManager tm(&pool, &plane, 1);
  RecordingJobMaster jm;
  tm.register_job("job", job_context(*graph, env.config(), &jm));
  const int edge = (*graph)->vertices[1].inputs.at(0);
  network::ChannelEvent stale;
  stale.kind = network::EventKind::kBarrier;
  stale.checkpoint_id = 3;
  ASSERT_TRUE(plane.registry("job")->get({"job", 0, edge, /*producer=*/0, /*consumer=*/0})->push(std::move(stale)));

  auto deploy = [&](int vertex, int subtask) {
    TaskDeploymentDescriptor tdd;
    tdd.job_id = "job";
    tdd.execution = ExecutionId{vertex, subtask, 0};
    tdd.task_index = (*graph)->task_index(vertex, subtask);
    tdd.key_groups = KeyGroupRange{0, (*graph)->max_parallelism};
    tdd.first_checkpoint_id = 4;
    tm.submit_task(tdd);
  };
  deploy(1, 0);
  deploy(0, 0);  // its records follow the stale barrier; source subtask 1 stays away
  std::vector<int64_t> expected;
  for (int64_t i = 0; i < 100; i += 2) expected.push_back(i);
  EXPECT_EQ(rows.wait_for(expected.size(), absl::Seconds(30)), expected) << "the sink aligned on the stale barrier";
  for (const auto& v : (*graph)->vertices) tm.cancel_task(ExecutionId{v.id, 0, 0});
  tm.unregister_job("job");
}

}  // namespace
}  // namespace weir::runtime
