// JSON request bodies of the REST API.
#ifndef WEIR_CLUSTER_JSON_BODY_H_
#define WEIR_CLUSTER_JSON_BODY_H_

#include <nlohmann/json.hpp>
#include <string_view>

namespace weir::cluster {

// The JSON value of `body`, or a discarded value (is_discarded()) when it
// does not parse or nests arrays and objects deeper than `max_depth`:
// parsing and freeing deep nests costs stack and memory out of proportion
// to the bytes, so they are refused by a scan before parsing.
nlohmann::json parse_json_body(std::string_view body, int max_depth);

}  // namespace weir::cluster

#endif  // WEIR_CLUSTER_JSON_BODY_H_
