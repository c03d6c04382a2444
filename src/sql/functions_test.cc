// The string and time functions: matches, no match (NULL), edges of
// SPLIT_INDEX and SUBSTRING, LIKE's wildcards, Java date patterns, and a
// bad regular expression refused when the script is planned.
#include "sql/functions.h"

#include <gtest/gtest.h>

#include "absl/time/time.h"
#include "sql/planner.h"

namespace weir::sql {
namespace {

absl::StatusOr<Value> call_status(Op op, const std::vector<Value>& args) {
  std::vector<const Value*> operands;
  for (const Value& a : args) operands.push_back(&a);
  return evaluate_function(op, operands);
}

Value call(Op op, std::vector<Value> args) {
  auto v = call_status(op, args);
  EXPECT_TRUE(v.ok()) << v.status();
  return v.ok() ? *v : Value{};
}

const std::string kUrl = "https://www.nexmark.com/a/b_c/d/item.htm?query=1&channel_id=42";

TEST(SqlFunctionsTest, RegexpExtractGivesTheGroupOfTheFirstMatchOrNull) {
  const std::string re = "(&|^)channel_id=([^&]*)";
  EXPECT_EQ(call(Op::kRegexpExtract, {kUrl, re, int64_t{2}}), Value{std::string("42")});
  EXPECT_EQ(call(Op::kRegexpExtract, {kUrl, re, int64_t{0}}), Value{std::string("&channel_id=42")});
  EXPECT_EQ(call(Op::kRegexpExtract, {std::string("channel_id=7&x=1"), re, int64_t{1}}), Value{std::string()});
  EXPECT_EQ(call(Op::kRegexpExtract, {std::string("no id"), re, int64_t{2}}), Value{});
  EXPECT_EQ(call(Op::kRegexpExtract, {std::string("ab"), std::string("a(x)?b"), int64_t{1}}), Value{});  // no part
  EXPECT_FALSE(call_status(Op::kRegexpExtract, {kUrl, re, int64_t{3}}).ok());
  EXPECT_EQ(call(Op::kRegexp, {kUrl, std::string("b_c/d")}), Value{true});
  EXPECT_EQ(call(Op::kRegexp, {kUrl, std::string("^b_c")}), Value{false});
}

TEST(SqlFunctionsTest, SplitIndexSubstringAndLike) {
  EXPECT_EQ(call(Op::kSplitIndex, {kUrl, std::string("/"), int64_t{0}}), Value{std::string("https:")});
  EXPECT_EQ(call(Op::kSplitIndex, {kUrl, std::string("/"), int64_t{1}}), Value{std::string()});
  EXPECT_EQ(call(Op::kSplitIndex, {kUrl, std::string("/"), int64_t{4}}), Value{std::string("b_c")});
  EXPECT_EQ(call(Op::kSplitIndex, {kUrl, std::string("/"), int64_t{7}}), Value{});
  EXPECT_EQ(call(Op::kSplitIndex, {kUrl, std::string("/"), int64_t{-1}}), Value{});
  EXPECT_EQ(call(Op::kSubstring, {std::string("channel"), int64_t{2}, int64_t{3}}), Value{std::string("han")});
  EXPECT_EQ(call(Op::kSubstring, {std::string("channel"), int64_t{5}}), Value{std::string("nel")});
  EXPECT_EQ(call(Op::kSubstring, {std::string("channel"), int64_t{0}, int64_t{2}}), Value{std::string("c")});
  EXPECT_EQ(call(Op::kSubstring, {std::string("channel"), int64_t{9}}), Value{std::string()});
  for (const auto& [s, p, want] : std::vector<std::tuple<std::string, std::string, bool>>{
           {"channel-12", "channel-%", true}, {"channel-12", "%-1_", true}, {"channel-12", "%-1", false},
           {"abc", "a%b%c", true}, {"abc", "a_", false}, {"", "%", true}, {"", "_", false}, {"a%", "a%%", true}}) {
    EXPECT_EQ(call(Op::kLike, {s, p}), Value{want}) << s << " LIKE " << p;
  }
}

TEST(SqlFunctionsTest, DateFormatHourAndMinuteAreUtc) {
  const int64_t t = 1436918400000 + 13 * 3'600'000 + 7 * 60'000 + 9'045;  // 2015-07-15 13:07:09.045
  EXPECT_EQ(call(Op::kDateFormat, {t, std::string("yyyy-MM-dd")}), Value{std::string("2015-07-15")});
  EXPECT_EQ(call(Op::kDateFormat, {t, std::string("yyyy-MM-dd HH:mm:ss.SSS")}),
            Value{std::string("2015-07-15 13:07:09.045")});
  EXPECT_EQ(call(Op::kDateFormat, {t, std::string("100%")}), Value{std::string("100%")});
  EXPECT_EQ(call(Op::kHour, {t}), Value{int64_t{13}});
  EXPECT_EQ(call(Op::kMinute, {t}), Value{int64_t{7}});
  // Before the epoch: 1969-12-31 22:59:59.999 and 23:00:00.000, against absl's civil time.
  for (const int64_t before : {int64_t{-3'600'001}, int64_t{-3'600'000}, int64_t{-1}, int64_t{-86'400'000 * 400LL - 1}}) {
    const absl::TimeZone::CivilInfo c = absl::UTCTimeZone().At(absl::FromUnixMillis(before));
    EXPECT_EQ(call(Op::kHour, {before}), Value{int64_t{c.cs.hour()}}) << before;
    EXPECT_EQ(call(Op::kMinute, {before}), Value{int64_t{c.cs.minute()}}) << before;
  }
}

TEST(SqlFunctionsTest, ABadRegularExpressionIsRefusedWhenPlanned) {
  auto script = parse_script(
      "CREATE TABLE t (s VARCHAR) WITH (connector = 'print');\n"
      "INSERT INTO t SELECT REGEXP_EXTRACT(s, '(a', 1) FROM t;");
  ASSERT_TRUE(script.ok());
  auto p = plan_script(*script);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message(),
            "line 2, column 40: REGEXP_EXTRACT: regular expression '(a': missing ): (a");
}

}  // namespace
}  // namespace weir::sql
