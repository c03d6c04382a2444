#include "cluster/rest_reply.h"

namespace weir::cluster {

int http_status(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kInvalidArgument: return 400;
    case absl::StatusCode::kUnauthenticated: return 401;
    case absl::StatusCode::kPermissionDenied: return 403;
    case absl::StatusCode::kNotFound: return 404;
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kAborted: return 409;
    case absl::StatusCode::kResourceExhausted: return 429;
    case absl::StatusCode::kUnavailable: return 503;
    default: return 500;
  }
}

// Bytes that are not UTF-8 (a job name, a printed line) become U+FFFD
// rather than failing the reply.
void reply(httplib::Response& res, const nlohmann::json& body) {
  res.set_content(body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), "application/json");
}

void reply_error(httplib::Response& res, const absl::Status& s) {
  res.status = http_status(s);
  res.set_content(nlohmann::json{{"error", std::string(s.message())}}.dump(), "application/json");
}

std::string execution_state_name(runtime::ExecutionState s, bool terminal) {
  switch (s) {
    case runtime::ExecutionState::kRunning: return terminal ? "ENDED" : "RUNNING";
    case runtime::ExecutionState::kFinished: return "FINISHED";
    case runtime::ExecutionState::kCanceled: return "CANCELED";
    case runtime::ExecutionState::kFailed: return "FAILED";
    case runtime::ExecutionState::kCreated: return "CREATED";
    case runtime::ExecutionState::kDeploying: return "DEPLOYING";
  }
  return "?";
}

}  // namespace weir::cluster
