// The aggregate calls' accumulators: SQL's NULL rules, DISTINCT, AVG of
// BIGINT truncated, merging (session windows and sliced hops), overflow.
#include "sql/aggregate.h"

#include <gtest/gtest.h>

namespace weir::sql {
namespace aggregate_test {

Row row(Value a, Value b) { return Row{RowKind::kInsert, {std::move(a), std::move(b)}}; }

AggregateCall call(AggregateCall::Kind kind, int column, TypeKind type, bool distinct = false) {
  AggregateCall c;
  c.kind = kind;
  c.distinct = distinct;
  if (column >= 0) c.arg = Expr::column_ref(column, {type, true});
  c.type = {kind == AggregateCall::Kind::kCount ? TypeKind::kBigInt : type, kind != AggregateCall::Kind::kCount};
  return c;
}

std::vector<Value> results(const Aggregates& a, const AggregateState& s) {
  std::vector<Value> out;
  EXPECT_TRUE(a.results(s, &out).ok());
  return out;
}

using K = AggregateCall::Kind;

TEST(SqlAggregateTest, CallsSkipNullsAndOverNoValuesAreNullExceptCount) {
  const Aggregates a({call(K::kCount, -1, TypeKind::kBigInt), call(K::kCount, 0, TypeKind::kBigInt),
                      call(K::kSum, 0, TypeKind::kBigInt), call(K::kMin, 1, TypeKind::kVarchar),
                      call(K::kMax, 1, TypeKind::kVarchar), call(K::kAvg, 0, TypeKind::kBigInt),
                      call(K::kAvg, 0, TypeKind::kBigInt, true), call(K::kCount, 1, TypeKind::kVarchar, true)});
  AggregateState s = a.create();
  EXPECT_EQ(results(a, s), (std::vector<Value>{int64_t{0}, int64_t{0}, Value{}, Value{}, Value{}, Value{}, Value{},
                                               int64_t{0}}));
  for (const Row& r : {row(int64_t{7}, std::string("b")), row(Value{}, std::string("a")), row(int64_t{7}, Value{}),
                       row(int64_t{-4}, std::string("b"))}) {
    ASSERT_TRUE(a.add(s, r).ok());
  }
  // AVG(BIGINT) truncates: (7 + 7 - 4) / 3 = 3; AVG(DISTINCT): (7 - 4) / 2 = 1.
  EXPECT_EQ(results(a, s), (std::vector<Value>{int64_t{4}, int64_t{3}, int64_t{10}, std::string("a"), std::string("b"),
                                               int64_t{3}, int64_t{1}, int64_t{2}}));
}

TEST(SqlAggregateTest, MergedStatesAreTheStateOfBothGroupsRows) {
  const Aggregates a({call(K::kCount, -1, TypeKind::kBigInt), call(K::kSum, 0, TypeKind::kDouble),
                      call(K::kMin, 0, TypeKind::kDouble), call(K::kAvg, 0, TypeKind::kDouble),
                      call(K::kSum, 0, TypeKind::kDouble, true)});
  AggregateState x = a.create(), y = a.create(), all = a.create();
  const std::vector<double> left = {1.5, 2.5}, right = {2.5, -1.0, 0.5};
  for (double v : left) ASSERT_TRUE(a.add(x, row(v, Value{})).ok() && a.add(all, row(v, Value{})).ok());
  for (double v : right) ASSERT_TRUE(a.add(y, row(v, Value{})).ok() && a.add(all, row(v, Value{})).ok());
  ASSERT_TRUE(a.merge(x, y).ok());
  EXPECT_EQ(results(a, x), results(a, all));
  EXPECT_EQ(results(a, x), (std::vector<Value>{int64_t{5}, 6.0, -1.0, 1.2, 3.5}));
  // Merging an empty state changes nothing; into an empty one copies.
  AggregateState empty = a.create();
  ASSERT_TRUE(a.merge(empty, all).ok());
  EXPECT_EQ(results(a, empty), results(a, all));
}

TEST(SqlAggregateTest, ABigintSumThatOverflowsIsAnError) {
  const Aggregates a({call(K::kSum, 0, TypeKind::kBigInt)});
  AggregateState s = a.create();
  ASSERT_TRUE(a.add(s, row(INT64_MAX, Value{})).ok());
  absl::Status st = a.add(s, row(int64_t{1}, Value{}));
  EXPECT_EQ(st.message(), "SUM overflowed BIGINT");
  AggregateState t = a.create();
  ASSERT_TRUE(a.add(t, row(INT64_MAX, Value{})).ok());
  EXPECT_FALSE(a.merge(t, t).ok());
}

}  // namespace aggregate_test
}  // namespace weir::sql
