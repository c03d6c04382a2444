#include "sql/functions.h"

#include <algorithm>
#include <memory>
#include <string>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <vector>

#include <cmath>

#include <nlohmann/json.hpp>
#include <re2/re2.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_replace.h"
#include "absl/time/civil_time.h"
#include "absl/time/time.h"

namespace weir::sql {
namespace {

// The compiled `pattern`, cached per thread (a query uses few patterns;
// the cache is emptied past 256).
absl::StatusOr<const RE2*> compiled(const std::string& pattern) {
  thread_local std::unordered_map<std::string, std::unique_ptr<RE2>> cache;
  auto it = cache.find(pattern);
  if (it != cache.end()) return it->second.get();
  if (cache.size() >= 256) cache.clear();
  RE2::Options options;
  options.set_log_errors(false);
  auto re = std::make_unique<RE2>(pattern, options);
  if (!re->ok()) return absl::InvalidArgumentError("regular expression '" + pattern + "': " + re->error());
  return cache.emplace(pattern, std::move(re)).first->second.get();
}

// SQL LIKE: % any run of characters, _ one character (bytes here; the
// patterns of queries are ASCII).
bool like(std::string_view s, std::string_view p) {
  size_t si = 0, pi = 0, star = std::string_view::npos, mark = 0;
  while (si < s.size()) {
    if (pi < p.size() && (p[pi] == '_' || (p[pi] != '%' && p[pi] == s[si]))) {
      ++si, ++pi;
    } else if (pi < p.size() && p[pi] == '%') {
      star = pi++;
      mark = si;
    } else if (star != std::string_view::npos) {
      pi = star + 1;
      si = ++mark;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '%') ++pi;
  return pi == p.size();
}

// Java's SimpleDateFormat letters to absl::FormatTime's.
std::string strftime_pattern(const std::string& java) {
  std::string out;
  for (size_t i = 0; i < java.size();) {
    size_t n = 1;
    while (i + n < java.size() && java[i + n] == java[i]) ++n;
    const std::string run = java.substr(i, n);
    if (run == "yyyy") out += "%Y";
    else if (run == "MM") out += "%m";
    else if (run == "dd") out += "%d";
    else if (run == "HH") out += "%H";
    else if (run == "mm") out += "%M";
    else if (run == "ss") out += "%S";
    else if (run == "SSS") out += "%E3f";
    else if (java[i] == '%') out += std::string(2 * n, '%');
    else out += run;
    i += n;
  }
  return out;
}

constexpr int64_t kSecondMs = 1000, kMinuteMs = 60'000, kHourMs = 3'600'000, kDayMs = 86'400'000;

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0)) ? 1 : 0); }

absl::CivilSecond civil(int64_t ms) { return absl::ToCivilSecond(absl::FromUnixMillis(ms), absl::UTCTimeZone()); }

int64_t millis(absl::CivilSecond t, int64_t sub_second_ms = 0) {
  return absl::ToUnixMillis(absl::FromCivil(t, absl::UTCTimeZone())) + sub_second_ms;
}

int64_t sub_second(int64_t ms) { return ms - floor_div(ms, kSecondMs) * kSecondMs; }

int days_in_month(int64_t year, int month) {
  const absl::CivilDay first(year, month, 1);
  return static_cast<int>(absl::CivilDay(absl::CivilMonth(first) + 1) - first);
}

// The ISO-8601 week of `d` (1 to 53): the week of its Thursday.
int64_t iso_week(absl::CivilDay d) {
  const int monday_based = (static_cast<int>(absl::GetWeekday(d)) + 7) % 7;  // absl: Monday is 0
  const absl::CivilDay thursday = d + (3 - monday_based);
  return (absl::GetYearDay(thursday) - 1) / 7 + 1;
}

