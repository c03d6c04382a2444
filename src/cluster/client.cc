#include "cluster/client.h"

#include <httplib.h>

#include <algorithm>
#include <chrono>

#include "absl/strings/escaping.h"
#include "absl/strings/str_split.h"
#include "cluster/job_library.h"
#include "common/file_util.h"
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

ClusterClient::ClusterClient(std::string address, std::string secret, std::string tls_ca)
    : address_(std::move(address)), secret_(std::move(secret)), tls_ca_(std::move(tls_ca)) {}

absl::StatusOr<nlohmann::json> ClusterClient::request(const std::string& method, const std::string& path,
                                                      const nlohmann::json* body, int timeout_s) {
  return request_raw(method, path, body != nullptr ? body->dump() : "{}", "application/json", timeout_s);
}

namespace {

// What went wrong with a request, in words (httplib's names are one word).
std::string describe(httplib::Error e, int timeout_s) {
  switch (e) {
    case httplib::Error::Connection:
      return "cannot connect (nothing listening there, or the host cannot be reached)";
    case httplib::Error::ConnectionTimeout:
      return "no connection within 5 s";
    case httplib::Error::Read:
      return "no complete answer within " + std::to_string(timeout_s) + " s (or the connection broke)";
    case httplib::Error::Write:
      return "the connection broke while sending the request";
    case httplib::Error::BindIPAddress:
      return "cannot bind the local address";
    case httplib::Error::SSLConnection:
      return "TLS handshake failed (is the JobManager's REST port started with --tls-cert?)";
    case httplib::Error::SSLServerVerification:
      return "its certificate is not signed by --tls-ca or does not name this host";
    case httplib::Error::SSLLoadingCerts:
      return "cannot load the CA certificates of --tls-ca";
    default:
      return "request failed (" + httplib::to_string(e) + ")";
  }
}

}  // namespace

absl::StatusOr<nlohmann::json> ClusterClient::request_raw(const std::string& method, const std::string& path,
                                                          const std::string& body, const char* content_type,
                                                          int timeout_s) {
  const std::vector<std::string> addresses = absl::StrSplit(address_, ',', absl::SkipEmpty());
  if (addresses.empty()) return absl::InvalidArgumentError("no JobManager address given");
  absl::StatusOr<nlohmann::json> out;
  // Several JobManagers (high availability): only the leader listens; the
  // one that answered last is asked first. Until one has answered, each is
  // first asked a cheap question with a short limit, so that a frozen one
  // (accepting connections, answering nothing) costs seconds, not the
  // request's whole limit.
  if (addresses.size() > 1 && !answered_) {
    constexpr int kProbeTimeoutS = 3;
    for (size_t i = 0; i < addresses.size(); ++i) {
      const size_t at = (current_ + i) % addresses.size();
      bool unreachable = false;
      (void)request_one(addresses[at], "GET", "/v1/overview", "", nullptr, kProbeTimeoutS, &unreachable);
      if (!unreachable) {
        current_ = at;
        break;
      }
    }
  }
  // When none answers, the error names each one and why.
  std::string tried;
  for (size_t i = 0; i < addresses.size(); ++i) {
    const size_t at = (current_ + i) % addresses.size();
    bool unreachable = false;
    out = request_one(addresses[at], method, path, body, content_type,
                      answer_timeout_s_ > 0 ? std::min(timeout_s, answer_timeout_s_) : timeout_s, &unreachable);
    if (!unreachable) {
      current_ = at;
      answered_ = true;
      return out;
    }
    std::string why(out.status().message());
    if (why.find(addresses[at]) == std::string::npos) why = addresses[at] + ": " + why;
    tried += (tried.empty() ? "" : "; ") + why;
  }
  answered_ = false;
  if (addresses.size() > 1) {
    return absl::UnavailableError("no JobManager answered (" + std::to_string(addresses.size()) + " tried): " + tried);
  }
  return out;
}

