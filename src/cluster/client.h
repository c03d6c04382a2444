// A client of the JobManager's REST API (docs/rest-api.md): what `weir run`,
// `weir list`, `weir cancel`, `weir savepoint`, `weir stop`, `weir
// checkpoints` and `weir overview` call. Every request carries the cluster
// secret; errors name the JobManager. Replies are the API's JSON documents.
#ifndef WEIR_CLUSTER_CLIENT_H_
#define WEIR_CLUSTER_CLIENT_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace weir::cluster {

class ClusterClient {
 public:
  // `address`: HOST:PORT of the JobManager's REST API, or several separated
  // by commas (JobManagers under high availability: tried in turn). With `tls_ca` (a
  // PEM file) the API is reached over HTTPS and its certificate checked
  // against that CA.
  ClusterClient(std::string address, std::string secret, std::string tls_ca = "");

  // Submits a built-in job by name, or, given `library` (a digest from
  // upload_library), that library's job.
  absl::StatusOr<std::string> submit(const std::string& job, const std::vector<std::string>& args,
                                     const std::string& library = "");
  // Uploads the job library at `path` unless the JobManager has it already;
  // returns its digest (the SHA-256 of its bytes).
  absl::StatusOr<std::string> upload_library(const std::string& path);
  absl::StatusOr<nlohmann::json> list();
  absl::StatusOr<nlohmann::json> job(const std::string& job_id);
  // The job's state once it ended or `timeout_ms` passed.
  absl::StatusOr<nlohmann::json> wait(const std::string& job_id, int64_t timeout_ms);
  absl::StatusOr<nlohmann::json> cancel(const std::string& job_id);
  // `directory` "": the job's default (docs/rest-api.md).
  absl::StatusOr<nlohmann::json> savepoint(const std::string& job_id, const std::string& directory, bool stop,
                                           bool drain);
  absl::StatusOr<nlohmann::json> checkpoints(const std::string& job_id);
  absl::StatusOr<nlohmann::json> overview();

  // A query result read through the JobManager (docs/rest-api.md "Query
  // results"): open one, pass its id to the query's result sink, fetch its
  // batches in turn, close it when done.
  struct ResultPage {
    std::vector<std::string> batches;  // encoded rows, as the sink pushed them
    int64_t next = 0;                  // fetch from here next
    bool end = false;                  // every sink subtask ended and this is the last page
  };
  absl::StatusOr<std::string> open_result();
  // The batches from `from` on, waiting up to `wait_ms` (at most 5000) for one.
  absl::StatusOr<ResultPage> fetch_result(const std::string& id, int64_t from, int64_t wait_ms);
  absl::Status close_result(const std::string& id);

  // Waits at most `seconds` for any answer (default: each request's own
  // limit, up to minutes for a savepoint): a JobManager that accepts
  // connections but answers nothing (frozen) then counts as unreachable
  // sooner, and the next address is tried.
  void set_answer_timeout(int seconds) { answer_timeout_s_ = seconds; }
  // GET of any REST path (docs/rest-api.md), e.g. "/v1/taskmanagers/ID".
  absl::StatusOr<nlohmann::json> get(const std::string& path) { return request("GET", path, nullptr, 30); }
  // POST of a JSON body to any REST path, e.g. "/v1/sql/explain".
  absl::StatusOr<nlohmann::json> post(const std::string& path, const nlohmann::json& body) {
    return request("POST", path, &body, 30);
  }

 private:
  absl::StatusOr<nlohmann::json> request(const std::string& method, const std::string& path,
                                         const nlohmann::json* body, int timeout_s);
  // `method` GET, POST or PUT; `body` sent as `content_type`.
  absl::StatusOr<nlohmann::json> request_raw(const std::string& method, const std::string& path,
                                             const std::string& body, const char* content_type, int timeout_s);
  // One request to one JobManager, following a standby's redirect to the
  // leader (unless `redirected` already); `unreachable` says whether
  // another may be asked instead.
  absl::StatusOr<nlohmann::json> request_one(const std::string& address, const std::string& method,
                                             const std::string& path, const std::string& body,
                                             const char* content_type, int timeout_s, bool* unreachable,
                                             bool redirected = false);

  const std::string address_;
  const std::string secret_;
  const std::string tls_ca_;
  size_t current_ = 0;  // of the addresses in address_, the one that answered last
  bool answered_ = false;  // current_ has answered this client
  int answer_timeout_s_ = 0;  // 0: none
};

}  // namespace weir::cluster

#endif  // WEIR_CLUSTER_CLIENT_H_
