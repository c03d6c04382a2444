// One query (a SELECT and its subqueries) into a logical plan over declared
// tables: FROM (tables, subqueries, window table functions, joins), WHERE,
// GROUP BY with aggregates, HAVING and the select list; with the rewrites
// that go with them (conditions pushed towards the sources and into joins'
// keys, scans pruned to the columns read). The planner (sql/planner.h)
// plans each INSERT's query with it.
//
// The work is split by clause: query_planner.cc (SELECT, FROM, projection,
// push-down, pruning), window_planner.cc (window table functions, GROUP BY),
// join_planner.cc (joins), over_planner.cc (OVER aggregates) and
// set_planner.cc (views, UNION ALL).
//
// Internal to the sql layer. Thread-compatible.
#ifndef WEIR_SQL_QUERY_PLANNER_H_
#define WEIR_SQL_QUERY_PLANNER_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "sql/ast.h"
#include "sql/binder.h"
#include "sql/parser.h"
#include "sql/plan.h"

namespace weir::sql {

class QueryPlanner {
 public:
  // A declared table by name (any case), or nullptr.
  using FindTable = std::function<const TableDef*(const std::string& name)>;
  // A declared view by name (any case), or nullptr.
  using FindView = std::function<const ast::CreateView*(const std::string& name)>;

  // `text`: the script the trees point into; both must outlive this.
  // `temporal`, `partitions`: the script's FOR SYSTEM_TIME AS OF and
  // SESSION ... PARTITION BY marks (sql/parser.h), if any; must outlive
  // this.
  QueryPlanner(std::string_view text, FindTable find_table, FindView find_view = nullptr,
               const std::vector<TemporalMark>* temporal = nullptr, const std::vector<PartitionMark>* partitions = nullptr)
      : text_(text),
        find_table_(std::move(find_table)),
        find_view_(std::move(find_view)),
        temporal_(temporal),
        partitions_(partitions),
        binder_(text) {}

  // The plan of `s` (at byte `offset` of the script).
  absl::StatusOr<std::unique_ptr<PlanNode>> select(const ast::Select& s, int offset);

 private:
  using Node = std::unique_ptr<PlanNode>;

  absl::Status error(int offset, const std::string& what) const { return sql_error(text_, offset, what); }
  absl::Status unsupported(int offset, const std::string& what) const { return sql_unsupported(text_, offset, what); }

  // ---- query_planner.cc
  // A FROM item; its columns' scopes are appended to `scopes`.
  absl::StatusOr<Node> from_item(const ast::TableRef& item, std::vector<Scope>* scopes, int offset);
  // A WHERE (or ON) condition over `input`, pushed as far down as it goes.
  absl::StatusOr<Node> where(Node input, Expr cond);
  Node filter_over(Node input, Expr cond) const;
  // Conditions of `cond` on partition columns into `scan` (partition pruning).
  void push_partition_conditions(PlanNode* scan, const Expr& cond) const;
  // FROM a, b: a join of a and b whose keys come from WHERE.
  static Node cross(Node left, Node right);
  // Whether `item` is UNNEST(...).
  static bool is_unnest(const ast::TableRef& item);
  // The select list over `input`; with `over`, `input` is a kOver whose
  // calls the list's OVER aggregates become.
  absl::StatusOr<Node> project(const ast::Select& s, Node input, const std::vector<Scope>& scopes, int offset,
                               OverCalls* over = nullptr);
  // ROW_NUMBER() OVER (PARTITION BY ... ORDER BY ...) of `input`'s rows.
  absl::StatusOr<Node> row_number(const ast::Expr& f, Node input, const std::vector<Scope>& scopes);

  // ---- over_planner.cc
  // A select list with aggregates OVER a window: a kOver below its
  // projection.
  absl::StatusOr<Node> over(const ast::Select& s, Node input, const std::vector<Scope>& scopes, int offset);

  // ---- window_planner.cc
  absl::StatusOr<Node> window_function(const ast::TableRef& r, std::vector<Scope>* scopes, int offset);
  enum class TimeAttribute : uint8_t { kNone, kEventTime, kProcessingTime };
  TimeAttribute time_attribute(const PlanNode& n, int column) const;
  std::vector<std::vector<int>> unique_keys(const PlanNode& n) const;
  bool unique_on(const PlanNode& side, const std::vector<Expr>& keys) const;
  absl::StatusOr<Node> grouped(const ast::Select& s, Node input, const std::vector<Scope>& scopes, int offset);
  absl::StatusOr<Node> grouped_output(const ast::Select& s, Node input, const std::vector<Scope>& scopes, Grouping g,
                                      int first, int offset);

