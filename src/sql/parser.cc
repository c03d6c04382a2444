#include "sql/parser.h"

#include <pg_query.h>

#include <cctype>

namespace weir::sql {

std::string position_of(std::string_view text, int offset) {
  int line = 1, column = 1;
  for (int i = 0; i < offset && i < static_cast<int>(text.size()); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

std::string token_at(std::string_view text, int offset) {
  if (offset < 0 || offset >= static_cast<int>(text.size())) return "end of input";
  size_t i = static_cast<size_t>(offset);
  const char c = text[i];
  size_t end = i + 1;
  if (c == '\'' || c == '"') {
    end = text.find(c, i + 1);
    end = end == std::string_view::npos ? text.size() : end + 1;
  } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '_') {
    while (end < text.size() && (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_')) ++end;
  }
  return std::string(text.substr(i, std::min<size_t>(end - i, 40)));
}

absl::StatusOr<Script> parse_script(std::string text) {
  Script script;
  script.text = std::move(text);
  PgQueryParseResult r = pg_query_parse(script.text.c_str());
  if (r.error != nullptr) {
    // cursorpos counts from 1; 0 means "no position".
    const int at = r.error->cursorpos > 0 ? r.error->cursorpos - 1 : static_cast<int>(script.text.size());
    std::string message = position_of(script.text, at) + ": " + r.error->message;
    pg_query_free_parse_result(r);
    return absl::InvalidArgumentError(message);
  }
  auto tree = nlohmann::json::parse(r.parse_tree, nullptr, /*allow_exceptions=*/false);
  pg_query_free_parse_result(r);
  if (!tree.is_object()) return absl::InternalError("the SQL parser returned an unreadable tree");
  for (const auto& s : tree.value("stmts", nlohmann::json::array())) {
    Statement st;
    st.tree = s.at("stmt");
    // A statement's location includes the white space before it.
    int at = s.value("stmt_location", 0);
    int len = s.value("stmt_len", 0);
    const int end = len > 0 ? at + len : static_cast<int>(script.text.size());
    while (at < end && std::isspace(static_cast<unsigned char>(script.text[at]))) ++at;
    st.offset = at;
    st.text = script.text.substr(at, end - at);
    script.statements.push_back(std::move(st));
  }
  return script;
}

}  // namespace weir::sql
