// SQL text to parse trees, with PostgreSQL's own parser (libpg_query). A
// script is split into statements; each statement's tree is the JSON form
// libpg_query gives (node names and fields as PostgreSQL's parsenodes.h has
// them), with every node's "location" a byte offset into the script.
//
// Errors name where they are: "line L, column C: <what> (at or near
// "TOKEN")", line and column counted from 1 in the script's text. A parse
// error is always an InvalidArgument status.
//
// Thread-safe (libpg_query keeps its memory per thread).
#ifndef WEIR_SQL_PARSER_H_
#define WEIR_SQL_PARSER_H_

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"

namespace weir::sql {

struct Statement {
  nlohmann::json tree;  // {"CreateStmt": {...}}, {"InsertStmt": {...}}, ...
  int offset = 0;       // where the statement starts in the script
  std::string text;     // the statement's text
};

struct Script {
  std::string text;
  std::vector<Statement> statements;
};

// How deeply one statement may nest expressions, subqueries and clauses:
// parse nodes inside parse nodes (`a + b` is one level over its operands,
// a subquery one level over its SELECT, ...). Everything that walks a
// statement after the parser (binding, planning, evaluation) recurses at
// most this deep; a statement past it is refused by parse_script with
// the position of the node past the limit.
inline constexpr int kMaxSqlNesting = 200;

// Also refuses a statement nested past kMaxSqlNesting.
absl::StatusOr<Script> parse_script(std::string text);

// "line L, column C" of byte `offset` in `text`.
std::string position_of(std::string_view text, int offset);

// The token starting at byte `offset` of `text` (a word, a quoted string or
// one character), for error messages.
std::string token_at(std::string_view text, int offset);

}  // namespace weir::sql

#endif  // WEIR_SQL_PARSER_H_
