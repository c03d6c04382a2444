// SQL values beyond a format's: dates, times, bytes, ARRAY and MAP, their
// text, and their form at a connector (sql/values.h); and CURRENT_WATERMARK,
// a value of the evaluating operator's (sql/expression.h).
#include "sql/values.h"

#include <gtest/gtest.h>

#include <random>

#include "sql/expression.h"
#include "testing/seed.h"

namespace weir::sql {
namespace {

TEST(ValuesTest, DatesAndTimesReadAndWriteTheirText) {
  EXPECT_EQ(date_text(0), "1970-01-01");
  EXPECT_EQ(date_text(-1), "1969-12-31");
  EXPECT_EQ(date_text(19782), "2024-02-29");
  EXPECT_EQ(*parse_date("2024-02-29"), 19782);
  EXPECT_EQ(*parse_date(" 1969-12-31 "), -1);
  for (const char* bad : {"2023-02-29", "2024-13-01", "2024-1-01", "20240101", "", "2024-02-29x"}) {
    EXPECT_FALSE(parse_date(bad).ok()) << bad;
  }
  EXPECT_EQ(std::string(parse_date("2024-02-30").status().message()), "'2024-02-30' is not a DATE ('yyyy-MM-dd')");
  EXPECT_EQ(time_text(0), "00:00:00");
  EXPECT_EQ(time_text(86'399'999), "23:59:59.999");
  EXPECT_EQ(*parse_time("12:00"), 43'200'000);
  EXPECT_EQ(*parse_time("00:00:00.5"), 500);
  EXPECT_EQ(*parse_time("23:59:59.999999"), 86'399'999);  // past milliseconds: dropped
  for (const char* bad : {"24:00:00", "12:60", "1:00", "12:00:61", "12:00:00.", "noon"}) {
    EXPECT_FALSE(parse_time(bad).ok()) << bad;
  }
}

TEST(ValuesTest, TimestampsHaveFourDigitsOfYear) {
  EXPECT_EQ(timestamp_text(-1), "1969-12-31 23:59:59.999");
  EXPECT_EQ(timestamp_text(-61'405'430'400'000), "0024-02-21 00:00:00.000");  // found by fuzz_sql_values
  const Type map = Type::map(TypeKind::kVarchar, TypeKind::kTimestamp, true);
  auto v = from_wire(std::string(R"({"k":"0024-02-21"})"), map);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(to_wire(*v, map), Value{std::string(R"({"k":"0024-02-21 00:00:00.000"})")});
  // Past year 9999 an element is written as its milliseconds, which read back.
  auto far = from_wire(std::string(R"({"k":253402300800000})"), map);
  ASSERT_TRUE(far.ok());
  EXPECT_EQ(to_wire(*far, map), Value{std::string(R"({"k":253402300800000})")});
}

TEST(ValuesTest, EveryDateAndTimeSurvivesItsText) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 10000; ++i) {
    const int64_t day = static_cast<int64_t>(rng() % 200'000) - 100'000;  // 1696 to 2243
    ASSERT_EQ(*parse_date(date_text(day)), day) << date_text(day);
    const int64_t ms = static_cast<int64_t>(rng() % 86'400'000);
    ASSERT_EQ(*parse_time(time_text(ms)), ms) << time_text(ms);
  }
}

TEST(ValuesTest, MapsAreOrderedByKeyAndKeepALaterValue) {
  auto a = encode_map({{std::string("b"), int64_t{2}}, {std::string("a"), int64_t{1}}, {std::string("b"), int64_t{3}}});
  auto b = encode_map({{std::string("a"), int64_t{1}}, {std::string("b"), int64_t{3}}});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);  // equal maps are equal bytes: they group and join as one value
  const Type t = Type::map(TypeKind::kVarchar, TypeKind::kBigInt, true);
  EXPECT_EQ(value_text(*a, t), "{a=1, b=3}");
  EXPECT_EQ(std::string(encode_map({{Value{}, int64_t{1}}}).status().message()), "a MAP key is NULL");
}

