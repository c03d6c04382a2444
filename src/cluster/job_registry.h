// The JobManager's jobs: submission (a built-in job or a job library's,
// built here as every TaskManager will build it), one JobMaster per job
// behind its JobGateway, savepoints and cancellation on request, the
// TaskManagers' reports delivered to the job they concern, and forgetting
// the oldest ended jobs beyond a bound or once expired. Under high
// availability each job is also recorded in the HA store before it starts,
// resumed from it by a new leader, and forgotten there when it ends for
// good, its result kept in the job result store. Thread-safe.
#ifndef WEIR_CLUSTER_JOB_REGISTRY_H_
#define WEIR_CLUSTER_JOB_REGISTRY_H_

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include <nlohmann/json.hpp>

#include "absl/synchronization/mutex.h"
#include "cluster/cluster.grpc.pb.h"
#include "cluster/job_catalog.h"
#include "cluster/ha_store.h"
#include "cluster/job_gateway.h"
#include "cluster/job_library.h"
#include "cluster/job_metrics.h"
#include "cluster/session.h"
#include "cluster/slot_pool.h"
#include "graph/job_graph.h"
#include "runtime/job_master.h"
#include "weir/job_control.h"

namespace weir::cluster {

struct Job {
  std::string id;
  proto::JobSpec spec;
  std::shared_ptr<const graph::JobGraph> graph;
  std::string savepoint_dir;  // for requests that name none; "" if the job has none
  int64_t start_ms = 0;
  JobControl control;
  std::unique_ptr<checkpoint::CheckpointIdCounter> checkpoint_ids;  // under HA; outlives master
  std::unique_ptr<JobGateway> gateway;
  std::unique_ptr<runtime::JobMaster> master;  // after gateway and control: destroyed first
  std::thread waiter;                          // waits for the master's result
  JobMetrics metrics;
  // A job the HA store records but this leader could not resume (its
  // record unreadable, or it would not build): no master, no gateway, an
  // empty graph, and a FAILED result naming why. Its record stays in the
  // store until cancelled (JobRegistry::forget_unrecoverable).
  bool unrecoverable = false;
  // An ended job an earlier leader ran, from the job result store: no
  // master, no gateway, an empty graph; the REST API answers with what its
  // leader answered last ({"job": ..., "checkpoints": ...}).
  std::shared_ptr<const nlohmann::json> archived;

  absl::Mutex mu;
  std::optional<JobResult> result ABSL_GUARDED_BY(mu);  // once ended
  int64_t end_ms ABSL_GUARDED_BY(mu) = 0;               // when it ended (wall clock)
  // Its executions (subtask, attempt, state) as it ended, for the REST API.
  std::optional<runtime::JobMaster::Status> final_status ABSL_GUARDED_BY(mu);
  std::vector<SavepointResult> savepoints ABSL_GUARDED_BY(mu);
  absl::Mutex savepoint_mu;  // one savepoint request at a time

  bool ended() {
    absl::MutexLock lock(&mu);
    return result.has_value();
  }
  // Waits up to `timeout` for the job to end; whether it has.
  bool wait(std::chrono::milliseconds timeout);
};
using JobPtr = std::shared_ptr<Job>;

// The bounds of planning a SQL job in the JobManager's child process.
inline constexpr std::chrono::seconds kSqlPlanTimeout{30};
inline constexpr int64_t kSqlPlanMemory = int64_t{4} << 30;

class JobRegistry {
 public:
  // Jobs take slots from `slots` and libraries from `libraries` (both
  // outlive the registry); at most `keep_ended_jobs` ended jobs are kept.
  JobRegistry(SlotPool* slots, LibraryStore* libraries, JobCatalog catalog, int keep_ended_jobs);
  ~JobRegistry();
  JobRegistry(const JobRegistry&) = delete;
  JobRegistry& operator=(const JobRegistry&) = delete;

  // Under high availability: every job is recorded in `store` before it
  // starts and forgotten there once it ended, its checkpoint ids come from
  // it and its checkpoints complete only once committed there. Before the
  // first submission.
  void set_ha_store(std::shared_ptr<HaStore> store) { ha_ = std::move(store); }
  // An ended job is forgotten `expiration` after it ended (Flink's
  // jobstore.expiration-time; 0: only the keep_ended_jobs bound). Under
  // high availability its result stays in the job result store until then,
  // across leader changes; `archive` gives what is stored (the job's REST
  // answers as JSON). Before the first submission.
  void set_result_store(std::chrono::milliseconds expiration, std::function<std::string(Job&)> archive) {
    expiration_ = expiration;
    archive_ = std::move(archive);
  }
  // A new leader lists the ended jobs of the job result store (expired
  // ones are removed from it).
  void restore_results(std::vector<HaStore::StoredResult> results);

  // Starts the job `name` with `args`, or given `library` (a digest) the job
  // of that library; its id. The job is built first (in a child process for
  // a library), so a job that cannot build is refused here.
  absl::StatusOr<std::string> submit(const std::string& name, const std::vector<std::string>& args,
                                     const std::string& library);
  // A new leader resumes a job the HA store recorded: same id, from its
  // newest committed checkpoint (which it then owns), else as submitted.
  // A job that cannot resume (its record unreadable, or it does not build)
  // is listed as an unrecoverable FAILED job and the error returned; the
  // other jobs are not affected.
  absl::Status recover(const HaStore::Recovered& job);
  // Forgets unrecoverable job `id` in the HA store and here (an operator's
  // cancel). NotFound when `id` is no unrecoverable job.
  absl::Status forget_unrecoverable(const std::string& id);
  JobPtr find(const std::string& id);
  // find(), but only a job with a master (not an unrecoverable one).
  JobPtr live(const std::string& id);
  // Every job kept, in submission order.
  std::vector<JobPtr> list();
  int running();

  // A savepoint (or stop with one) of `j`, once it completed. One at a time
  // per job.
  absl::StatusOr<SavepointResult> savepoint(Job& j, const std::string& directory, bool stop, bool drain);

  // A report from a TaskManager (task state, checkpoint ack or decline, end
  // of data, heartbeat metrics), to the job it concerns.
  void deliver(const proto::TaskManagerMessage& m);
  // The tasks on `s` fail with `reason`.
  void taskmanager_lost(const SessionPtr& s, const std::string& reason);

  // Cancels every job and waits for them to end; later submissions are
  // refused. Idempotent. With `suspend` (leadership lost) the jobs stay
  // recorded in the HA store for the next leader.
  void shutdown(bool suspend = false);

 private:
  // Builds and starts a job. `id` "" is a new submission (recorded in the
  // HA store first); else the recovered job of that id, resuming from the
  // newest intact one of `retained` (its completed checkpoints, oldest
  // first; none: as its arguments say).
  absl::StatusOr<std::string> start(const std::string& name, const std::vector<std::string>& args,
                                    const std::string& library, const std::string& id,
                                    const std::vector<HaStore::CompletedPointer>& retained);
  void forget_old_jobs(Job* current);
  void add_unrecoverable(const HaStore::Recovered& r, const absl::Status& why);

  SlotPool* const slots_;
  LibraryStore* const libraries_;
  const JobCatalog catalog_;
  const int keep_ended_jobs_;
  std::shared_ptr<HaStore> ha_;
  std::chrono::milliseconds expiration_{0};
  std::function<std::string(Job&)> archive_;

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool suspending_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, JobPtr> jobs_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> order_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weir::cluster

#endif  // WEIR_CLUSTER_JOB_REGISTRY_H_
