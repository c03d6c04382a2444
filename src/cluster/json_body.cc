#include "cluster/json_body.h"

namespace weir::cluster {

nlohmann::json parse_json_body(std::string_view body, int max_depth) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (char c : body) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return nlohmann::json::value_t::discarded;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
}

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

void reply(httplib::Response& res, const nlohmann::json& body) { res.set_content(body.dump(), "application/json"); }

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
