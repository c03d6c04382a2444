// A planned SQL script as a weir job: each INSERT's plan becomes operators
// of one StreamEnvironment (scans are sources, filters and projections are
// chained operators over weir::Row, the sink writes the target table), so
// the job checkpoints, restores and rescales as any DataStream job does.
//
// Tables reach the outside through connectors, by the name of their
// 'connector' option. Built in: 'filesystem' (a sink: exactly-once part
// files of CSV lines under option 'path', in a subdirectory per partition
// of a table declared PARTITION BY LIST (...)), 'print' (a sink: "+I[a, b]"
// lines on stdout) and 'blackhole' (a sink that discards). Sources are
// registered by whoever knows them (the Nexmark generator: weir's command
// line). 'print' shows each row's kind; 'filesystem' takes inserts only.
// 'values' is a bounded source of the CSV lines of option 'rows', its
// event time (if the table has a watermark) from the rows' column;
// 'filesystem' also reads: the CSV lines of the file 'path', bounded, a
// malformed line failing the job naming the file and line.
//
// Operator uids come from each operator's place in the plan
// ("sql-<insert>-<depth>-<kind>", a join's or union's right side with
// "r<depth>" or "u<depth>" after the insert), so the same script restores from its own
// checkpoints and savepoints.
#ifndef WEIR_SQL_JOB_BUILDER_H_
#define WEIR_SQL_JOB_BUILDER_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "sql/planner.h"
#include "weir/formats.h"
#include "weir/stream.h"

namespace weir::sql {

// The rows of a source table (columns as the table declares them, in
// order), its operators' uids starting with `uid`; an error names the table
// and what is wrong with its declaration.
using TableSource = std::function<absl::StatusOr<DataStream<Row>>(StreamEnvironment& env, const TableDef& table,
                                                                  const std::string& uid)>;
// Writes `rows` (columns as the table declares them) to a sink table; `uid`
// for its operators. `updating`: the rows are a changelog (their kinds +I,
// -U, +U, -D), not inserts only; a sink that cannot apply one says so.
using TableSink = std::function<absl::Status(const DataStream<Row>& rows, bool updating, const TableDef& table,
                                             const std::string& uid)>;

struct TableConnectors {
  std::map<std::string, TableSource> sources;
  std::map<std::string, TableSink> sinks;

  // The 'values', 'filesystem' and 'kafka' sources; 'filesystem', 'kafka',
  // 'postgres', 'print' and 'blackhole' sinks.
  static TableConnectors built_in();
};

// Adds the 'kafka' source and sink and the 'postgres' sink
// (connector_tables.cc; docs/sql.md lists their options).
void add_system_connectors(TableConnectors* connectors);

// Of a source's rows with every `declared` column, the `read` ones (by
// name, in that order); the operator's uid is `uid` + "-columns".
DataStream<Row> read_columns(const DataStream<Row>& rows, const std::vector<Column>& declared,
                             const std::vector<Column>& read, const std::string& uid);

// The event time of a row of `declared` columns (a source's row as
// declared, before it is pruned to the columns a query reads): table t's
// watermark column, or the expression of a computed one over them
// (TableDef::computed, as the job builder hands it to a source). NULL, or
// an expression that fails, is time 0.
std::function<int64_t(const Row&)> event_time_of(const TableDef& t, const std::vector<Column>& declared);

// The CSV columns of a table's rows (TIMESTAMP and INTERVAL as their
// milliseconds).
Schema csv_schema(const TableDef& table);

// A partitioned table's subdirectory for partition columns `names` with
// `values` (as text; NULL or empty: __DEFAULT_PARTITION__), as Flink's
// filesystem connector names them: "dt=2015-07-15/hm=00:00"; '/', '%',
// '\' and control characters %-escaped, and "." or ".." entirely.
std::string partition_path(const std::vector<std::string>& names, const std::vector<std::optional<std::string>>& values);

// The rows of partitioned table `t` (option partition-by, `by`) as lines
// for ExactlyOnceFileSink::PartitionPrefixed: the partition's path, '\0',
// the CSV of the other columns.
DataStream<std::string> partitioned_lines(const DataStream<Row>& rows, const TableDef& t, const std::string& by,
                                          const std::string& uid);

// Adds every INSERT of `planned` to `env`.
absl::Status build_job(const PlannedScript& planned, const TableConnectors& connectors, StreamEnvironment& env);

}  // namespace weir::sql

#endif  // WEIR_SQL_JOB_BUILDER_H_
