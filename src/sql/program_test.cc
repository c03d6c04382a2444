// sql::Program: common subexpressions are one step, evaluated once per row
// and only when needed; every value and error is the one evaluate() gives
// for the expression on its own (random expressions, seeded).
#include "sql/program.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>

namespace weir::sql {
namespace {

const Type kInt{TypeKind::kBigInt, true};
const Type kBool{TypeKind::kBoolean, true};
const Type kText{TypeKind::kVarchar, true};

Expr col(int i, Type t) { return Expr::column_ref(i, t); }
Expr lit(Value v, Type t) { return Expr::constant(std::move(v), t); }

Row row_of(std::vector<Value> values) {
  Row r;
  r.values = std::move(values);
  return r;
}

TEST(SqlProgramTest, ASubexpressionInTheConditionAndTheSelectListIsOneStep) {
  const Expr extract = Expr::call(Op::kRegexpExtract, kText,
                                  {col(0, kText), lit(std::string("(&|^)channel_id=([^&]*)"), kText), lit(int64_t{2}, kInt)});
  const Expr lower = Expr::call(Op::kLower, kText, {col(1, kText)});
  const Expr condition = Expr::call(
      Op::kOr, kBool,
      {Expr::call(Op::kIsNotNull, kBool, {extract}), comparison(Op::kEqual, lower, lit(std::string("apple"), kText))});
  const Expr select = Expr::call(Op::kCase, kText,
                                 {comparison(Op::kEqual, lower, lit(std::string("apple"), kText)), lit(std::string("0"), kText),
                                  extract});
  Expr with_else = select;
  with_else.has_else = true;
  auto program = std::make_shared<const Program>(std::vector<Expr>{condition, with_else});
  // REGEXP_EXTRACT, IS NOT NULL, LOWER, =, OR, CASE: six calls where the
  // two expressions have eight.
  EXPECT_EQ(program->steps(), 6u);

  Program::Run run(program);
  const Row a = row_of({std::string("x=1&channel_id=42"), std::string("Baidu")});
  const Row b = row_of({std::string("x=1"), std::string("APPLE")});
  for (const Row* r : {&a, &b, &a}) {  // each row's own values, not the last row's
    run.start(*r);
    for (size_t i = 0; i < 2; ++i) {
      auto v = run.value(i);
      ASSERT_TRUE(v.ok()) << v.status();
      auto want = evaluate(program->expr(i), *r);
      ASSERT_TRUE(want.ok());
      EXPECT_EQ(**v, *want) << i;
    }
  }
}

TEST(SqlProgramTest, AStepNotNeededIsNotEvaluated) {
  // CASE WHEN c = 0 THEN 0 ELSE 10 / c END beside 10 / c itself: for c = 0
  // the first has a value and only the second fails.
  const Expr quotient = Expr::call(Op::kDivide, kInt, {lit(int64_t{10}, kInt), col(0, kInt)});
  Expr guarded = Expr::call(Op::kCase, kInt, {comparison(Op::kEqual, col(0, kInt), lit(int64_t{0}, kInt)),
                                              lit(int64_t{0}, kInt), quotient});
  guarded.has_else = true;
  auto program = std::make_shared<const Program>(std::vector<Expr>{guarded, quotient});
  Program::Run run(program);
  const Row zero = row_of({int64_t{0}});
  run.start(zero);
  auto v = run.value(0);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(**v, Value{int64_t{0}});
  auto q = run.value(1);
  ASSERT_FALSE(q.ok());
  EXPECT_EQ(q.status().message(), "division by zero");
  const Row five = row_of({int64_t{5}});
  run.start(five);
  EXPECT_EQ(**run.value(1), Value{int64_t{2}});
  EXPECT_EQ(**run.value(0), Value{int64_t{2}});
}

// Random expressions over (BIGINT a, BIGINT b, VARCHAR s), built from a
// pool of earlier ones so that subexpressions repeat.
class RandomExprs {
 public:
  explicit RandomExprs(uint64_t seed) : rng_(seed) {}

  Expr integer(int depth) {
    if (!ints_.empty() && pick(3) == 0) return ints_[pick(ints_.size())];
    Expr e;
    switch (depth <= 0 ? pick(2) : pick(7)) {
      case 0: e = col(static_cast<int>(pick(2)), kInt); break;
      case 1: e = lit(pick(5) == 0 ? Value{} : Value{static_cast<int64_t>(pick(7)) - 3}, kInt); break;
      case 2:
      case 3: {
        static constexpr Op kOps[] = {Op::kAdd, Op::kSubtract, Op::kMultiply, Op::kDivide, Op::kModulo};
        e = Expr::call(kOps[pick(5)], kInt, {integer(depth - 1), integer(depth - 1)});
        break;
      }
      case 4: {
        e = Expr::call(Op::kCase, kInt, {boolean(depth - 1), integer(depth - 1), integer(depth - 1)});
        e.has_else = pick(2) == 0;
        if (!e.has_else) e.args.pop_back();
        break;
      }
      case 5: e = Expr::call(Op::kCoalesce, kInt, {integer(depth - 1), integer(depth - 1)}); break;
      default: e = Expr::call(Op::kCharLength, kInt, {text(depth - 1)}); break;
    }
    ints_.push_back(e);
    return e;
  }

