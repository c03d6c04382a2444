// The string and time functions: matches, no match (NULL), edges of
// SPLIT_INDEX and SUBSTRING, LIKE's wildcards, Java date patterns, and a
// bad regular expression refused when the script is planned.
#include "sql/functions.h"

#include <gtest/gtest.h>

#include "absl/time/time.h"
#include "sql/planner.h"

namespace weir::sql {
namespace functions_test {

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

TEST(SqlFunctionsTest, TimesBeforeTheEpochAndUnitsOfTheCalendar) {
  const Value before{int64_t{-1}};  // 1969-12-31 23:59:59.999
  EXPECT_EQ(call(Op::kExtract, {std::string("YEAR"), before}), Value{int64_t{1969}});
  EXPECT_EQ(call(Op::kExtract, {std::string("MILLISECOND"), before}), Value{int64_t{59999}});
  EXPECT_EQ(call(Op::kExtract, {std::string("EPOCH"), before}), Value{int64_t{-1}});
  EXPECT_EQ(call(Op::kFloorTime, {before, std::string("SECOND")}), Value{int64_t{-1000}});
  EXPECT_EQ(call(Op::kCeilTime, {before, std::string("DAY")}), Value{int64_t{0}});
  EXPECT_EQ(call(Op::kFloorTime, {int64_t{0}, std::string("DAY")}), Value{int64_t{0}});
  EXPECT_EQ(call(Op::kCeilTime, {int64_t{0}, std::string("DAY")}), Value{int64_t{0}});
  // 2024-03-31 minus one month is 2024-02-29; back is 2024-03-29.
  const int64_t march31 = 1711843200000;
  const int64_t feb29 = 1709164800000;
  EXPECT_EQ(call(Op::kTimestampAdd, {std::string("MONTH"), int64_t{-1}, march31}), Value{feb29});
  EXPECT_EQ(call(Op::kTimestampDiff, {std::string("MONTH"), march31, feb29}), Value{int64_t{-1}});
  EXPECT_EQ(call(Op::kTimestampDiff, {std::string("MONTH"), feb29, march31}), Value{int64_t{1}});
  EXPECT_EQ(call(Op::kTimestampDiff, {std::string("DAY"), march31, feb29}), Value{int64_t{-31}});
  EXPECT_FALSE(call_status(Op::kExtract, {std::string("CENTURY"), before}).ok());
}

TEST(SqlFunctionsTest, StringFunctionsCountCharactersNotBytes) {
  const std::string s = "\xC3\xA9t\xC3\xA9 \xC3\xA0 Paris";  // "été à Paris"
  EXPECT_EQ(call(Op::kPosition, {std::string("Paris"), s, int64_t{1}}), Value{int64_t{7}});
  EXPECT_EQ(call(Op::kPosition, {std::string("\xC3\xA9"), s, int64_t{2}}), Value{int64_t{3}});
  EXPECT_EQ(call(Op::kPosition, {std::string("x"), s, int64_t{0}}), Value{int64_t{0}});
  EXPECT_EQ(call(Op::kLpad, {std::string("\xC3\xA9t\xC3\xA9"), int64_t{2}, std::string("x")}), Value{std::string("\xC3\xA9t")});
  EXPECT_EQ(call(Op::kRpad, {std::string("a"), int64_t{3}, std::string("\xC3\xA9")}), Value{std::string("a\xC3\xA9\xC3\xA9")});
  EXPECT_EQ(call(Op::kTrim, {std::string("\xC3\xA9\xC3\xA9x\xC3\xA9"), std::string("\xC3\xA9")}), Value{std::string("x")});
  EXPECT_EQ(call(Op::kTrim, {std::string("   "), std::string(" ")}), Value{std::string()});
  EXPECT_EQ(call(Op::kReplace, {std::string("aaa"), std::string(""), std::string("b")}), Value{std::string("aaa")});
  EXPECT_EQ(call(Op::kInitcap, {std::string("o'neil mcDONALD")}), Value{std::string("O'Neil Mcdonald")});
}

TEST(SqlFunctionsTest, JsonPathsFindScalarsOrStructuresElseNull) {
  const std::string doc = R"({"a": [{"b": null}, {"b": "x y"}], "n": -3, "e": {}})";
  EXPECT_EQ(call(Op::kJsonValue, {doc, std::string("$.a[1].b")}), Value{std::string("x y")});
  EXPECT_EQ(call(Op::kJsonValue, {doc, std::string("$.a[0].b")}), Value{});  // JSON null
  EXPECT_EQ(call(Op::kJsonValue, {doc, std::string("$.n")}), Value{std::string("-3")});
  EXPECT_EQ(call(Op::kJsonValue, {doc, std::string("$.a[2]")}), Value{});
  EXPECT_EQ(call(Op::kJsonValue, {doc, std::string("a.b")}), Value{});  // no $
  EXPECT_EQ(call(Op::kJsonValue, {doc, std::string("$.a[x]")}), Value{});
  EXPECT_EQ(call(Op::kJsonQuery, {doc, std::string("$.e")}), Value{std::string("{}")});
  EXPECT_EQ(call(Op::kJsonQuery, {doc, std::string("$")}), Value{std::string(R"({"a":[{"b":null},{"b":"x y"}],"e":{},"n":-3})")});
  EXPECT_EQ(call(Op::kJsonValue, {std::string("{"), std::string("$")}), Value{});
}

}  // namespace functions_test
}  // namespace weir::sql
