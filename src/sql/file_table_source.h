// The rows of a SQL filesystem table: the CSV lines of the file `path`, or
// of every published file under the directory `path` (names starting with
// '.' or '_', in progress or markers, are not read, at any depth), as the
// filesystem sink writes them. Of a partitioned table (option
// partition-by) the partition columns come from each file's directories
// (`c=value`, escaped as partition_path escapes them,
// __DEFAULT_PARTITION__ for NULL) and its lines hold the other columns.
//
// Each subtask reads a byte range of every file (the file's size split
// evenly by the parallelism, moved to line boundaries), and its state is
// the ranges it has not finished and the position in each, spread evenly
// over the subtasks when a restore changes the parallelism: every line is
// read exactly once. A file whose partition values do not make
// `partition_filter` TRUE is not read at all (partition pruning: the
// conditions of the query's WHERE on partition columns only, which the
// planner gives the scan). A line that is no row of the table fails the
// job naming the file and line.
#ifndef WEIR_SQL_FILE_TABLE_SOURCE_H_
#define WEIR_SQL_FILE_TABLE_SOURCE_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sql/expression.h"
#include "sql/plan.h"
#include "weir/functions.h"

namespace weir::sql {

// A byte range of one file and the read position in it.
struct FileRange {
  std::string file;     // under the table's path ("" when the path is the file)
  int64_t end = 0;      // lines starting before this byte belong to the range
  int64_t offset = 0;   // next byte to read
  int64_t line = 1;     // number of the line at `offset`
  auto weir_fields() { return std::tie(file, end, offset, line); }
};

// Emits rows of every declared column of `table` (TableDef::declared, else
// its columns), DECIMALs as their text, as the CSV sources of weir do; at
// most `rows_per_second` per subtask (0: as fast as it goes).
std::unique_ptr<Source<Row>> make_file_table_source(const TableDef& table, int64_t rows_per_second);

// The partition values in a file's path relative to the table's directory
// ("dt=2024-01-01/hm=10/part-0-0"), of `names` in that order (NULL for
// __DEFAULT_PARTITION__), as text; InvalidArgument when a name is missing.
absl::StatusOr<std::vector<std::optional<std::string>>> partition_values(const std::string& relative,
                                                                         const std::vector<std::string>& names);

}  // namespace weir::sql

#endif  // WEIR_SQL_FILE_TABLE_SOURCE_H_
