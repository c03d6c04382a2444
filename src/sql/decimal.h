// Exact DECIMAL(p, s) values (sql/types.h): an int64_t holding the value
// times 10^s ("unscaled"). Conversions round half away from zero where
// digits are dropped; a result beyond 18 digits is an overflow error naming
// the type.
#ifndef WEIR_SQL_DECIMAL_H_
#define WEIR_SQL_DECIMAL_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace weir::sql {

// 10^n for 0 <= n <= 18.
int64_t pow10(int n);

// `unscaled` at scale `from` as a value at scale `to`.
absl::StatusOr<int64_t> rescale(int64_t unscaled, int from, int to);

// "1234.567", "-0.050", "12" (scale 0).
std::string decimal_text(int64_t unscaled, int scale);

// The decimal number `text` ("12", "-1.5", "  3.25 ", "1e3" is not one) at
// `scale`.
absl::StatusOr<int64_t> parse_decimal(std::string_view text, int scale);

// a (scale sa) / b (scale sb) at scale `s`; b must not be 0.
absl::StatusOr<int64_t> decimal_divide(int64_t a, int sa, int64_t b, int sb, int s);

// The DOUBLE nearest to a decimal, and a DOUBLE as a decimal at `scale`.
double decimal_to_double(int64_t unscaled, int scale);
absl::StatusOr<int64_t> double_to_decimal(double d, int scale);

}  // namespace weir::sql

#endif  // WEIR_SQL_DECIMAL_H_
