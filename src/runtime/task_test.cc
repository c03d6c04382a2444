// A task in a TaskManager process whose chain cannot be built (an output
// channel to another process cannot connect) fails cleanly and reports why,
// like any other task failure.
#include "runtime/task.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "graph/job_graph.h"
#include "network/buffer_pool.h"
#include "network/data_plane.h"
#include "runtime/task_manager.h"
#include "weir/connectors.h"
#include "weir/stream.h"

namespace weir::runtime {
namespace {

using namespace std::chrono_literals;

// Records the task states a TaskManager reports.
class RecordingJobMaster final : public JobMasterGateway {
 public:
  void update_task_state(const ExecutionId& id, ExecutionState state, const std::string& error) override {
    absl::MutexLock lock(&mu_);
    states_.push_back({id, state, error});
  }
  void acknowledge_checkpoint(const ExecutionId&, int64_t, checkpoint::TaskAck) override {}
  void decline_checkpoint(const ExecutionId&, int64_t, const std::string&) override {}
  void end_of_data(const ExecutionId&) override {}

  struct Report {
    ExecutionId id;
    ExecutionState state;
    std::string error;
  };
  // The first report other than kRunning, waiting up to `deadline`.
  std::optional<Report> final_report(absl::Duration deadline) {
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithTimeout(absl::Condition(this, &RecordingJobMaster::ended), deadline);
    for (const auto& r : states_) {
      if (r.state != ExecutionState::kRunning) return r;
    }
    return std::nullopt;
  }

 private:
  bool ended() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (const auto& r : states_) {
      if (r.state != ExecutionState::kRunning) return true;
    }
    return false;
  }

  absl::Mutex mu_;
  std::vector<Report> states_ ABSL_GUARDED_BY(mu_);
};

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
  TaskManager::JobContext ctx;
  ctx.graph = *graph;
  ctx.job_master = &jm;
  ctx.config = env.config();
  tm.register_job("job", std::move(ctx));

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

}  // namespace
}  // namespace weir::runtime
