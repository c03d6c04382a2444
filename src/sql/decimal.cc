#include "sql/decimal.h"

#include <cmath>
#include <cstdlib>

#include "absl/strings/ascii.h"

namespace weir::sql {
namespace {

absl::Status out_of_range() { return absl::OutOfRangeError("DECIMAL overflow (more than 18 digits)"); }

// |q| rounded half away from zero, as int64 if it fits.
absl::StatusOr<int64_t> narrow(__int128 v) {
  if (v > INT64_MAX || v < -INT64_MAX) return out_of_range();
  return static_cast<int64_t>(v);
}

// n / d rounded half away from zero (d > 0).
__int128 divide_rounded(__int128 n, __int128 d) {
  const __int128 q = n / d, r = n % d;
  if (2 * (r < 0 ? -r : r) >= d) return n < 0 ? q - 1 : q + 1;
  return q;
}

}  // namespace

int64_t pow10(int n) {
  int64_t p = 1;
  for (int i = 0; i < n; ++i) p *= 10;
  return p;
}

absl::StatusOr<int64_t> rescale(int64_t unscaled, int from, int to) {
  if (from == to) return unscaled;
  if (to > from) return narrow(static_cast<__int128>(unscaled) * pow10(to - from));
  return narrow(divide_rounded(unscaled, pow10(from - to)));
}

std::string decimal_text(int64_t unscaled, int scale) {
  const bool negative = unscaled < 0;
  // As unsigned: the magnitude of INT64_MIN is not an int64.
  const uint64_t magnitude = negative ? 0 - static_cast<uint64_t>(unscaled) : static_cast<uint64_t>(unscaled);
  std::string digits = std::to_string(magnitude);
  if (scale > 0) {
    if (digits.size() <= static_cast<size_t>(scale)) digits.insert(0, static_cast<size_t>(scale) + 1 - digits.size(), '0');
    digits.insert(digits.size() - static_cast<size_t>(scale), ".");
  }
  return negative ? "-" + digits : digits;
}

absl::StatusOr<int64_t> parse_decimal(std::string_view text, int scale) {
  const absl::string_view stripped = absl::StripAsciiWhitespace(absl::string_view(text.data(), text.size()));
  std::string_view s(stripped.data(), stripped.size());
  const std::string what = "not a decimal number: '" + std::string(text) + "'";
  bool negative = false;
  if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  __int128 v = 0;
  int fraction = -1;  // digits after the point; -1: no point yet
  bool any = false;
  bool round_up = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '.' && fraction < 0) {
      fraction = 0;
      continue;
    }
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return absl::InvalidArgumentError(what);
    any = true;
    if (fraction >= scale) {  // a digit past the scale: only the first rounds
      if (fraction == scale) round_up = c >= '5';
      ++fraction;
      continue;
    }
    v = v * 10 + (c - '0');
    if (v > INT64_MAX) return out_of_range();
    if (fraction >= 0) ++fraction;
  }
  if (!any) return absl::InvalidArgumentError(what);
  for (int f = std::max(fraction, 0); f < scale; ++f) {
    v *= 10;
    if (v > INT64_MAX) return out_of_range();
  }
  if (round_up) ++v;
  return narrow(negative ? -v : v);
}

absl::StatusOr<int64_t> decimal_divide(int64_t a, int sa, int64_t b, int sb, int s) {
  // a / 10^sa / (b / 10^sb) * 10^s = a * 10^(s + sb - sa) / b
  const int shift = s + sb - sa;
  __int128 n = a, d = b;
  if (shift >= 0) {
    // |a| < 2^63: past 10^19 more the quotient cannot fit (|b| >= 1).
    for (int i = 0; i < shift; ++i) {
      if (n > INT64_MAX * static_cast<__int128>(pow10(18)) || n < -INT64_MAX * static_cast<__int128>(pow10(18))) {
        return out_of_range();
      }
      n *= 10;
    }
  } else {
    for (int i = 0; i < -shift; ++i) d *= 10;
  }
  if (d < 0) n = -n, d = -d;
  return narrow(divide_rounded(n, d));
}

double decimal_to_double(int64_t unscaled, int scale) {
  return static_cast<double>(unscaled) / static_cast<double>(pow10(scale));
}

absl::StatusOr<int64_t> double_to_decimal(double d, int scale) {
  const double v = std::round(d * static_cast<double>(pow10(scale)));
  if (!(std::fabs(v) < 9.2e18)) return out_of_range();
  return static_cast<int64_t>(v);
}

}  // namespace weir::sql
