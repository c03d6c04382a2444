#include "cluster/job_registry.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "cluster/protocol.h"
#include "common/clock.h"
#include "runtime/mini_cluster.h"

namespace weir::cluster {

bool Job::wait(std::chrono::milliseconds timeout) {
  absl::MutexLock lock(&mu);
  return mu.AwaitWithTimeout(
      absl::Condition(+[](Job* j) ABSL_EXCLUSIVE_LOCKS_REQUIRED(j->mu) { return j->result.has_value(); }, this),
      absl::FromChrono(timeout));
}

JobRegistry::JobRegistry(SlotPool* slots, LibraryStore* libraries, JobCatalog catalog, int keep_ended_jobs)
    : slots_(slots), libraries_(libraries), catalog_(std::move(catalog)), keep_ended_jobs_(keep_ended_jobs) {}

JobRegistry::~JobRegistry() { shutdown(); }

void JobRegistry::shutdown(bool suspend) {
  std::vector<JobPtr> jobs;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    suspending_ = suspending_ || suspend;
    for (auto& [id, j] : jobs_) jobs.push_back(j);
  }
  for (auto& j : jobs) {
    if (j->master != nullptr) j->master->cancel();
  }
  for (auto& j : jobs) {
    if (j->waiter.joinable()) j->waiter.join();
  }
}

JobPtr JobRegistry::find(const std::string& id) {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : it->second;
}

JobPtr JobRegistry::live(const std::string& id) {
  JobPtr j = find(id);
  return j != nullptr && j->master != nullptr ? j : nullptr;
}

std::vector<JobPtr> JobRegistry::list() {
  absl::MutexLock lock(&mu_);
  std::vector<JobPtr> out;
  for (const auto& id : order_) out.push_back(jobs_[id]);
  return out;
}

int JobRegistry::running() {
  int n = 0;
  for (auto& j : list()) n += j->ended() ? 0 : 1;
  return n;
}

void JobRegistry::taskmanager_lost(const SessionPtr& s, const std::string& reason) {
  for (auto& j : list()) {
    if (j->gateway != nullptr) j->gateway->taskmanager_lost(s, reason);
  }
}

absl::StatusOr<std::string> JobRegistry::submit(const std::string& name, const std::vector<std::string>& args,
                                                const std::string& library) {
  return start(name, args, library, "", {});
}

absl::Status JobRegistry::recover(const HaStore::Recovered& r) {
  if (!r.problem.ok()) {
    add_unrecoverable(r, r.problem);
    return r.problem;
  }
  const proto::JobSpec& spec = r.record.spec();
  if (!spec.library().empty() && !libraries_->verified_path(spec.library()).ok()) {
    auto bytes = ha_->library(spec.library());
    absl::Status stored = bytes.status();
    if (bytes.ok()) stored = libraries_->put(spec.library(), *bytes).status();
    if (!stored.ok()) {
      add_unrecoverable(r, stored);
      return stored;
    }
  }
  std::vector<std::string> args(spec.args().begin(), spec.args().end());
  auto id = start(spec.name(), args, spec.library(), r.record.job_id(), r.checkpoints);
  if (!id.ok()) {
    // A leader going away is no fault of the job's: it stays recorded.
    if (!absl::IsUnavailable(id.status())) add_unrecoverable(r, id.status());
    return id.status();
  }
  if (JobPtr j = live(*id)) {
    j->master->record_failover(
        "its JobManager is gone: the leader of epoch " + std::to_string(ha_->epoch()) + " resumed it", r.history);
  }
  spdlog::info("job {} ({}) recovered{}", *id, spec.name(),
               r.checkpoints.empty() ? " (no checkpoint completed yet)"
                                     : " with " + std::to_string(r.checkpoints.size()) + " retained checkpoint" +
                                           (r.checkpoints.size() == 1 ? "" : "s"));
  return absl::OkStatus();
}

