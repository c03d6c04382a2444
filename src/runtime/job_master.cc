// JobMaster: scheduling (deploying regions or stages, slots), what tasks
// report (their states, checkpoint acknowledgements and declines, the end of
// their data), the checkpoint coordinator's actions, savepoints and the end
// of the job. What a failure does (restarts, and the records it loses or
// drops) is in job_master_failover.cc.
#include "runtime/job_master.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>

#include "absl/synchronization/notification.h"
#include "common/test_points.h"
#include "network/result_file.h"
#include "runtime/remote_results.h"

namespace weir::runtime {
namespace {

// What restarts together: the pipelined regions, or under --failover task
// each subtask alone.
std::vector<int> restart_units(const graph::JobGraph& g, const JobConfig& config) {
  if (config.failover != FailoverStrategy::kTask) return graph::pipelined_regions(g);
  std::vector<int> each(g.total_subtasks());
  for (size_t i = 0; i < each.size(); ++i) each[i] = static_cast<int>(i);
  return each;
}

bool is_terminal(ExecutionState s) {
  return s == ExecutionState::kFinished || s == ExecutionState::kCanceled ||
         s == ExecutionState::kFailed;
}

}  // namespace

JobMaster::JobMaster(std::string job_id, std::shared_ptr<const graph::JobGraph> graph,
                     JobConfig config, TaskExecutorGateway* task_manager,
                     std::shared_ptr<checkpoint::CheckpointStorage> storage, const Clock* clock,
                     JobControl* control)
    : job_id_(std::move(job_id)),
      graph_(std::move(graph)),
      config_(std::move(config)),
      tm_(task_manager),
      storage_(std::move(storage)),
      clock_(clock),
      control_(control),
      store_(storage_->durable() ? config_.checkpoint.retained : std::min(config_.checkpoint.retained, 1),
             storage_.get()),
      coordinator_(config_.checkpoint, job_id_, clock_, storage_.get(), &store_, this),
      restart_(make_restart_strategy(config_.restart, std::hash<std::string>{}(job_id_))),
      region_of_(restart_units(*graph_, config_)),
      num_regions_(region_of_.empty() ? 0 : *std::max_element(region_of_.begin(), region_of_.end()) + 1),
      region_attempt_(num_regions_, -1),
      staged_(graph_->staged()),
      stages_(*graph_, region_of_, config_, job_id_,
              [this](int vertex, int subtask, const std::string& path) {
                return tm_->holds_result(vertex, subtask, path);
              }),
      executions_(region_of_.size()),
      source_progress_(region_of_.size()),
      loop_(std::chrono::milliseconds(5), [this] { coordinator_.tick(); }) {
  for (const auto& v : graph_->vertices) {
    for (int s = 0; s < v.parallelism; ++s) executions_[graph_->task_index(v.id, s)].id = ExecutionId{v.id, s, -1};
  }
  loop_.start();
}

JobMaster::~JobMaster() { loop_.stop(); }

void JobMaster::set_checkpoint_id_counter(checkpoint::CheckpointIdCounter* counter) {
  loop_.post([this, counter] { coordinator_.set_id_counter(counter); });
}

void JobMaster::start(std::optional<checkpoint::RestoredCheckpoint> restored, bool claim,
                      std::vector<checkpoint::CompletedCheckpointStore::Entry> older) {
  loop_.post([this, restored = std::move(restored), claim, older = std::move(older)]() mutable {
    start_ms_ = clock_->now_ms();
    for (auto& e : older) store_.add(std::move(e));
    if (restored) {
      restored_id_ = restored->metadata.checkpoint_id;
      restored_from_ = restored->location;
      auto meta = std::make_shared<const checkpoint::CheckpointMetadata>(
          std::move(restored->metadata));
      // Not owned unless claimed: by default this job never deletes the
      // checkpoint it started from.
      store_.add({restored_id_, restored->location, meta, config_.restore_claim || claim});
      coordinator_.set_next_checkpoint_id(restored_id_ + 1);
    }
    status_ = JobStatus::kRunning;
    spdlog::info("job {}: RUNNING, {} subtasks in {} {}{}{}", job_id_, graph_->total_subtasks(), num_regions_,
                 config_.failover == FailoverStrategy::kTask ? "failover unit" : "region", num_regions_ == 1 ? "" : "s",
                 restored_from_.empty() ? "" : ", restored from " + restored_from_);
    deploy_all();
  });
}

JobResult JobMaster::wait() {
  absl::MutexLock lock(&done_mu_);
  while (!result_.has_value()) done_cv_.Wait(&done_mu_);
  return *result_;
}

void JobMaster::cancel() {
  loop_.post([this] {
    if (status_ == JobStatus::kFinished || status_ == JobStatus::kFailed) return;
    coordinator_.stop();
    for (auto& e : executions_) {
      if (!e.terminal) tm_->cancel_task(e.id);
    }
    finish_job(JobStatus::kCanceled, "");
  });
}

JobMaster::Status JobMaster::status() {
  Status out;
  absl::Notification done;
  loop_.post([&] {
    out.status = status_;
    out.attempt = attempt_;
    out.restarts = restarts_;
    out.lost_records = lost_records_;
    out.dropped_records = dropped_records_;
    out.failure = last_failure_;
    out.waiting_for_slots = waiting_for_slots_why_;
    out.checkpoints = coordinator_.completed_stats();
    out.failed_checkpoints = coordinator_.failed_checkpoints();
    out.checkpoint_counts = coordinator_.counts();
    if (outage_start_ms_ >= 0) {
      out.downtime_ms = clock_->now_ms() - outage_start_ms_;
      out.restarting_time_ms = out.downtime_ms;
    } else {
      out.restarting_time_ms = last_outage_ms_;
    }
    out.failures.assign(failures_.begin(), failures_.end());
    out.failures_total = failures_total_;
    out.last_restore_ms = last_restore_ms_;
    out.last_restored_id = last_restored_id_;
    out.last_restored_from = last_restored_from_;
    for (const auto& e : executions_) out.executions.push_back({e.id, e.state, e.terminal});
    done.Notify();
  });
  done.WaitForNotification();
  return out;
}

bool JobMaster::place_attempt(std::vector<TaskDeploymentDescriptor>& tdds, const std::set<int>& regions) {
  absl::Status placed = tm_->place(tdds);
  if (placed.ok()) {
    waiting_for_slots_since_ms_ = -1;
    waiting_for_slots_why_.clear();
    return true;
  }
  const int64_t now = clock_->now_ms();
  waiting_for_slots_why_ = std::string(placed.message());
  if (waiting_for_slots_since_ms_ < 0) {
    waiting_for_slots_since_ms_ = now;
    spdlog::info("job {}: waiting for slots: {}", job_id_, waiting_for_slots_why_);
  }
  if (now - waiting_for_slots_since_ms_ >= config_.slot_timeout.count()) {
    waiting_for_slots_since_ms_ = -1;
    waiting_for_slots_why_.clear();
    finish_job(JobStatus::kFailed, "no slots for the job after " +
                                       std::to_string(config_.slot_timeout.count()) +
                                       " ms: " + std::string(placed.message()));
    return false;
  }
  waiting_for_slots_ = regions;
  loop_.post_delayed(std::chrono::milliseconds(100), [this] {
    if (status_ != JobStatus::kRunning || waiting_for_slots_.empty()) return;
    std::set<int> regions;
    regions.swap(waiting_for_slots_);
    deploy(regions);
  });
  return false;
}

void JobMaster::deploy_all() {
  std::set<int> all;
  for (int r = 0; r < num_regions_; ++r) all.insert(r);
  if (!staged_) return deploy(all);
  stages_.wait(all);
  schedule_ready();
}

bool JobMaster::region_finished(int region) const {
  if (stages_.waiting(region) || restarting_.count(region) != 0) return false;
  for (size_t i = 0; i < executions_.size(); ++i) {
    if (region_of_[i] == region && executions_[i].state != ExecutionState::kFinished) return false;
  }
  return true;
}

void JobMaster::schedule_ready() {
  if (status_ != JobStatus::kRunning) return;
  std::set<int> ready = stages_.take_ready([this](int r) { return region_finished(r); });
  if (!ready.empty()) deploy(ready);
}

void JobMaster::restart_upstream_sources(int task) {
  std::vector<bool> upstream(graph_->vertices.size(), false);
  std::vector<int> todo{executions_[task].id.vertex};
  while (!todo.empty()) {
    const int v = todo.back();
    todo.pop_back();
    for (int e : graph_->vertices[v].inputs) {
      const int from = graph_->edges[e].source_vertex;
      if (!upstream[from]) {
        upstream[from] = true;
        todo.push_back(from);
      }
    }
  }
  for (size_t i = 0; i < executions_.size(); ++i) {
    const int v = executions_[i].id.vertex;
    if (upstream[v] && graph_->vertices[v].is_source) restarting_.insert(region_of_[i]);
  }
}

void JobMaster::deploy(const std::set<int>& regions) {
  restart_scheduled_ = false;
  const checkpoint::CompletedCheckpointStore::Entry* latest = store_.latest();
  std::vector<TaskDeploymentDescriptor> tdds;
  std::vector<Execution> executions;
  for (const auto& v : graph_->vertices) {
    for (int s = 0; s < v.parallelism; ++s) {
      const int index = graph_->task_index(v.id, s);
      const int region = region_of_[index];
      if (regions.count(region) == 0) continue;
      TaskDeploymentDescriptor tdd;
      tdd.job_id = job_id_;
      tdd.execution = ExecutionId{v.id, s, region_attempt_[region] + 1};
      tdd.task_index = index;
      tdd.channel_generation = channel_generation_;
      tdd.first_checkpoint_id = coordinator_.next_checkpoint_id();  // the ones before have ended
      tdd.key_groups = key_group_range_for_operator(graph_->max_parallelism, v.parallelism, s);
      if (latest != nullptr) {
        tdd.restore_location = latest->location;
        tdd.restore = latest->metadata;
      }
      SourceProgress& progress = source_progress_[index];
      if (v.is_source) count_rolled_back(index, latest);
      tdd.source_positions = progress.positions;
      progress.confirmed_records = progress.released_records = 0;
      progress.base = progress.total_confirmed;
      Execution e;
      e.id = tdd.execution;
      e.is_source = v.is_source;
      e.terminal = false;
      e.state = ExecutionState::kDeploying;
      executions.push_back(e);
      tdds.push_back(std::move(tdd));
    }
  }
  if (!place_attempt(tdds, regions)) return;
  if (latest != nullptr) {
    last_restore_ms_ = clock_->wall_ms();
    last_restored_id_ = latest->id;
    last_restored_from_ = latest->location;
  }
  for (int r : regions) ++region_attempt_[r];
  attempt_ = *std::max_element(region_attempt_.begin(), region_attempt_.end());
  for (size_t i = 0; i < tdds.size(); ++i) executions_[tdds[i].task_index] = executions[i];
  if (latest != nullptr && attempt_ > 0) {
    spdlog::info("job {}: {} restores checkpoint {} from {}", job_id_,
                 static_cast<int>(regions.size()) == num_regions_
                     ? "attempt " + std::to_string(attempt_)
                     : std::to_string(regions.size()) + " of " + std::to_string(num_regions_) +
                           (config_.failover == FailoverStrategy::kTask ? " subtasks" : " regions"),
                 latest->id, latest->location);
  }
  // A staged job takes no checkpoints: a failed stage re-reads its input.
  if (!staged_) coordinator_.start(static_cast<int>(executions_.size()));
  for (auto& tdd : tdds) tm_->submit_task(std::move(tdd));
  if (draining_) {  // a restart during stop-with-drain: the new sources stop too
    for (const auto& tdd : tdds) {
      if (executions_[tdd.task_index].is_source) tm_->stop_source(executions_[tdd.task_index].id);
    }
  }
}

void JobMaster::handle_request(JobControl::Request r) {
  if (r.kind == JobControl::Request::Kind::kCancel) return cancel();
  loop_.post([this, r = std::move(r)] {
    auto report_error = [&](const std::string& error) {
      savepoint_done(-1, r.target_directory, absl::FailedPreconditionError(error));
    };
    if (status_ != JobStatus::kRunning) return report_error("the job is not running");
    if (staged_) {
      return report_error(
          "a job with blocking or persisted exchanges takes no savepoints: its stages' results are its recovery "
          "points");
    }
    if (draining_ || stop_savepoint_id_ >= 0) return report_error("the job is already stopping");
    if (r.target_directory.empty()) return report_error("no savepoint directory given");
    std::string dir = (std::filesystem::path(r.target_directory) /
                       ("savepoint-" + job_id_.substr(0, 6) + "-" +
                        std::to_string(coordinator_.next_checkpoint_id())))
                          .string();
    if (r.kind == JobControl::Request::Kind::kStop && r.drain) {
      // The final checkpoint after the sources ended is the savepoint.
      draining_ = true;
      coordinator_.make_final_checkpoint_a_savepoint(dir);
      for (auto& e : executions_) {
        if (e.is_source && !e.terminal) tm_->stop_source(e.id);
      }
      return;
    }
    auto id = coordinator_.trigger_savepoint(dir);
    if (!id.ok()) return report_error(std::string(id.status().message()));
    if (r.kind == JobControl::Request::Kind::kStop) stop_savepoint_id_ = *id;
  });
}

void JobMaster::savepoint_done(int64_t id, const std::string& location, const absl::Status& status) {
  SavepointResult r{id, location, status.ok() ? "" : std::string(status.message())};
  if (status.ok()) {
    spdlog::info("job {}: savepoint {} completed: {}", job_id_, id, location);
  } else {
    spdlog::warn("job {}: savepoint failed: {}", job_id_, r.error);
  }
  savepoints_.push_back(r);
  if (control_ != nullptr) detail::JobControlAccess::report(*control_, r);
  if (status.ok() && draining_) stopped_with_savepoint_ = location;
  if (id >= 0 && id == stop_savepoint_id_) {
    if (!status.ok()) {
      stop_savepoint_id_ = -1;  // the job keeps running
      return;
    }
    stopped_with_savepoint_ = location;
    stop_tasks();
  }
}

// Stop without drain: no further checkpoints; every task ends where it is
// (after the notifications already sent, so sinks commit the savepoint's
// transactions first).
void JobMaster::stop_tasks() {
  stopping_ = true;
  coordinator_.stop();
  for (auto& e : executions_) {
    if (!e.terminal) tm_->finish_task(e.id);
  }
}

int JobMaster::task_index(const ExecutionId& id) const {
  if (id.vertex < 0 || id.vertex >= static_cast<int>(graph_->vertices.size()) || id.subtask < 0 ||
      id.subtask >= graph_->vertices[id.vertex].parallelism) {
    return -1;
  }
  int index = graph_->task_index(id.vertex, id.subtask);
  return executions_[index].id == id ? index : -1;  // -1: another attempt
}

void JobMaster::update_task_state(const ExecutionId& id, ExecutionState state,
                                  const std::string& error, bool unrecoverable) {
  loop_.post([this, id, state, error, unrecoverable] { on_task_state(id, state, error, unrecoverable); });
}

void JobMaster::executions_lost(std::vector<ExecutionId> ids, const std::string& reason) {
  loop_.post([this, ids = std::move(ids), reason] {
    if (config_.failover == FailoverStrategy::kTask && status_ == JobStatus::kRunning &&
        std::any_of(ids.begin(), ids.end(), [&](const ExecutionId& id) {
          const int idx = task_index(id);
          return idx >= 0 && !executions_[idx].terminal;
        })) {
      handle_failure(-1, reason);
    }
    for (const auto& id : ids) on_task_state(id, ExecutionState::kFailed, reason);
  });
}

void JobMaster::on_task_state(const ExecutionId& id, ExecutionState state,
                              const std::string& error, bool unrecoverable) {
  int idx = task_index(id);
  if (idx < 0) return;  // an earlier attempt
  Execution& e = executions_[idx];
  if (e.terminal) return;
  if (is_terminal(state) && stopping_ && state == ExecutionState::kFailed) {
    // Stopped after the savepoint while a neighbour that had stopped first
    // was gone: no failure, so not logged as one.
    spdlog::info("job {}: {} stopped after the savepoint ({})", job_id_, describe(id), error);
  } else if (is_terminal(state)) {
    spdlog::info("job {}: {} {}{}", job_id_, describe(id), to_string(state), error.empty() ? "" : ": " + error);
  }
  e.state = state;
  e.terminal = is_terminal(state);
  if (e.terminal && state != ExecutionState::kFinished && config_.failover == FailoverStrategy::kTask) {
    count_lost_records(idx);
  }
  if (stopping_) {
    // Stopped after its savepoint: tasks end where they are, and one that
    // finds a neighbour already gone is no failure.
    if (status_ == JobStatus::kRunning &&
        std::all_of(executions_.begin(), executions_.end(), [](const Execution& x) { return x.terminal; })) {
      finish_job(JobStatus::kFinished, "");
    }
    return;
  }
  const bool restarting = restarting_.count(region_of_[idx]) != 0;
  if (state == ExecutionState::kFailed && !restarting) {
    handle_failure(region_of_[idx], error, unrecoverable);
  } else if (state == ExecutionState::kCanceled && !restarting && status_ == JobStatus::kRunning) {
    handle_failure(region_of_[idx], id.to_string() + " was cancelled unexpectedly");
  }
  if (staged_ && state == ExecutionState::kFinished && region_finished(region_of_[idx])) {
    failures_without_progress_ = 0;  // a finished stage is progress
    schedule_ready();
  }
  if (!restarting_.empty()) {
    maybe_restart();
    return;
  }
  if (state == ExecutionState::kRunning) maybe_end_outage();
  if (status_ == JobStatus::kRunning && stages_.none_waiting() &&
      std::all_of(executions_.begin(), executions_.end(),
                  [](const Execution& x) { return x.state == ExecutionState::kFinished; })) {
    coordinator_.stop();
    finish_job(JobStatus::kFinished, "");
  }
}

void JobMaster::finish_job(JobStatus status, const std::string& failure) {
  if (unlogged_failures_ > 0) {
    spdlog::warn("job {}: {} more failure{} like the one logged before, each followed by a restart", job_id_,
                 unlogged_failures_, unlogged_failures_ == 1 ? "" : "s");
    unlogged_failures_ = 0;
  }
  status_ = status;
  std::set<std::string> remote;
  for (const graph::JobEdge& e : graph_->edges) {
    std::error_code ec;
    if (e.blocking()) std::filesystem::remove_all(network::local_result_root(config_, job_id_, e.exchange), ec);
    remote.insert(network::remote_result_directory(config_, job_id_, e.exchange));
  }
  remote.erase("");
  for (const std::string& dir : remote) remove_remote_results(dir);
  JobResult r;
  r.job_id = job_id_;
  r.status = status;
  r.failure = failure;
  r.restarts = restarts_;
  r.lost_records = lost_records_;
  r.dropped_records = dropped_records_;
  r.last_failure = last_failure_;
  r.checkpoints = coordinator_.completed_stats();
  r.failed_checkpoints = coordinator_.failed_checkpoints();
  r.checkpoint_counts = coordinator_.counts();
  r.restored_checkpoint_id = restored_id_;
  r.restored_from = restored_from_;
  r.savepoints = savepoints_;
  r.stopped_with_savepoint = stopped_with_savepoint_;
  r.wall_time = Duration(clock_->now_ms() - start_ms_);
  absl::MutexLock lock(&done_mu_);
  result_ = std::move(r);
  done_cv_.SignalAll();
}

void JobMaster::acknowledge_checkpoint(const ExecutionId& id, int64_t cp, checkpoint::TaskAck ack) {
  loop_.post([this, id, cp, ack = std::move(ack)]() mutable {
    int idx = task_index(id);
    if (idx < 0 || status_ != JobStatus::kRunning) {
      coordinator_.on_stale_report(cp);
      return;
    }
    if (executions_[idx].is_source && config_.checkpoint.mode == CheckpointingMode::kAtMostOnce) {
      source_marks_[cp][idx] = source_progress_[idx].base + ack.source_records;
    }
    coordinator_.on_ack(idx, cp, std::move(ack));
  });
}

void JobMaster::decline_checkpoint(const ExecutionId& id, int64_t cp, const std::string& reason) {
  loop_.post([this, id, cp, reason] {
    int idx = task_index(id);
    if (idx < 0 || status_ != JobStatus::kRunning) {
      coordinator_.on_stale_report(cp);
      return;
    }
    spdlog::info("job {}: checkpoint {} declined by {}: {}", job_id_, cp, id.to_string(), reason);
    coordinator_.on_decline(idx, cp, reason);
  });
}

void JobMaster::end_of_data(const ExecutionId& id) {
  loop_.post([this, id] {
    int idx = task_index(id);
    if (idx < 0 || status_ != JobStatus::kRunning) return;
    executions_[idx].end_of_data = true;
    if (staged_) {
      // The region's pipelined channels are drained once all its tasks'
      // input ended: they finish (sinks commit), and so does the stage.
      const int region = region_of_[idx];
      for (size_t i = 0; i < executions_.size(); ++i) {
        if (region_of_[i] == region && !executions_[i].end_of_data) return;
      }
      for (size_t i = 0; i < executions_.size(); ++i) {
        if (region_of_[i] == region && !executions_[i].terminal) tm_->finish_task(executions_[i].id);
      }
      return;
    }
    // An iteration ends after its input did, once its loop is quiet: the
    // final checkpoint waits for its heads too.
    bool sources_done = std::all_of(executions_.begin(), executions_.end(), [this](const Execution& x) {
      return !(x.is_source || graph_->vertices[x.id.vertex].iteration_head) || x.end_of_data;
    });
    if (sources_done) coordinator_.request_final_checkpoint();
  });
}

void JobMaster::trigger_sources(int64_t cp, int64_t ts, bool savepoint, bool final) {
  if (savepoint) tm_->prepare_savepoint(cp, storage_->location(cp));
  for (auto& e : executions_) {
    if (e.is_source) tm_->trigger_checkpoint(e.id, cp, ts, savepoint, final);
  }
}

std::string JobMaster::describe(const ExecutionId& id) const {
  const graph::JobVertex& v = graph_->vertices[id.vertex];
  return v.name + " (" + std::to_string(id.subtask + 1) + "/" + std::to_string(v.parallelism) + ") attempt " +
         std::to_string(id.attempt);
}

void JobMaster::notify_complete(int64_t cp) {
  const std::vector<CompletedCheckpointStats>& stats = coordinator_.completed_stats();
  if (!stats.empty() && stats.back().id == cp) {
    const CompletedCheckpointStats& c = stats.back();
    int64_t alignment_ms = 0;
    for (const auto& s : c.subtasks) alignment_ms = std::max(alignment_ms, s.alignment_ms);
    spdlog::info("job {}: {} {} completed in {} ms, {} bytes ({} new), alignment {} ms{}", job_id_,
                 c.is_savepoint ? "savepoint" : c.is_final ? "final checkpoint" : "checkpoint", cp, c.duration.count(),
                 c.state_bytes, c.new_bytes,
                 alignment_ms,
                 c.persisted_data > 0 ? fmt::format(", channel state {} bytes", c.persisted_data) : std::string());
  } else {
    spdlog::info("job {}: checkpoint {} completed", job_id_, cp);
  }
  WEIR_CRASH_POINT(CrashPoint::kCompletedBeforeNotify);
  failures_without_progress_ = 0;
  if (config_.checkpoint.mode == CheckpointingMode::kAtMostOnce) {
    // A source that had finished took no snapshot: every record it was
    // confirmed is in this checkpoint.
    std::map<int, int64_t>& marks = source_marks_[cp];
    for (size_t i = 0; i < executions_.size(); ++i) {
      if (executions_[i].is_source && executions_[i].state == ExecutionState::kFinished) {
        marks.try_emplace(static_cast<int>(i), source_progress_[i].total_confirmed);
      }
    }
    // Only the retained checkpoints can be restored (and pending ones, newer).
    std::set<int64_t> retained;
    for (const auto& e : store_.entries()) retained.insert(e.id);
    for (auto it = source_marks_.begin(); it != source_marks_.end() && it->first < cp;) {
      it = retained.count(it->first) != 0 ? std::next(it) : source_marks_.erase(it);
    }
  }
  for (auto& e : executions_) {
    if (!e.terminal) tm_->notify_checkpoint_complete(e.id, cp);
  }
}

void JobMaster::notify_aborted(int64_t cp) {
  source_marks_.erase(cp);
  for (auto& e : executions_) {
    if (!e.terminal) tm_->notify_checkpoint_aborted(e.id, cp);
  }
}

void JobMaster::final_checkpoint_complete(int64_t) {
  for (auto& e : executions_) {
    if (!e.terminal) tm_->finish_task(e.id);
  }
}

void JobMaster::fail_job(const absl::Status& why) {
  // Called from inside the coordinator: fail after it has returned.
  loop_.post([this, msg = std::string(why.message())] { handle_failure(-1, msg); });
}

}  // namespace weir::runtime
