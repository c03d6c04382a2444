// The SQL shell's result table: a changelog's final table, ordered and cut
// as the query says, drawn with borders.
#include "sql/result_table.h"

#include <gtest/gtest.h>

namespace weir::sql {
namespace result_table_test {

Row row(RowKind kind, Value k, Value v) { return Row{kind, {std::move(k), std::move(v)}}; }

std::vector<Column> columns() {
  return {{"k", {TypeKind::kVarchar, true}}, {"amount", {TypeKind::kDecimal, true, 10, 2}}};
}

TEST(SqlResultTableTest, AChangelogLeavesItsFinalRowsInTheOrderTheyFirstCame) {
  ResultTable t(columns(), {}, false, 100);
  t.apply(row(RowKind::kInsert, std::string("b"), std::string("2.00")));
  t.apply(row(RowKind::kInsert, std::string("a"), std::string("1.00")));
  t.apply(row(RowKind::kUpdateBefore, std::string("b"), std::string("2.00")));
  t.apply(row(RowKind::kUpdateAfter, std::string("b"), std::string("12.50")));
  t.apply(row(RowKind::kInsert, std::string("c"), std::monostate{}));
  t.apply(row(RowKind::kInsert, std::string("a"), std::string("1.00")));
  t.apply(row(RowKind::kDelete, std::string("a"), std::string("1.00")));
  EXPECT_EQ(t.render(100),
            "+---+--------+\n"
            "| k | amount |\n"
            "+---+--------+\n"
            "| a |   1.00 |\n"
            "| b |  12.50 |\n"
            "| c | <NULL> |\n"
            "+---+--------+\n"
            "3 rows\n");
  EXPECT_EQ(t.version(), 7u);
  EXPECT_FALSE(t.limit_reached());
}

TEST(SqlResultTableTest, OrderByADecimalIsByItsNumberWithNullsLastAndLimitCuts) {
  ResultOrder order;
  order.keys = {{1, true}};
  order.limit = 3;
  ResultTable t(columns(), order, true, 100);
  for (const char* v : {"9.50", "10.25", "2.00"}) t.apply(row(RowKind::kInsert, std::string("x"), std::string(v)));
  t.apply(row(RowKind::kInsert, std::string("y"), std::monostate{}));
  EXPECT_EQ(t.render(100),
            "+---+--------+\n"
            "| k | amount |\n"
            "+---+--------+\n"
            "| x |  10.25 |\n"
            "| x |   9.50 |\n"
            "| x |   2.00 |\n"
            "+---+--------+\n"
            "3 rows\n");
  // With ORDER BY every row counts: a LIMIT alone is not reached.
  EXPECT_FALSE(t.limit_reached());
  EXPECT_EQ(t.render(1).substr(t.render(1).find("| x |  10.25 |\n+")), "| x |  10.25 |\n+---+--------+\n... 2 more\n3 rows\n");
}

TEST(SqlResultTableTest, ALimitWithoutOrderEndsAnAppendOnlyResultAndTooManyRowsOverflow) {
  ResultOrder order;
  order.limit = 2;
  ResultTable limited(columns(), order, true, 100);
  for (const char* k : {"a", "b", "c"}) limited.apply(row(RowKind::kInsert, std::string(k), std::monostate{}));
  EXPECT_TRUE(limited.limit_reached());
  EXPECT_EQ(limited.version(), 2u);  // the third row came after the limit

  ResultTable small(columns(), {}, false, 2);
  for (const char* k : {"a", "b", "a"}) small.apply(row(RowKind::kInsert, std::string(k), std::monostate{}));
  EXPECT_FALSE(small.overflowed());  // equal rows are one entry
  small.apply(row(RowKind::kInsert, std::string("c"), std::monostate{}));
  EXPECT_TRUE(small.overflowed());
}

}  // namespace result_table_test
}  // namespace weir::sql
