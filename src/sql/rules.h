// Rewrite rules over a statement's logical plan, applied once it is
// planned (sql/planner.cc), before the job builder maps it to operators.
// Each rule keeps the plan's meaning; each is a function of its own:
//
//   expand_computed_columns  a scan that reads computed columns (`c AS
//                            expr`) becomes a projection over a scan of the
//                            physical columns they need, a column the scan's
//                            conditions pin (`event_type = 2`) replaced by
//                            its value and the result folded
//   fold_constants           a call of constants is its value; a CASE's
//                            branches whose condition is a constant FALSE or
//                            NULL are dropped
//   drop_applied_conditions  a filter's `column = constant` that the scan
//                            below it hands to a source which applies it
//                            exactly (table_options.h) is not checked again
//   prune_columns            projections and scans keep only the columns
//                            something above them reads (through views,
//                            filters, windows and aggregates)
//
// Internal to the sql layer.
#ifndef WEIR_SQL_RULES_H_
#define WEIR_SQL_RULES_H_

#include <functional>
#include <memory>
#include <string>

#include "sql/plan.h"

namespace weir::sql {

using FindTableFn = std::function<const TableDef*(const std::string& name)>;

// Every rule, in order, over the tree under a sink (`root` is its input).
void apply_rules(std::unique_ptr<PlanNode>& root, const FindTableFn& find);

void expand_computed_columns(std::unique_ptr<PlanNode>& n, const FindTableFn& find);
Expr fold_constants(Expr e);
void drop_applied_conditions(std::unique_ptr<PlanNode>& n, const FindTableFn& find);
// `n`'s columns kept: all of them (the tree below is pruned).
void prune_columns(PlanNode* n);

}  // namespace weir::sql

#endif  // WEIR_SQL_RULES_H_