absl::StatusOr<Value> extract(const std::string& unit, int64_t ms) {
  const absl::CivilSecond t = civil(ms);
  const absl::CivilDay day(t);
  if (unit == "YEAR") return static_cast<int64_t>(t.year());
  if (unit == "QUARTER") return static_cast<int64_t>((t.month() - 1) / 3 + 1);
  if (unit == "MONTH") return static_cast<int64_t>(t.month());
  if (unit == "WEEK") return iso_week(day);
  if (unit == "DAY") return static_cast<int64_t>(t.day());
  if (unit == "DOY") return static_cast<int64_t>(absl::GetYearDay(day));
  if (unit == "DOW") return static_cast<int64_t>((static_cast<int>(absl::GetWeekday(day)) + 1) % 7 + 1);  // Sunday 1
  if (unit == "ISODOW") return static_cast<int64_t>(static_cast<int>(absl::GetWeekday(day)) + 1);      // Monday 1
  if (unit == "HOUR") return static_cast<int64_t>(t.hour());
  if (unit == "MINUTE") return static_cast<int64_t>(t.minute());
  if (unit == "SECOND") return static_cast<int64_t>(t.second());
  if (unit == "MILLISECOND") return static_cast<int64_t>(t.second()) * 1000 + sub_second(ms);
  if (unit == "EPOCH") return floor_div(ms, kSecondMs);
  return absl::InvalidArgumentError("EXTRACT: unknown unit " + unit);
}

// FLOOR(ts TO unit); CEIL: the next boundary unless `ms` is on one.
absl::StatusOr<Value> floor_time(const std::string& unit, int64_t ms, bool ceil) {
  int64_t fixed = 0;
  if (unit == "MILLISECOND") fixed = 1;
  if (unit == "SECOND") fixed = kSecondMs;
  if (unit == "MINUTE") fixed = kMinuteMs;
  if (unit == "HOUR") fixed = kHourMs;
  if (unit == "DAY") fixed = kDayMs;
  int64_t floor;
  int64_t next;
  if (fixed > 0) {
    floor = floor_div(ms, fixed) * fixed;
    next = floor + fixed;
  } else {
    const absl::CivilSecond t = civil(ms);
    if (unit == "WEEK") {  // weeks start on Sunday, as Flink's do
      const absl::CivilDay d(t);
      const absl::CivilDay start = d - (static_cast<int>(absl::GetWeekday(d)) + 1) % 7;
      floor = millis(absl::CivilSecond(start));
      next = millis(absl::CivilSecond(start + 7));
    } else {
      int months;
      if (unit == "MONTH") months = 1;
      else if (unit == "QUARTER") months = 3;
      else if (unit == "YEAR") months = 12;
      else return absl::InvalidArgumentError("FLOOR/CEIL: unknown unit " + unit);
      const absl::CivilMonth m(t);
      const absl::CivilMonth start = m - ((m.month() - 1) % months);
      floor = millis(absl::CivilSecond(start));
      next = millis(absl::CivilSecond(start + months));
    }
  }
  return ceil && floor != ms ? next : floor;
}

// `ms` plus `n` months, the day of month kept where the month has it
// (Jan 31 + 1 month: Feb 28 or 29), as Flink adds months.
int64_t add_months(int64_t ms, int64_t n) {
  const absl::CivilSecond t = civil(ms);
  const absl::CivilMonth m = absl::CivilMonth(t) + n;
  const int day = std::min(t.day(), days_in_month(m.year(), m.month()));
  return millis(absl::CivilSecond(m.year(), m.month(), day, t.hour(), t.minute(), t.second()), sub_second(ms));
}

int64_t unit_ms(const std::string& unit) {
  if (unit == "MILLISECOND") return 1;
  if (unit == "SECOND") return kSecondMs;
  if (unit == "MINUTE") return kMinuteMs;
  if (unit == "HOUR") return kHourMs;
  if (unit == "DAY") return kDayMs;
  if (unit == "WEEK") return 7 * kDayMs;
  return 0;
}

int unit_months(const std::string& unit) { return unit == "MONTH" ? 1 : unit == "QUARTER" ? 3 : unit == "YEAR" ? 12 : 0; }

absl::StatusOr<Value> timestamp_add(const std::string& unit, int64_t n, int64_t ms) {
  int64_t out;
  if (const int64_t u = unit_ms(unit); u > 0) {
    if (__builtin_mul_overflow(n, u, &out) || __builtin_add_overflow(out, ms, &out)) {
      return absl::OutOfRangeError("TIMESTAMPADD: out of range");
    }
    return out;
  }
  const int months = unit_months(unit);
  if (months == 0) return absl::InvalidArgumentError("TIMESTAMPADD: unknown unit " + unit);
  if (n > 1'000'000 || n < -1'000'000) return absl::OutOfRangeError("TIMESTAMPADD: out of range");
  return add_months(ms, n * months);
}

