// SQL scripts (src/sql/): any text either plans or gets an error that names
// where it is; a plan's constant expressions evaluate without crashing, and
// --explain prints it.
#include <cstddef>
#include <cstdint>
#include <string>

#include "sql/planner.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;
  std::string text(reinterpret_cast<const char*>(data), size);
  if (text.find('\0') != std::string::npos) return 0;  // the parser reads a C string
  auto script = weir::sql::parse_script(text);
  if (!script.ok()) {
    if (script.status().message().empty()) __builtin_trap();
    return 0;
  }
  auto planned = weir::sql::plan_script(*script);
  if (!planned.ok()) {
    if (planned.status().message().empty()) __builtin_trap();
    return 0;
  }
  if (weir::sql::explain(*planned).empty()) __builtin_trap();
  return 0;
}
