// The scalar functions of weir's SQL over strings and times, evaluated on
// non-NULL arguments (the caller returns NULL for a NULL argument):
//
//   REGEXP_EXTRACT(s, re [, i])  the i-th group (default 0, the whole
//                                match) of the first match of re in s
//                                (RE2 syntax), NULL without a match
//   REGEXP(s, re)                whether re matches somewhere in s
//   s LIKE p                     p's % any characters, _ one character,
//                                matching the whole of s (no escapes)
//   SPLIT_INDEX(s, sep, i)       the i-th (from 0) piece of s split at the
//                                one-character sep; NULL if fewer pieces
//   SUBSTRING(s, from [, n])     n characters from the from-th (from 1)
//   DATE_FORMAT(ts, f)           ts (UTC) as Java's date pattern f says:
//                                yyyy MM dd HH mm ss SSS and literal text
//   HOUR(ts), MINUTE(ts)         ts's hour of day, minute of hour (UTC)
//   COUNT_CHAR(s, c)             how many bytes of s equal c's first byte
//                                (Nexmark q14's function; 0 for an empty c)
//   EXTRACT(unit, ts)            a field of ts (UTC); the unit a constant
//                                "YEAR", ..., "DOW" (Sunday 1), "EPOCH"
//   FLOOR/CEIL(ts, unit)         ts down (up) to a unit's boundary
//   TIMESTAMPADD(unit, n, ts)    months keep the day where the month has it
//   TIMESTAMPDIFF(unit, a, b)    whole units from a to b, towards zero
//   UNIX_TIMESTAMP(s [, f])      seconds of s read in Java's pattern f
//   POSITION(a, b [, from])      a's index in b (from 1, in characters), 0
//   TRIM/LTRIM/RTRIM(s [, cs])   s without the characters of cs (a space)
//   REPLACE(s, a, b)             every a in s as b
//   LPAD/RPAD(s, n, pad)         s cut or padded to n characters; NULL for
//                                n < 0 or nothing to pad with
//   INITCAP(s)                   each word's first letter upper case
//   POWER, SQRT, LN, LOG10, EXP  of DOUBLEs
//   JSON_VALUE/JSON_QUERY(s, p)  the scalar (as text) / object or array (as
//                                JSON) at path p of document s, else NULL
//                                (the document is read with nlohmann::json:
//                                a value's text, not SQL's parse tree)
//
// A regular expression that does not compile is an error naming it.
// Thread-safe: compiled expressions are cached per thread.
#ifndef WEIR_SQL_FUNCTIONS_H_
#define WEIR_SQL_FUNCTIONS_H_

#include "absl/types/span.h"

#include "absl/status/statusor.h"
#include "sql/expression.h"

namespace weir::sql {

// The value of string or time function `op` for `args` (none NULL).
absl::StatusOr<Value> evaluate_function(Op op, absl::Span<const Value* const> args);

// Whether `pattern` is a valid regular expression; else why not.
absl::Status check_regex(const std::string& pattern);

}  // namespace weir::sql

#endif  // WEIR_SQL_FUNCTIONS_H_
