#include "cluster/client.h"

#include <httplib.h>

#include <chrono>

#include "network/data_plane.h"

namespace weir::cluster {
namespace {

absl::Status status_for(int http, const std::string& message) {
  switch (http) {
    case 400: return absl::InvalidArgumentError(message);
    case 401: return absl::UnauthenticatedError(message);
    case 403: return absl::PermissionDeniedError(message);
    case 404: return absl::NotFoundError(message);
    case 409: return absl::FailedPreconditionError(message);
    case 503: return absl::UnavailableError(message);
    default: return absl::InternalError(message);
  }
}

}  // namespace

ClusterClient::ClusterClient(std::string address, std::string secret)
    : address_(std::move(address)), secret_(std::move(secret)) {}

absl::StatusOr<nlohmann::json> ClusterClient::request(const std::string& method, const std::string& path,
                                                      const nlohmann::json* body, int timeout_s) {
  auto hp = network::parse_address(address_);
  if (!hp.ok()) return hp.status();
  httplib::Client http(hp->first, hp->second);
  http.set_connection_timeout(5);
  http.set_read_timeout(timeout_s);
  http.set_write_timeout(30);
  httplib::Headers headers = {{"Authorization", "Bearer " + secret_}};
  httplib::Result r = method == "GET" ? http.Get(path.c_str(), headers)
                                      : http.Post(path.c_str(), headers, body ? body->dump() : "{}",
                                                  "application/json");
  if (!r) {
    return absl::UnavailableError("JobManager " + address_ + " unreachable: " + httplib::to_string(r.error()));
  }
  auto json = nlohmann::json::parse(r->body, nullptr, /*allow_exceptions=*/false);
  if (r->status != 200) {
    std::string message = json.is_object() && json.contains("error") && json["error"].is_string()
                              ? json["error"].get<std::string>()
                              : "HTTP " + std::to_string(r->status);
    return status_for(r->status, message);
  }
  if (json.is_discarded()) return absl::DataLossError("JobManager " + address_ + " sent malformed JSON");
  return json;
}

absl::StatusOr<std::string> ClusterClient::submit(const std::string& job, const std::vector<std::string>& args) {
  nlohmann::json body = {{"name", job}, {"args", args}};
  auto r = request("POST", "/v1/jobs", &body, 60);
  if (!r.ok()) return r.status();
  return (*r)["job_id"].get<std::string>();
}

absl::StatusOr<nlohmann::json> ClusterClient::list() { return request("GET", "/v1/jobs", nullptr, 30); }

absl::StatusOr<nlohmann::json> ClusterClient::job(const std::string& id) {
  return request("GET", "/v1/jobs/" + id, nullptr, 30);
}

absl::StatusOr<nlohmann::json> ClusterClient::wait(const std::string& id, int64_t timeout_ms) {
  auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    int64_t left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now())
                       .count();
    // The server holds one request up to a minute.
    auto r = request("GET", "/v1/jobs/" + id + "/wait?timeout_ms=" + std::to_string(std::clamp<int64_t>(left, 0, 60000)),
                     nullptr, 90);
    if (!r.ok()) return r.status();
    std::string status = (*r)["status"].get<std::string>();
    bool ended = status == "FINISHED" || status == "FAILED" || status == "CANCELED";
    if (ended || left <= 0) return r;
  }
}

absl::StatusOr<nlohmann::json> ClusterClient::cancel(const std::string& id) {
  return request("POST", "/v1/jobs/" + id + "/cancel", nullptr, 60);
}

absl::StatusOr<nlohmann::json> ClusterClient::savepoint(const std::string& id, const std::string& directory,
                                                        bool stop, bool drain) {
  nlohmann::json body = {{"directory", directory}};
  if (stop) body["drain"] = drain;
  return request("POST", "/v1/jobs/" + id + (stop ? "/stop" : "/savepoints"), &body, 600);
}

absl::StatusOr<nlohmann::json> ClusterClient::checkpoints(const std::string& id) {
  return request("GET", "/v1/jobs/" + id + "/checkpoints", nullptr, 30);
}

absl::StatusOr<nlohmann::json> ClusterClient::overview() { return request("GET", "/v1/overview", nullptr, 30); }

}  // namespace weir::cluster
