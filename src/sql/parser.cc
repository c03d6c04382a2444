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

namespace {

// The byte offset of the first parse node of `tree` nested deeper than
// kMaxSqlNesting (the nearest location at or above it), -2 when none is.
// Iterative: the tree may be as deep as the text is long.
int past_nesting_limit(const nlohmann::json& tree) {
  struct Item {
    const nlohmann::json* n;
    int depth;     // parse nodes above and including n
    int location;  // the nearest known location at or above n
  };
  std::vector<Item> stack = {{&tree, 0, -1}};
  while (!stack.empty()) {
    const Item it = stack.back();
    stack.pop_back();
    if (it.n->is_array()) {
      for (const auto& x : *it.n) stack.push_back({&x, it.depth, it.location});
      continue;
    }
    if (!it.n->is_object()) continue;
    int location = it.location;
    if (auto l = it.n->find("location"); l != it.n->end() && l->is_number_integer() && l->get<int>() >= 0) {
      location = l->get<int>();
    }
    // A parse node is {"NodeName": {fields}}.
    const bool node = it.n->size() == 1 && !it.n->begin().key().empty() && std::isupper(
                                                                                 static_cast<unsigned char>(it.n->begin().key()[0]));
    const int depth = it.depth + (node ? 1 : 0);
    if (depth > kMaxSqlNesting) {
      const nlohmann::json& fields = it.n->begin().value();
      if (fields.is_object()) {
        if (auto l = fields.find("location"); l != fields.end() && l->is_number_integer() && l->get<int>() >= 0) {
          return l->get<int>();
        }
      }
      return location;
    }
    for (const auto& [key, value] : it.n->items()) stack.push_back({&value, depth, location});
  }
  return -2;
}

}  // namespace

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
  if (!tree.contains("stmts")) return script;
  for (auto& s : tree["stmts"]) {
    Statement st;
    if (!s.contains("stmt")) continue;
    st.tree = std::move(s["stmt"]);  // not copied: a copy recurses once per level
    // A statement's location includes the white space before it.
    int at = s.value("stmt_location", 0);
    int len = s.value("stmt_len", 0);
    const int end = len > 0 ? at + len : static_cast<int>(script.text.size());
    while (at < end && std::isspace(static_cast<unsigned char>(script.text[at]))) ++at;
    st.offset = at;
    st.text = script.text.substr(at, end - at);
    if (const int past = past_nesting_limit(st.tree); past != -2) {
      return absl::InvalidArgumentError(position_of(script.text, past >= 0 ? past : at) +
                                        ": the statement nests expressions or queries deeper than " +
                                        std::to_string(kMaxSqlNesting) +
                                        " levels (weir's limit; docs/sql.md \"Limits\")");
    }
    script.statements.push_back(std::move(st));
  }
  return script;
}

}  // namespace weir::sql
