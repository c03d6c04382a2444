// SQL scripts (src/sql/): any text either plans or gets an error that names
// where it is; a plan's constant expressions evaluate without crashing, and
// --explain prints it. The same script is planned as the shell plans it
// too (a bare SELECT into a result table, its ORDER BY and LIMIT read). A
// plan over in-memory tables only ('values', 'print', 'blackhole') is also
// built into a job graph (operators, composed expressions, programs).
#include <cstddef>
#include <cstdint>
#include <string>

#include "sql/job_builder.h"
#include "sql/planner.h"
#include "weir/stream.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;
  std::string text(reinterpret_cast<const char*>(data), size);
  if (text.find('\0') != std::string::npos) return 0;  // the parser reads a C string
  auto script = weir::sql::parse_script(text);
  if (!script.ok()) {
    if (script.status().message().empty()) __builtin_trap();
    return 0;
  }
  weir::sql::PlanOptions shell;
  shell.result_table = "(result)";
  shell.result_connector = "shell-result";
  shell.declarations_only = true;
  for (const weir::sql::PlanOptions& options : {weir::sql::PlanOptions{}, shell}) {
    auto planned = weir::sql::plan_script(*script, options);
    if (!planned.ok()) {
      if (planned.status().message().empty()) __builtin_trap();
      continue;
    }
    for (const auto& [column, descending] : planned->result_order.keys) {
      if (column < 0 || column >= static_cast<int>(planned->inserts.back().root->columns.size())) __builtin_trap();
    }
    if (!planned->inserts.empty() && weir::sql::explain(*planned).empty()) __builtin_trap();
    bool in_memory = options.result_table.empty();
    for (const auto& t : planned->tables) {
      const std::string c = t.connector();
      in_memory = in_memory && (c == "values" || c == "print" || c == "blackhole");
    }
    if (in_memory && !planned->inserts.empty()) {
      weir::StreamEnvironment env;
      absl::Status built = weir::sql::build_job(*planned, weir::sql::TableConnectors::built_in(), env);
      if (!built.ok() && built.message().empty()) __builtin_trap();
    }
  }
  return 0;
}
