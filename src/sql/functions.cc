#include "sql/functions.h"

#include <algorithm>
#include <memory>
#include <string>
#include <unordered_map>

#include <re2/re2.h>

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
    default:
      break;
  }
  return absl::InternalError("not a string or time function: " + std::string(op_name(op)));
}

}  // namespace weir::sql
