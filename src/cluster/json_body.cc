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

}  // namespace weir::cluster
