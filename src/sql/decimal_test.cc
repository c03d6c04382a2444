#include "sql/decimal.h"

#include <gtest/gtest.h>

namespace weir::sql {
namespace {

TEST(SqlDecimalTest, TextAndParsingRoundTripAtTheScale) {
  EXPECT_EQ(decimal_text(1234567, 3), "1234.567");
  EXPECT_EQ(decimal_text(-50, 3), "-0.050");
  EXPECT_EQ(decimal_text(0, 2), "0.00");
  EXPECT_EQ(decimal_text(12, 0), "12");
  EXPECT_EQ(decimal_text(INT64_MIN, 0), "-9223372036854775808");
  EXPECT_EQ(*parse_decimal(" 12.5 ", 2), 1250);
  EXPECT_EQ(*parse_decimal("-0.005", 2), -1);  // half away from zero
  EXPECT_EQ(*parse_decimal("0.004", 2), 0);
  EXPECT_EQ(*parse_decimal("+7", 1), 70);
  EXPECT_EQ(*parse_decimal(".5", 1), 5);
  for (const char* bad : {"", "-", "1e3", "1.2.3", "abc", "1 2"}) {
    EXPECT_FALSE(parse_decimal(bad, 2).ok()) << bad;
  }
  EXPECT_EQ(parse_decimal("99999999999999999999", 0).status().code(), absl::StatusCode::kOutOfRange);
}

TEST(SqlDecimalTest, RescaleAndDivideRoundHalfAwayFromZero) {
  EXPECT_EQ(*rescale(1255, 3, 2), 126);
  EXPECT_EQ(*rescale(-1255, 3, 2), -126);
  EXPECT_EQ(*rescale(1254, 3, 2), 125);
  EXPECT_EQ(*rescale(7, 0, 4), 70000);
  EXPECT_FALSE(rescale(INT64_MAX / 10, 0, 2).ok());
  // 1.00 / 3 at scale 6, -2 / 3 at scale 0, 1 / 0.3 at scale 2.
  EXPECT_EQ(*decimal_divide(100, 2, 3, 0, 6), 333333);
  EXPECT_EQ(*decimal_divide(-2, 0, 3, 0, 0), -1);
  EXPECT_EQ(*decimal_divide(1, 0, 3, 1, 2), 333);
  EXPECT_EQ(*decimal_divide(5, 0, -2, 0, 0), -3);
  EXPECT_FALSE(decimal_divide(INT64_MAX, 0, 1, 18, 18).ok());
  EXPECT_EQ(*double_to_decimal(2.5, 0), 3);
  EXPECT_EQ(*double_to_decimal(-0.125, 2), -13);
  EXPECT_FALSE(double_to_decimal(1e300, 2).ok());
  EXPECT_DOUBLE_EQ(decimal_to_double(-125, 2), -1.25);
}

}  // namespace
}  // namespace weir::sql
