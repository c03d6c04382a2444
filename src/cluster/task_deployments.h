// The jobs whose tasks run on one TaskManager process: each built from its
// spec on its first deployment (as the JobManager built it), its tasks
// deployed with their restore points, acted on (cancel, checkpoint, finish)
// and released when the JobManager says the job is done here; their reports
// go back as session messages. Also where a job's blocking results lie, for
// the data plane to serve, and the tasks' counters for heartbeats and
// /metrics.
//
// Thread use: deploy(), act(), release() and release_all() come from the
// session's thread; reports from task threads; counters from the heartbeat
// and HTTP threads. The job map is guarded; a runtime::TaskManager never
// calls back into this object under its own lock.
#ifndef WEIR_CLUSTER_TASK_DEPLOYMENTS_H_
#define WEIR_CLUSTER_TASK_DEPLOYMENTS_H_

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "cluster/cluster.pb.h"
#include "cluster/job_catalog.h"
#include "cluster/metrics_exposition.h"
#include "network/channel_registry.h"
#include "runtime/gateways.h"

namespace weir::network {
class DataPlane;
class NetworkBufferPool;
}  // namespace weir::network
namespace weir::runtime {
class TaskManager;
}  // namespace weir::runtime

namespace weir::cluster {

class JobLibrary;

class TaskDeployments {
 public:
  struct Options {
    std::string tm_id;      // this TaskManager's id: in errors, paths and metric labels
    std::string host;       // this machine's name: the metrics' host label
    std::string state_dir;  // RocksDB working copies; "" for the job's or the system temp
    std::string tmp_dir;    // blocking results and sort spills; "" for the job's or the system temp
    JobCatalog catalog;     // how a deployed job's graph is built
  };
  // Sends a report to the JobManager (the session's queue; dropped between
  // sessions, when the JobManager fails the tasks anyway).
  using Send = std::function<void(proto::TaskManagerMessage)>;
  // The job library with this digest (fetched if this process lacks it).
  using LibraryLoader = std::function<absl::StatusOr<const JobLibrary*>(const std::string& digest)>;

  TaskDeployments(Options options, network::NetworkBufferPool* pool, network::DataPlane* data_plane, Send send,
                  LibraryLoader libraries);
  ~TaskDeployments();
  TaskDeployments(const TaskDeployments&) = delete;
  TaskDeployments& operator=(const TaskDeployments&) = delete;

  // Runs a task; a failure to build its job or read its restore point is
  // reported as the task failing, naming this TaskManager.
  void deploy(const proto::DeployTask& d);
  // Cancel, trigger or confirm a checkpoint, finish, stop a source. Actions
  // for a job not here are dropped (it was released).
  void act(const proto::TaskAction& a);
  // The next savepoint of `job_id` goes to `directory`.
  void route_savepoint(const std::string& job_id, int64_t checkpoint_id, const std::string& directory);
  // Cancels the job's tasks here, waits for their snapshots and removes its
  // blocking results.
  void release(const std::string& job_id);
  // Every job: the session ended, the JobManager failed their tasks.
  void release_all();

  // The file of a blocking result partition of a job running here.
  absl::StatusOr<std::string> result_file(const network::ChannelKey& key);

  // Every task's counters, into a heartbeat; they also feed the rates
  // /metrics shows.
  void add_heartbeat_metrics(proto::Heartbeat* hb);
  // Every task's series for GET /metrics, with Flink's task scope labels.
  void add_exposition(MetricFamilies& out);

 private:
  class MasterProxy;
  struct Job;
  struct RestorePoint {
    std::string location;
    std::shared_ptr<const checkpoint::CheckpointMetadata> metadata;
  };

  runtime::TaskManager* find(const std::string& job_id);
  // Builds the job from its spec on first sight.
  absl::StatusOr<runtime::TaskManager*> job_for(const proto::DeployTask& d);
  // The counters of one task as it ends (from its thread).
  void add_final_metrics(const std::string& job_id, const runtime::ExecutionId& id, proto::TaskMetrics* out);

  const Options options_;
  network::NetworkBufferPool* const pool_;
  network::DataPlane* const data_plane_;
  const Send send_;
  const LibraryLoader libraries_;
  // Per job, the restore point of its latest deployment in this session
  // (DeployTask.restore_as_before). The session's thread only.
  std::map<std::string, RestorePoint> restore_points_;

  absl::Mutex mu_;
  std::map<std::string, std::unique_ptr<Job>> jobs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weir::cluster

#endif  // WEIR_CLUSTER_TASK_DEPLOYMENTS_H_
