// The JobManager's REST API (docs/rest-api.md): its routes, one function
// each, and the JSON views of jobs, checkpoints and the cluster they answer
// with, and the JobManager's metrics for Prometheus (GET /metrics,
// docs/metrics.md), beside the web UI (cluster/web_ui.h). Every request
// must carry the cluster secret ("Authorization: Bearer <secret>") or a web
// UI session, but /metrics may be opened to scrapers without it; JSON bodies are small and shallow, job libraries may be
// large. Errors are {"error": MESSAGE} with the HTTP status of the cause.
#ifndef WEIR_CLUSTER_REST_API_H_
#define WEIR_CLUSTER_REST_API_H_

#include <atomic>
#include <string>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "cluster/http_server.h"
#include "cluster/job_library.h"
#include "cluster/job_registry.h"
#include "cluster/result_buffers.h"
#include "cluster/session_registry.h"
#include "cluster/slot_pool.h"
#include "cluster/web_ui.h"
#include "common/rate_limited_log.h"

namespace weir::cluster {

class RestApi {
 public:
  // Serves `jobs`, `sessions`, `slots`, `libraries` and `results`, which
  // outlive it; with `metrics_public`, GET /metrics needs no secret.
  RestApi(std::string secret, bool metrics_public, JobRegistry* jobs, SessionRegistry* sessions, SlotPool* slots,
          LibraryStore* libraries, ResultBuffers* results);
  RestApi(const RestApi&) = delete;
  RestApi& operator=(const RestApi&) = delete;

  // Listens on host:port (0: any free port), with HTTPS when `tls` is
  // given; the port.
  absl::StatusOr<int> start(const std::string& host, int port,
                            std::shared_ptr<const network::TlsContext> tls = nullptr);
  // Stops serving; requests in progress end first.
  void shutdown() { http_.shutdown(); }
  // What GET /v1/jobmanager/config shows, and the CA file to check the
  // TaskManagers' HTTPS ports with when their logs are fetched ("": plain
  // HTTP). Before start().
  void set_jobmanager_view(nlohmann::json config, std::string tls_ca) {
    jobmanager_config_ = std::move(config);
    tls_ca_ = std::move(tls_ca);
  }
  // What POST /v1/sql/explain answers with. Before start().
  void set_sql_explainer(SqlExplainer explain) { explain_sql_ = std::move(explain); }

  // The largest job library a client may upload, and the limits on
  // everything else.
  static constexpr size_t kMaxLibraryBytes = size_t{512} << 20;
  static constexpr size_t kMaxJsonBodyBytes = size_t{1} << 20;
  static constexpr int kMaxJsonDepth = 32;
  static constexpr size_t kMaxJobArgs = 1024;
  static constexpr size_t kMaxJobArgBytes = 64 * 1024;

 private:
  using Request = httplib::Request;
  using Response = httplib::Response;

  void get_metrics(const Request& req, Response& res);
  void get_overview(const Request& req, Response& res);
  void get_jobs(const Request& req, Response& res);
  void post_job(const Request& req, Response& res);
  void get_job(const Request& req, Response& res);
  void get_job_wait(const Request& req, Response& res);
  void get_checkpoints(const Request& req, Response& res);
  void post_cancel(const Request& req, Response& res);
  void post_savepoint(const Request& req, Response& res, bool stop);
  void put_library(const Request& req, Response& res);
  void get_library(const Request& req, Response& res);
  void post_result(const Request& req, Response& res);
  void get_result(const Request& req, Response& res);
  void delete_result(const Request& req, Response& res);
  // The cluster's processes (rest_cluster.cc): the TaskManagers, one
  // TaskManager (its slots' subtasks, configuration), its log fetched from
  // its HTTP port, and the JobManager's own configuration and log.
  void get_taskmanagers(const Request& req, Response& res);
  void get_taskmanager(const Request& req, Response& res);
  void get_taskmanager_log(const Request& req, Response& res);
  void get_taskmanager_stdout(const Request& req, Response& res);
  void post_sql_explain(const Request& req, Response& res);
  // GET `path` of the TaskManager the request names, on its HTTP port (its
  // `what`, for errors), answered as it answers.
  void from_taskmanager(const Request& req, Response& res, const std::string& path, const std::string& what);
  void get_jobmanager_config(const Request& req, Response& res);
  void get_jobmanager_log(const Request& req, Response& res);
  nlohmann::json taskmanager_json(const SessionPtr& s);
  // The TaskManager named by the route's first match, or a 404 answered.
  SessionPtr taskmanager_of(const Request& req, Response& res);

  // The job named by the route's first match, or a 404 answered.
  JobPtr job_of(const Request& req, Response& res);

  const std::string secret_;
  const bool metrics_public_;
  JobRegistry* const jobs_;
  SessionRegistry* const sessions_;
  SlotPool* const slots_;
  LibraryStore* const libraries_;
  ResultBuffers* const results_;
  nlohmann::json jobmanager_config_ = nlohmann::json::object();
  std::atomic<int> port_{0};  // once listening
  std::string tls_ca_;
  SqlExplainer explain_sql_;  // null: no SQL planner here
  RateLimitedLog refusals_;  // of requests without the secret
  WebUi ui_;
  HttpServer http_;
};

// The JSON views (docs/rest-api.md). A job's state; with `detail` also its
// vertices, their subtasks and metrics.
nlohmann::json job_json(Job& j, bool detail);
nlohmann::json checkpoints_json(Job& j);
// What the job result store keeps of an ended job: {"job": job_json(j,
// true), "checkpoints": checkpoints_json(j)}, as text.
std::string archived_json(Job& j);

}  // namespace weir::cluster

#endif  // WEIR_CLUSTER_REST_API_H_
