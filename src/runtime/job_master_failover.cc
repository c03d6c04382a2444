// JobMaster: what happens after a task fails (the restart strategy's
// decision, the regions or subtasks that restart, the job failing when
// failures stop making progress or no intact checkpoint is left, how
// restarts are logged) and what failures cost: the records lost under
// at-most-once (with the source positions it needs) and those --failover
// task drops. Scheduling, checkpoints and savepoints are in job_master.cc.
#include "runtime/job_master.h"

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <string>

#include "checkpoint/storage_scheme.h"

namespace weir::runtime {
namespace {

// A minute without failure counts as progress (max_failures_without_progress).
constexpr int64_t kProgressQuietMs = 60'000;
// Failures without progress end the job only once they span this long, so
// that a passing condition (a TaskManager restarting, descriptors or disk
// space short for a moment) is ridden out.
constexpr int64_t kMinStuckMs = 10'000;
// A restart after the same failure (but for its numbers) is logged at most
// once in this long.
constexpr int64_t kRepeatedLogIntervalMs = 10'000;

}  // namespace

void JobMaster::handle_failure(int region, const std::string& error, bool unrecoverable) {
  if (status_ != JobStatus::kRunning) return;
  if (unrecoverable) unrecoverable_ = true;
  const bool first = restarting_.empty();
  last_failure_ = error;
  if (region < 0 || config_.failover == FailoverStrategy::kFull) {
    for (int r = 0; r < num_regions_; ++r) restarting_.insert(r);
    // Under --failover task every channel is dropped with the attempts.
    if (config_.failover == FailoverStrategy::kTask) ++channel_generation_;
  } else {
    restarting_.insert(region);
    if (staged_) stages_.rerun_lost_producers(region, [this](int r) { return region_finished(r); });
    if (config_.failover == FailoverStrategy::kTask && config_.checkpoint.mode == CheckpointingMode::kAtLeastOnce) {
      // The failed subtask's state goes back to the checkpoint and what was
      // in flight to it is dropped: the sources it reads rewind too, so
      // everything since reaches it again.
      restart_upstream_sources(region);
    }
  }
  if (static_cast<int>(restarting_.size()) == num_regions_) status_ = JobStatus::kRestarting;
  failed_what_ = status_ == JobStatus::kRestarting ? "attempt " + std::to_string(attempt_)
                 : config_.failover == FailoverStrategy::kTask
                     ? "vertex " + std::to_string(executions_[region].id.vertex) + " subtask " +
                           std::to_string(executions_[region].id.subtask)
                     : "region " + std::to_string(region);
  record_failure(failed_what_, error);
  if (first) {
    const int64_t now = clock_->now_ms();
    if (outage_start_ms_ < 0) outage_start_ms_ = now;
    if (last_failure_ms_ >= 0 && now - last_failure_ms_ >= kProgressQuietMs) failures_without_progress_ = 0;
    if (failures_without_progress_ == 0) first_failure_without_progress_ms_ = now;
    last_failure_ms_ = now;
    ++failures_without_progress_;
  }
  // Pending checkpoints cannot complete without the region's tasks.
  coordinator_.stop();
  for (size_t i = 0; i < executions_.size(); ++i) {
    if (restarting_.count(region_of_[i]) != 0 && !executions_[i].terminal) tm_->cancel_task(executions_[i].id);
  }
  if (first) restart_->notify_failure(clock_->now_ms());
  maybe_restart();
}

void JobMaster::maybe_restart() {
  if (restart_scheduled_) return;
  for (size_t i = 0; i < executions_.size(); ++i) {
    // Wait until every task of the failed regions has ended.
    if (restarting_.count(region_of_[i]) != 0 && !executions_[i].terminal) return;
  }
  // A failure that ends the job is reported by whoever reports the job's
  // end; one that is followed by a restart is logged here.
  if (unrecoverable_ || !restart_->can_restart()) {
    fail_now(last_failure_);
    return;
  }
  const int limit = config_.restart.max_failures_without_progress;
  const int64_t stuck_ms = clock_->now_ms() - first_failure_without_progress_ms_;
  if (limit > 0 && failures_without_progress_ >= limit && stuck_ms >= kMinStuckMs) {
    std::string why = std::to_string(failures_without_progress_) + " failures in a row over " +
                      std::to_string(stuck_ms / 1000) + " s without a completed checkpoint; the last: " +
                      last_failure_;
    fail_now(why);
    return;
  }
  restart_scheduled_ = true;
  ++restarts_;
  log_restart();
  loop_.post_delayed(std::chrono::milliseconds(restart_->backoff_ms()), [this] {
    if (status_ != JobStatus::kRunning && status_ != JobStatus::kRestarting) return;
    if (!ensure_latest_is_intact()) return;
    std::set<int> regions;
    regions.swap(restarting_);
    status_ = JobStatus::kRunning;
    if (!staged_) return deploy(regions);
    // Stages run again in order: a region waits for its inputs again.
    stages_.wait(regions);
    for (size_t i = 0; i < executions_.size(); ++i) {
      if (stages_.waiting(region_of_[i])) executions_[i].state = ExecutionState::kCreated;
    }
    schedule_ready();
  });
}

bool JobMaster::ensure_latest_is_intact() {
  // One failure can have any cause; a second in a row without progress may
  // be the checkpoint itself.
  if (failures_without_progress_ < 2) return true;
  std::string broken;
  while (const checkpoint::CompletedCheckpointStore::Entry* latest = store_.latest()) {
    if (verified_checkpoints_.count(latest->id) != 0) return true;
    if (!checkpoint::scheme_for(latest->location).durable()) return true;  // gone with the process anyway
    auto cp = checkpoint::load_checkpoint(latest->location);
    if (cp.ok()) {
      verified_checkpoints_.insert(latest->id);
      if (!broken.empty()) {
        spdlog::warn("job {}: restoring checkpoint {} instead; output committed after it may be repeated",
                     job_id_, latest->id);
      }
      return true;
    }
    broken = "checkpoint " + std::to_string(latest->id) + " at " + latest->location +
             " cannot be restored: " + std::string(cp.status().message());
    spdlog::error("job {}: {}", job_id_, broken);
    store_.drop_latest();
  }
  if (broken.empty()) return true;  // there was none: the job starts afresh, as before
  fail_now("no intact checkpoint left to restore; " + broken);
  return false;
}

void JobMaster::maybe_end_outage() {
  if (outage_start_ms_ < 0 || !restarting_.empty()) return;
  for (size_t i = 0; i < executions_.size(); ++i) {
    const ExecutionState st = executions_[i].state;
    if (st != ExecutionState::kRunning && st != ExecutionState::kFinished &&
        !(staged_ && stages_.waiting(region_of_[i]))) {
      return;
    }
  }
  last_outage_ms_ = clock_->now_ms() - outage_start_ms_;
  outage_start_ms_ = -1;
}

namespace {

// History kept for the next JobManager: the last failures, their causes cut.
constexpr size_t kHistoryFailures = 5;
constexpr size_t kHistoryCauseChars = 300;

}  // namespace

std::string JobMaster::history() const {
  const CheckpointCounts c = coordinator_.counts();
  nlohmann::json failures = nlohmann::json::array();
  const size_t first = failures_.size() > kHistoryFailures ? failures_.size() - kHistoryFailures : 0;
  for (size_t i = first; i < failures_.size(); ++i) {
    failures.push_back({{"time_ms", failures_[i].time_ms},
                        {"scope", failures_[i].scope},
                        {"cause", failures_[i].cause.substr(0, kHistoryCauseChars)}});
  }
  return nlohmann::json{{"restarts", restarts_},
                        {"checkpoints_completed", c.completed + 1},  // the one being committed
                        {"checkpoints_failed", c.failed},
                        {"failures_total", failures_total_},
                        {"failures", failures}}
      .dump();
}

void JobMaster::record_failover(std::string cause, const std::string& history) {
  nlohmann::json h = history.empty() ? nlohmann::json::object() : nlohmann::json::parse(history, nullptr, false);
  if (!h.is_object()) {
    spdlog::warn("job {}: the history its last JobManager left is unreadable; counts start again", job_id_);
    h = nlohmann::json::object();
  }
  loop_.post([this, cause = std::move(cause), h = std::move(h)]() mutable {
    restarts_ += h.value("restarts", 0);
    coordinator_.carry_counts(h.value("checkpoints_completed", int64_t{0}), h.value("checkpoints_failed", int64_t{0}));
    std::deque<Status::Failure> earlier;
    if (h.contains("failures") && h["failures"].is_array()) {
      for (const auto& f : h["failures"]) {
        if (!f.is_object()) continue;
        earlier.push_back({f.value("time_ms", int64_t{0}), f.value("scope", ""), f.value("cause", "")});
      }
    }
    failures_.insert(failures_.begin(), earlier.begin(), earlier.end());
    while (failures_.size() > kMaxFailuresKept) failures_.pop_front();
    failures_total_ += h.value("failures_total", int64_t{0});
    ++restarts_;
    cause += restored_id_ >= 0 ? " from checkpoint " + std::to_string(restored_id_) + " (" + restored_from_ + ")"
                               : " from the start (no checkpoint had completed)";
    last_failure_ = cause;
    record_failure("JobManager", std::move(cause));
  });
}

void JobMaster::record_failure(std::string scope, std::string cause) {
  ++failures_total_;
  failures_.push_back(Status::Failure{clock_->wall_ms(), std::move(scope), std::move(cause)});
  if (failures_.size() > kMaxFailuresKept) failures_.pop_front();
}

void JobMaster::fail_now(const std::string& why) {
  if (why != last_failure_) record_failure("job", why);
  // Regions that did not fail are still running: they end too.
  coordinator_.stop();
  for (auto& e : executions_) {
    if (!e.terminal) tm_->cancel_task(e.id);
  }
  finish_job(JobStatus::kFailed, why);
}

void JobMaster::log_restart() {
  const int64_t now = clock_->now_ms();
  // The same failure again, but for its numbers (checkpoint ids, subtasks),
  // is counted, not logged, for a while.
  std::string shape;
  for (char c : last_failure_) {
    bool digit = c >= '0' && c <= '9';
    if (!digit || shape.empty() || shape.back() != '#') shape.push_back(digit ? '#' : c);
  }
  if (shape == last_logged_failure_ && now - last_logged_failure_ms_ < kRepeatedLogIntervalMs) {
    ++unlogged_failures_;
    return;
  }
  if (unlogged_failures_ > 0) {
    spdlog::warn("job {}: {} more failure{} like the one before, each followed by a restart", job_id_,
                 unlogged_failures_, unlogged_failures_ == 1 ? "" : "s");
  }
  const checkpoint::CompletedCheckpointStore::Entry* latest = store_.latest();
  std::string from = latest != nullptr ? "checkpoint " + std::to_string(latest->id) : "the start";
  if (config_.checkpoint.mode == CheckpointingMode::kAtMostOnce) {
    from = (latest != nullptr ? "the state of " + from : "empty state") +
           ", sources continuing after what they read";
  }
  spdlog::warn("job {}: {} failed: {}; restart {} in {} ms from {}", job_id_, failed_what_, last_failure_, restarts_,
               restart_->backoff_ms(), from);
  last_logged_failure_ = shape;
  last_logged_failure_ms_ = now;
  unlogged_failures_ = 0;
}

void JobMaster::report_source_positions(const ExecutionId& id, SourcePositions report) {
  loop_.post([this, id, report = std::move(report)]() mutable {
    const int idx = task_index(id);
    if (idx < 0 || executions_[idx].terminal) return;
    SourceProgress& p = source_progress_[idx];
    p.released_records = std::max(p.released_records, report.released_records);
    if (report.seq == 0) return;  // the task ends: only what it emitted
    // A region about to restart emits nothing more: its sources' positions
    // stay where its last confirmed batch ended.
    if (status_ != JobStatus::kRunning || restarting_.count(region_of_[idx]) != 0) return;
    p.positions = std::make_shared<const detail::OperatorStateMap>(std::move(report.positions));
    p.confirmed_records += report.records;
    p.total_confirmed += report.records;
    tm_->confirm_source_positions(id, report.seq);
  });
}

void JobMaster::report_dropped_records(const ExecutionId& id, int64_t records) {
  loop_.post([this, id, records] {
    if (task_index(id) < 0 || records <= 0) return;
    dropped_records_ += records;
    // Without a rewind of the sources nothing sends them again.
    const bool lost = config_.checkpoint.mode != CheckpointingMode::kAtLeastOnce;
    if (lost) lost_records_ += records;
    spdlog::warn("job {}: {} dropped {} record{} in flight to or from a restarted subtask{}", job_id_,
                 id.to_string(), records, records == 1 ? "" : "s",
                 lost ? ": lost" : "; the sources send them again");
  });
}

void JobMaster::count_rolled_back(int idx, const checkpoint::CompletedCheckpointStore::Entry* latest) {
  if (config_.failover == FailoverStrategy::kTask) return;  // count_lost_records
  SourceProgress& p = source_progress_[idx];
  // A checkpoint from before this JobManager (the one the job started
  // from): none of the records it confirmed.
  int64_t kept = 0;
  if (latest != nullptr) {
    auto marks = source_marks_.find(latest->id);
    if (marks != source_marks_.end()) {
      auto mark = marks->second.find(idx);
      if (mark != marks->second.end()) kept = mark->second;
    }
  }
  const int64_t lost = p.total_confirmed - std::max(kept, p.counted);
  p.counted = p.total_confirmed;
  if (lost <= 0) return;
  lost_records_ += lost;
  spdlog::warn("job {}: {} restarts from {}: the {} record{} it read after that are lost (at-most-once)", job_id_,
               describe(executions_[idx].id),
               latest != nullptr ? "checkpoint " + std::to_string(latest->id) : std::string("the start"), lost,
               lost == 1 ? "" : "s");
}

void JobMaster::count_lost_records(int idx) {
  SourceProgress& p = source_progress_[idx];
  const int64_t lost = p.confirmed_records - p.released_records;
  p.confirmed_records = p.released_records = 0;
  if (lost <= 0) return;
  lost_records_ += lost;
  spdlog::warn("job {}: {} ended with {} record{} read ahead and never emitted: lost (at-most-once)", job_id_,
               executions_[idx].id.to_string(), lost, lost == 1 ? "" : "s");
}

}  // namespace weir::runtime
