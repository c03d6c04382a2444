// The jobs deployed on one TaskManager: built, run, acted on, released
// (task_deployments.h).
#include "cluster/task_deployments.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <utility>
#include <vector>

#include "cluster/job_library.h"
#include "cluster/job_metrics.h"
#include "cluster/protocol.h"
#include "common/clock.h"
#include "graph/job_graph.h"
#include "network/data_plane.h"
#include "network/result_file.h"
#include "runtime/mini_cluster.h"
#include "runtime/task_manager.h"

namespace weir::cluster {

using proto::TaskManagerMessage;

// Forwards a job's task reports to the JobManager.
class TaskDeployments::MasterProxy final : public runtime::JobMasterGateway {
 public:
  MasterProxy(TaskDeployments* jobs, std::string job_id) : jobs_(jobs), job_id_(std::move(job_id)) {}
  void update_task_state(const runtime::ExecutionId& id, runtime::ExecutionState state, const std::string& error,
                         bool unrecoverable) override {
    spdlog::info("job {}: {} {}{}", job_id_, id.to_string(), runtime::to_string(state),
                 error.empty() ? "" : ": " + error);
    TaskManagerMessage m;
    auto* t = m.mutable_task_state();
    t->set_job_id(job_id_);
    *t->mutable_id() = to_proto(id);
    t->set_state(static_cast<int>(state));
    t->set_error(error);
    t->set_unrecoverable(unrecoverable);
    if (state == runtime::ExecutionState::kFinished || state == runtime::ExecutionState::kCanceled ||
        state == runtime::ExecutionState::kFailed) {
      jobs_->add_final_metrics(job_id_, id, t->mutable_final_metrics());
    }
    jobs_->send_(std::move(m));
  }
  void acknowledge_checkpoint(const runtime::ExecutionId& id, int64_t cp, checkpoint::TaskAck ack) override {
    TaskManagerMessage m;
    auto* a = m.mutable_ack();
    a->set_job_id(job_id_);
    *a->mutable_id() = to_proto(id);
    a->set_checkpoint_id(cp);
    a->set_states(encode_ack_states(cp, ack));
    a->set_sync_ms(ack.sync_ms);
    a->set_async_ms(ack.async_ms);
    a->set_alignment_ms(ack.alignment_ms);
    a->set_source_records(ack.source_records);
    a->set_persisted_data(ack.persisted_data);
    jobs_->send_(std::move(m));
  }
  void decline_checkpoint(const runtime::ExecutionId& id, int64_t cp, const std::string& reason) override {
    TaskManagerMessage m;
    auto* d = m.mutable_decline();
    d->set_job_id(job_id_);
    *d->mutable_id() = to_proto(id);
    d->set_checkpoint_id(cp);
    d->set_reason(reason);
    jobs_->send_(std::move(m));
  }
  void end_of_data(const runtime::ExecutionId& id) override {
    TaskManagerMessage m;
    m.mutable_end_of_data()->set_job_id(job_id_);
    *m.mutable_end_of_data()->mutable_id() = to_proto(id);
    jobs_->send_(std::move(m));
  }
  void report_source_positions(const runtime::ExecutionId& id, runtime::SourcePositions r) override {
    TaskManagerMessage m;
    auto* p = m.mutable_source_positions();
    p->set_job_id(job_id_);
    *p->mutable_id() = to_proto(id);
    p->set_seq(r.seq);
    p->set_positions(encode_operator_state(r.positions));
    p->set_records(r.records);
    p->set_released_records(r.released_records);
    jobs_->send_(std::move(m));
  }
  void report_dropped_records(const runtime::ExecutionId& id, int64_t records) override {
    TaskManagerMessage m;
    auto* d = m.mutable_dropped_records();
    d->set_job_id(job_id_);
    *d->mutable_id() = to_proto(id);
    d->set_records(records);
    jobs_->send_(std::move(m));
  }

