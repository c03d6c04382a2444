#include "checkpoint/coordinator.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>

namespace weir::checkpoint {

std::vector<std::string> CompletedCheckpointStore::reference(const Entry& e, int delta) {
  std::vector<std::string> released;
  if (e.metadata == nullptr) return released;
  for (const auto& op : e.metadata->operators) {
    for (const auto& s : op.subtasks) {
      auto count = [&](const std::string& relative) {
        std::string path = native_file_location(e.location, relative);
        int& n = shared_refs_[path];
        n += delta;
        if (n <= 0) {
          shared_refs_.erase(path);
          released.push_back(std::move(path));
        }
      };
      for (const auto& f : s.native_files) {
        if (f.shared) count(f.path);
      }
      for (const auto& f : s.changelog) count(f.path);  // every changelog file is shared
    }
  }
  return released;
}

bool CompletedCheckpointStore::forget(const Entry& e) {
  absl::Status s = storage_->forget_completed(e.id);
  if (s.ok()) return true;
  spdlog::warn("keeping checkpoint {} at {}: {}", e.id, e.location, std::string(s.message()));
  return false;
}

void CompletedCheckpointStore::add(Entry e) {
  if (e.owned) reference(e, +1);
  entries_.push_back(std::move(e));
  // Savepoints behind the latest entry are no longer restore points here.
  for (auto it = entries_.begin(); it + 1 < entries_.end();) {
    if (!it->savepoint) {
      ++it;
      continue;
    }
    forget(*it);  // the user's: its files stay whatever happens
    it = entries_.erase(it);
  }
  auto checkpoints = [this] {
    return std::count_if(entries_.begin(), entries_.end(), [](const Entry& x) { return !x.savepoint; });
  };
  while (checkpoints() > retained_) {
    auto first = std::find_if(entries_.begin(), entries_.end(), [](const Entry& x) { return !x.savepoint; });
    Entry old = std::move(*first);
    entries_.erase(first);
    // Still recorded as completed elsewhere: its files (and the shared
    // files it refers to) stay.
    if (!forget(old) || !old.owned) continue;
    std::vector<std::string> released = reference(old, -1);
    if (old.location == storage_->location(old.id)) {
      storage_->discard_subsumed(old.id, released);
    } else {
      discard_checkpoint_at(old.location);  // a claimed checkpoint of an earlier job
      discard_files(released);
    }
  }
}

CheckpointCoordinator::CheckpointCoordinator(CheckpointConfig config, std::string job_id,
                                             const Clock* clock, CheckpointStorage* storage,
                                             CompletedCheckpointStore* store,
                                             CoordinatorActions* actions)
    : config_(std::move(config)),
      job_id_(std::move(job_id)),
      clock_(clock),
      storage_(storage),
      store_(store),
      actions_(actions) {}

void CheckpointCoordinator::start(int num_tasks) {
  running_ = true;
  num_tasks_ = num_tasks;
  final_requested_ = false;
  final_done_ = false;
  next_trigger_ms_ = clock_->now_ms() + config_.interval.count();
}

void CheckpointCoordinator::stop() {
  running_ = false;
  while (!pending_.empty()) abort(pending_.begin()->first, CheckpointFailureReason::kAttemptEnded);
}

void CheckpointCoordinator::request_final_checkpoint() {
  if (!running_ || final_done_) return;
  final_requested_ = true;
  next_trigger_ms_ = clock_->now_ms();  // now; a failed one is retried an interval later
  tick();
}

CheckpointCounts CheckpointCoordinator::counts() const {
  CheckpointCounts c;
  c.completed = completed_total_;
  c.failed = failed_total_;
  c.in_progress = static_cast<int64_t>(pending_.size());
  c.duration_sum_ms = duration_sum_ms_;
  c.duration_max_ms = duration_max_ms_;
  return c;
}

void CheckpointCoordinator::tick() {
  if (!running_) return;
  int64_t now = clock_->now_ms();
  std::vector<int64_t> expired;
  for (const auto& [id, p] : pending_) {
    if (now - p.trigger_ms >= config_.timeout.count()) expired.push_back(id);
  }
  for (int64_t id : expired) {
    abort(id, CheckpointFailureReason::kExpired, "after " + std::to_string(config_.timeout.count()) + " ms");
    if (!running_) return;
  }
  if (final_requested_) {
    bool final_pending = std::any_of(pending_.begin(), pending_.end(),
                                     [](const auto& kv) { return kv.second.is_final; });
    if (pending_.empty() && !final_pending && now >= next_trigger_ms_) {
      auto id = trigger(true, final_savepoint_dir_);
      if (!id.ok()) {  // no savepoint directory: take the final checkpoint as a checkpoint
        actions_->savepoint_done(-1, final_savepoint_dir_, id.status());
        final_savepoint_dir_.clear();
        (void)trigger(true);
      }
    }
    return;
  }
  if (periodic() && static_cast<int>(pending_.size()) < config_.max_concurrent &&
      now >= next_trigger_ms_) {
    (void)trigger(false);
  }
}

absl::StatusOr<int64_t> CheckpointCoordinator::trigger_savepoint(const std::string& dir) {
  if (!running_) return absl::FailedPreconditionError("the job is not running");
  if (final_requested_ || final_done_) {
    return absl::FailedPreconditionError("the job's input has ended; no savepoint can be taken");
  }
  return trigger(false, dir);
}

absl::StatusOr<int64_t> CheckpointCoordinator::trigger(bool is_final, const std::string& savepoint_dir) {
  if (counter_ != nullptr) {
    auto id = counter_->next(next_id_);
    if (!id.ok()) {
      // Nothing was triggered; the next attempt comes one interval later.
      next_trigger_ms_ = clock_->now_ms() + config_.interval.count();
      spdlog::warn("job {}: no checkpoint id: {}", job_id_, std::string(id.status().message()));
      return id.status();
    }
    next_id_ = *id;
  }
  if (!savepoint_dir.empty()) {
    absl::Status s = storage_->add_savepoint(next_id_, savepoint_dir);
    if (!s.ok()) return s;
  }
  Pending p;
  p.id = next_id_++;
  p.trigger_ms = clock_->now_ms();
  p.wall_ms = clock_->wall_ms();
  p.is_final = is_final;
  p.savepoint_dir = savepoint_dir;
  for (int t = 0; t < num_tasks_; ++t) p.awaiting.insert(t);
  int64_t id = p.id;
  int64_t wall = p.wall_ms;
  pending_.emplace(id, std::move(p));
  next_trigger_ms_ = clock_->now_ms() + config_.interval.count();
  actions_->trigger_sources(id, wall, !savepoint_dir.empty(), is_final);
  return id;
}

void CheckpointCoordinator::on_ack(int task, int64_t id, TaskAck ack) {
  auto it = pending_.find(id);
  if (it == pending_.end()) {
    on_stale_report(id);
    return;
  }
  Pending& p = it->second;
  if (p.awaiting.erase(task) == 0) return;
  uint64_t bytes = 0;  // of the state it acknowledged, as the checkpoint's state_bytes counts it
  for (const AckedOperatorState& s : ack.states) {
    bytes += s.handle.file_size;
    for (const auto& f : s.handle.native_files) bytes += f.size;
    for (const auto& f : s.handle.changelog) bytes += f.size;
  }
  p.timings.push_back(
      {task, ack.sync_ms, ack.async_ms, ack.alignment_ms, bytes, static_cast<uint64_t>(ack.persisted_data)});
  p.acks.push_back(std::move(ack));
  if (!p.awaiting.empty()) return;
  Pending done = std::move(p);
  pending_.erase(it);
  complete(std::move(done));
}

void CheckpointCoordinator::on_stale_report(int64_t id) {
  if (pending_.count(id) != 0 || id >= next_id_) return;
  for (const auto& e : store_->entries()) {
    if (e.id == id) return;
  }
  // A task wrote files for a checkpoint that was aborted meanwhile (or of
  // an attempt that ended): they may have landed after the abort removed
  // the directory, so remove them again.
  storage_->discard(id);
}

void CheckpointCoordinator::on_decline(int task, int64_t id, const std::string& reason) {
  if (pending_.count(id) == 0) {
    on_stale_report(id);
    return;
  }
  // A task declines an older checkpoint only for a newer one it already
  // has a barrier of: that one is pending here.
  const bool subsumed = pending_.upper_bound(id) != pending_.end();
  abort(id, subsumed ? CheckpointFailureReason::kSubsumed : CheckpointFailureReason::kDeclined,
        "by task " + std::to_string(task) + ": " + reason);
}

void CheckpointCoordinator::complete(Pending p) {
  auto meta = std::make_shared<CheckpointMetadata>();
  meta->checkpoint_id = p.id;
  meta->timestamp_ms = p.wall_ms;
  meta->is_final = p.is_final;
  meta->job_id = job_id_;
  std::map<std::string, OperatorStateHandles> by_uid;
  for (TaskAck& ack : p.acks) {
    for (AckedOperatorState& s : ack.states) {
      OperatorStateHandles& op = by_uid[s.uid];
      op.uid = s.uid;
      op.parallelism = s.parallelism;
      op.max_parallelism = s.max_parallelism;
      op.subtasks.push_back(std::move(s.handle));
    }
  }
  for (auto& [uid, op] : by_uid) {
    std::sort(op.subtasks.begin(), op.subtasks.end(),
              [](const auto& a, const auto& b) { return a.subtask < b.subtask; });
    meta->operators.push_back(std::move(op));
  }
  auto location = storage_->finalize(*meta);
  if (!location.ok()) {
    // Back in the map so abort() sees it.
    int64_t id = p.id;
    pending_.emplace(id, std::move(p));
    abort(id, CheckpointFailureReason::kFinalizeFailed, std::string(location.status().message()));
    return;
  }
  int64_t now = clock_->now_ms();
  const bool savepoint = !p.savepoint_dir.empty();
  std::sort(p.timings.begin(), p.timings.end(),
            [](const auto& a, const auto& b) { return a.task < b.task; });
  uint64_t persisted = 0;
  for (const auto& t : p.timings) persisted += t.persisted_data;
  stats_.push_back(CompletedCheckpointStats{p.id, p.wall_ms, Duration(now - p.trigger_ms), meta->total_bytes(),
                                            p.is_final, savepoint, meta->new_bytes(), persisted,
                                            std::move(p.timings)});
  if (stats_.size() > kCheckpointHistory) stats_.erase(stats_.begin());
  ++completed_total_;
  duration_sum_ms_ += now - p.trigger_ms;
  duration_max_ms_ = std::max(duration_max_ms_, now - p.trigger_ms);
  // A savepoint is the newest restore point too, but owned by the user.
  store_->add({p.id, *location, meta, !savepoint, savepoint});
  if (!savepoint) sweep_orphans(p.id);
  consecutive_failures_ = 0;
  next_trigger_ms_ =
      std::max(next_trigger_ms_, now + static_cast<int64_t>(config_.min_pause.count()));
  actions_->notify_complete(p.id);
  if (savepoint) actions_->savepoint_done(p.id, *location, absl::OkStatus());
  if (p.is_final) {
    final_done_ = true;
    final_requested_ = false;
    actions_->final_checkpoint_complete(p.id);
  }
}

void CheckpointCoordinator::sweep_orphans(int64_t completed) {
  const int64_t now = clock_->now_ms();
  if (last_sweep_ms_ != INT64_MIN && now - last_sweep_ms_ < kOrphanSweepMs) return;
  last_sweep_ms_ = now;
  auto ids = storage_->stored_checkpoints();
  if (!ids.ok()) {
    spdlog::warn("job {}: cannot list the checkpoint storage for leftovers: {}", job_id_,
                 std::string(ids.status().message()));
    return;
  }
  std::set<int64_t> keep;
  for (const auto& e : store_->entries()) keep.insert(e.id);
  for (const auto& [id, p] : pending_) keep.insert(id);
  for (int64_t id : *ids) {
    if (id >= completed || keep.count(id) != 0) continue;
    spdlog::info("job {}: removing leftover checkpoint {} at {} (not retained, not pending)", job_id_, id,
                 storage_->location(id));
    // Its own files only: shared files are counted by the retained ones.
    storage_->discard_subsumed(id, {});
  }
}

std::string_view to_string(CheckpointFailureReason r) {
  switch (r) {
    case CheckpointFailureReason::kAttemptEnded: return "job attempt ended";
    case CheckpointFailureReason::kExpired: return "expired";
    case CheckpointFailureReason::kDeclined: return "declined";
    case CheckpointFailureReason::kFinalizeFailed: return "writing metadata failed";
    case CheckpointFailureReason::kSubsumed: return "subsumed";
  }
  return "?";
}

bool counts_as_failure(CheckpointFailureReason r) {
  return r != CheckpointFailureReason::kAttemptEnded && r != CheckpointFailureReason::kSubsumed;
}

namespace {

// The reason in words, as logs and job failures show it: "expired after
// 600000 ms", "declined by task 3: ...", "writing metadata failed: ...".
std::string describe(CheckpointFailureReason why, const std::string& detail) {
  if (detail.empty()) return std::string(to_string(why));
  const char* separator = why == CheckpointFailureReason::kFinalizeFailed ? ": " : " ";
  return std::string(to_string(why)) + separator + detail;
}

}  // namespace

void CheckpointCoordinator::abort(int64_t id, CheckpointFailureReason why, const std::string& detail) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  const std::string reason = describe(why, detail);
  std::string savepoint_dir = it->second.savepoint_dir;
  pending_.erase(it);
  storage_->discard(id);
  actions_->notify_aborted(id);
  if (!savepoint_dir.empty()) {
    actions_->savepoint_done(id, savepoint_dir, absl::AbortedError("savepoint " + std::to_string(id) +
                                                                   " failed: " + reason));
    return;  // a failed savepoint does not count against the job
  }
  if (!counts_as_failure(why)) return;
  ++failed_total_;
  ++consecutive_failures_;
  next_trigger_ms_ = std::max(next_trigger_ms_,
                              clock_->now_ms() + static_cast<int64_t>(config_.min_pause.count()));
  const int64_t n = consecutive_failures_;
  if (n <= config_.tolerable_failed_checkpoints && (n == 1 || n == 10 || n == 100 || n % 1000 == 0)) {
    // Tolerated: logged when it starts and then ever more rarely.
    spdlog::warn("job {}: checkpoint {} failed ({}); {} failed in a row, {} tolerated", job_id_, id, reason, n,
                 config_.tolerable_failed_checkpoints);
  }
  if (consecutive_failures_ > config_.tolerable_failed_checkpoints) {
    actions_->fail_job(absl::AbortedError("checkpoint " + std::to_string(id) + " failed (" +
                                          reason + "); tolerable failed checkpoints: " +
                                          std::to_string(config_.tolerable_failed_checkpoints)));
  }
}

}  // namespace weir::checkpoint
