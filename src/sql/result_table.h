// The table a query's rows leave, for a person to look at (the SQL shell):
// inserts and +U add a row, -U and -D take an equal one out, so an updating
// result shows its current state. Kept in memory up to a number of
// distinct rows; shown in the order the query's ORDER BY gives (else the
// order rows first came), cut at its LIMIT, as a table with borders:
//
//   +---------+----+
//   | auction |  n |
//   +---------+----+
//   |    1001 |  3 |
//   +---------+----+
//   1 row
//
// Thread-safe: the job's sink subtasks apply rows while the shell renders.
#ifndef WEIR_SQL_RESULT_TABLE_H_
#define WEIR_SQL_RESULT_TABLE_H_

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "sql/planner.h"
#include "weir/formats.h"

namespace weir::sql {

class ResultTable {
 public:
  // `append_only`: the rows are inserts only, so a LIMIT without ORDER BY
  // is reached once that many came. `max_rows`: distinct rows kept before
  // overflowed().
  ResultTable(std::vector<Column> columns, ResultOrder order, bool append_only, size_t max_rows);

  void apply(const Row& row);

  // Changes with every row applied.
  uint64_t version() const;
  // Enough rows for the LIMIT came (append-only, no ORDER BY); rows after
  // them are not applied.
  bool limit_reached() const;
  // More distinct rows than max_rows came; rows after that are not applied.
  bool overflowed() const;

  // The table, in order and within the LIMIT, at most `max_shown` rows
  // (then a line saying how many more), and the row count.
  std::string render(size_t max_shown) const;

 private:
  struct Entry {
    Row row;
    int64_t count = 0;  // how many equal rows
    uint64_t first = 0;  // when the first came
  };
  std::string cell(const Row& row, size_t i) const;
  std::vector<Value> sort_key(const Row& row) const;

  const std::vector<Column> columns_;
  const ResultOrder order_;
  const bool append_only_;
  const size_t max_rows_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> rows_;  // by the row's cells
  int64_t total_ = 0;  // rows in the table (equal rows counted)
  uint64_t version_ = 0;
  uint64_t next_ = 0;
  bool limit_reached_ = false;
  bool overflowed_ = false;
};

}  // namespace weir::sql

#endif  // WEIR_SQL_RESULT_TABLE_H_