 private:
  TaskDeployments* const jobs_;
  const std::string job_id_;
};

struct TaskDeployments::Job {
  std::string name;        // as submitted
  JobMetrics metrics;      // its tasks' rates, from the heartbeats
  std::string result_dir;  // its blocking results on this TaskManager
  std::shared_ptr<checkpoint::RoutingCheckpointStorage> storage;
  std::unique_ptr<MasterProxy> proxy;
  std::unique_ptr<runtime::TaskManager> tasks;  // after proxy: destroyed first
};

TaskDeployments::TaskDeployments(Options options, network::NetworkBufferPool* pool, network::DataPlane* data_plane,
                                 Send send, LibraryLoader libraries)
    : options_(std::move(options)),
      pool_(pool),
      data_plane_(data_plane),
      send_(std::move(send)),
      libraries_(std::move(libraries)) {}

TaskDeployments::~TaskDeployments() { release_all(); }

runtime::TaskManager* TaskDeployments::find(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(job_id);
  return it == jobs_.end() ? nullptr : it->second->tasks.get();
}

absl::StatusOr<std::string> TaskDeployments::result_file(const network::ChannelKey& k) {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(k.job_id);
  if (it == jobs_.end()) return absl::NotFoundError("job " + k.job_id + " does not run on TaskManager " + options_.tm_id);
  return network::result_file_path(it->second->result_dir, k.job_edge, k.producer, k.consumer);
}

absl::StatusOr<runtime::TaskManager*> TaskDeployments::job_for(const proto::DeployTask& d) {
  if (runtime::TaskManager* t = find(d.job_id())) return t;
  std::vector<std::string> args(d.spec().args().begin(), d.spec().args().end());
  const JobLibrary* lib = nullptr;
  if (!d.spec().library().empty()) {
    auto l = libraries_(d.spec().library());
    if (!l.ok()) return l.status();
    lib = *l;
  }
  auto built = options_.catalog(d.spec().name(), args, lib);
  if (!built.ok()) return built.status();
  JobConfig config = built->env->config();
  // Working copies of this process apart from other TaskManagers' on the host.
  std::filesystem::path base = config.state.local_directory.empty()
                                   ? std::filesystem::temp_directory_path() / "weir-rocksdb"
                                   : std::filesystem::path(config.state.local_directory);
  if (!options_.state_dir.empty()) base = options_.state_dir;
  config.state.local_directory = (base / options_.tm_id).string();
  std::filesystem::path tmp = !options_.tmp_dir.empty()         ? std::filesystem::path(options_.tmp_dir)
                              : !config.result_directory.empty() ? std::filesystem::path(config.result_directory)
                                                                 : std::filesystem::temp_directory_path() /
                                                                       "weir-results";
  config.result_directory = (tmp / options_.tm_id).string();
  auto graph = graph::build_job_graph(built->env->graph(), config);
  if (!graph.ok()) return graph.status();
  data_plane_->admit_job(d.job_id());
  data_plane_->registry(d.job_id())->set_reopen_closed(config.failover == FailoverStrategy::kTask);
  auto job = std::make_unique<Job>();
  job->name = d.spec().name();
  job->result_dir = network::result_directory(config, d.job_id(), ExchangeMode::kBlocking);
  auto storage = runtime::make_job_storage(config, d.job_id());
  if (!storage.ok()) return storage.status();
  job->storage = *std::move(storage);
  job->proxy = std::make_unique<MasterProxy>(this, d.job_id());
  job->tasks = std::make_unique<runtime::TaskManager>(pool_, data_plane_, /*snapshot_threads=*/2);
  job->tasks->register_job(
      d.job_id(), runtime::TaskManager::JobContext{*graph, job->storage, job->proxy.get(), config, nullptr, nullptr});
  absl::MutexLock lock(&mu_);
  auto& slot = jobs_[d.job_id()];
  slot = std::move(job);
  return slot->tasks.get();
}

void TaskDeployments::deploy(const proto::DeployTask& d) {
  runtime::TaskDeploymentDescriptor tdd;
  tdd.job_id = d.job_id();
  tdd.execution = from_proto(d.id());
  tdd.task_index = d.task_index();
  tdd.key_groups = KeyGroupRange{d.key_group_start(), d.key_group_end()};
  tdd.restore_location = d.restore_location();
  tdd.location = data_plane_->address();
  tdd.channel_generation = d.channel_generation();
  tdd.first_checkpoint_id = std::max<int64_t>(d.first_checkpoint_id(), 1);  // 0: none sent
  tdd.task_locations = std::make_shared<std::vector<std::string>>(d.task_locations().begin(), d.task_locations().end());
  absl::Status failed;
  if (d.has_source_positions()) {
    auto positions = checkpoint::decode_operator_state(d.source_positions());
    if (positions.ok()) {
      tdd.source_positions = std::make_shared<const detail::OperatorStateMap>(std::move(*positions));
    } else {
      failed = absl::DataLossError("source positions sent by the JobManager: " +
                                   std::string(positions.status().message()));
    }
  }
  if (d.restore_as_before()) {
    auto it = restore_points_.find(d.job_id());
    if (it != restore_points_.end() && it->second.location == d.restore_location()) {
      tdd.restore = it->second.metadata;
    } else {
      failed = absl::InternalError("the JobManager referred to restore point " + d.restore_location() +
                                   " as sent before, but this TaskManager does not hold it");
    }
  } else if (!d.restore_metadata().empty()) {
    auto meta = checkpoint::decode_metadata(d.restore_metadata(), "restore point of " + d.restore_location());
    if (meta.ok()) {
      tdd.restore = std::make_shared<const checkpoint::CheckpointMetadata>(std::move(*meta));
      restore_points_[d.job_id()] = RestorePoint{d.restore_location(), tdd.restore};
    } else {
      restore_points_.erase(d.job_id());
      failed = meta.status();
    }
  }
  auto tasks = job_for(d);
  if (failed.ok() && !tasks.ok()) failed = tasks.status();
  if (!failed.ok()) {
    TaskManagerMessage m;
    auto* t = m.mutable_task_state();
    t->set_job_id(d.job_id());
    *t->mutable_id() = d.id();
    t->set_state(static_cast<int>(runtime::ExecutionState::kFailed));
    t->set_error("deploying on " + options_.tm_id + ": " + std::string(failed.message()));
    send_(std::move(m));
    return;
  }
  spdlog::info("job {}: running {} (task {}){}", d.job_id(), tdd.execution.to_string(), tdd.task_index,
               tdd.restore_location.empty() ? "" : ", restoring " + tdd.restore_location);
  (*tasks)->submit_task(std::move(tdd));
}

void TaskDeployments::act(const proto::TaskAction& a) {
  runtime::TaskManager* t = find(a.job_id());
  if (t == nullptr) return;
  const runtime::ExecutionId id = from_proto(a.id());
  switch (a.kind()) {
    case proto::TaskAction::CANCEL: t->cancel_task(id); break;
    case proto::TaskAction::TRIGGER_CHECKPOINT:
      t->trigger_checkpoint(id, a.checkpoint_id(), a.timestamp_ms(), a.savepoint(), a.final());
      break;
    case proto::TaskAction::CHECKPOINT_COMPLETE: t->notify_checkpoint_complete(id, a.checkpoint_id()); break;
    case proto::TaskAction::CHECKPOINT_ABORTED: t->notify_checkpoint_aborted(id, a.checkpoint_id()); break;
    case proto::TaskAction::FINISH: t->finish_task(id); break;
    case proto::TaskAction::STOP_SOURCE: t->stop_source(id); break;
    case proto::TaskAction::CONFIRM_SOURCE_POSITIONS: t->confirm_source_positions(id, a.checkpoint_id()); break;
    default: break;
  }
}

void TaskDeployments::route_savepoint(const std::string& job_id, int64_t checkpoint_id, const std::string& directory) {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(job_id);
  if (it != jobs_.end()) it->second->storage->route_savepoint(checkpoint_id, directory);
}

void TaskDeployments::release(const std::string& job_id) {
  restore_points_.erase(job_id);
  std::unique_ptr<Job> job;
  {
    absl::MutexLock lock(&mu_);
    auto it = jobs_.find(job_id);
    if (it == jobs_.end()) return;
    job = std::move(it->second);
    jobs_.erase(it);
  }
  spdlog::info("job {}: released (its tasks here ended)", job_id);
  job->tasks->unregister_job(job_id);
  job->tasks->drain_snapshots();
  data_plane_->release_job(job_id);
  std::error_code ec;
  std::filesystem::remove_all(job->result_dir, ec);
  if (ec) spdlog::warn("cannot remove the results of job {} in {}: {}", job_id, job->result_dir, ec.message());
}

void TaskDeployments::release_all() {
  std::vector<std::string> ids;
  {
    absl::MutexLock lock(&mu_);
    for (auto& [id, j] : jobs_) ids.push_back(id);
  }
  for (const auto& id : ids) release(id);
  restore_points_.clear();
}

// Counters.

void TaskDeployments::add_final_metrics(const std::string& job_id, const runtime::ExecutionId& id,
                                        proto::TaskMetrics* out) {
  // From the task's thread as it ends; the runtime::TaskManager's lock is
  // not held then.
  runtime::TaskManager* tasks = find(job_id);
  if (tasks == nullptr) return;
  for (const auto& e : tasks->task_metrics()) {
    if (e.id == id) to_proto(e.job_id, e.id, e.metrics, out);
  }
}

void TaskDeployments::add_heartbeat_metrics(proto::Heartbeat* hb) {
  const int64_t now = SystemClock::instance()->now_ms();
  // Under mu_, so no job is released meanwhile.
  absl::MutexLock lock(&mu_);
  for (auto& [id, job] : jobs_) {
    for (const auto& e : job->tasks->task_metrics()) {
      to_proto(e.job_id, e.id, e.metrics, hb->add_metrics());
      job->metrics.report(e.id, e.metrics, now);
    }
  }
}

void TaskDeployments::add_exposition(MetricFamilies& out) {
  absl::MutexLock lock(&mu_);
  for (auto& [job_id, job] : jobs_) {
    for (const auto& e : job->tasks->task_metrics(/*with_operators=*/true)) {
      const MetricLabels labels = task_labels(
          {options_.host, options_.tm_id, job_id, job->name, e.task_name, e.id.vertex, e.id.subtask, e.id.attempt});
      auto rates = job->metrics.rates(e.id.vertex, e.id.subtask, e.id.attempt);
      add_task_metrics(out, labels, e.metrics, rates ? &*rates : nullptr);
    }
  }
}

}  // namespace weir::cluster