  // ---- join_planner.cc
  absl::StatusOr<Node> join(const ast::TableRef& j, std::vector<Scope>* scopes, int offset);
  // `join` of `right` FOR SYSTEM_TIME AS OF `mark`: an event-time temporal
  // join when the time is the left side's event time (join_planner.cc).
  absl::Status temporal(PlanNode* join, const TemporalMark& mark, const ast::TableRef& right,
                        const std::vector<Scope>& left_scopes);
  // `input` CROSS JOIN (`outer`: LEFT JOIN) UNNEST(x) `item`, x over the
  // scopes so far; the new columns' scope added.
  absl::StatusOr<Node> unnest(Node input, const ast::TableRef& item, std::vector<Scope>* scopes, bool outer);
  // A WHERE over `join`: of an inner join, its conjuncts as join_on's; of
  // an outer join, a filter above it.
  absl::StatusOr<Node> join_where(Node join, Expr cond);
  // Adds `cond`'s conjuncts (ON, USING's equalities) to `join`: each side's
  // own go below it (not to an outer join's preserved side), equalities
  // between the sides become its keys, the rest its condition.
  absl::StatusOr<Node> join_on(Node join, Expr cond);
  static bool key_of(const Expr& c, int width, PlanNode* join);
  static void set_columns_and_condition(PlanNode* join, std::vector<Expr> rest);
  // Checks the joins at the top of `n` have keys, and marks window joins.
  absl::Status finish_joins(PlanNode* n, int offset);

  // ---- set_planner.cc
  // FROM v for view v: its query as a subquery named v (or `alias`), its
  // columns named as the view names them.
  absl::StatusOr<Node> view(const ast::CreateView& v, const std::optional<std::string>& alias, std::vector<Scope>* scopes,
                            int offset);
  // a UNION ALL b: the rows of both, columns of the left's names and the
  // types both have.
  absl::StatusOr<Node> union_all(const ast::Select& s, int offset);

  // from_item() within its bounds (kMaxQueryNesting, kMaxPlanRelations).
  absl::StatusOr<Node> relation(const ast::TableRef& item, std::vector<Scope>* scopes, int offset);
  // A FROM item named `alias` (alias_columns: AS a (c1, ...)) over
  // `columns`: its scope.
  absl::StatusOr<Scope> scope_of(const ast::TableRef& item, std::string qualifier, std::vector<Column> columns) const;

  const std::string_view text_;
  const FindTable find_table_;
  const FindView find_view_;
  const std::vector<TemporalMark>* const temporal_;
  const std::vector<PartitionMark>* const partitions_;
  const Binder binder_;
  int nesting_ = 0;    // subqueries and views being planned, one inside another
  int relations_ = 0;  // tables, views and subqueries read so far
};

// Bounds of one statement's plan, views expanded where they are read (a
// view read twice counts twice), refused with the position they are passed
// at: subqueries and views inside one another, and relations (tables,
// views, subqueries) read in all.
inline constexpr int kMaxQueryNesting = 64;
inline constexpr int kMaxPlanRelations = 1000;

// Whether an aggregate call OVER a window stands in `s`'s select list
// (outside subqueries).
bool has_over_aggregate(const ast::Select& s);

// Calls `f` on each expression directly below `e` (operands, CASE's
// branches, a call's FILTER and OVER window), not inside subqueries.
void for_each_child(const ast::Expr& e, const std::function<void(const ast::Expr&)>& f);

// Flink's legacy group window (GROUP BY TUMBLE(ts, size), HOP, SESSION with
// TUMBLE_START and its kin) as the window table function it means, over
// the rows of FROM and WHERE; nullopt when `s` has none (window_planner.cc).
std::optional<absl::StatusOr<ast::Select>> as_window_table_function(const ast::Select& s, std::string_view text);

// Refuses a ROW_NUMBER() that no WHERE rn <= N limits.
absl::Status check_ranks(const PlanNode& n, std::string_view text, int offset);

// Whether `e` reads a column at or after `first` (before `end`).
bool reads_columns(const Expr& e, int first, int end = INT32_MAX);
// `e` with every column reference moved by `by`.
Expr shifted(Expr e, int by);
// Column `i` of the scopes side by side.
const Column& column_at(const std::vector<Scope>& scopes, int i);
// The conjuncts of an AND tree.
void conjuncts(Expr e, std::vector<Expr>* out);

// Projection push-down below `top` (a projection or an aggregate): a scan
// under it (through filters, a window table function, a rank) reads only the
// columns that `top` and they use (and the event time a window needs); a
// join's sides only those used above it, by its condition and its keys.
// Column references are renumbered.
void prune_inputs(PlanNode* top);
void prune_scan(PlanNode* top);

}  // namespace weir::sql

#endif  // WEIR_SQL_QUERY_PLANNER_H_