void JobRegistry::add_unrecoverable(const HaStore::Recovered& r, const absl::Status& why) {
  auto job = std::make_shared<Job>();
  job->id = r.record.job_id();
  job->spec = r.record.spec();
  if (job->spec.name().empty()) job->spec.set_name("(unreadable record)");
  job->start_ms = r.record.submitted_ms() > 0 ? r.record.submitted_ms() : SystemClock::instance()->wall_ms();
  job->graph = std::make_shared<const graph::JobGraph>();
  job->unrecoverable = true;
  const std::string cause = "cannot be recovered: " + std::string(why.message()) +
                            " (its record stays in the HA store; `weir cancel " + job->id + "` forgets it)";
  JobResult result;
  result.job_id = job->id;
  result.status = JobStatus::kFailed;
  result.failure = cause;
  runtime::JobMaster::Status final_status;
  final_status.status = JobStatus::kFailed;
  final_status.failure = cause;
  final_status.failures.push_back({SystemClock::instance()->wall_ms(), "job", cause});
  final_status.failures_total = 1;
  {
    absl::MutexLock lock(&job->mu);
    job->result = std::move(result);
    job->final_status = std::move(final_status);
  }
  absl::MutexLock lock(&mu_);
  if (jobs_.count(job->id) != 0) return;
  jobs_[job->id] = job;
  order_.push_back(job->id);
}

absl::Status JobRegistry::forget_unrecoverable(const std::string& id) {
  JobPtr j = find(id);
  if (j == nullptr || !j->unrecoverable) return absl::NotFoundError("no unrecoverable job " + id);
  if (ha_ != nullptr) {
    if (absl::Status s = ha_->remove_job(id); !s.ok()) return s;
  }
  spdlog::warn("job {}: its record in the HA store is forgotten, as cancelled", id);
  absl::MutexLock lock(&mu_);
  jobs_.erase(id);
  order_.erase(std::remove(order_.begin(), order_.end(), id), order_.end());
  return absl::OkStatus();
}

namespace {

struct ResumePoint {
  checkpoint::RestoredCheckpoint restored;
  bool savepoint = false;
  std::vector<checkpoint::CompletedCheckpointStore::Entry> older;  // oldest first
};

// Where a recovered job resumes: the newest of its retained checkpoints
// that loads and fits the job; the older intact ones stay its fallbacks
// (and are deleted in turn as the old leader would have). One that cannot
// be restored is forgotten, its files left for whoever looks into why.
absl::StatusOr<ResumePoint> resume_point(const graph::JobGraph& g, JobConfig config, const std::string& job_id,
                                         const std::vector<HaStore::CompletedPointer>& retained, HaStore* ha) {
  std::optional<ResumePoint> out;
  std::string newest_why;
  auto broken = [&](const HaStore::CompletedPointer& p, const absl::Status& why) {
    spdlog::error("job {}: checkpoint {} at {} cannot be restored: {}", job_id, p.id, p.location,
                  std::string(why.message()));
    if (newest_why.empty()) newest_why = "checkpoint " + std::to_string(p.id) + ": " + std::string(why.message());
    if (absl::Status s = ha->forget_checkpoint(job_id, p.id); !s.ok()) {
      spdlog::warn("job {}: {}", job_id, std::string(s.message()));
    }
  };
  for (auto it = retained.rbegin(); it != retained.rend(); ++it) {
    if (!out) {
      config.restore = it->location;
      auto cp = runtime::find_restore(g, config);
      if (!cp.ok()) {
        broken(*it, cp.status());
        continue;
      }
      out.emplace();
      out->restored = std::move(**cp);
      out->savepoint = it->savepoint;
      continue;
    }
    auto cp = checkpoint::load_checkpoint(it->location);
    if (!cp.ok()) {
      broken(*it, cp.status());
      continue;
    }
    out->older.insert(out->older.begin(),
                      {it->id, cp->location, std::make_shared<const checkpoint::CheckpointMetadata>(std::move(cp->metadata)),
                       /*owned=*/!it->savepoint, it->savepoint});
  }
  if (!out) {
    return absl::DataLossError("none of the " + std::to_string(retained.size()) +
                               " completed checkpoints recorded for job " + job_id + " can be restored (newest " +
                               newest_why + ")");
  }
  return std::move(*out);
}

}  // namespace

