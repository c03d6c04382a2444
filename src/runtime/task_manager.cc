#include "runtime/task_manager.h"

#include <spdlog/spdlog.h>

#include <filesystem>

#include "checkpoint/storage_scheme.h"
#include "state/rocksdb_store.h"
#include "state/state_directory.h"

namespace weir::runtime {

TaskManager::TaskManager(const NetworkConfig& network, int snapshot_threads)
    : own_pool_(std::make_unique<network::NetworkBufferPool>(network.total_buffers, network.buffer_size)),
      own_channels_(std::make_unique<network::ChannelRegistry>(network.buffers_per_channel)),
      pool_(own_pool_.get()),
      data_plane_(nullptr),
      snapshot_executor_(snapshot_threads) {}

TaskManager::TaskManager(network::NetworkBufferPool* pool, network::DataPlane* data_plane,
                         int snapshot_threads)
    : pool_(pool), data_plane_(data_plane), snapshot_executor_(snapshot_threads) {}

network::ChannelRegistry* TaskManager::channels(const std::string& job_id) {
  return data_plane_ != nullptr ? data_plane_->registry(job_id) : own_channels_.get();
}

TaskManager::~TaskManager() {
  std::map<Key, std::unique_ptr<Task>> tasks;
  {
    absl::MutexLock lock(&mu_);
    tasks.swap(tasks_);
  }
  for (auto& [k, t] : tasks) t->cancel();
  tasks.clear();  // joins
}

void TaskManager::register_job(const std::string& job_id, JobContext ctx) {
  const StateBackendConfig& state = ctx.config.state;
  // Local recovery: copies of native snapshots (their files are local
  // anyway), and of state files when the checkpoints live remotely.
  const bool native = state.kind == StateBackendKind::kRocksDb && ctx.config.checkpoint.incremental &&
                      ctx.storage != nullptr && ctx.storage->supports_native();
  const bool remote = checkpoint::scheme_for(ctx.config.checkpoint.directory).remote();
  const bool local_recovery = state.local_recovery && ctx.storage != nullptr && (native || remote);
  if (state.kind == StateBackendKind::kRocksDb || local_recovery) {
    // Own the job's local state directory; remove those of dead processes.
    const std::filesystem::path root = state::state_root(state.local_directory, job_id).parent_path();
    for (const auto& stale : state::JobStateDirectory::sweep(root)) {
      spdlog::info("removed the state directory {}: the process that owned it is gone", stale.string());
    }
    auto dir = state::JobStateDirectory::acquire(root, job_id);
    if (dir.ok()) {
      ctx.state_directory = std::move(*dir);
    } else {
      spdlog::warn("job {}: {}", job_id, std::string(dir.status().message()));
    }
  }
  if (local_recovery) {
    ctx.local_state = std::make_shared<state::LocalStateStore>(
        state::state_root(state.local_directory, job_id) / "local", /*copy_state_files=*/remote);
  }
  absl::MutexLock lock(&mu_);
  jobs_[job_id] = std::make_unique<JobContext>(std::move(ctx));
}

void TaskManager::unregister_job(const std::string& job_id) {
  std::vector<std::unique_ptr<Task>> done;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = tasks_.begin(); it != tasks_.end();) {
      if (it->first.job == job_id) {
        done.push_back(std::move(it->second));
        it = tasks_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& t : done) t->cancel();
  done.clear();
  channels(job_id)->release(job_id, INT32_MAX);
  absl::MutexLock lock(&mu_);
  jobs_.erase(job_id);
  earlier_.erase(job_id);
}

void TaskManager::submit_task(TaskDeploymentDescriptor tdd) {
  std::vector<std::unique_ptr<Task>> old;
  Task* task = nullptr;
  const std::string tdd_job = tdd.job_id;
  int tdd_channels = 0;  // channel_attempt()
  const int vertex = tdd.execution.vertex, subtask = tdd.execution.subtask;
  std::shared_ptr<const graph::JobGraph> graph;
  {
    absl::MutexLock lock(&mu_);
    auto job = jobs_.find(tdd.job_id);
    if (job == jobs_.end()) return;  // the job was unregistered meanwhile
    // Earlier attempts of this subtask have ended (the JobManager waits for
    // that before redeploying); join and drop them. Other subtasks may run
    // older attempts: with region failover only the failed regions restart.
    for (auto it = tasks_.begin(); it != tasks_.end();) {
      if (it->first.job == tdd.job_id && it->first.vertex == tdd.execution.vertex &&
          it->first.subtask == tdd.execution.subtask && it->first.attempt < tdd.execution.attempt) {
        const TaskMetricsSnapshot m = it->second->metrics();
        EarlierAttempts& e = earlier_[tdd.job_id][tdd.execution.vertex];
        e.records_in += m.records_in;
        e.records_out += m.records_out;
        old.push_back(std::move(it->second));
        it = tasks_.erase(it);
      } else {
        ++it;
      }
    }
    TaskServices services;
    services.pool = pool_;
    services.channels = channels(tdd.job_id);
    services.data_plane = data_plane_;
    services.storage = job->second->storage.get();
    services.snapshot_executor = &snapshot_executor_;
    services.job_master = job->second->job_master;
    services.config = &job->second->config;
    services.local_state = job->second->local_state;
    services.clock = job->second->clock;
    Key key{tdd.job_id, tdd.execution.vertex, tdd.execution.subtask, tdd.execution.attempt};
    graph = job->second->graph;
    tdd_channels = channel_attempt(tdd, job->second->config);
    auto t = std::make_unique<Task>(std::move(tdd), graph, services);
    task = t.get();
    tasks_[key] = std::move(t);
  }
  old.clear();  // joins outside the lock
  if (tdd_channels > 0) {
    // The channels of this subtask's earlier attempts, at either end (under
    // --failover task, of earlier channel generations: the attempts of one
    // share them).
    channels(tdd_job)->release_if(tdd_job, [&](const network::ChannelKey& k) {
      if (k.attempt >= tdd_channels) return false;
      const graph::JobEdge& e = graph->edges[k.job_edge];
      return (e.target_vertex == vertex && k.consumer == subtask) || (e.source_vertex == vertex && k.producer == subtask);
    });
  }
  task->start();
}

Task* TaskManager::find(const ExecutionId& id) {
  for (auto& [k, t] : tasks_) {
    if (t->id() == id) return t.get();
  }
  return nullptr;
}

std::vector<TaskManager::TaskMetricsEntry> TaskManager::task_metrics(bool with_operators) {
  absl::MutexLock lock(&mu_);
  std::vector<TaskMetricsEntry> out;
  out.reserve(tasks_.size());
  for (const auto& [key, task] : tasks_) {
    out.push_back({key.job, task->id(), task->name(), task->metrics(with_operators)});
  }
  return out;
}

std::map<int, TaskManager::EarlierAttempts> TaskManager::earlier_attempts(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  auto it = earlier_.find(job_id);
  return it == earlier_.end() ? std::map<int, EarlierAttempts>{} : it->second;
}

void TaskManager::cancel_task(const ExecutionId& id) {
  absl::MutexLock lock(&mu_);
  if (Task* t = find(id)) t->cancel();
}

void TaskManager::trigger_checkpoint(const ExecutionId& id, int64_t cp, int64_t ts, bool savepoint, bool final) {
  absl::MutexLock lock(&mu_);
  if (Task* t = find(id)) t->trigger_checkpoint(cp, ts, savepoint, final);
}

void TaskManager::notify_checkpoint_complete(const ExecutionId& id, int64_t cp) {
  absl::MutexLock lock(&mu_);
  for (auto& [k, t] : tasks_) {
    if (t->id() != id) continue;
    t->notify_checkpoint_complete(cp);
    auto job = jobs_.find(k.job);
    if (job != jobs_.end() && job->second->local_state != nullptr) job->second->local_state->confirm(cp);
    return;
  }
}

void TaskManager::notify_checkpoint_aborted(const ExecutionId& id, int64_t cp) {
  absl::MutexLock lock(&mu_);
  if (Task* t = find(id)) t->notify_checkpoint_aborted(cp);
}

void TaskManager::finish_task(const ExecutionId& id) {
  absl::MutexLock lock(&mu_);
  if (Task* t = find(id)) t->finish();
}

void TaskManager::stop_source(const ExecutionId& id) {
  absl::MutexLock lock(&mu_);
  if (Task* t = find(id)) t->stop_source();
}

void TaskManager::confirm_source_positions(const ExecutionId& id, int64_t seq) {
  absl::MutexLock lock(&mu_);
  if (Task* t = find(id)) t->confirm_source_positions(seq);
}

}  // namespace weir::runtime
