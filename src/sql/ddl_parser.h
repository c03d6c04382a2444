// Flink's DDL and client statements, by recursive descent over the
// dialect's tokens (sql/lexer.h) into typed syntax (sql/ast.h). Queries are
// not parsed here: parse_script (sql/parser.h) hands them to PostgreSQL's
// parser. Internal to the sql layer.
#ifndef WEIR_SQL_DDL_PARSER_H_
#define WEIR_SQL_DDL_PARSER_H_

#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "sql/ast.h"
#include "sql/lexer.h"

namespace weir::sql {

// Whether tokens [begin, end) (one statement, without its ';') are a
// statement parse_ddl() parses: CREATE [TEMPORARY] TABLE, SET, RESET,
// DROP TABLE/VIEW, ALTER TABLE, SHOW, DESCRIBE/DESC.
bool is_ddl(const std::vector<Token>& tokens, size_t begin, size_t end);

// The statement of tokens [begin, end) of `text`. Errors are
// InvalidArgument "line L, column C: ..." at the token that does not fit.
absl::StatusOr<ast::Statement> parse_ddl(std::string_view text, const std::vector<Token>& tokens, size_t begin,
                                         size_t end);

// An unquoted name folded to lower case, a quoted one as it is.
ast::Name name_of(const Token& t);

}  // namespace weir::sql

#endif  // WEIR_SQL_DDL_PARSER_H_
