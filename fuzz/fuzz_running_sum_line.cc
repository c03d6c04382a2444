// Lines of the running-sum job's input.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "examples/running_sum/running_sum.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view line(reinterpret_cast<const char*>(data), size);
  weir::examples::ParsedLine p = weir::examples::parse_running_sum_line(line);
  // An accepted line is exactly its key, a comma and its value.
  if (p.ok && (p.key.empty() || line.substr(0, p.key.size()) != p.key || line[p.key.size()] != ',')) {
    __builtin_trap();
  }
  if (!p.ok && p.reason.empty()) __builtin_trap();
  return 0;
}
