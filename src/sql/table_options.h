// The options each connector takes (Flink's names, and weir's own beside
// them), so that a table's options are checked where it is declared: an
// unknown option is an error naming it and the nearest known one, at plan
// time (and so by --explain), not ignored. Also Flink's spellings that
// weir maps onto its own: the legacy 'connector.type' keys, and 'jdbc' with
// a jdbc:postgresql:// URL onto the postgres connector.
//
// Internal to the sql layer.
#ifndef WEIR_SQL_TABLE_OPTIONS_H_
#define WEIR_SQL_TABLE_OPTIONS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "sql/plan.h"

namespace weir::sql {

// The connectors a table may name.
const std::vector<std::string>& known_connectors();

// Rewrites Flink's spellings in `options` (lower-case keys) into weir's:
// 'connector.type' -> 'connector', 'connector.path' -> 'path',
// 'format.type' -> 'format'; connector 'jdbc' (url 'jdbc:postgresql://host
// [:port]/db', username, password) -> 'postgres' with libpq's conninfo.
// An error says what cannot be mapped.
absl::Status normalize_options(std::map<std::string, std::string>* options);

// An empty string when `key` is an option of connector `connector` (and of
// the table's formats in `options`); otherwise why not: "unknown option
// 'scan.startup.mod' of the kafka connector (did you mean
// 'scan.startup.mode'?)".
std::string check_option(const std::string& connector, const std::map<std::string, std::string>& options,
                         const std::string& key);

// Whether a source of `connector` leaves out exactly the rows that fail a
// pushed condition `column = constant` (TableDef::equal_to), so that the
// filter above it need not check it again: the nexmark connector's event
// table does for event_type.
bool source_applies_equality(const std::string& connector, const std::string& column);

// Keys (comma-separated column names) whose values a source of table
// `t` gives unique among its rows where they are not NULL (a NULL key joins
// nothing): of the nexmark event table, person.id and auction.id.
std::vector<std::string> source_unique_keys(const TableDef& t);

// An empty string when the formats `options` name are ones `connector`
// reads and writes (and a Kafka table names one); otherwise why not.
std::string check_formats(const std::string& connector, const std::map<std::string, std::string>& options);

// The known option nearest to `key` by edit distance among `known`, or ""
// when none is near.
std::string nearest(const std::string& key, const std::vector<std::string>& known);

}  // namespace weir::sql

#endif  // WEIR_SQL_TABLE_OPTIONS_H_