// Whole units from `a` to `b`, towards zero.
absl::StatusOr<Value> timestamp_diff(const std::string& unit, int64_t a, int64_t b) {
  if (const int64_t u = unit_ms(unit); u > 0) return (b - a) / u;
  const int months = unit_months(unit);
  if (months == 0) return absl::InvalidArgumentError("TIMESTAMPDIFF: unknown unit " + unit);
  const absl::CivilSecond ta = civil(a), tb = civil(b);
  int64_t m = (tb.year() * 12 + tb.month()) - (ta.year() * 12 + ta.month());
  // Not a whole month until b's day and time in its month reach a's.
  auto in_month = [](const absl::CivilSecond& t, int64_t ms) {
    return std::make_tuple(t.day(), t.hour(), t.minute(), t.second(), sub_second(ms));
  };
  if (m > 0 && in_month(tb, b) < in_month(ta, a)) --m;
  if (m < 0 && in_month(tb, b) > in_month(ta, a)) ++m;
  return m / months;
}

// UTF-8 code points of `s` (each as its bytes).
std::vector<std::string_view> code_points(std::string_view s) {
  std::vector<std::string_view> out;
  for (size_t i = 0; i < s.size();) {
    size_t n = 1;
    while (i + n < s.size() && (static_cast<unsigned char>(s[i + n]) & 0xC0) == 0x80) ++n;
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

int64_t characters_before(std::string_view s, size_t byte) {
  int64_t n = 0;
  for (size_t i = 0; i < byte && i < s.size(); ++i) n += (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80;
  return n;
}

// The index (from 1, in characters) of `needle` in `s` at or after
// character `from`; 0 when it is not there.
int64_t position(std::string_view needle, std::string_view s, int64_t from) {
  if (from < 1) return 0;
  const std::vector<std::string_view> chars = code_points(s);
  if (from > static_cast<int64_t>(chars.size()) + 1) return 0;
  const size_t start = static_cast<size_t>(from - 1) < chars.size() ? chars[static_cast<size_t>(from - 1)].data() - s.data() : s.size();
  const size_t at = s.find(needle, start);
  return at == std::string_view::npos ? 0 : characters_before(s, at) + 1;
}

std::string trim(Op op, std::string_view s, std::string_view characters) {
  const std::vector<std::string_view> set = code_points(characters);
  auto strips = [&](std::string_view c) { return std::find(set.begin(), set.end(), c) != set.end(); };
  std::vector<std::string_view> chars = code_points(s);
  size_t begin = 0, end = chars.size();
  if (op != Op::kRtrim) {
    while (begin < end && strips(chars[begin])) ++begin;
  }
  if (op != Op::kLtrim) {
    while (end > begin && strips(chars[end - 1])) --end;
  }
  if (begin == end) return "";
  return std::string(chars[begin].data(), chars[end - 1].data() + chars[end - 1].size());
}

// LPAD/RPAD(s, n, pad): s cut or padded to n characters; NULL for a
// negative n or nothing to pad with.
Value pad(Op op, std::string_view s, int64_t n, std::string_view with) {
  if (n < 0) return Value{};
  const std::vector<std::string_view> chars = code_points(s);
  if (n <= static_cast<int64_t>(chars.size())) {
    if (n == 0) return std::string();
    return std::string(s.substr(0, static_cast<size_t>(chars[static_cast<size_t>(n - 1)].data() - s.data()) + chars[static_cast<size_t>(n - 1)].size()));
  }
  const std::vector<std::string_view> fill = code_points(with);
  if (fill.empty()) return Value{};
  std::string padding;
  for (int64_t i = 0, missing = n - static_cast<int64_t>(chars.size()); i < missing; ++i) {
    padding += fill[static_cast<size_t>(i) % fill.size()];
  }
  return op == Op::kLpad ? padding + std::string(s) : std::string(s) + padding;
}

// The first letter of each word (a run of letters and digits) upper
// case, the rest lower case.
std::string initcap(std::string_view s) {
  std::string out(s);
  bool start = true;
  for (char& c : out) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (absl::ascii_isalnum(u)) {
      c = start ? absl::ascii_toupper(u) : absl::ascii_tolower(u);
      start = false;
    } else {
      start = u < 0x80;  // inside a multi-byte character a word goes on
    }
  }
  return out;
}

// JSON_VALUE (a scalar, as text) or JSON_QUERY (an object or an array, as
// JSON text) of `path` in document `text`: $, .name, ."name", ['name'],
// [n], after an optional lax or strict. NULL where the path finds nothing
// of that kind, or the text or the path is not well formed (Flink's NULL
// ON EMPTY and NULL ON ERROR).
Value json_path(Op op, const std::string& text, absl::string_view path) {
  auto doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Value{};
  path = absl::StripAsciiWhitespace(path);
  for (absl::string_view mode : {"lax ", "strict "}) {
    if (absl::StartsWithIgnoreCase(path, mode)) path = absl::StripLeadingAsciiWhitespace(path.substr(mode.size()));
  }
  if (path.empty() || path[0] != '$') return Value{};
  constexpr size_t kNpos = absl::string_view::npos;
  const nlohmann::json* at = &doc;
  size_t i = 1;
  while (i < path.size()) {
    std::string key;
    std::optional<size_t> index;
    if (path[i] == '.') {
      ++i;
      if (i < path.size() && path[i] == '"') {
        const size_t close = path.find('"', i + 1);
        if (close == kNpos) return Value{};
        key = std::string(path.substr(i + 1, close - i - 1));
        i = close + 1;
      } else {
        const size_t start = i;
        while (i < path.size() && path[i] != '.' && path[i] != '[') ++i;
        key = std::string(path.substr(start, i - start));
        if (key.empty()) return Value{};
      }
    } else if (path[i] == '[') {
      const size_t close = path.find(']', i);
      if (close == kNpos) return Value{};
      absl::string_view inside = absl::StripAsciiWhitespace(path.substr(i + 1, close - i - 1));
      if (inside.size() >= 2 && (inside.front() == '\'' || inside.front() == '"') && inside.back() == inside.front()) {
        key = std::string(inside.substr(1, inside.size() - 2));
      } else {
        size_t n;
        if (!absl::SimpleAtoi(inside, &n)) return Value{};
        index = n;
      }
      i = close + 1;
    } else {
      return Value{};
    }
    if (index) {
      if (!at->is_array() || *index >= at->size()) return Value{};
      at = &(*at)[*index];
    } else {
      if (!at->is_object()) return Value{};
      auto it = at->find(key);
      if (it == at->end()) return Value{};
      at = &*it;
    }
  }
  if (op == Op::kJsonQuery) return at->is_object() || at->is_array() ? Value{at->dump()} : Value{};
  if (at->is_string()) return at->get<std::string>();
  if (at->is_boolean() || at->is_number()) return at->dump();
  return Value{};
}

}  // namespace

absl::Status check_regex(const std::string& pattern) { return compiled(pattern).status(); }

absl::StatusOr<Value> evaluate_function(Op op, absl::Span<const Value* const> a) {
  switch (op) {
    case Op::kRegexpExtract: {
      auto re = compiled(std::get<std::string>(*a[1]));
      if (!re.ok()) return re.status();
      const int64_t group = a.size() > 2 ? std::get<int64_t>(*a[2]) : 0;
      if (group < 0 || group > (*re)->NumberOfCapturingGroups()) {
        return absl::OutOfRangeError("REGEXP_EXTRACT: the expression has no group " + std::to_string(group));
      }
      std::vector<re2::StringPiece> groups(static_cast<size_t>(group) + 1);
      const std::string& s = std::get<std::string>(*a[0]);
      if (!(*re)->Match(s, 0, s.size(), RE2::UNANCHORED, groups.data(), static_cast<int>(groups.size()))) {
        return Value{};
      }
      const re2::StringPiece g = groups[static_cast<size_t>(group)];
      if (g.data() == nullptr) return Value{};  // the group took no part in the match
      return std::string(g.data(), g.size());
    }
    case Op::kRegexp: {
      auto re = compiled(std::get<std::string>(*a[1]));
      if (!re.ok()) return re.status();
      return RE2::PartialMatch(std::get<std::string>(*a[0]), **re);
    }
    case Op::kLike:
      return like(std::get<std::string>(*a[0]), std::get<std::string>(*a[1]));
    case Op::kSplitIndex: {
      const std::string& s = std::get<std::string>(*a[0]);
      const std::string& sep = std::get<std::string>(*a[1]);
      int64_t i = std::get<int64_t>(*a[2]);
      if (sep.size() != 1) return absl::InvalidArgumentError("SPLIT_INDEX: the separator must be one character");
      if (i < 0) return Value{};
      size_t start = 0;
      for (; i > 0; --i) {
        const size_t at = s.find(sep[0], start);
        if (at == std::string::npos) return Value{};
        start = at + 1;
      }
      const size_t end = s.find(sep[0], start);
      return s.substr(start, end == std::string::npos ? std::string::npos : end - start);
    }
    case Op::kSubstring: {
      const std::string& s = std::get<std::string>(*a[0]);
      int64_t from = std::get<int64_t>(*a[1]);
      int64_t n = a.size() > 2 ? std::get<int64_t>(*a[2]) : INT64_MAX;
      if (n < 0) return absl::OutOfRangeError("SUBSTRING: a negative length");
      if (from < 1) {  // characters before the first count against n
        n = n == INT64_MAX ? n : std::max<int64_t>(0, n - (1 - from));
        from = 1;
      }
      const size_t begin = static_cast<size_t>(from - 1);
      if (begin >= s.size()) return std::string();
      return s.substr(begin, n == INT64_MAX ? std::string::npos : static_cast<size_t>(n));
    }
    case Op::kDateFormat: {
      const absl::Time t = absl::FromUnixMillis(std::get<int64_t>(*a[0]));
      return absl::FormatTime(strftime_pattern(std::get<std::string>(*a[1])), t, absl::UTCTimeZone());
    }
    case Op::kHour:
    case Op::kMinute: {  // UTC has neither leap seconds nor offsets: plain arithmetic
      const int64_t ms = std::get<int64_t>(*a[0]);
      const int64_t unit = op == Op::kHour ? 3'600'000 : 60'000, per = op == Op::kHour ? 24 : 60;
      const int64_t units = ms / unit - (ms % unit < 0 ? 1 : 0);  // floor
      return ((units % per) + per) % per;
    }
    case Op::kCountChar: {
      const std::string& s = std::get<std::string>(*a[0]);
      const std::string& c = std::get<std::string>(*a[1]);
      if (c.empty()) return int64_t{0};
      return static_cast<int64_t>(std::count(s.begin(), s.end(), c[0]));
    }
    case Op::kExtract:
      return extract(std::get<std::string>(*a[0]), std::get<int64_t>(*a[1]));
    case Op::kFloorTime:
    case Op::kCeilTime:
      return floor_time(std::get<std::string>(*a[1]), std::get<int64_t>(*a[0]), op == Op::kCeilTime);
    case Op::kTimestampAdd:
      return timestamp_add(std::get<std::string>(*a[0]), std::get<int64_t>(*a[1]), std::get<int64_t>(*a[2]));
    case Op::kTimestampDiff:
      return timestamp_diff(std::get<std::string>(*a[0]), std::get<int64_t>(*a[1]), std::get<int64_t>(*a[2]));
    case Op::kUnixTimestamp:  // seconds since the epoch of text in a Java date pattern (UTC)
    case Op::kParseTimestamp: {  // TO_TIMESTAMP(s, pattern): the same, in milliseconds
      const std::string& s = std::get<std::string>(*a[0]);
      const std::string pattern = a.size() > 1 ? std::get<std::string>(*a[1]) : "yyyy-MM-dd HH:mm:ss";
      absl::Time t;
      std::string why;
      if (!absl::ParseTime(strftime_pattern(pattern), s, absl::UTCTimeZone(), &t, &why)) {
        return absl::InvalidArgumentError(std::string(op == Op::kUnixTimestamp ? "UNIX_TIMESTAMP" : "TO_TIMESTAMP") + ": '" +
                                          s + "' is not a time as '" + pattern + "' writes it");
      }
      if (op == Op::kParseTimestamp) return absl::ToUnixMillis(t);
      return absl::ToUnixSeconds(t);
    }
    case Op::kPosition:
      return position(std::get<std::string>(*a[0]), std::get<std::string>(*a[1]), a.size() > 2 ? std::get<int64_t>(*a[2]) : 1);
    case Op::kTrim:
    case Op::kLtrim:
    case Op::kRtrim:
      return trim(op, std::get<std::string>(*a[0]), a.size() > 1 ? std::string_view(std::get<std::string>(*a[1])) : " ");
    case Op::kReplace: {
      const std::string& from = std::get<std::string>(*a[1]);
      if (from.empty()) return *a[0];
      return absl::StrReplaceAll(std::get<std::string>(*a[0]), {{from, std::get<std::string>(*a[2])}});
    }
    case Op::kLpad:
    case Op::kRpad:
      return pad(op, std::get<std::string>(*a[0]), std::get<int64_t>(*a[1]), std::get<std::string>(*a[2]));
    case Op::kInitcap:
      return initcap(std::get<std::string>(*a[0]));
    case Op::kPower:
      return std::pow(std::get<double>(*a[0]), std::get<double>(*a[1]));
    case Op::kSqrt:
      return std::sqrt(std::get<double>(*a[0]));
    case Op::kLn:
      return std::log(std::get<double>(*a[0]));
    case Op::kLog10:
      return std::log10(std::get<double>(*a[0]));
    case Op::kExp:
      return std::exp(std::get<double>(*a[0]));
    case Op::kJsonValue:
    case Op::kJsonQuery:
      return json_path(op, std::get<std::string>(*a[0]), std::get<std::string>(*a[1]));
    case Op::kElementAt: {  // from 1; NULL past either end
      std::vector<Value> elements = decode_elements(std::get<std::string>(*a[0]));
      const int64_t i = std::get<int64_t>(*a[1]);
      if (i < 1 || i > static_cast<int64_t>(elements.size())) return Value{};
      return std::move(elements[static_cast<size_t>(i - 1)]);
    }
    case Op::kValueAt: {
      for (auto& [k, v] : decode_map(std::get<std::string>(*a[0]))) {
        if (k == *a[1]) return std::move(v);
      }
      return Value{};
    }
    case Op::kCardinality:  // of an ARRAY (a MAP's: of its MAP_KEYS)
      return static_cast<int64_t>(decode_elements(std::get<std::string>(*a[0])).size());
    case Op::kElement: {
      std::vector<Value> elements = decode_elements(std::get<std::string>(*a[0]));
      if (elements.size() > 1) return absl::InvalidArgumentError("ELEMENT of an ARRAY of more than one element");
      return elements.empty() ? Value{} : std::move(elements[0]);
    }
    case Op::kArrayContains: {
      for (const Value& v : decode_elements(std::get<std::string>(*a[0]))) {
        if (v == *a[1]) return true;
      }
      return false;
    }
    case Op::kArrayJoin: {
      std::string out;
      bool first = true;
      for (const Value& v : decode_elements(std::get<std::string>(*a[0]))) {
        if (std::holds_alternative<std::monostate>(v) && a.size() < 3) continue;  // NULLs left out, as Flink
        if (!first) out += std::get<std::string>(*a[1]);
        out += std::holds_alternative<std::monostate>(v) ? std::get<std::string>(*a[2]) : std::get<std::string>(v);
        first = false;
      }
      return out;
    }
    case Op::kMapKeys:
    case Op::kMapValues: {
      std::vector<Value> out;
      for (auto& [k, v] : decode_map(std::get<std::string>(*a[0]))) out.push_back(op == Op::kMapKeys ? std::move(k) : std::move(v));
      return encode_elements(out);
    }
    default:
      break;
  }
  return absl::InternalError("not a string or time function: " + std::string(op_name(op)));
}

}  // namespace weir::sql
