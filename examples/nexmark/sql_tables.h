// The Nexmark generator as SQL tables (connector = 'nexmark'): a table of
// bids, auctions or persons, as option 'kind' says (default: the table's
// name, 'bid', 'auction' or 'person'). Its columns are any of the event's
// fields, by name in any order; a name matches with or without underscores
// and in any case (dateTime is date_time). Times (date_time, expires) are
// TIMESTAMP(3) or BIGINT milliseconds; the other numbers BIGINT; text
// VARCHAR.
//
// Options (each defaults to the command line's value): 'events' (events
// generated in all, of every kind), 'rate' (events per second per source
// subtask, 0 unlimited), 'seed', 'event-rate' (events per second of event
// time), 'fail-every' (a failure injected every ~N events: for tests).
// The table's watermark (option 'watermark') lags its time column; without
// one, the generator's slack (4 s) applies.
#ifndef WEIR_EXAMPLES_NEXMARK_SQL_TABLES_H_
#define WEIR_EXAMPLES_NEXMARK_SQL_TABLES_H_

#include <string>
#include <vector>

#include "examples/nexmark/queries.h"
#include "sql/job_builder.h"

namespace weir::nexmark {

// `defaults`: the generator and source settings a table's options override.
sql::TableSource nexmark_table_source(QueryOptions defaults);

// The SQL text of `query` (examples/nexmark/sql/<query>.sql, compiled in),
// or nullptr when the query has none yet. It runs after tables_sql().
const std::string* query_sql(const std::string& query);
// The tables every query reads (examples/nexmark/sql/tables.sql).
const std::string& tables_sql();
// The queries with SQL text.
std::vector<std::string> sql_queries();

// Query options.query from its SQL text, as build_query() builds it from
// C++: the events from the generator as `options` configure it, the rows of
// the table the script inserts into written to options.output_dir as CSV
// (or counted in options.rows).
absl::Status build_query_sql(StreamEnvironment& env, const QueryOptions& options);

}  // namespace weir::nexmark

#endif  // WEIR_EXAMPLES_NEXMARK_SQL_TABLES_H_
