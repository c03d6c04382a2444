// The logical plan of a SQL job: tables declared by CREATE TABLE, and per
// INSERT (or bare SELECT) a tree of relational operators from scans of
// source tables up to the sink table, each node with its output columns and
// their types. Made by the planner (sql/planner.h); printed by
// `weir sql --explain`.
//
// Immutable once planned.
#ifndef WEIR_SQL_PLAN_H_
#define WEIR_SQL_PLAN_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sql/expression.h"
#include "sql/types.h"

namespace weir::sql {

struct Column {
  std::string name;
  Type type;
};

// The column of `name` (case-insensitive) in `columns`, or -1.
int column_index(const std::vector<Column>& columns, std::string_view name);

// The event time of a table: `column` (a TIMESTAMP(3)), with watermarks
// trailing the largest seen by `delay_ms`.
struct WatermarkSpec {
  std::string column;
  int64_t delay_ms = 0;
};

struct TableDef {
  std::string name;
  std::vector<Column> columns;
  // As a scan hands the table to its source: the columns as declared, when
  // `columns` are only those the query reads (for sources whose data is
  // positional, as CSV lines are). Empty otherwise.
  std::vector<Column> declared;
  std::map<std::string, std::string> options;  // the WITH (...) options, names in lower case
  std::optional<WatermarkSpec> watermark;
  int offset = 0;  // of its CREATE TABLE in the script
  // As a scan hands a partitioned table (option partition-by) to its
  // source: the query's conditions on partition columns only, over a row
  // of the partition columns in partition-by order; a file whose partition
  // values do not make it TRUE need not be read (partition pruning).
  std::optional<Expr> partition_filter;
  // Computed columns (`c AS expr`): by name, each an expression over the
  // table's columns (`columns`, as declared) that reads no other computed
  // column. Their values are made as the table is read, after its source
  // gives the other columns; a source never sees them in `columns`.
  std::vector<std::pair<std::string, Expr>> computed;
  // As a scan hands the table to its source: the query's conditions
  // `column = constant` on the table's columns (by name). A source may
  // leave out rows that fail them (the conditions are also checked above
  // the scan).
  std::vector<std::pair<std::string, Value>> equal_to;

  const std::string& connector() const { return options.at("connector"); }
  // Whether its rows are a changelog by its PRIMARY KEY rather than
  // inserts: an upsert-kafka table (each record the key's latest row, a
  // record without a value its deletion).
  bool changelog() const { return connector() == "upsert-kafka"; }
  // The column of `name` (case-insensitive), or -1.
  int index_of(std::string_view name) const { return column_index(columns, name); }
  // The expression of computed column `name`, or nullptr.
  const Expr* computed_expr(std::string_view name) const;
};

// A window table function: TUMBLE, HOP, CUMULATE or SESSION over the
// input's event time. Windows are aligned to the epoch plus `offset_ms`,
// half-open [start, end); a session ends `gap_ms` after its last row; the
// windows of a CUMULATE share their start (aligned to the size) and end
// every `slide_ms` (the step) up to `size_ms`.
struct WindowSpec {
  enum class Kind : uint8_t { kTumble, kHop, kSession, kCumulate };
  Kind kind = Kind::kTumble;
  int64_t size_ms = 0;    // kTumble, kHop, kCumulate
  int64_t slide_ms = 0;   // kHop; kCumulate: the step
  int64_t gap_ms = 0;     // kSession
  int64_t offset_ms = 0;  // kTumble, kHop
  std::string time_column;
  // Windows of the wall clock (the time column is PROCTIME()), fired when
  // the clock passes their end (and at the end of a bounded input), not of
  // event time: their rows are no windowed rows.
  bool processing_time = false;
  // kSession: SESSION(TABLE t PARTITION BY keys, ...), the keys' names.
  std::vector<std::string> partition_by;

  // "HOP(date_time, slide 2000 ms, size 10000 ms)"
  std::string to_string() const;
};

// The columns a window table function adds after its input's: window_start,
// window_end and window_time (= window_end - 1 ms, the rows' new event
// time), each TIMESTAMP(3) NOT NULL.
inline constexpr int kWindowColumns = 3;

// One aggregate call of a GROUP BY: COUNT(*), COUNT([DISTINCT] x),
// SUM, MIN, MAX, AVG. Over no rows with a non-NULL argument, COUNT is 0
// and the others NULL. AVG of BIGINT is a BIGINT (the sum divided by the
// count, truncated), as in Flink.
struct AggregateCall {
  enum class Kind : uint8_t { kCount, kSum, kMin, kMax, kAvg };
  Kind kind = Kind::kCount;
  bool distinct = false;
  std::optional<Expr> arg;     // none: COUNT(*)
  std::optional<Expr> filter;  // FILTER (WHERE ...): only rows where it is true
  Type type;                   // of the result

