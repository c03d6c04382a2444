// The TaskExecutorGateway of one job on the cluster: places the job's
// tasks into slots of the SlotPool (slot i holds subtask i of every
// vertex), turns the JobMaster's calls into messages to the TaskManager
// running each task, and fails the tasks of a TaskManager that is lost.
#ifndef WEIR_CLUSTER_JOB_GATEWAY_H_
#define WEIR_CLUSTER_JOB_GATEWAY_H_

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "cluster/cluster.grpc.pb.h"
#include "cluster/session.h"
#include "cluster/slot_pool.h"
#include "graph/job_graph.h"
#include "runtime/gateways.h"
#include "runtime/job_master.h"

namespace weir::cluster {

class JobGateway final : public runtime::TaskExecutorGateway {
 public:
  JobGateway(SlotPool* pool, std::string job_id, proto::JobSpec spec, std::shared_ptr<const graph::JobGraph> graph,
             int64_t buffers_needed)
      : pool_(pool), job_id_(std::move(job_id)), spec_(std::move(spec)), graph_(std::move(graph)),
        buffers_needed_(buffers_needed) {}

  void set_master(runtime::JobMaster* master) { master_ = master; }

  absl::Status place(std::vector<runtime::TaskDeploymentDescriptor>& tdds) override;
  void submit_task(runtime::TaskDeploymentDescriptor tdd) override;
  void cancel_task(const runtime::ExecutionId& id) override { action(proto::TaskAction::CANCEL, id); }
  void trigger_checkpoint(const runtime::ExecutionId& id, int64_t cp, int64_t ts, bool savepoint,
                          bool final) override {
    action(proto::TaskAction::TRIGGER_CHECKPOINT, id, cp, ts, savepoint, final);
  }
  void notify_checkpoint_complete(const runtime::ExecutionId& id, int64_t cp) override {
    action(proto::TaskAction::CHECKPOINT_COMPLETE, id, cp);
  }
  void notify_checkpoint_aborted(const runtime::ExecutionId& id, int64_t cp) override {
    action(proto::TaskAction::CHECKPOINT_ABORTED, id, cp);
  }
  void finish_task(const runtime::ExecutionId& id) override { action(proto::TaskAction::FINISH, id); }
  void stop_source(const runtime::ExecutionId& id) override { action(proto::TaskAction::STOP_SOURCE, id); }
  void confirm_source_positions(const runtime::ExecutionId& id, int64_t seq) override {
    action(proto::TaskAction::CONFIRM_SOURCE_POSITIONS, id, seq);
  }
  void prepare_savepoint(int64_t cp, const std::string& directory) override;
  // Kept while the TaskManager that ran the subtask is.
  bool holds_result(int vertex, int subtask, const std::string& path) override;

  // The tasks placed on `s` fail.
  void taskmanager_lost(const SessionPtr& s, const std::string& reason);
  // The TaskManager running the subtask now; empty when none.
  std::string taskmanager_of(const runtime::ExecutionId& id) {
    SessionPtr s = session_of(id);
    return s == nullptr ? "" : s->id;
  }
  // The job ended: its slots are free, its TaskManagers drop it.
  void release();

 private:
  void action(proto::TaskAction::Kind kind, const runtime::ExecutionId& id, int64_t cp = 0, int64_t ts = 0,
              bool savepoint = false, bool final = false);
  SessionPtr session_of(const runtime::ExecutionId& id);

  SlotPool* const pool_;
  const std::string job_id_;
  const proto::JobSpec spec_;
  const std::shared_ptr<const graph::JobGraph> graph_;
  const int64_t buffers_needed_;
  runtime::JobMaster* master_ = nullptr;

  absl::Mutex mu_;
  std::vector<SessionPtr> slots_ ABSL_GUARDED_BY(mu_);  // slot i holds subtask i of every vertex
  std::map<std::pair<int, int>, SessionPtr> placed_ ABSL_GUARDED_BY(mu_);  // (vertex, subtask)
  std::map<std::pair<int, int>, int> attempt_ ABSL_GUARDED_BY(mu_);
  std::set<SessionPtr> ran_on_ ABSL_GUARDED_BY(mu_);
  // The last restore point sent, encoded once per attempt (held, so its
  // address cannot be reused by another while cached).
  std::shared_ptr<const checkpoint::CheckpointMetadata> encoded_for_ ABSL_GUARDED_BY(mu_);
  std::string encoded_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weir::cluster

#endif  // WEIR_CLUSTER_JOB_GATEWAY_H_