namespace {

// HOST:PORT of a redirect's Location ("http://HOST:PORT/path"), or "".
std::string redirect_address(const std::string& location) {
  const size_t scheme = location.find("://");
  if (scheme == std::string::npos) return "";
  const size_t start = scheme + 3, end = location.find('/', start);
  return location.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

}  // namespace

absl::StatusOr<nlohmann::json> ClusterClient::request_one(const std::string& address, const std::string& method,
                                                          const std::string& path, const std::string& body,
                                                          const char* content_type, int timeout_s,
                                                          bool* unreachable, bool redirected) {
  auto hp = network::parse_address(address);
  if (!hp.ok()) return hp.status();
  const std::string scheme = tls_ca_.empty() ? "http://" : "https://";
  httplib::Client http(scheme + hp->first + ":" + std::to_string(hp->second));
  if (!tls_ca_.empty()) {
    http.set_ca_cert_path(tls_ca_.c_str());
    http.enable_server_certificate_verification(true);
  }
  // A host that drops packets (a partition) costs at most the answer's
  // time, not more, before the next JobManager is tried.
  http.set_connection_timeout(std::clamp(timeout_s, 1, 5));
  http.set_read_timeout(timeout_s);
  http.set_write_timeout(timeout_s);
  httplib::Headers headers = {{"Authorization", "Bearer " + secret_}};
  httplib::Result r = method == "GET"      ? http.Get(path.c_str(), headers)
                      : method == "PUT"    ? http.Put(path.c_str(), headers, body, content_type)
                      : method == "DELETE" ? http.Delete(path.c_str(), headers)
                                           : http.Post(path.c_str(), headers, body, content_type);
  if (!r) {
    // Another JobManager may answer: when nothing listens here, or a
    // request that changes nothing got no answer.
    // A handshake that did not complete counts too: a frozen JobManager
    // takes the connection and never answers the TLS hello. (A client
    // that cannot speak with any of them gets the last error.)
    *unreachable = r.error() == httplib::Error::Connection || r.error() == httplib::Error::ConnectionTimeout ||
                   r.error() == httplib::Error::SSLConnection ||
                   (method == "GET" && r.error() == httplib::Error::Read);
    return absl::UnavailableError("JobManager " + address + " unreachable: " + describe(r.error(), timeout_s));
  }
  // A standing-by JobManager sends us to the leader (one hop: a leader
  // never redirects).
  if ((r->status == 307 || r->status == 308) && !redirected) {
    const std::string leader = redirect_address(r->get_header_value("Location"));
    if (!leader.empty() && leader != address) {
      return request_one(leader, method, path, body, content_type, timeout_s, unreachable, /*redirected=*/true);
    }
  }
  // A standby while no leader is elected (or a saturated leader): another
  // JobManager may answer.
  if (r->status == 503) *unreachable = true;
  auto json = nlohmann::json::parse(r->body, nullptr, /*allow_exceptions=*/false);
  if (r->status != 200) {
    std::string message = json.is_object() && json.contains("error") && json["error"].is_string()
                              ? json["error"].get<std::string>()
                              : "HTTP " + std::to_string(r->status);
    return status_for(r->status, message);
  }
  if (json.is_discarded()) return absl::DataLossError("JobManager " + address + " sent malformed JSON");
  return json;
}

absl::StatusOr<std::string> ClusterClient::upload_library(const std::string& path) {
  auto bytes = read_file(path);
  if (!bytes.ok()) return absl::InvalidArgumentError("job library: " + std::string(bytes.status().message()));
  const std::string digest = sha256_hex(*bytes);
  auto have = request("GET", "/v1/libraries/" + digest, nullptr, 60);
  if (have.ok()) return digest;
  if (absl::IsUnavailable(have.status()) || absl::IsUnauthenticated(have.status())) return have.status();
  auto put = request_raw("PUT", "/v1/libraries/" + digest, *bytes, "application/octet-stream", 600);
  if (!put.ok()) return absl::Status(put.status().code(), "uploading " + path + ": " + std::string(put.status().message()));
  return digest;
}

absl::StatusOr<std::string> ClusterClient::submit(const std::string& job, const std::vector<std::string>& args,
                                                  const std::string& library) {
  nlohmann::json body = {{"name", job}, {"args", args}};
  if (!library.empty()) body["library"] = library;
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

absl::StatusOr<std::string> ClusterClient::open_result() {
  auto r = request("POST", "/v1/results", nullptr, 30);
  if (!r.ok()) return r.status();
  if (!r->contains("id") || !(*r)["id"].is_string()) return absl::DataLossError("POST /v1/results: no id in the answer");
  return (*r)["id"].get<std::string>();
}

absl::StatusOr<ClusterClient::ResultPage> ClusterClient::fetch_result(const std::string& id, int64_t from,
                                                                      int64_t wait_ms) {
  auto r = request("GET",
                   "/v1/results/" + id + "?from=" + std::to_string(from) +
                       "&wait_ms=" + std::to_string(std::clamp<int64_t>(wait_ms, 0, 5000)),
                   nullptr, 30);
  if (!r.ok()) return r.status();
  ResultPage page;
  try {
    for (const auto& b : (*r).at("batches")) {
      std::string bytes;
      if (!absl::Base64Unescape(b.get<std::string>(), &bytes)) {
        return absl::DataLossError("result " + id + ": a batch is not base64");
      }
      page.batches.push_back(std::move(bytes));
    }
    page.next = (*r).at("next").get<int64_t>();
    page.end = (*r).at("end").get<bool>();
  } catch (const nlohmann::json::exception& e) {
    return absl::DataLossError("result " + id + ": malformed answer: " + e.what());
  }
  return page;
}

absl::Status ClusterClient::close_result(const std::string& id) {
  return request("DELETE", "/v1/results/" + id, nullptr, 30).status();
}

absl::StatusOr<nlohmann::json> ClusterClient::cancel(const std::string& id) {
  return request("POST", "/v1/jobs/" + id + "/cancel", nullptr, 60);
}

absl::StatusOr<nlohmann::json> ClusterClient::savepoint(const std::string& id, const std::string& directory,
                                                        bool stop, bool drain) {
  nlohmann::json body = nlohmann::json::object();
  if (!directory.empty()) body["directory"] = directory;  // else the job's default
  if (stop) body["drain"] = drain;
  return request("POST", "/v1/jobs/" + id + (stop ? "/stop" : "/savepoints"), &body, 600);
}

absl::StatusOr<nlohmann::json> ClusterClient::checkpoints(const std::string& id) {
  return request("GET", "/v1/jobs/" + id + "/checkpoints", nullptr, 30);
}

absl::StatusOr<nlohmann::json> ClusterClient::overview() { return request("GET", "/v1/overview", nullptr, 30); }

}  // namespace weir::cluster