  std::string to_string(const std::vector<std::string>& input) const;
  bool operator==(const AggregateCall&) const = default;
};

// The frame of an OVER window, ending at the current row: ROWS (the
// current row and `preceding` rows before it) or RANGE (the rows whose
// time is at most `preceding` ms before the current row's, and the rows of
// the same time); without `preceding`, every row before (UNBOUNDED
// PRECEDING).
struct OverFrame {
  bool rows = false;
  std::optional<int64_t> preceding;
  // The order is PROCTIME(): rows are taken as they come; else the event
  // time, rows taken in its order as the watermark passes them.
  bool processing_time = false;

  // "ROWS BETWEEN 9 PRECEDING AND CURRENT ROW"
  std::string to_string() const;
  bool operator==(const OverFrame&) const = default;
};

struct PlanNode {
  enum class Kind : uint8_t { kScan, kFilter, kProject, kWindow, kAggregate, kJoin, kRank, kOver, kUnion, kSink, kUnnest };
  Kind kind = Kind::kScan;
  std::vector<Column> columns;  // what it emits (kScan: the columns of the table it reads)
  std::string table;            // kScan, kSink: the table
  bool changelog = false;       // kScan: of a TableDef::changelog() table (an updating input)
  // kScan of a partitioned table: TableDef::partition_filter (the filter
  // above stays: pruning only skips files none of whose rows it passes).
  std::optional<Expr> partition_filter;
  // kScan: the conditions `column = constant` of the filter above it
  // (TableDef::equal_to; the filter stays).
  std::vector<std::pair<std::string, Value>> equal_to;
  std::vector<std::string> partition_columns;  // the names of partition_filter's columns
  // kProject: one per column; kFilter: the condition; kAggregate: the
  // grouping keys (its first columns; then one column per aggregate).
  std::vector<Expr> exprs;
  std::optional<WindowSpec> window;      // kWindow
  std::vector<AggregateCall> aggregates;  // kAggregate
  // kJoin (inner, equi): rows of `input` (left) and `right` side by side
  // where each left key equals its right key (over the side's own
  // columns; NULL matches nothing) and the condition in `exprs` (if any)
  // holds. A window join's keys include both sides' window bounds: a
  // window's rows are dropped once the watermark passes its end.
  std::vector<Expr> left_keys, right_keys;
  // An outer join also gives each row of its preserved side (LEFT: the
  // left, RIGHT: the right, FULL: both) that no row of the other side
  // matches, the other side's columns NULL; its result is updating (the
  // padded row is taken back when a partner comes). An outer join, or a
  // join of an updating input, keeps both sides' rows with their counts
  // (and an outer side's rows their partners') and takes back what a
  // retracted row had joined.
  enum class JoinType : uint8_t { kInner, kLeft, kRight, kFull };
  JoinType join_type = JoinType::kInner;
  bool window_join = false;
  // An interval join: the condition bounds one side's event time by the
  // other's (interval_bounds below), so a row is dropped once the
  // watermark passes the last time a partner can have; rows the watermark
  // has passed are late and join nothing.
  bool interval_join = false;
  // A side whose rows are unique per join key (its keys cover a PRIMARY KEY
  // of the table it reads, inserts only): at most one row of it ever
  // matches, so the other side's rows wait only until it comes, and none is
  // kept once it is there.
  bool left_unique = false, right_unique = false;
  // An event-time temporal join (`JOIN t FOR SYSTEM_TIME AS OF l.time`,
  // inner or LEFT): the right side a versioned table (a PRIMARY KEY, the
  // join's keys, and event time: each row a new version of its key from
  // its time on), each left row joined when the watermark passes its time
  // with the version of its key current then; inserts only. The times are
  // column references over each side's own columns.
  bool temporal = false;
  std::optional<Expr> temporal_left_time, temporal_right_time;
  // A unique side's own condition, checked in the join rather than below
  // it (over that side's columns): a row of it that fails still tells the
  // join it came, so the other side's rows for its key stop waiting.
  std::optional<Expr> left_filter, right_filter;
  // kRank (ROW_NUMBER() OVER (PARTITION BY exprs ORDER BY order_keys)
  // WHERE rn <= limit): per partition the first `limit` rows in that
  // order, the input's columns and then the row number; an updating
  // result (a new row moves the ones after it down). On a tie the row
  // that came first ranks first, except for deduplication keeping the
  // last row (limit 1, every order key descending), where the new row
  // replaces. Over an updating input a retracted row leaves its rank.
  // RANK() and DENSE_RANK() instead: rows that tie in the order share a
  // number (RANK skips the numbers after a tie, DENSE_RANK does not), and
  // every row numbered up to the limit is kept, ties included.
  std::vector<Expr> order_keys;
  std::vector<bool> descending;
  int64_t limit = 0;  // 0: no WHERE rn <= N above it (yet)
  enum class RankFunction : uint8_t { kRowNumber, kRank, kDenseRank };
  RankFunction rank_function = RankFunction::kRowNumber;
  // kOver (`aggregates` OVER (PARTITION BY exprs ORDER BY order_keys[0]
  // frame)): each input row, then each call's value over the row's frame
  // within its partition; inserts only.
  std::optional<OverFrame> over;
  // kUnnest (input CROSS JOIN UNNEST(exprs[0]) [WITH ORDINALITY]): per
  // input row, one row per element of the ARRAY exprs[0] computes (per
  // entry of the MAP): the input's columns, then the element (the key and
  // the value), then with `ordinality` its position from 1; with
  // `unnest_outer` (LEFT JOIN UNNEST(...) ON TRUE) a row whose collection
  // is empty or NULL gives one row, the new columns NULL. No state; each
  // row keeps its input row's kind.
  bool ordinality = false;
  bool unnest_outer = false;
  std::unique_ptr<PlanNode> input;
  std::unique_ptr<PlanNode> right;  // kJoin; kUnion (UNION ALL): the rows of input, then of right