absl::StatusOr<std::string> JobRegistry::start(const std::string& name, const std::vector<std::string>& args,
                                               const std::string& library, const std::string& recovered_id,
                                               const std::vector<HaStore::CompletedPointer>& retained) {
  proto::JobSpec spec;
  spec.set_name(name);
  for (const auto& a : args) spec.add_args(a);
  const JobLibrary* lib = nullptr;
  std::string library_path;
  if (!library.empty()) {
    auto path = libraries_->verified_path(library);
    if (absl::IsNotFound(path.status())) {
      return absl::NotFoundError("no job library " + library + " here: upload it first (PUT /v1/libraries/" +
                                 library + ")");
    }
    if (!path.ok()) return path.status();
    // The library's code runs first in a child process: a build that
    // crashes or hangs is refused there instead of taking this process down.
    if (absl::Status s = build_in_child(*path, args, std::chrono::seconds(60)); !s.ok()) return s;
    library_path = *path;
    auto l = JobLibrary::load(*path);  // verified above
    if (!l.ok()) return l.status();
    lib = *l;
    spec.set_name(lib->name());
    spec.set_library(library);
  }
  // A SQL script is planned in a child process first, within a time and
  // memory bound (docs/sql.md "Limits"): a script that would take this
  // process down or hold it is refused there.
  if (lib == nullptr && spec.name() == "sql") {
    if (absl::Status s = build_in_child("sql", args, kSqlPlanTimeout, kSqlPlanMemory); !s.ok()) return s;
  }
  auto built = catalog_(spec.name(), args, lib);
  if (!built.ok()) return built.status();
  JobConfig config = built->env->config();
  // Batch execution takes no checkpoints (its stages' results are its
  // recovery).
  if (config.runtime_mode != RuntimeMode::kBatch && config.checkpoint.mode != CheckpointingMode::kNone &&
      config.checkpoint.directory.empty()) {
    return absl::InvalidArgumentError(
        "a cluster job needs --checkpoint-dir, on storage every TaskManager and the JobManager reach");
  }
  auto graph = graph::build_job_graph(built->env->graph(), config);
  if (!graph.ok()) return graph.status();
  std::optional<checkpoint::RestoredCheckpoint> restored;
  std::vector<checkpoint::CompletedCheckpointStore::Entry> older;
  bool claim = false;
  if (!retained.empty()) {
    auto resume = resume_point(**graph, config, recovered_id, retained, ha_.get());
    if (!resume.ok()) return resume.status();
    restored = std::move(resume->restored);
    older = std::move(resume->older);
    // The job's own checkpoints are its to delete once subsumed; a
    // savepoint stays the user's.
    claim = !resume->savepoint;
  } else {
    auto found = runtime::find_restore(**graph, config);
    if (!found.ok()) return found.status();
    restored = std::move(*found);
  }

  auto job = std::make_shared<Job>();
  job->id = recovered_id.empty() ? runtime::new_job_id() : recovered_id;
  job->spec = spec;
  job->savepoint_dir = built->savepoint_dir;
  job->start_ms = SystemClock::instance()->wall_ms();
  job->graph = *graph;
  auto routing = runtime::make_job_storage(config, job->id);
  if (!routing.ok()) return routing.status();
  std::shared_ptr<checkpoint::CheckpointStorage> storage = *std::move(routing);
  std::shared_ptr<HaCheckpointStorage> ha_storage;  // under high availability
  if (ha_ != nullptr) {
    if (recovered_id.empty()) {
      // Written down before the job runs: a leader that takes over runs it.
      proto::JobRecord record;
      record.set_job_id(job->id);
      *record.mutable_spec() = spec;
      record.set_submitted_ms(job->start_ms);
      if (absl::Status s = ha_->add_job(record, library_path); !s.ok()) {
        return absl::UnavailableError("cannot record the job for high availability: " + std::string(s.message()));
      }
    }
    ha_storage = std::make_shared<HaCheckpointStorage>(std::move(storage), ha_, job->id);
    storage = ha_storage;
    job->checkpoint_ids = std::make_unique<HaCheckpointIds>(ha_, job->id);
  }
  job->gateway = std::make_unique<JobGateway>(slots_, job->id, spec, *graph,
                                              runtime::buffers_needed(**graph, config.network));
  job->master = std::make_unique<runtime::JobMaster>(job->id, *graph, config, job->gateway.get(), storage,
                                                     SystemClock::instance(), &job->control);
  if (job->checkpoint_ids != nullptr) job->master->set_checkpoint_id_counter(job->checkpoint_ids.get());
  if (ha_storage != nullptr) {
    // Its history goes with each checkpoint, for the next leader. The
    // storage calls it on the master's loop, before the master is gone.
    runtime::JobMaster* master = job->master.get();
    ha_storage->set_history([master] { return master->history(); });
  }
  job->gateway->set_master(job->master.get());
  Job* raw = job.get();
  job->control.on_savepoint([raw](const SavepointResult& r) {
    absl::MutexLock lock(&raw->mu);
    raw->savepoints.push_back(r);
  });
  // Clients follow a cluster's jobs through the REST API, not progress().
  detail::JobControlAccess::attach(
      job->control, [raw](JobControl::Request r) { raw->master->handle_request(std::move(r)); }, nullptr);
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return absl::UnavailableError("the JobManager is shutting down");
    jobs_[job->id] = job;
    order_.push_back(job->id);
  }
  if (recovered_id.empty()) spdlog::info("job {} ({}) submitted", job->id, spec.name());
  job->master->start(std::move(restored), claim, std::move(older));
  job->waiter = std::thread([this, raw] {
    JobResult r = raw->master->wait();
    runtime::JobMaster::Status final_status = raw->master->status();
    detail::JobControlAccess::detach(raw->control);
    raw->gateway->release();
    spdlog::log(r.status == JobStatus::kFailed ? spdlog::level::err : spdlog::level::info,
                "job {}: {} after {} restart{}{}", raw->id, std::string(to_string(r.status)), r.restarts,
                r.restarts == 1 ? "" : "s", r.failure.empty() ? "" : ": " + r.failure);
    bool suspended;
    {
      absl::MutexLock lock(&mu_);
      suspended = suspending_;
    }
    const int64_t ended_ms = SystemClock::instance()->wall_ms();
    {
      absl::MutexLock lock(&raw->mu);
      raw->result = std::move(r);
      raw->final_status = std::move(final_status);
      raw->end_ms = ended_ms;
    }
    // Ended for good: the next leader must not run it again, and lists its
    // result. A job ended by losing leadership stays recorded.
    if (ha_ != nullptr && !suspended) {
      const std::string archived = archive_ ? archive_(*raw) : "";
      if (absl::Status s = ha_->end_job(raw->id, archive_ ? &archived : nullptr, ended_ms); !s.ok()) {
        spdlog::warn("job {}: {}", raw->id, std::string(s.message()));
      }
    }
    forget_old_jobs(raw);
  });
  return job->id;
}

