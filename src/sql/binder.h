// Expressions of the typed syntax (sql/ast.h) bound to columns in scope and
// type-checked into sql::Expr, constant subexpressions folded; and the
// type names of the syntax as weir's types. An error names its position in
// the script: "line L, column C: ...", InvalidArgument.
//
// Immutable; thread-compatible.
#ifndef WEIR_SQL_BINDER_H_
#define WEIR_SQL_BINDER_H_

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "sql/ast.h"
#include "sql/expression.h"
#include "sql/plan.h"

namespace weir::sql {

// "line L, column C: what" at byte `offset` of `text`.
absl::Status sql_error(std::string_view text, int offset, const std::string& what);
// The same, for a construct not built yet: "what is not supported yet".
absl::Status sql_unsupported(std::string_view text, int offset, const std::string& what);

// The type `d` names, as weir holds it (DECIMAL with its precision and
// scale; nullable unless NOT NULL), for a column's declaration and a CAST
// alike; a ROW is flattened by the caller. An error names its position in
// `text`.
absl::StatusOr<Type> sql_type(const ast::DataType& d, std::string_view text);

// What a column reference may name: the columns of one input.
struct Scope {
  Scope() = default;
  Scope(std::string qualifier, std::vector<Column> columns)
      : qualifier(std::move(qualifier)), columns(std::move(columns)) {}

  std::string qualifier;  // the table's name or alias
  std::vector<Column> columns;
  // Columns only a qualified reference names (the right side's of JOIN ...
  // USING, whose unqualified name is the left side's); * skips them.
  std::vector<bool> hidden;

  bool is_hidden(size_t i) const { return i < hidden.size() && hidden[i]; }
};

// The binding of a SELECT over a GROUP BY: an expression equal to a
// grouping key reads that key, aggregate calls (COUNT, SUM, MIN, MAX, AVG)
// are collected, and any other column reference is an error. The bound
// expressions read the aggregate's output row: the keys, then one column
// per collected call.
struct Grouping {
  std::vector<Scope> input;          // what keys and aggregate arguments read
  std::vector<Expr> keys;            // bound over `input`
  std::vector<AggregateCall> calls;  // collected, each once
};

// The binding of a select list with aggregate calls OVER a window: each
// such call is collected and reads a column after the input's (`width`
// columns), one per call; the rest binds over `input` as usual.
struct OverCalls {
  std::vector<Scope> input;
  int width = 0;
  std::vector<AggregateCall> calls;  // collected, each once
};

// Whether `name` (lower case) is an aggregate function.
bool is_aggregate_function(std::string_view name);

class Binder {
 public:
  // `text`: the script the trees' locations point into; must outlive this.
  // With `grouping`, binds over a GROUP BY (above); with `over`, a select
  // list with OVER aggregates (above). Either must outlive this.
  explicit Binder(std::string_view text, Grouping* grouping = nullptr, OverCalls* over = nullptr)
      : text_(text), grouping_(grouping), over_(over) {}

  absl::StatusOr<Expr> bind(const ast::Expr& n, const std::vector<Scope>& scopes) const;

 private:
  absl::Status error(int offset, const std::string& what) const { return sql_error(text_, offset, what); }
  absl::Status unsupported(int offset, const std::string& what) const {
    return sql_unsupported(text_, offset, what);
  }
  absl::StatusOr<Expr> bind_node(const ast::Expr& e, const std::vector<Scope>& scopes) const;
  absl::StatusOr<Expr> column(const ast::Expr& e, const std::vector<Scope>& scopes) const;
  absl::StatusOr<Expr> literal(const ast::Expr& e) const;
  absl::StatusOr<Expr> type_cast(const ast::Expr& e, const std::vector<Scope>& scopes) const;
  absl::StatusOr<Expr> interval(const ast::Expr& e) const;
  absl::StatusOr<Expr> logical(const ast::Expr& e, const std::vector<Scope>& scopes) const;
  absl::StatusOr<Expr> coalesce(const ast::Expr& e, const std::vector<Scope>& scopes) const;
  absl::StatusOr<Expr> operator_call(const ast::Expr& e, const std::vector<Scope>& scopes) const;
  absl::StatusOr<Expr> like(const ast::Expr& e, const std::vector<Scope>& scopes) const;
  absl::StatusOr<Expr> null_if(const ast::Expr& e, const std::vector<Scope>& scopes) const;
  absl::StatusOr<Expr> decimal_arithmetic(Op op, Expr a, Expr b, int at) const;
  absl::StatusOr<Expr> in_list(const ast::Expr& e, const std::vector<Scope>& scopes) const;
  absl::StatusOr<Expr> between(const ast::Expr& e, const std::vector<Scope>& scopes) const;
  absl::StatusOr<Expr> case_expr(const ast::Expr& e, const std::vector<Scope>& scopes) const;
  absl::StatusOr<Expr> function(const ast::Expr& e, const std::vector<Scope>& scopes) const;
  std::optional<absl::StatusOr<Expr>> time_unit_function(const ast::Expr& e, const std::string& name,
                                                         const std::vector<Scope>& scopes) const;
  std::optional<absl::StatusOr<Expr>> more_functions(const std::string& name, std::vector<Expr> args, int at) const;
  // sql/binder_collections.cc
  absl::StatusOr<TypeKind> element_kind(std::vector<Expr>* values, const std::vector<int>& offsets,
                                        const std::string& what) const;
  absl::StatusOr<Expr> array_constructor(const ast::Expr& e, const std::vector<Scope>& scopes) const;
  absl::StatusOr<Expr> map_constructor(const ast::Expr& e, std::vector<Expr> args) const;
  absl::StatusOr<Expr> subscript(const ast::Expr& e, const std::vector<Scope>& scopes) const;
  // nullopt for a function of no collection.
  std::optional<absl::StatusOr<Expr>> collection_function(const ast::Expr& e, const std::string& name,
                                                         std::vector<Expr>& args) const;
  // With grouping_: a grouping key, or nullopt.
  std::optional<Expr> grouping_key(const ast::Expr& e) const;
  // An aggregate call of a GROUP BY (grouping_) or OVER a window (over_).
  absl::StatusOr<Expr> aggregate_call(const ast::Expr& e, const std::string& name) const;

  const std::string_view text_;
  Grouping* const grouping_;
  OverCalls* const over_;
};

}  // namespace weir::sql

#endif  // WEIR_SQL_BINDER_H_
