// SQL values beyond what a format holds (sql/types.h says how each type is
// held): dates, times, bytes, and the ARRAY and MAP collections; their
// text as CAST(x AS STRING) gives it; and their form at a connector.
//
// A connector's rows carry a format's types only (include/weir/formats.h:
// text, numbers, booleans, timestamps, JSON). At a source, from_wire()
// turns each value into the column's SQL value (DECIMAL "12.50" into its
// unscaled 1250, DATE "2026-01-05" into 20458, ARRAY '[1,2]' into its
// encoded elements); at a sink, to_wire() turns it back:
//
//   type        wire form (a source also takes)
//   DECIMAL     text "12.50"            (a number)
//   DATE        text "2026-01-05"       (days since the epoch)
//   TIME        text "12:00:05[.250]"   (milliseconds since midnight)
//   BYTES       text, base64 (as Flink's JSON and CSV formats write it)
//   ARRAY, MAP  JSON text: [1,2], {"k":1} (FieldType::kJson; a MAP's keys
//               as JSON strings, their text)
#ifndef WEIR_SQL_VALUES_H_
#define WEIR_SQL_VALUES_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "sql/types.h"
#include "weir/formats.h"

namespace weir::sql {

// SQL's NULL, held as std::monostate (sql/types.h).
inline bool is_null(const Value& v) { return std::holds_alternative<std::monostate>(v); }

// A TIMESTAMP's text, UTC: "2020-01-01 00:00:01.000".
std::string timestamp_text(int64_t ms);
// A DATE's text: "2026-01-05"; and back (an error names the text).
std::string date_text(int64_t days);
absl::StatusOr<int64_t> parse_date(std::string_view text);
// A TIME's text: "12:00:05", "12:00:05.250"; and back ("12:00",
// "12:00:05", "12:00:05.25").
std::string time_text(int64_t ms);
absl::StatusOr<int64_t> parse_time(std::string_view text);

// An ARRAY's elements, encoded; and back (the bytes must be an encoding).
std::string encode_elements(const std::vector<Value>& elements);
std::vector<Value> decode_elements(std::string_view bytes);
// A MAP of `entries`: ordered by key, a repeated key's last value kept (as
// Flink's MAP[...] constructor keeps it). The encoding is that of the
// elements key1, value1, key2, value2, ...; a NULL key is an error.
absl::StatusOr<std::string> encode_map(std::vector<std::pair<Value, Value>> entries);
std::vector<std::pair<Value, Value>> decode_map(std::string_view bytes);

// The text of `v` of type `t` as CAST(v AS STRING) gives it (as Flink
// does): 12.50, 2026-01-05, 12:00:05, [1, 2, NULL], {a=1, b=2}; a string as
// it is, BYTES as their bytes. NULL is "NULL".
std::string value_text(const Value& v, const Type& t);

// Whether values of `t` differ from their wire form (from_wire/to_wire do
// something).
bool has_wire_form(const Type& t);
// A connector's value for a column of type `t` as the SQL value; an error
// says what was expected (the caller names the column).
absl::StatusOr<Value> from_wire(const Value& v, const Type& t);
// The SQL value `v` of type `t` as a connector writes it.
Value to_wire(const Value& v, const Type& t);
// The format type a connector reads and writes for a column of type `t`.
FieldType wire_type(const Type& t);

}  // namespace weir::sql

#endif  // WEIR_SQL_VALUES_H_
