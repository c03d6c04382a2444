// From parsed SQL statements to logical plans. CREATE TABLE declares a
// table (columns, connector options, event time); each INSERT INTO ...
// SELECT becomes a plan from scans of declared tables up to a sink into the
// target table, type-checked, with constant expressions folded.
//
// PostgreSQL's grammar stands in for Flink's dialect where they differ:
//   WITH ('connector' = 'nexmark')  ->  WITH (connector = 'nexmark'), a
//     dotted name quoted as an identifier: "scan.startup.mode" = 'earliest'
//   WATERMARK FOR ts AS ts - INTERVAL '4' SECOND  ->  an option:
//     watermark = 'ts - INTERVAL ''4'' SECOND'
//   PRIMARY KEY (k) NOT ENFORCED  ->  PRIMARY KEY (k)
//
// What is not built yet is refused by name at its position ("GROUP BY is
// not supported yet"), never silently ignored.
#ifndef WEIR_SQL_PLANNER_H_
#define WEIR_SQL_PLANNER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sql/parser.h"
#include "sql/plan.h"

namespace weir::sql {

struct InsertPlan {
  std::string statement;  // its text, for --explain
  int offset = 0;
  std::unique_ptr<PlanNode> root;  // a kSink
};

struct PlannedScript {
  std::vector<TableDef> tables;
  std::vector<InsertPlan> inserts;
};

// The connectors a table may name.
const std::vector<std::string>& known_connectors();

// Errors are InvalidArgument, "line L, column C: ..." into script.text.
absl::StatusOr<PlannedScript> plan_script(const Script& script);

// --explain: each INSERT's statement and its plan.
std::string explain(const PlannedScript& planned);

}  // namespace weir::sql

#endif  // WEIR_SQL_PLANNER_H_
