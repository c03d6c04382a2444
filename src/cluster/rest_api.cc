#include "cluster/rest_api.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "cluster/json_body.h"
#include "cluster/metrics_exposition.h"
#include "cluster/rest_reply.h"
#include "common/clock.h"
#include "network/data_plane.h"

namespace weir::cluster {
namespace {


// Flink's names for the ship strategies.
const char* partitioning_name(detail::PartitionKind k) {
  switch (k) {
    case detail::PartitionKind::kForward: return "FORWARD";
    case detail::PartitionKind::kHash: return "HASH";
    case detail::PartitionKind::kRebalance: return "REBALANCE";
    case detail::PartitionKind::kBroadcast: return "BROADCAST";
    case detail::PartitionKind::kDefault: break;
  }
  return "DEFAULT";
}

}  // namespace

RestApi::RestApi(std::string secret, bool metrics_public, JobRegistry* jobs, SessionRegistry* sessions,
                 SlotPool* slots, LibraryStore* libraries, ResultBuffers* results)
    : secret_(std::move(secret)),
      metrics_public_(metrics_public),
      jobs_(jobs),
      sessions_(sessions),
      slots_(slots),
      libraries_(libraries),
      results_(results),
      ui_(secret_, &refusals_) {}

absl::StatusOr<int> RestApi::start(const std::string& host, int port,
                                   std::shared_ptr<const network::TlsContext> tls) {
  const bool https = tls != nullptr;
  http_.set_tls(std::move(tls));
  http_.set_gate([this, secret = secret_gate(secret_, metrics_public_, "REST", &refusals_)](const Request& req,
                                                                                           Response& res) {
    return WebUi::is_public(req) || ui_.authorizes(req) || secret(req, res);
  });
  // An attached client's wait for its job, and a query's fetch of its
  // rows, wait for an event: on workers of their own.
  http_.set_long_poll([](std::string_view line) {
    if (line.rfind("GET /v1/results/", 0) == 0) return true;
    if (line.rfind("GET /v1/jobs/", 0) != 0) return false;
    const std::string_view target = line.substr(4, line.find(' ', 4) - 4);
    return target.substr(0, target.find('?')).ends_with("/wait");
  });
  // Requests with the cluster's secret go before those without.
  http_.set_priority([bearer = "Bearer " + secret_](std::string_view head) {
    for (size_t at = head.find("\r\n"); at != std::string_view::npos && at + 2 < head.size();
         at = head.find("\r\n", at + 2)) {
      const std::string_view line = head.substr(at + 2, head.find("\r\n", at + 2) - at - 2);
      constexpr std::string_view kName = "authorization:";
      if (line.size() < kName.size() ||
          !std::equal(kName.begin(), kName.end(), line.begin(),
                      [](char a, char b) { return a == absl::ascii_tolower(static_cast<unsigned char>(b)); })) {
        continue;
      }
      std::string_view value = line.substr(kName.size());
      while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
      while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
      return network::secrets_equal(value, bearer);
    }
    return false;
  });
  http_.allow_body("POST", "/ui/login", 4096);
  ui_.add_routes(&http_, https);
  http_.allow_body("PUT", "/v1/libraries/", kMaxLibraryBytes);
  auto route = [this](void (RestApi::*fn)(const Request&, Response&)) {
    return [this, fn](const Request& req, Response& res) { (this->*fn)(req, res); };
  };
  http_.Get("/metrics", route(&RestApi::get_metrics));
  http_.Get("/v1/overview", route(&RestApi::get_overview));
  http_.Get("/v1/taskmanagers", route(&RestApi::get_taskmanagers));
  http_.Get(R"(/v1/taskmanagers/([^/]+))", route(&RestApi::get_taskmanager));
  http_.Get(R"(/v1/taskmanagers/([^/]+)/log)", route(&RestApi::get_taskmanager_log));
  http_.Get(R"(/v1/taskmanagers/([^/]+)/stdout)", route(&RestApi::get_taskmanager_stdout));
  http_.Get("/v1/jobmanager/config", route(&RestApi::get_jobmanager_config));
  http_.Get("/v1/jobmanager/log", route(&RestApi::get_jobmanager_log));
  http_.Get("/v1/jobs", route(&RestApi::get_jobs));
  http_.Post("/v1/jobs", route(&RestApi::post_job));
  http_.Post("/v1/sql/explain", route(&RestApi::post_sql_explain));
  http_.Get(R"(/v1/jobs/([0-9a-f]+))", route(&RestApi::get_job));
  http_.Get(R"(/v1/jobs/([0-9a-f]+)/wait)", route(&RestApi::get_job_wait));
  http_.Get(R"(/v1/jobs/([0-9a-f]+)/checkpoints)", route(&RestApi::get_checkpoints));
  http_.Post(R"(/v1/jobs/([0-9a-f]+)/cancel)", route(&RestApi::post_cancel));
  http_.Post(R"(/v1/jobs/([0-9a-f]+)/savepoints)",
             [this](const Request& req, Response& res) { post_savepoint(req, res, /*stop=*/false); });
  http_.Post(R"(/v1/jobs/([0-9a-f]+)/stop)",
             [this](const Request& req, Response& res) { post_savepoint(req, res, /*stop=*/true); });
  // Job libraries, by the SHA-256 of their bytes.
  http_.Put(R"(/v1/libraries/([0-9a-f]{64}))", route(&RestApi::put_library));
  http_.Get(R"(/v1/libraries/([0-9a-f]{64}))", route(&RestApi::get_library));
  // Query results read through the JobManager (cluster/result_buffers.h).
  http_.Post("/v1/results", route(&RestApi::post_result));
  http_.Get(R"(/v1/results/([0-9a-f]{32}))", route(&RestApi::get_result));
  http_.Delete(R"(/v1/results/([0-9a-f]{32}))", route(&RestApi::delete_result));
  auto listening = http_.listen_on(host, port);
  if (listening.ok()) port_ = *listening;
  return listening;
}

void RestApi::get_metrics(const Request&, Response& res) {
  MetricFamilies out;
  const MetricLabels none;
  const std::vector<SessionPtr> live = sessions_->live();
  const SlotPool::Totals t = slots_->totals();
  out.gauge("weir_jobmanager_numRegisteredTaskManagers", "TaskManagers registered and not lost.", none,
            static_cast<double>(live.size()));
  out.gauge("weir_jobmanager_taskSlotsTotal", "Slots the registered TaskManagers offer.", none, t.slots);
  out.gauge("weir_jobmanager_taskSlotsAvailable", "Slots free.", none, t.slots - t.used);
  out.gauge("weir_jobmanager_numRunningJobs", "Jobs not ended.", none, jobs_->running());
  const int64_t now = SystemClock::instance()->wall_ms();  // as Job::start_ms
  // Jobs while they run, as Flink's JobManager reports them; an ended job's
  // series end with it.
  for (const JobPtr& j : jobs_->list()) {
    if (j->ended()) continue;
    const runtime::JobMaster::Status st = j->master->status();
    const MetricLabels labels = {{"job_id", j->id}, {"job_name", j->spec.name()}};
    const std::string job = "weir_jobmanager_job_";
    out.gauge(job + "uptime", "Milliseconds since the job was submitted.", labels,
              static_cast<double>(now - j->start_ms));
    out.counter(job + "numRestarts", "Times the job (or a region or task of it) restarted.", labels, st.restarts);
    const CheckpointCounts& cp = st.checkpoint_counts;
    out.counter(job + "numberOfCompletedCheckpoints", "Checkpoints (and savepoints) completed.", labels,
                static_cast<double>(cp.completed));
    out.counter(job + "numberOfFailedCheckpoints", "Checkpoints declined, expired or aborted.", labels,
                static_cast<double>(cp.failed));
    out.gauge(job + "numberOfInProgressCheckpoints", "Checkpoints triggered and not yet complete.", labels,
              static_cast<double>(cp.in_progress));
    out.counter(job + "totalNumberOfCheckpoints", "Checkpoints triggered: completed, failed or in progress.", labels,
                static_cast<double>(cp.total()));
    out.gauge(job + "downtime", "While tasks are failed or restarting: milliseconds since the failure; else 0.",
              labels, static_cast<double>(st.downtime_ms));
    out.gauge(job + "restartingTime",
              "Milliseconds the current restart has taken so far, or the last one took (0: none yet).", labels,
              static_cast<double>(st.restarting_time_ms));
    out.counter(job + "numLostRecords", "Records lost to failures (at-most-once).", labels,
                static_cast<double>(st.lost_records));
    out.counter(job + "numDroppedRecords", "Records of failed tasks dropped on their way (task failover).", labels,
                static_cast<double>(st.dropped_records));
    out.gauge(job + "lastCheckpointRestoreTimestamp",
              "When tasks were last restored from a checkpoint or savepoint (ms since the epoch; -1: never).", labels,
              static_cast<double>(st.last_restore_ms));
    if (st.checkpoints.empty()) continue;
    const CompletedCheckpointStats& last = st.checkpoints.back();
    int64_t alignment_ms = 0;
    for (const auto& sub : last.subtasks) alignment_ms = std::max(alignment_ms, sub.alignment_ms);
    out.gauge(job + "lastCheckpointDuration", "Milliseconds from trigger to completion of the last checkpoint.",
              labels, static_cast<double>(last.duration.count()));
    out.gauge(job + "lastCheckpointSize", "Bytes the last checkpoint wrote (new files only when incremental).",
              labels, static_cast<double>(last.new_bytes));
    out.gauge(job + "lastCheckpointFullSize", "Bytes of state the last checkpoint holds in all.", labels,
              static_cast<double>(last.state_bytes));
    out.gauge(job + "lastCheckpointAlignmentTime", "The longest barrier alignment (ms) of the last checkpoint.",
              labels, static_cast<double>(alignment_ms));
    // Flink's lastCompletedCheckpointId, and weir's earlier name for it.
    for (const char* name : {"lastCompletedCheckpointId", "lastCheckpointId"}) {
      out.gauge(job + name, "The id of the last completed checkpoint.", labels, static_cast<double>(last.id));
    }
    out.gauge(job + "lastCheckpointCompletedTimestamp", "When the last checkpoint completed (ms since the epoch).",
              labels, static_cast<double>(last.trigger_time_ms + last.duration.count()));
  }
  res.set_content(out.text(), kPrometheusContentType);
}

JobPtr RestApi::job_of(const Request& req, Response& res) {
  JobPtr j = jobs_->find(req.matches[1]);
  if (j == nullptr) reply_error(res, absl::NotFoundError("no job " + std::string(req.matches[1])));
  return j;
}

void RestApi::get_overview(const Request&, Response& res) {
  nlohmann::json tms = nlohmann::json::array();
  for (const auto& s : sessions_->live()) tms.push_back(taskmanager_json(s));
  const SlotPool::Totals t = slots_->totals();
  reply(res, {{"taskmanagers", tms},
              {"slots_total", t.slots},
              {"slots_free", t.slots - t.used},
              {"jobs_running", jobs_->running()}});
}

void RestApi::get_jobs(const Request&, Response& res) {
  nlohmann::json out = {{"jobs", nlohmann::json::array()}};
  for (auto& j : jobs_->list()) out["jobs"].push_back(job_json(*j, false));
  reply(res, out);
}

void RestApi::post_job(const Request& req, Response& res) {
  auto body = parse_json_body(req.body, kMaxJsonDepth);
  if (!body.is_object() || !body.contains("name") || !body["name"].is_string()) {
    return reply_error(res, absl::InvalidArgumentError("the body must be {\"name\": JOB, \"args\": [...]}"));
  }
  std::string library;
  if (body.contains("library")) {
    if (!body["library"].is_string()) return reply_error(res, absl::InvalidArgumentError("\"library\" must be a digest"));
    library = body["library"].get<std::string>();
  }
  std::vector<std::string> args;
  if (body.contains("args")) {
    if (!body["args"].is_array()) return reply_error(res, absl::InvalidArgumentError("\"args\" must be a list"));
    size_t bytes = 0;
    for (const auto& a : body["args"]) {
      if (!a.is_string()) return reply_error(res, absl::InvalidArgumentError("\"args\" must hold strings"));
      args.push_back(a.get<std::string>());
      bytes += args.back().size();
    }
    // Arguments travel in every deployment: they are kept small.
    if (args.size() > kMaxJobArgs || bytes > kMaxJobArgBytes) {
      return reply_error(res, absl::InvalidArgumentError("job arguments too large: " + std::to_string(args.size()) +
                                                         " arguments, " + std::to_string(bytes) + " bytes (at most " +
                                                         std::to_string(kMaxJobArgs) + " arguments, " +
                                                         std::to_string(kMaxJobArgBytes) + " bytes)"));
    }
  }
  auto id = jobs_->submit(body["name"].get<std::string>(), args, library);
  if (!id.ok()) return reply_error(res, id.status());
  reply(res, {{"job_id", *id}});
}

// {"script": TEXT} -> {"plan": TEXT}: what `weir sql FILE --explain` prints,
// for the web UI's SQL page; a script that would not run is a 400 naming
// the line and column.
void RestApi::post_sql_explain(const Request& req, Response& res) {
  auto body = parse_json_body(req.body, kMaxJsonDepth);
  if (!body.is_object() || !body.contains("script") || !body["script"].is_string()) {
    return reply_error(res, absl::InvalidArgumentError("the body must be {\"script\": SQL}"));
  }
  if (!explain_sql_) return reply_error(res, absl::FailedPreconditionError("this JobManager plans no SQL"));
  auto plan = explain_sql_(body["script"].get<std::string>());
  if (!plan.ok()) return reply_error(res, plan.status());
  reply(res, {{"plan", *plan}});
}

void RestApi::get_job(const Request& req, Response& res) {
  if (JobPtr j = job_of(req, res)) reply(res, job_json(*j, true));
}

void RestApi::get_job_wait(const Request& req, Response& res) {
  JobPtr j = job_of(req, res);
  if (j == nullptr) return;
  int64_t timeout = 0;
  if (req.has_param("timeout_ms")) timeout = std::atoll(req.get_param_value("timeout_ms").c_str());
  j->wait(std::chrono::milliseconds(std::clamp<int64_t>(timeout, 0, 60000)));
  reply(res, job_json(*j, false));
}

void RestApi::get_checkpoints(const Request& req, Response& res) {
  if (JobPtr j = job_of(req, res)) reply(res, checkpoints_json(*j));
}

void RestApi::post_cancel(const Request& req, Response& res) {
  JobPtr j = job_of(req, res);
  if (j == nullptr) return;
  if (j->unrecoverable) {
    // Cancelling a job this leader cannot resume forgets its record.
    nlohmann::json out = job_json(*j, false);
    if (absl::Status s = jobs_->forget_unrecoverable(j->id); !s.ok()) return reply_error(res, s);
    out["status"] = "CANCELED";
    return reply(res, out);
  }
  if (j->archived != nullptr) return reply(res, job_json(*j, false));  // ended under an earlier leader
  j->master->cancel();
  j->wait(std::chrono::seconds(30));
  reply(res, job_json(*j, false));
}

void RestApi::post_savepoint(const Request& req, Response& res, bool stop) {
  JobPtr j = job_of(req, res);
  if (j == nullptr) return;
  auto body = parse_json_body(req.body.empty() ? "{}" : req.body, kMaxJsonDepth);
  if (!body.is_object() || (body.contains("directory") && !body["directory"].is_string())) {
    return reply_error(res, absl::InvalidArgumentError("the body must be {\"directory\": DIR} or {}"));
  }
  std::string directory = body.value("directory", j->savepoint_dir);
  if (directory.empty()) {
    return reply_error(res, absl::InvalidArgumentError(
                                "no savepoint directory: name one, or start the job with --savepoint-dir "
                                "or --checkpoint-dir"));
  }
  if (directory.front() != '/' && directory.find("://") == std::string::npos) {
    return reply_error(res, absl::InvalidArgumentError(
                                "savepoint directory '" + directory +
                                "' is relative: give an absolute path or a URL (s3://...) that the JobManager and "
                                "every TaskManager reach"));
  }
  bool drain = stop && body.value("drain", false);
  auto r = jobs_->savepoint(*j, directory, stop, drain);
  if (!r.ok()) return reply_error(res, r.status());
  reply(res, {{"checkpoint_id", r->id}, {"path", r->path}});
}

void RestApi::put_library(const Request& req, Response& res) {
  const std::string digest = req.matches[1];
  auto stored = libraries_->put(digest, req.body);
  if (!stored.ok()) return reply_error(res, stored.status());
  spdlog::info("job library {} stored ({} bytes)", digest, req.body.size());
  reply(res, {{"library", digest}, {"bytes", req.body.size()}});
}

void RestApi::get_library(const Request& req, Response& res) {
  const std::string digest = req.matches[1];
  auto bytes = libraries_->read(digest);
  if (!bytes.ok()) {
    return reply_error(res, absl::IsDataLoss(bytes.status()) ? absl::NotFoundError(bytes.status().message())
                                                             : bytes.status());
  }
  reply(res, {{"library", digest}, {"bytes", bytes->size()}});
}

nlohmann::json job_json(Job& j, bool detail) {
  if (j.archived != nullptr) {
    nlohmann::json out = (*j.archived)["job"];
    if (!detail) {
      for (const char* key : {"vertices", "edges", "failures", "failures_total", "max_parallelism"}) out.erase(key);
    }
    return out;
  }
  nlohmann::json out = {{"job_id", j.id}, {"name", j.spec.name()}, {"start_time_ms", j.start_ms}};
  if (!j.spec.library().empty()) out["library"] = j.spec.library();
  out["args"] = std::vector<std::string>(j.spec.args().begin(), j.spec.args().end());
  std::optional<runtime::JobMaster::Status> st;
  {
    absl::MutexLock lock(&j.mu);
    if (j.result) {
      out["status"] = std::string(to_string(j.result->status));
      // The last failure: why it failed, else why it last restarted.
      out["failure"] = j.result->failure.empty() ? j.result->last_failure : j.result->failure;
      out["restarts"] = j.result->restarts;
      out["lost_records"] = j.result->lost_records;
      out["dropped_records"] = j.result->dropped_records;
      out["completed_checkpoints"] = j.result->checkpoint_counts.completed;
      out["stopped_with_savepoint"] = j.result->stopped_with_savepoint;
      out["duration_ms"] = j.result->wall_time.count();
      st = j.final_status;
    }
  }
  if (!out.contains("status")) {
    st = j.master->status();
    out["status"] = std::string(to_string(st->status));
    out["failure"] = st->failure;
    out["restarts"] = st->restarts;
    out["lost_records"] = st->lost_records;
    out["dropped_records"] = st->dropped_records;
    out["attempt"] = st->attempt;
    if (!st->waiting_for_slots.empty()) out["waiting_for_slots"] = st->waiting_for_slots;
    out["completed_checkpoints"] = st->checkpoint_counts.completed;
  }
  if (!detail) return out;
  nlohmann::json vertices = nlohmann::json::array();
  for (const auto& v : j.graph->vertices) {
    nlohmann::json subtasks = nlohmann::json::array();
    std::set<std::string> states;
    if (st) {
      for (const auto& e : st->executions) {
        if (e.id.vertex != v.id) continue;
        std::string state = execution_state_name(e.state, e.terminal);
        states.insert(state);
        subtasks.push_back({{"subtask", e.id.subtask},
                            {"attempt", e.id.attempt},
                            {"state", state},
                            {"taskmanager", j.gateway->taskmanager_of(e.id)},
                            {"metrics", j.metrics.subtask_json(e.id.vertex, e.id.subtask, e.id.attempt)}});
      }
    }
    // The vertex as a whole: failed if any subtask failed, running while
    // any runs, deploying while any is on its way, else the one state they share (once the job ended: its own).
    std::string state = !st ? out["status"].get<std::string>()
                        : states.count("FAILED") ? "FAILED"
                        : states.count("RUNNING") ? "RUNNING"
                        : states.count("DEPLOYING") ? "DEPLOYING"
                        : states.size() == 1 ? *states.begin()
                                             : "ENDED";
    vertices.push_back({{"id", v.id},
                        {"name", v.name},
                        {"source", v.is_source},
                        {"parallelism", v.parallelism},
                        {"state", state},
                        {"metrics", j.metrics.vertex_json(v.id)},
                        {"subtasks", subtasks}});
  }
  out["vertices"] = vertices;
  nlohmann::json edges = nlohmann::json::array();
  for (const graph::JobEdge& e : j.graph->edges) {
    edges.push_back({{"source", e.source_vertex},
                     {"target", e.target_vertex},
                     {"partitioning", partitioning_name(e.kind)},
                     {"exchange", std::string(to_string(e.exchange))},
                     {"feedback", e.feedback}});
  }
  out["edges"] = edges;
  nlohmann::json failures = nlohmann::json::array();
  if (st) {
    for (const auto& f : st->failures) {
      failures.push_back({{"time_ms", f.time_ms}, {"scope", f.scope}, {"cause", f.cause}});
    }
    out["failures_total"] = st->failures_total;
  }
  out["failures"] = failures;
  out["max_parallelism"] = j.graph->max_parallelism;
  return out;
}

nlohmann::json checkpoints_json(Job& j) {
  if (j.archived != nullptr) return (*j.archived)["checkpoints"];
  std::vector<CompletedCheckpointStats> stats;
  CheckpointCounts counts;
  std::optional<runtime::JobMaster::Status> st;
  {
    absl::MutexLock lock(&j.mu);
    if (j.result) {
      stats = j.result->checkpoints;
      counts = j.result->checkpoint_counts;
      st = j.final_status;
    }
  }
  if (!st) {
    st = j.master->status();
    stats = st->checkpoints;
    counts = st->checkpoint_counts;
  }
  // The last restore, as Flink's checkpoint statistics show it.
  nlohmann::json restored = nullptr;
  if (st->last_restore_ms >= 0) {
    restored = {{"id", st->last_restored_id}, {"time_ms", st->last_restore_ms}, {"path", st->last_restored_from}};
  }
  nlohmann::json completed = nlohmann::json::array();
  for (const auto& c : stats) {
    nlohmann::json subtasks = nlohmann::json::array();
    for (const auto& t : c.subtasks) {
      subtasks.push_back({{"task", t.task}, {"sync_ms", t.sync_ms}, {"async_ms", t.async_ms},
                          {"alignment_ms", t.alignment_ms}, {"state_bytes", t.state_bytes},
                          {"persisted_data", t.persisted_data}});
    }
    completed.push_back({{"id", c.id},
                         {"trigger_time_ms", c.trigger_time_ms},
                         {"duration_ms", c.duration.count()},
                         {"state_bytes", c.state_bytes},
                         {"new_bytes", c.new_bytes},
                         {"savepoint", c.is_savepoint},
                         {"final", c.is_final},
                         {"subtasks", subtasks}});
  }
  // Flink's "counts"; "completed" lists the last kCheckpointHistory.
  nlohmann::json count_json = {{"completed", counts.completed},
                               {"failed", counts.failed},
                               {"in_progress", counts.in_progress},
                               {"total", counts.total()}};
  return {{"completed", completed}, {"failed", counts.failed}, {"counts", count_json}, {"restored", restored}};
}

std::string archived_json(Job& j) {
  return nlohmann::json{{"job", job_json(j, true)}, {"checkpoints", checkpoints_json(j)}}.dump();
}

void RestApi::post_result(const Request&, Response& res) {
  auto id = results_->open();
  if (!id.ok()) return reply_error(res, id.status());
  reply(res, nlohmann::json{{"id", *id}});
}

void RestApi::get_result(const Request& req, Response& res) {
  int64_t from = 0, wait_ms = 0;
  if (req.has_param("from")) from = std::atoll(req.get_param_value("from").c_str());
  if (req.has_param("wait_ms")) wait_ms = std::atoll(req.get_param_value("wait_ms").c_str());
  auto got = results_->fetch(req.matches[1], from, absl::Milliseconds(std::clamp<int64_t>(wait_ms, 0, 5000)));
  if (!got.ok()) return reply_error(res, got.status());
  nlohmann::json batches = nlohmann::json::array();
  for (const std::string& b : got->batches) batches.push_back(absl::Base64Escape(b));
  reply(res, nlohmann::json{{"batches", std::move(batches)}, {"next", got->next}, {"end", got->end}});
}

void RestApi::delete_result(const Request& req, Response& res) {
  results_->close(req.matches[1]);
  reply(res, nlohmann::json::object());
}

}  // namespace weir::cluster
