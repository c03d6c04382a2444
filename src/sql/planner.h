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
#include <optional>
#include <functional>
#include <string>
#include <utility>
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

// How the result of a bare SELECT is shown (PlanOptions::result): its
// ORDER BY over the result's columns and its LIMIT.
struct ResultOrder {
  std::vector<std::pair<int, bool>> keys;  // column, descending
  std::optional<int64_t> limit;
};

// What SET statements of a script say (Flink's keys; docs/sql.md).
struct Settings {
  // "table.optimizer.agg-phase-strategy" = 'TWO_PHASE': a GROUP BY without
  // a window over inserts only pre-aggregates before its exchange.
  bool two_phase_aggregation = false;
  // "table.exec.mini-batch.size" and "table.exec.mini-batch.allow-latency":
  // how many rows, and how long, a pre-aggregation gathers before it emits.
  int64_t mini_batch_rows = 1000;
  int64_t mini_batch_latency_ms = 100;
  // SET of a key of the job's configuration ('parallelism.default',
  // 'execution.checkpointing.interval', ...; PlanOptions::job_setting), in
  // the script's order: for whoever runs the job to apply.
  std::vector<std::pair<std::string, std::string>> job;
};

struct PlannedScript {
  std::vector<TableDef> tables;
  std::vector<InsertPlan> inserts;
  ResultOrder result_order;  // of a bare SELECT
  Settings settings;
};

struct PlanOptions {
  // A bare SELECT (one, after the declarations) becomes an INSERT into a
  // table of this name with the query's columns and `result_connector`;
  // its top ORDER BY and LIMIT are left to whoever shows the result
  // (PlannedScript::result_order). Without: a bare SELECT is an error.
  std::string result_table;
  std::string result_connector;
  // Declarations alone are a script (not "nothing to run").
  bool declarations_only = false;
  // Checks SET of a key that is not SQL's own: OK keeps it in
  // Settings::job, NotFound says the key is unknown, any other error is the
  // SET's. Without it, such a SET is an unknown setting.
  std::function<absl::Status(const std::string& key, const std::string& value)> job_setting;
  std::vector<std::string> job_setting_keys;  // for the nearest name an unknown key's error names
};

// The connectors a table may name.
const std::vector<std::string>& known_connectors();

// Errors are InvalidArgument, "line L, column C: ..." into script.text.
absl::StatusOr<PlannedScript> plan_script(const Script& script, const PlanOptions& options = {});

// --explain: each INSERT's statement and its plan.
std::string explain(const PlannedScript& planned);

}  // namespace weir::sql

#endif  // WEIR_SQL_PLANNER_H_
