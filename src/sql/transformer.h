// The parser's back half: PostgreSQL's parse tree of a query (the JSON
// libpg_query gives, node names and fields as parsenodes.h has them) into
// the typed syntax of sql/ast.h. Only the parser (sql/parser.cc) calls it;
// nothing above the parser reads PostgreSQL's nodes.
//
// Offsets: every typed node takes the location of its parse node, or the
// first location inside it when it has none, so errors point where they
// pointed when they were read from the tree itself. What weir does not
// read yet becomes a node that names it (ast::Expr::Kind::kUnsupported, a
// Select's `unsupported` clauses), refused by the binder or planner where
// it stands.
//
// Internal to the parser. Stateless; thread-safe.
#ifndef WEIR_SQL_TRANSFORMER_H_
#define WEIR_SQL_TRANSFORMER_H_

#include <string_view>

#include <nlohmann/json.hpp>

#include "sql/ast.h"

namespace weir::sql {

// One statement of the tree ({"InsertStmt": {...}}, {"ViewStmt": {...}},
// {"SelectStmt": {...}}, ...). `text`: what its locations point into.
ast::QueryStatement transform_statement(const nlohmann::json& stmt, std::string_view text);

// One expression node ({"A_Expr": {...}}, ...).
ast::Expr transform_expression(const nlohmann::json& node, std::string_view text);

}  // namespace weir::sql

#endif  // WEIR_SQL_TRANSFORMER_H_
