// The TaskManager side: runs the tasks it is given, owns the process's
// network buffer pool, local channels and snapshot threads. Implements
// TaskExecutorGateway; every call is thread-safe and returns at once.
#ifndef WEIR_RUNTIME_TASK_MANAGER_H_
#define WEIR_RUNTIME_TASK_MANAGER_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "checkpoint/storage.h"
#include "common/clock.h"
#include "graph/job_graph.h"
#include "network/buffer_pool.h"
#include "network/channel_registry.h"
#include "network/data_plane.h"
#include "runtime/executor.h"
#include "runtime/gateways.h"
#include "runtime/task.h"
#include "state/state_directory.h"

namespace weir::runtime {

class TaskManager final : public TaskExecutorGateway {
 public:
  struct JobContext {
    std::shared_ptr<const graph::JobGraph> graph;
    std::shared_ptr<checkpoint::CheckpointStorage> storage;
    JobMasterGateway* job_master = nullptr;
    JobConfig config;
    // RocksDB: the job's local state directory, held while the job runs
    // (set by register_job).
    std::shared_ptr<state::JobStateDirectory> state_directory;
    // Local recovery: copies of native snapshots (set by register_job).
    std::shared_ptr<state::LocalStateStore> local_state;
    // The tasks' processing time.
    const Clock* clock = SystemClock::instance();
  };

  // Embedded: owns its buffer pool; every channel is local.
  TaskManager(const NetworkConfig& network, int snapshot_threads);
  // In a TaskManager process: the process's buffer pool and data plane,
  // which also holds the job's channel registry.
  TaskManager(network::NetworkBufferPool* pool, network::DataPlane* data_plane, int snapshot_threads);
  ~TaskManager() override;

  // Makes a job's graph and services known before its tasks are submitted.
  void register_job(const std::string& job_id, JobContext ctx);
  void unregister_job(const std::string& job_id);

  void submit_task(TaskDeploymentDescriptor tdd) override;
  void cancel_task(const ExecutionId& id) override;
  void trigger_checkpoint(const ExecutionId& id, int64_t checkpoint_id, int64_t ts, bool savepoint,
                          bool final) override;
  void notify_checkpoint_complete(const ExecutionId& id, int64_t checkpoint_id) override;
  void notify_checkpoint_aborted(const ExecutionId& id, int64_t checkpoint_id) override;
  void finish_task(const ExecutionId& id) override;
  void stop_source(const ExecutionId& id) override;
  void confirm_source_positions(const ExecutionId& id, int64_t seq) override;

  network::NetworkBufferPool& buffer_pool() { return *pool_; }
  // The counters of every task it holds (running or ended), by job; with
  // `with_operators` also each operator's own metrics (histograms included).
  struct TaskMetricsEntry {
    std::string job_id;
    ExecutionId id;
    std::string task_name;  // its vertex's
    TaskMetricsSnapshot metrics;
  };
  std::vector<TaskMetricsEntry> task_metrics(bool with_operators = false);
  // Records in and out of the attempts of job `job_id`'s subtasks that
  // ended and were replaced by a newer attempt here, summed by vertex (as
  // of their end): what task_metrics() no longer shows.
  struct EarlierAttempts {
    int64_t records_in = 0;
    int64_t records_out = 0;
  };
  std::map<int, EarlierAttempts> earlier_attempts(const std::string& job_id);
  // Waits for asynchronous snapshot work in flight (it reports to the
  // JobManager, which must outlive it).
  void drain_snapshots() { snapshot_executor_.drain(); }

 private:
  struct Key {
    std::string job;
    int vertex, subtask, attempt;
    bool operator<(const Key& o) const {
      return std::tie(job, vertex, subtask, attempt) < std::tie(o.job, o.vertex, o.subtask, o.attempt);
    }
  };
  Task* find(const ExecutionId& id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  network::ChannelRegistry* channels(const std::string& job_id);

  std::unique_ptr<network::NetworkBufferPool> own_pool_;
  std::unique_ptr<network::ChannelRegistry> own_channels_;
  network::NetworkBufferPool* const pool_;
  network::DataPlane* const data_plane_;
  ThreadPool snapshot_executor_;

  absl::Mutex mu_;
  std::map<std::string, std::unique_ptr<JobContext>> jobs_ ABSL_GUARDED_BY(mu_);
  std::map<Key, std::unique_ptr<Task>> tasks_ ABSL_GUARDED_BY(mu_);
  // By job, then vertex.
  std::map<std::string, std::map<int, EarlierAttempts>> earlier_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weir::runtime

#endif  // WEIR_RUNTIME_TASK_MANAGER_H_