// Drops the oldest ended jobs beyond keep_ended_jobs (never `current`,
// whose waiter thread this runs on).
void JobRegistry::forget_old_jobs(Job* current) {
  std::vector<JobPtr> forgotten;
  const int64_t now = SystemClock::instance()->wall_ms();
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    std::vector<std::pair<std::string, int64_t>> ended;  // id, end_ms
    for (const auto& id : order_) {
      absl::MutexLock jl(&jobs_[id]->mu);
      // An unrecoverable job stays listed while the HA store holds it.
      if (jobs_[id]->result.has_value() && !jobs_[id]->unrecoverable) ended.emplace_back(id, jobs_[id]->end_ms);
    }
    for (size_t i = 0; i < ended.size(); ++i) {
      const bool beyond = i + static_cast<size_t>(keep_ended_jobs_) < ended.size();
      const bool expired = expiration_.count() > 0 && ended[i].second > 0 && now - ended[i].second >= expiration_.count();
      if (!beyond && !expired) continue;
      auto it = jobs_.find(ended[i].first);
      if (it->second.get() == current) continue;
      forgotten.push_back(it->second);
      jobs_.erase(it);
      order_.erase(std::find(order_.begin(), order_.end(), ended[i].first));
    }
  }
  for (auto& j : forgotten) {
    if (j->waiter.joinable()) j->waiter.join();  // ended: it set the result
    if (ha_ != nullptr) {
      if (absl::Status s = ha_->remove_result(j->id); !s.ok()) {
        spdlog::warn("job {}: {}", j->id, std::string(s.message()));
      }
    }
  }
}