  Expr boolean(int depth) {
    if (!bools_.empty() && pick(3) == 0) return bools_[pick(bools_.size())];
    Expr e;
    switch (depth <= 0 ? 0 : pick(5)) {
      case 0:
      case 1: {
        static constexpr Op kOps[] = {Op::kEqual, Op::kLess, Op::kGreaterEqual};
        e = comparison(kOps[pick(3)], integer(depth - 1), integer(depth - 1));
        break;
      }
      case 2: e = Expr::call(pick(2) == 0 ? Op::kAnd : Op::kOr, kBool, {boolean(depth - 1), boolean(depth - 1)}); break;
      case 3: e = Expr::call(Op::kNot, kBool, {boolean(depth - 1)}); break;
      default: e = Expr::call(pick(2) == 0 ? Op::kIsNull : Op::kIsNotNull, kBool, {integer(depth - 1)}); break;
    }
    bools_.push_back(e);
    return e;
  }

  Expr text(int depth) {
    switch (depth <= 0 ? 0 : pick(3)) {
      case 0: return col(2, kText);
      case 1: return Expr::call(Op::kLower, kText, {text(depth - 1)});
      default: return Expr::call(Op::kConcat, kText, {text(depth - 1), text(depth - 1)});
    }
  }

  Row row() {
    auto small = [&]() -> Value { return pick(6) == 0 ? Value{} : Value{static_cast<int64_t>(pick(9)) - 4}; };
    return row_of({small(), small(), pick(6) == 0 ? Value{} : Value{std::string(pick(4), 'X')}});
  }

  size_t pick(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }

 private:
  std::mt19937_64 rng_;
  std::vector<Expr> ints_, bools_;
};

// x IN (...) and x NOT IN (...) over many literals probe a set: every
// value, NULLs in x and in the list included, is what the comparisons
// one by one give (evaluate()).
TEST(SqlProgramTest, AnInListIsASetWithTheNullsOfItsComparisons) {
  auto in_list = [](bool negated, bool with_null, Expr x) {
    std::vector<Expr> comparisons;
    for (int64_t v = 0; v < 40; v += 2) comparisons.push_back(comparison(negated ? Op::kNotEqual : Op::kEqual, x, lit(v, kInt)));
    if (with_null) comparisons.push_back(comparison(negated ? Op::kNotEqual : Op::kEqual, x, lit(Value{}, kInt)));
    return Expr::call(negated ? Op::kAnd : Op::kOr, kBool, std::move(comparisons));
  };
  std::vector<Expr> exprs;
  for (bool negated : {false, true}) {
    for (bool with_null : {false, true}) {
      exprs.push_back(in_list(negated, with_null, col(0, kInt)));
      // Over an expression of the column, not only the column.
      exprs.push_back(in_list(negated, with_null, Expr::call(Op::kAdd, kInt, {col(0, kInt), lit(int64_t{1}, kInt)})));
    }
  }
  auto program = std::make_shared<const Program>(exprs);
  Program::Run run(program);
  int compared = 0;
  for (const Value& x : {Value{}, Value{int64_t{-1}}, Value{int64_t{0}}, Value{int64_t{7}}, Value{int64_t{38}},
                         Value{int64_t{39}}, Value{int64_t{40}}}) {
    const Row row = row_of({x});
    run.start(row);
    for (size_t i = 0; i < exprs.size(); ++i) {
      auto want = evaluate(exprs[i], row);
      auto got = run.value(i);
      ASSERT_TRUE(want.ok() && got.ok());
      EXPECT_EQ(**got, *want) << "expression " << i << " at x = "
                              << (std::holds_alternative<int64_t>(x) ? std::to_string(std::get<int64_t>(x)) : "NULL");
      ++compared;
    }
  }
  EXPECT_EQ(compared, 56);
  // Each list probes a set instead of evaluating its comparisons.
  EXPECT_EQ(program->in_sets(), 8u);
}

TEST(SqlProgramTest, RandomExpressionsGiveWhatEachGivesOnItsOwn) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  RandomExprs gen(seed);
  size_t shared = 0;
  for (int program_no = 0; program_no < 200; ++program_no) {
    std::vector<Expr> exprs;
    const size_t n = 1 + gen.pick(5);
    for (size_t i = 0; i < n; ++i) exprs.push_back(gen.pick(2) == 0 ? gen.integer(4) : gen.boolean(4));
    auto program = std::make_shared<const Program>(exprs);
    size_t calls = 0;
    std::function<void(const Expr&)> count = [&](const Expr& e) {
      if (e.kind != Expr::Kind::kCall) return;
      ++calls;
      for (const Expr& a : e.args) count(a);
    };
    for (const Expr& e : exprs) count(e);
    ASSERT_LE(program->steps(), calls);
    shared += calls - program->steps();
    Program::Run run(program);
    for (int r = 0; r < 20; ++r) {
      const Row row = gen.row();
      run.start(row);
      // In a random order: a step first needed by a later expression.
      std::vector<size_t> order(n);
      for (size_t i = 0; i < n; ++i) order[i] = i;
      std::shuffle(order.begin(), order.end(), std::mt19937_64(gen.pick(1u << 30)));
      for (size_t i : order) {
        auto got = run.value(i);
        auto want = evaluate(exprs[i], row);
        ASSERT_EQ(got.ok(), want.ok()) << exprs[i].to_string({"a", "b", "s"});
        if (got.ok()) {
          EXPECT_EQ(**got, *want) << exprs[i].to_string({"a", "b", "s"});
        } else {
          EXPECT_EQ(got.status(), want.status()) << exprs[i].to_string({"a", "b", "s"});
        }
      }
    }
  }
  EXPECT_GT(shared, 0u);  // the generator made common subexpressions
}

}  // namespace
}  // namespace weir::sql