TEST(ValuesTest, CollectionsReadAndWriteJson) {
  const Type array = Type::array(TypeKind::kTimestamp, true);
  auto v = from_wire(std::string(R"(["2026-01-01 00:00:05.934", 1000, null])"), array);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(decode_elements(std::get<std::string>(*v)), (std::vector<Value>{int64_t{1767225605934}, int64_t{1000}, Value{}}));
  EXPECT_EQ(value_text(*v, array), "[2026-01-01 00:00:05.934, 1970-01-01 00:00:01.000, NULL]");
  EXPECT_EQ(to_wire(*v, array), Value{std::string(R"(["2026-01-01 00:00:05.934","1970-01-01 00:00:01.000",null])")});

  const Type map = Type::map(TypeKind::kBigInt, TypeKind::kDate, true);
  auto m = from_wire(std::string(R"({"2":"2024-02-29","1":null})"), map);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(value_text(*m, map), "{1=NULL, 2=2024-02-29}");
  EXPECT_EQ(to_wire(*m, map), Value{std::string(R"({"1":null,"2":"2024-02-29"})")});

  auto reason = [](const std::string& text, const Type& t) { return std::string(from_wire(text, t).status().message()); };
  EXPECT_EQ(reason("{}", Type::array(TypeKind::kBigInt, true)), "'{}' is not a JSON array (ARRAY<BIGINT>)");
  EXPECT_EQ(reason("[1.5]", Type::array(TypeKind::kBigInt, true)), "an element: expected BIGINT, got 1.5");
  EXPECT_EQ(reason(R"({"x":1})", Type::map(TypeKind::kBigInt, TypeKind::kBigInt, true)),
            "the key 'x': expected BIGINT");
  EXPECT_EQ(reason("[1", Type::array(TypeKind::kBigInt, true)), "'[1' is not a JSON array (ARRAY<BIGINT>)");
}

TEST(ValuesTest, BytesAreBase64AtAConnector) {
  const Type bytes{TypeKind::kBytes, true};
  EXPECT_EQ(to_wire(std::string("\x00\xff", 2), bytes), Value{std::string("AP8=")});
  EXPECT_EQ(*from_wire(std::string("AP8="), bytes), Value{std::string("\x00\xff", 2)});
  EXPECT_EQ(std::string(from_wire(std::string("@@"), bytes).status().message()), "'@@' is not base64 (BYTES)");
  EXPECT_EQ(wire_type(bytes), FieldType::kString);
  EXPECT_EQ(wire_type(Type::array(TypeKind::kBigInt, true)), FieldType::kJson);
}

}  // namespace
}  // namespace weir::sql

namespace weir::sql {
namespace {

TEST(ValuesTest, CurrentWatermarkIsTheEvaluatingOperatorsWatermark) {
  const Expr wm = Expr::call(Op::kCurrentWatermark, {TypeKind::kTimestamp, true},
                             {Expr::column_ref(0, {TypeKind::kTimestamp, false})});
  const Row row{RowKind::kInsert, {int64_t{5000}}};
  EXPECT_FALSE(wm.is_constant());  // never folded when planned
  EXPECT_TRUE(reads_watermark(Expr::call(Op::kIsNull, {TypeKind::kBoolean, false}, {wm})));
  // Outside an operator that keeps one: an error naming where it belongs.
  EXPECT_EQ(std::string(evaluate(wm, row).status().message()),
            "CURRENT_WATERMARK is read only in a WHERE clause or a SELECT list");
  int64_t watermark = INT64_MIN;
  {
    WatermarkScope scope(&watermark);
    EXPECT_EQ(*evaluate(wm, row), Value{});  // none yet: NULL
    watermark = 4000;
    EXPECT_EQ(*evaluate(wm, row), Value{int64_t{4000}});
    int64_t inner = 10;
    {
      WatermarkScope nested(&inner);
      EXPECT_EQ(*evaluate(wm, row), Value{int64_t{10}});
    }
    EXPECT_EQ(*evaluate(wm, row), Value{int64_t{4000}});  // the outer one again
  }
  EXPECT_FALSE(evaluate(wm, row).ok());
}

}  // namespace
}  // namespace weir::sql