void JobRegistry::restore_results(std::vector<HaStore::StoredResult> results) {
  std::sort(results.begin(), results.end(),
            [](const auto& a, const auto& b) { return a.ended_ms < b.ended_ms; });
  const int64_t now = SystemClock::instance()->wall_ms();
  for (HaStore::StoredResult& r : results) {
    const bool expired = expiration_.count() > 0 && now - r.ended_ms >= expiration_.count();
    if (expired) {
      if (absl::Status s = ha_->remove_result(r.job_id); !s.ok()) {
        spdlog::warn("job {}: {}", r.job_id, std::string(s.message()));
      }
      continue;
    }
    nlohmann::json stored = r.problem.ok() ? nlohmann::json::parse(r.json, nullptr, false) : nlohmann::json();
    if (!r.problem.ok() || !stored.is_object() || !stored["job"].is_object() ||
        !stored["job"]["status"].is_string()) {
      spdlog::warn("job {}: its stored result is not listed: {}", r.job_id,
                   r.problem.ok() ? "not the JSON of a job's result" : std::string(r.problem.message()));
      continue;
    }
    auto job = std::make_shared<Job>();
    job->id = r.job_id;
    job->spec.set_name(stored["job"].value("name", ""));
    job->start_ms = stored["job"].value("start_time_ms", int64_t{0});
    job->graph = std::make_shared<const graph::JobGraph>();
    JobResult result;
    result.job_id = job->id;
    result.status = JobStatus::kFinished;
    for (JobStatus st : {JobStatus::kFinished, JobStatus::kFailed, JobStatus::kCanceled}) {
      if (to_string(st) == stored["job"]["status"].get<std::string>()) result.status = st;
    }
    result.restarts = stored["job"].value("restarts", 0);
    job->archived = std::make_shared<const nlohmann::json>(std::move(stored));
    {
      absl::MutexLock lock(&job->mu);
      job->result = std::move(result);
      job->end_ms = r.ended_ms;
    }
    absl::MutexLock lock(&mu_);
    if (jobs_.count(job->id) != 0) continue;
    jobs_[job->id] = job;
    order_.push_back(job->id);
  }
}

