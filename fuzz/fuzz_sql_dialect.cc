// Flink's SQL dialect, the front end alone (src/sql/lexer.h, ddl_parser.h,
// parser.h): any text gets statements or an error naming where it is. Each
// statement's offset lies in the text and its text is the script's there; a
// typed statement's names and options point into the text; a query's
// FOR SYSTEM_TIME AS OF marks name spans of the text. Every token lies in
// the text, in order.
#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>

#include "sql/lexer.h"
#include "sql/parser.h"

namespace {

void check_offset(const std::string& text, int offset) {
  if (offset < 0 || offset > static_cast<int>(text.size())) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;
  std::string text(reinterpret_cast<const char*>(data), size);
  if (text.find('\0') != std::string::npos) return 0;  // the parser reads a C string
  auto tokens = weir::sql::tokenize(text);
  if (tokens.ok()) {
    int last = 0;
    for (const weir::sql::Token& t : *tokens) {
      if (t.offset < last || t.end < t.offset || t.end > static_cast<int>(text.size())) __builtin_trap();
      last = t.end;
    }
  } else if (tokens.status().message().empty()) {
    __builtin_trap();
  }
  auto script = weir::sql::parse_script(text);
  if (!script.ok()) {
    if (script.status().message().empty()) __builtin_trap();
    return 0;
  }
  for (const weir::sql::Statement& st : script->statements) {
    check_offset(text, st.offset);
    if (text.compare(static_cast<size_t>(st.offset), st.text.size(), st.text) != 0) __builtin_trap();
    for (const weir::sql::TemporalMark& m : st.temporal) {
      check_offset(text, m.table_offset);
      check_offset(text, m.time.begin);
      check_offset(text, m.time.end);
      if (m.time.end <= m.time.begin) __builtin_trap();
    }
    if (!st.typed) continue;
    if (const auto* c = std::get_if<weir::sql::ast::CreateTable>(&*st.typed)) {
      check_offset(text, c->name.offset);
      for (const auto& o : c->options) check_offset(text, o.offset);
      for (const auto& col : c->columns) {
        check_offset(text, col.name.offset);
        if (col.kind == weir::sql::ast::ColumnDef::Kind::kComputed) {
          check_offset(text, col.expr.begin);
          check_offset(text, col.expr.end);
          // A computed column's expression parses or fails with a message.
          auto e = weir::sql::parse_expression(*script, col.expr);
          if (!e.ok() && e.status().message().empty()) __builtin_trap();
        }
      }
    }
  }
  return 0;
}