  std::vector<std::string> column_names() const;
};

// A join's columns: its left side's, then its right side's, those of a
// side an outer join pads nullable.
void set_join_columns(PlanNode* join);

// "ROW_NUMBER", "RANK", "DENSE_RANK".
std::string_view rank_function_name(PlanNode::RankFunction f);

// A window TOP-N: a kRank over append-only rows that carry their window's
// bounds, partitioned by both (and maybe more): each window's first N rows
// are known when the watermark passes its end, so its result is inserts
// only, and its rows keep their window's bounds.
bool is_window_rank(const PlanNode& n);

// A kScan of every column of `t`.
std::unique_ptr<PlanNode> scan_of(const TableDef& t);

// `e` with each column reference i made to[i].
void renumber_columns(Expr& e, const std::vector<int>& to);


// Whether a node's rows are a changelog (+I, -U, +U, -D) rather than
// inserts only: a GROUP BY without a window, and what is computed from one.
bool is_updating(const PlanNode& n);

// Where a node's rows carry the bounds of their window (columns `start`
// and `end`, window_start and window_end): a window table function, a
// GROUP BY over window bounds, filters and projections that keep both, a
// window join. nullopt for other nodes.
struct WindowBounds {
  int start = -1;
  int end = -1;
  bool operator==(const WindowBounds&) const = default;
};
std::optional<WindowBounds> window_bounds(const PlanNode& n);

// Where the condition of a join (over the left side's `left_width`
// columns, then the right side's) holds only if right time - left time is
// within [lower, upper] ms: conjuncts comparing a TIMESTAMP column of each
// side (either plus or minus a constant INTERVAL), <, <=, >, >= or BETWEEN,
// both bounds given. Columns of each side's own.
struct IntervalBounds {
  int left_time = -1;
  int right_time = -1;
  int64_t lower = 0;
  int64_t upper = 0;
};
std::optional<IntervalBounds> interval_bounds(const Expr& condition, int left_width);

// The plan as an indented tree, one operator per line, its columns typed:
//   Sink(results) [auction BIGINT, n BIGINT NOT NULL]
//     Project(auction, price * 2 AS twice) ...
std::string explain(const PlanNode& root);

// The name of the operator that runs `n`, as the job graph, the web UI and
// the metrics' operator_name show it: what the node does in SQL's words,
// "HOP(dateTime, 2 s, 10 s) COUNT(*) BY auction", "SELECT auction, price
// WHERE price > 10" (calc_name), at most kMaxOperatorName characters.
std::string operator_name(const PlanNode& n);
// A filter's conditions and a projection's expressions as one operator
// runs them, over the input's column names.
std::string calc_name(const std::vector<Expr>& conditions, const std::vector<Expr>* select,
                      const std::vector<std::string>& input_names);
inline constexpr size_t kMaxOperatorName = 160;
// `n`'s column names as the operators above it name them: an aggregate's
// own ($agg0, ...) as its call, "SUM(price)".
std::vector<std::string> readable_column_names(const PlanNode& n);

// What a stateful node keeps, as text: the node with its input's columns
// by position ($0, $1, ...), the types it reads and emits, and for an
// aggregation over a window table function the windows. Names (aliases,
// a table's column names) are not in it. The SQL job builder puts a hash
// of it into the uids of the node's operators, so a changed query whose
// operator would misread its state finds no state under its uid and is
// refused at restore (weir's check that every operator state of a
// checkpoint has its operator).
std::string state_layout(const PlanNode& n);

}  // namespace weir::sql

#endif  // WEIR_SQL_PLAN_H_