absl::StatusOr<SavepointResult> JobRegistry::savepoint(Job& j, const std::string& directory, bool stop, bool drain) {
  absl::MutexLock one(&j.savepoint_mu);
  size_t seen;
  {
    absl::MutexLock lock(&j.mu);
    if (j.result.has_value()) return absl::FailedPreconditionError("the job is not running");
    seen = j.savepoints.size();
  }
  if (stop) {
    j.control.stop_with_savepoint(directory, drain);
  } else {
    j.control.trigger_savepoint(directory);
  }
  absl::MutexLock lock(&j.mu);
  auto done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(j.mu) { return j.savepoints.size() > seen || j.result.has_value(); };
  j.mu.Await(absl::Condition(&done));
  if (j.savepoints.size() <= seen) return absl::AbortedError("the job ended before the savepoint completed");
  SavepointResult r = j.savepoints[seen];
  if (!r.error.empty()) return absl::AbortedError("savepoint failed: " + r.error);
  return r;
}

void JobRegistry::deliver(const proto::TaskManagerMessage& m) {
  switch (m.msg_case()) {
    case proto::TaskManagerMessage::kTaskState: {
      const auto& t = m.task_state();
      if (JobPtr j = live(t.job_id())) {
        if (t.has_final_metrics()) {
          j->metrics.report(from_proto(t.id()), from_proto(t.final_metrics()), SystemClock::instance()->now_ms());
        }
        j->master->update_task_state(from_proto(t.id()), static_cast<runtime::ExecutionState>(t.state()),
                                     t.error(), t.unrecoverable());
      }
      break;
    }
    case proto::TaskManagerMessage::kAck: {
      const auto& a = m.ack();
      JobPtr j = live(a.job_id());
      if (j == nullptr) break;
      checkpoint::TaskAck ack;
      auto states = decode_ack_states(a.states());
      if (!states.ok()) {
        j->master->decline_checkpoint(from_proto(a.id()), a.checkpoint_id(), std::string(states.status().message()));
        break;
      }
      ack.states = std::move(*states);
      ack.sync_ms = a.sync_ms();
      ack.async_ms = a.async_ms();
      ack.alignment_ms = a.alignment_ms();
      ack.source_records = a.source_records();
      ack.persisted_data = a.persisted_data();
      j->master->acknowledge_checkpoint(from_proto(a.id()), a.checkpoint_id(), std::move(ack));
      break;
    }
    case proto::TaskManagerMessage::kDecline: {
      const auto& d = m.decline();
      if (JobPtr j = live(d.job_id())) {
        j->master->decline_checkpoint(from_proto(d.id()), d.checkpoint_id(), d.reason());
      }
      break;
    }
    case proto::TaskManagerMessage::kEndOfData: {
      const auto& e = m.end_of_data();
      if (JobPtr j = live(e.job_id())) j->master->end_of_data(from_proto(e.id()));
      break;
    }
    case proto::TaskManagerMessage::kSourcePositions: {
      const auto& p = m.source_positions();
      JobPtr j = live(p.job_id());
      if (j == nullptr) break;
      runtime::SourcePositions r;
      r.seq = p.seq();
      r.records = p.records();
      r.released_records = p.released_records();
      auto positions = checkpoint::decode_operator_state(p.positions());
      if (!positions.ok()) {
        j->master->update_task_state(from_proto(p.id()), runtime::ExecutionState::kFailed,
                                     "source positions it reported: " + std::string(positions.status().message()),
                                     /*unrecoverable=*/false);
        break;
      }
      r.positions = std::move(*positions);
      j->master->report_source_positions(from_proto(p.id()), std::move(r));
      break;
    }
    case proto::TaskManagerMessage::kDroppedRecords: {
      const auto& d = m.dropped_records();
      if (JobPtr j = live(d.job_id())) j->master->report_dropped_records(from_proto(d.id()), d.records());
      break;
    }
    case proto::TaskManagerMessage::kHeartbeat: {
      const int64_t now = SystemClock::instance()->now_ms();
      for (const auto& t : m.heartbeat().metrics()) {
        if (JobPtr j = live(t.job_id())) j->metrics.report(from_proto(t.id()), from_proto(t), now);
      }
      break;
    }
    default:
      break;
  }
}

}  // namespace weir::cluster
