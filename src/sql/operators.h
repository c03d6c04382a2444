// The SQL operators that keep state or make windows, over streams of
// weir::Row, as the job builder (sql/job_builder.h) places them for plan
// nodes (sql/plan.h):
//
//   assign_windows     a window table function on its own (TUMBLE, HOP):
//                      each row once per window, the window's columns added
//   window_aggregate   GROUP BY directly over a window table function: the
//                      engine's window operator (sliced hops, merged
//                      sessions), one row per key and window at its end
//   windowed_aggregate GROUP BY over rows that carry their window's bounds
//                      (a GROUP BY's or a window join's output): per key and
//                      window, a state and a timer at the window's end
//   group_aggregate    GROUP BY without a window: per key a state; each row
//                      emits the change of its key's result (+I, or -U and
//                      +U), an updating result
//   top_n              ROW_NUMBER() ... WHERE rn <= N: per partition the
//                      first N rows in value state (over an updating
//                      input, every row); an updating result
//   over_aggregate     aggregates OVER a window: per partition each row with
//                      its frame's values (over.cc)
//   join               an inner equi-join: each side's rows per key in list
//                      state, every new row joined with the other side's;
//                      a window join drops a window's rows at its end
//   changelog_join     an outer join or a join of an updating input: each
//                      side's distinct rows per key in map state with their
//                      counts and partners; a retraction takes back what its
//                      row joined, an outer row is padded while partnerless
//
// The windows' operators are in operators.cc, the updating ones (group
// aggregation, TOP-N, joins) in changelog_operators.cc and
// changelog_join.cc; keys as sql/keys.h
// encodes them. An expression that
// fails at run time (overflow, division by zero) fails the task with a
// message naming it.
#ifndef WEIR_SQL_OPERATORS_H_
#define WEIR_SQL_OPERATORS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sql/plan.h"
#include "sql/planner.h"
#include "weir/formats.h"
#include "weir/stream.h"

namespace weir::sql {

// The value of `e` for `row`, or an exception naming `where` and the cause.
Value evaluate_or_throw(const Expr& e, const Row& row, const std::string& where);

// WHERE `conditions` (a row passes when each, in order, is TRUE; none:
// every row) and a SELECT list `select` (or none: the rows as they are)
// over rows `in` of columns `input_names`, as one operator evaluating each
// common subexpression once per row (calc.cc).
DataStream<Row> calc(const DataStream<Row>& in, const std::vector<Expr>& conditions, const std::vector<Expr>* select,
                     const std::vector<std::string>& input_names, const std::string& uid);

// The rows of kUnnest node `n` (sql/plan.h) from its input's rows `in`:
// per row, one per element of the collection n.exprs[0] computes.
DataStream<Row> unnest(const DataStream<Row>& in, const PlanNode& n, const std::vector<std::string>& input_names,
                       const std::string& uid);

// `node` is a kWindow over rows `in`.
absl::StatusOr<DataStream<Row>> assign_windows(const DataStream<Row>& in, const PlanNode& node, const std::string& uid);

// `node` is a kAggregate whose input is a kWindow; `in` the window's input.
absl::StatusOr<DataStream<Row>> window_aggregate(const DataStream<Row>& in, const PlanNode& node, const std::string& uid);

// `node` is a kAggregate over windowed rows `in` (window_bounds of its input).
absl::StatusOr<DataStream<Row>> windowed_aggregate(const DataStream<Row>& in, const PlanNode& node,
                                                   const std::string& uid);

// `node` is a kAggregate over append-only rows `in`, without a window.
absl::StatusOr<DataStream<Row>> group_aggregate(const DataStream<Row>& in, const PlanNode& node, const std::string& uid);

// `node` is a kAggregate without a window over inserts only, in two
// phases (SET "table.optimizer.agg-phase-strategy" = 'TWO_PHASE'): partial
// states per group and mini-batch before the exchange (local_aggregate.h),
// merged after it into the same updating result group_aggregate gives.
absl::StatusOr<DataStream<Row>> two_phase_aggregate(const DataStream<Row>& in, const PlanNode& node,
                                                    const Settings& settings, const std::string& uid);

// `node` is a kRank over append-only rows `in`.
absl::StatusOr<DataStream<Row>> top_n(const DataStream<Row>& in, const PlanNode& node, const std::string& uid);

// `node` is a kOver over append-only rows `in`.
absl::StatusOr<DataStream<Row>> over_aggregate(const DataStream<Row>& in, const PlanNode& node, const std::string& uid);

// `node` is a kJoin of `left` and `right`.
absl::StatusOr<DataStream<Row>> join(const DataStream<Row>& left, const DataStream<Row>& right, const PlanNode& node,
                                     const std::string& uid);

// `node` is an event-time temporal join (PlanNode::temporal) of `left`
// and `right` (temporal_join.cc).
absl::StatusOr<DataStream<Row>> temporal_join(const DataStream<Row>& left, const DataStream<Row>& right,
                                              const PlanNode& node, const std::string& uid);

// `node` is an outer join, or a join of an updating input (changelog_join.cc).
absl::StatusOr<DataStream<Row>> changelog_join(const DataStream<Row>& left, const DataStream<Row>& right,
                                               const PlanNode& node, const std::string& uid);

}  // namespace weir::sql

#endif  // WEIR_SQL_OPERATORS_H_
