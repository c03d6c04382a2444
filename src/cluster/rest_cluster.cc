// RestApi: the cluster's processes. The TaskManagers (what each offers and
// uses, the subtasks in its slots, its configuration as it registered it,
// and its log and standard output, fetched from its HTTP port with the
// cluster secret) and the JobManager's own configuration and log. Logs and
// output come in bounded pieces (cluster/log_tail.h,
// cluster/taskmanager_http.h), never whole. The rest of the API is in
// rest_api.cc.
#include <httplib.h>

#include "cluster/log_tail.h"
#include "cluster/rest_api.h"
#include "cluster/rest_reply.h"
#include "common/clock.h"
#include "network/data_plane.h"

namespace weir::cluster {

nlohmann::json RestApi::taskmanager_json(const SessionPtr& s) {
  const int64_t now = SystemClock::instance()->now_ms();
  return {{"id", s->id},
          {"data_address", s->data_address},
          {"metrics_address", s->metrics_address},
          {"slots", s->slots},
          {"slots_used", slots_->used(s)},
          {"rss_bytes", s->rss_bytes.load()},
          {"network_buffers", s->network_buffers},
          {"network_buffers_used", s->network_buffers_used.load()},
          {"registered_ms", s->registered_ms},
          {"last_heartbeat_ms_ago", now - s->last_heartbeat_ms}};
}

SessionPtr RestApi::taskmanager_of(const Request& req, Response& res) {
  SessionPtr s = sessions_->find(req.matches[1]);
  if (s == nullptr) reply_error(res, absl::NotFoundError("no TaskManager " + std::string(req.matches[1])));
  return s;
}

void RestApi::get_taskmanagers(const Request&, Response& res) {
  nlohmann::json tms = nlohmann::json::array();
  for (const auto& s : sessions_->live()) tms.push_back(taskmanager_json(s));
  reply(res, {{"taskmanagers", tms}});
}

void RestApi::get_taskmanager(const Request& req, Response& res) {
  SessionPtr s = taskmanager_of(req, res);
  if (s == nullptr) return;
  nlohmann::json out = taskmanager_json(s);
  // What runs in its slots: every running subtask placed on it.
  nlohmann::json subtasks = nlohmann::json::array();
  for (const JobPtr& j : jobs_->list()) {
    if (j->ended() || j->master == nullptr) continue;
    const runtime::JobMaster::Status st = j->master->status();
    for (const auto& e : st.executions) {
      if (e.terminal || j->gateway->taskmanager_of(e.id) != s->id) continue;
      subtasks.push_back({{"job_id", j->id},
                          {"job_name", j->spec.name()},
                          {"vertex", e.id.vertex},
                          {"vertex_name", j->graph->vertices[e.id.vertex].name},
                          {"subtask", e.id.subtask},
                          {"attempt", e.id.attempt},
                          {"state", execution_state_name(e.state, e.terminal)}});
    }
  }
  out["subtasks"] = subtasks;
  nlohmann::json config = nlohmann::json::parse(s->config_json, nullptr, false);
  out["config"] = config.is_object() ? config : nlohmann::json::object();
  reply(res, out);
}

void RestApi::get_taskmanager_log(const Request& req, Response& res) { from_taskmanager(req, res, "/v1/log", "log"); }

void RestApi::get_taskmanager_stdout(const Request& req, Response& res) {
  from_taskmanager(req, res, "/v1/stdout", "standard output");
}

void RestApi::from_taskmanager(const Request& req, Response& res, const std::string& path, const std::string& what) {
  SessionPtr s = taskmanager_of(req, res);
  if (s == nullptr) return;
  if (s->metrics_address.empty()) {
    return reply_error(res, absl::FailedPreconditionError("TaskManager " + s->id +
                                                          " serves no HTTP port (--metrics-port -1): its " + what +
                                                          " is in its own output only"));
  }
  auto hp = network::parse_address(s->metrics_address);
  if (!hp.ok()) return reply_error(res, hp.status());
  httplib::Client http((tls_ca_.empty() ? "http://" : "https://") + hp->first + ":" + std::to_string(hp->second));
  if (!tls_ca_.empty()) {
    http.set_ca_cert_path(tls_ca_.c_str());
    http.enable_server_certificate_verification(true);
  }
  http.set_connection_timeout(3);
  http.set_read_timeout(5);
  httplib::Params params;
  for (const char* p : {"offset", "length"}) {
    if (req.has_param(p)) params.emplace(p, req.get_param_value(p));
  }
  auto r = http.Get(path, params, httplib::Headers{{"Authorization", "Bearer " + secret_}});
  if (!r) {
    return reply_error(res, absl::UnavailableError("TaskManager " + s->id + " at " + s->metrics_address +
                                                   " did not answer for its " + what + ": " +
                                                   httplib::to_string(r.error())));
  }
  res.status = r->status;
  res.set_content(r->body, "application/json");
}

void RestApi::get_jobmanager_config(const Request&, Response& res) {
  nlohmann::json out = jobmanager_config_;
  out["rest_port"] = port_.load();  // the port taken when --rest-port says 0
  reply(res, out);
}

void RestApi::get_jobmanager_log(const Request& req, Response& res) {
  auto piece = log_piece_json(req.get_param_value("offset"), req.get_param_value("length"));
  if (!piece.ok()) return reply_error(res, piece.status());
  reply(res, *piece);
}

}  // namespace weir::cluster
