// What the tables of the systems weir connects to share: their options and
// errors. connector_tables.cc has the 'kafka' and 'upsert-kafka' tables,
// postgres_tables.cc the 'postgres' ones; add_system_connectors
// (sql/job_builder.h) registers them all.
#ifndef WEIR_SQL_CONNECTOR_TABLES_H_
#define WEIR_SQL_CONNECTOR_TABLES_H_

#include <string>

#include "absl/status/status.h"
#include "sql/job_builder.h"

namespace weir::sql {

// Option `name` of table `t` (WITH (...)), or `fallback`.
std::string table_option(const TableDef& t, const std::string& name, const std::string& fallback = "");

// An error about table `t`: "table t: <what>".
absl::Status table_error(const TableDef& t, const std::string& what);

void add_postgres_tables(TableConnectors* c);

}  // namespace weir::sql

#endif  // WEIR_SQL_CONNECTOR_TABLES_H_
