// JSON bodies of the REST API: requests parsed within bounds, replies and
// errors ({"error": MESSAGE} with the HTTP status of the cause).
#ifndef WEIR_CLUSTER_JSON_BODY_H_
#define WEIR_CLUSTER_JSON_BODY_H_

#include <httplib.h>
#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "runtime/gateways.h"

namespace weir::cluster {

// The JSON value of `body`, or a discarded value (is_discarded()) when it
// does not parse or nests arrays and objects deeper than `max_depth`:
// parsing and freeing deep nests costs stack and memory out of proportion
// to the bytes, so they are refused by a scan before parsing.
nlohmann::json parse_json_body(std::string_view body, int max_depth);

// The HTTP status of an error: 400 invalid, 401, 403, 404, 409 a state
// that forbids it, 429, 503 unavailable, else 500.
int http_status(const absl::Status& s);
void reply(httplib::Response& res, const nlohmann::json& body);
void reply_error(httplib::Response& res, const absl::Status& s);
// A subtask's state as the REST API names it (ENDED: it ended without
// saying how, its job being over).
std::string execution_state_name(runtime::ExecutionState s, bool terminal);

}  // namespace weir::cluster

#endif  // WEIR_CLUSTER_JSON_BODY_H_
