// The logical plan of a SQL job: tables declared by CREATE TABLE, and per
// INSERT (or bare SELECT) a tree of relational operators from scans of
// source tables up to the sink table, each node with its output columns and
// their types. Made by the planner (sql/planner.h); printed by
// `weir sql --explain`.
//
// Immutable once planned.
#ifndef WEIR_SQL_PLAN_H_
#define WEIR_SQL_PLAN_H_

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

// The event time of a table: `column` (a TIMESTAMP(3)), with watermarks
// trailing the largest seen by `delay_ms`.
struct WatermarkSpec {
  std::string column;
  int64_t delay_ms = 0;
};

struct TableDef {
  std::string name;
  std::vector<Column> columns;
  std::map<std::string, std::string> options;  // the WITH (...) options, names in lower case
  std::optional<WatermarkSpec> watermark;
  int offset = 0;  // of its CREATE TABLE in the script

  const std::string& connector() const { return options.at("connector"); }
  // The column of `name` (case-insensitive), or -1.
  int index_of(std::string_view name) const;
};

struct PlanNode {
  enum class Kind : uint8_t { kScan, kFilter, kProject, kSink };
  Kind kind = Kind::kScan;
  std::vector<Column> columns;  // what it emits (kScan: the columns of the table it reads)
  std::string table;            // kScan, kSink: the table
  std::vector<Expr> exprs;      // kProject: one per column; kFilter: the condition
  std::unique_ptr<PlanNode> input;

  std::vector<std::string> column_names() const;
};

// The plan as an indented tree, one operator per line, its columns typed:
//   Sink(results) [auction BIGINT, n BIGINT NOT NULL]
//     Project(auction, price * 2 AS twice) ...
std::string explain(const PlanNode& root);

}  // namespace weir::sql

#endif  // WEIR_SQL_PLAN_H_
