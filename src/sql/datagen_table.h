// The 'datagen' table: rows made up, as Flink's datagen connector makes
// them, for trying a query without a system to read from.
//
//   'rows-per-second'      rows per second of the whole source (default
//                          10000), shared among its subtasks
//   'number-of-rows'       how many rows in all (default: no end)
//   'fields.C.kind'        'random' (default) or 'sequence'
//   'fields.C.min', 'fields.C.max'
//                          a random number's bounds (BIGINT, DOUBLE,
//                          DECIMAL), inclusive
//   'fields.C.start', 'fields.C.end'
//                          a sequence's first and last value (both
//                          needed); the table ends after its last
//   'fields.C.length'      a random string's length (default 100)
//   'fields.C.var-len'     'true': a random length from 1 to that
//   'fields.C.max-past'    a random TIMESTAMP's most distance before now
//                          ('5 s', default 0: now)
//   'fields.C.null-rate'   the share of NULLs (default 0)
//
// Row i's values are a function of i (and the column's name), so a job
// restored from a checkpoint makes the same rows again; only a TIMESTAMP
// reads the clock (now minus its random distance), as Flink's does. An
// option naming no column, an option a column's type does not take, or a
// bad value is an error at plan time (check_datagen_options).
#ifndef WEIR_SQL_DATAGEN_TABLE_H_
#define WEIR_SQL_DATAGEN_TABLE_H_

#include <string>

#include "sql/job_builder.h"
#include "sql/plan.h"

namespace weir::sql {

// Why table `t`'s datagen options are wrong (and `key`: the option), or ""
// when they are right.
std::string check_datagen_options(const TableDef& t, std::string* key);

// The 'datagen' source of TableConnectors::built_in.
absl::StatusOr<DataStream<Row>> datagen_table(StreamEnvironment& env, const TableDef& t, const std::string& uid);

}  // namespace weir::sql

#endif  // WEIR_SQL_DATAGEN_TABLE_H_
