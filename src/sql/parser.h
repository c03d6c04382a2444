// SQL text in Flink's dialect to statements. The script is read into
// tokens (sql/lexer.h) and split into statements. DDL and the client's
// statements (CREATE TABLE, SET, RESET, DROP, ALTER TABLE, SHOW, DESCRIBE)
// are parsed by weir's own parser into typed syntax (sql/ast.h). Queries
// (SELECT, INSERT, CREATE VIEW) are parsed by PostgreSQL's own parser
// (libpg_query) after a translation that keeps every byte where it was:
// `backquoted` names become "quoted" ones, TABLE(TUMBLE(TABLE t, ...))
// becomes TUMBLE(t, ...), FOR SYSTEM_TIME AS OF x is taken out and kept
// beside the statement. PostgreSQL's tree is then transformed
// (sql/transformer.h) into weir's typed syntax (sql/ast.h), every node's
// offset a byte offset into the script as written: nothing past the parser
// reads PostgreSQL's nodes.
//
// EXECUTE STATEMENT SET BEGIN ... END (and BEGIN STATEMENT SET; ... END;)
// contribute their INSERTs; a script's INSERTs are one job anyway.
//
// A Flink construct weir does not support yet is refused by name at its
// position ("MATCH_RECOGNIZE is not supported yet"), never as a bare
// syntax error.
//
// Errors name where they are: "line L, column C: <what> (at or near
// "TOKEN")", line and column counted from 1 in the script's text. A parse
// error is always an InvalidArgument status.
//
// Thread-safe (libpg_query keeps its memory per thread).
#ifndef WEIR_SQL_PARSER_H_
#define WEIR_SQL_PARSER_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "sql/ast.h"

namespace weir::sql {

// FOR SYSTEM_TIME AS OF <expr> after the table named at `table_offset`.
struct TemporalMark {
  int table_offset = 0;
  ast::ExprText time;
};

// SESSION(TABLE t PARTITION BY keys, ...): the keys (names as the query
// parser folds them), after the table named at `table_offset`.
struct PartitionMark {
  int table_offset = 0;
  int offset = 0;  // of PARTITION
  std::vector<std::string> keys;
};

struct Statement {
  // A declaration or a client's statement; without one, `query`.
  std::optional<ast::Statement> typed;
  ast::QueryStatement query;  // SELECT, INSERT INTO ... SELECT, CREATE VIEW
  std::vector<TemporalMark> temporal;
  std::vector<PartitionMark> partitions;
  bool if_not_exists = false;  // CREATE VIEW IF NOT EXISTS
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

// The expression at `span` of `script.text` (a computed column's, a
// watermark's): its nodes' offsets are offsets into the script.
absl::StatusOr<ast::Expr> parse_expression(const Script& script, ast::ExprText span);

// "line L, column C" of byte `offset` in `text`.
std::string position_of(std::string_view text, int offset);

// The token starting at byte `offset` of `text` (a word, a quoted string or
// one character), for error messages.
std::string token_at(std::string_view text, int offset);

}  // namespace weir::sql

#endif  // WEIR_SQL_PARSER_H_
