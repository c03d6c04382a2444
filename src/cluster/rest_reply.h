// The REST API's replies: JSON bodies, errors as {"error": MESSAGE} with
// the HTTP status of the cause, and the names it gives subtask states.
#ifndef WEIR_CLUSTER_REST_REPLY_H_
#define WEIR_CLUSTER_REST_REPLY_H_

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <string>

#include "absl/status/status.h"
#include "runtime/gateways.h"

namespace weir::cluster {

// The HTTP status of an error: 400 invalid, 401, 403, 404, 409 a state
// that forbids it, 429, 503 unavailable, else 500.
int http_status(const absl::Status& s);
void reply(httplib::Response& res, const nlohmann::json& body);
void reply_error(httplib::Response& res, const absl::Status& s);
// A subtask's state as the REST API names it (ENDED: it ended without
// saying how, its job being over).
std::string execution_state_name(runtime::ExecutionState s, bool terminal);

}  // namespace weir::cluster

#endif  // WEIR_CLUSTER_REST_REPLY_H_
