// REST request bodies.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "cluster/json_body.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  nlohmann::json body = weir::cluster::parse_json_body(bytes, 32);
  if (!body.is_discarded()) (void)body.dump();
  return 0;
}
