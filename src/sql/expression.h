// Bound SQL expressions: a tree whose leaves are input columns (by index)
// and literals, and whose inner nodes are operators and functions, each
// with its result type. Made by the planner (sql/planner.h), which checked
// the operands' types; evaluated per row.
//
// NULL semantics are SQL's: an operator or function of a NULL operand is
// NULL, except AND/OR (three-valued: FALSE AND NULL is FALSE, TRUE OR NULL
// is TRUE), IS [NOT] NULL, COALESCE and CASE (a NULL condition is not
// true). Integer overflow and division by zero are errors naming the
// operator.
//
// Immutable once built; evaluate() is thread-safe.
#ifndef WEIR_SQL_EXPRESSION_H_
#define WEIR_SQL_EXPRESSION_H_

#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "sql/types.h"
#include "sql/values.h"
#include "weir/formats.h"

namespace weir::sql {

// What an inner node computes.
enum class Op : uint8_t {
  kAdd, kSubtract, kMultiply, kDivide, kModulo, kNegate,
  kEqual, kNotEqual, kLess, kLessEqual, kGreater, kGreaterEqual,
  kAnd, kOr, kNot, kIsNull, kIsNotNull,
  kCast,      // to the node's type
  kCase,      // args: when1, then1, when2, then2, ..., [else]
  kCoalesce,
  kConcat,    // ||
  kLower, kUpper, kCharLength, kAbs,
  // sql/functions.h
  kRegexpExtract, kRegexp, kLike, kSplitIndex, kSubstring, kDateFormat, kHour, kMinute, kCountChar,
  kExtract, kFloorTime, kCeilTime, kTimestampAdd, kTimestampDiff, kUnixTimestamp,
  kPosition, kTrim, kLtrim, kRtrim, kReplace, kLpad, kRpad, kInitcap,
  kRound, kFloor, kCeil, kPower, kSqrt, kLn, kLog10, kExp,
  kJsonValue, kJsonQuery,
  kTryCast,   // to the node's type; NULL where CAST fails
  kConcatWs,  // CONCAT_WS(separator, s, ...): NULL arguments skipped
  kProctime,  // PROCTIME(): the wall clock when the row is computed
  kNow,       // CURRENT_TIMESTAMP, NOW(): the same, no time attribute
  // ARRAY and MAP (sql/values.h holds them)
  kMakeArray,      // ARRAY[a, b, ...]: NULL elements kept
  kMakeMap,        // MAP[k1, v1, ...]: a NULL key is an error, a repeated key's last value kept
  kElementAt,      // a[i]: an ARRAY's i-th element (from 1); NULL if none
  kValueAt,        // m[k]: a MAP's value of key k; NULL if none
  kCardinality, kElement, kArrayContains, kArrayJoin, kMapKeys, kMapValues,
  kParseTimestamp,    // TO_TIMESTAMP(s, pattern): s read in a Java date pattern (UTC)
  kCurrentWatermark,  // CURRENT_WATERMARK(ts): the evaluating operator's input watermark (WatermarkScope); NULL before one
};
std::string_view op_name(Op op);

struct Expr {
  enum class Kind : uint8_t { kColumn, kLiteral, kCall };
  Kind kind = Kind::kLiteral;
  Type type;
  int column = -1;         // kColumn: the input row's column
  Value literal;           // kLiteral
  Op op = Op::kAdd;        // kCall
  bool has_else = false;   // kCase: the last argument is the ELSE
  std::vector<Expr> args;  // kCall

  static Expr column_ref(int index, Type type);
  static Expr constant(Value v, Type type);
  static Expr call(Op op, Type type, std::vector<Expr> args);

  bool is_constant() const;
  bool operator==(const Expr&) const = default;
  // For plans: columns by the names in `input`, e.g. "(price * 908) / 1000".
  std::string to_string(const std::vector<std::string>& input) const;
};

// `e` as a value of `to`'s type: itself when its type is the same (a
// DECIMAL of the same scale; NULL), else a CAST (of a literal: folded).
Expr cast_to(Expr e, const Type& to);

// `parts` AND-ed as one flat AND (an AND among them gives its operands):
// however many conditions, the expression stays two levels deep. The one
// part itself when there is one; `parts` must not be empty.
Expr conjunction(std::vector<Expr> parts);

// The calls, columns and literals in `e`, and how deeply its calls nest.
size_t expression_nodes(const Expr& e);
int expression_depth(const Expr& e);

// `e` with each column i replaced by `columns[i]` (expressions over the
// rows `columns` are computed from): `e` over a projection's output as an
// expression over the projection's input.
Expr compose(const Expr& e, const std::vector<Expr>& columns);

// `a op b` for a comparison op, DECIMAL operands brought to one scale (or
// to DOUBLE, beside a DOUBLE); the types must have a common type.
Expr comparison(Op op, Expr a, Expr b);

// The value of `e` for `row` (whose columns are those `e` refers to).
absl::StatusOr<Value> evaluate(const Expr& e, const Row& row);

// While one lives, CURRENT_WATERMARK is `*watermark` on this thread
// (INT64_MIN: none yet, NULL); with none, evaluating it is an error. The
// operator that evaluates a WHERE and SELECT list (calc.cc) makes one per
// row.
class WatermarkScope {
 public:
  explicit WatermarkScope(const int64_t* watermark);
  ~WatermarkScope();
  WatermarkScope(const WatermarkScope&) = delete;
  WatermarkScope& operator=(const WatermarkScope&) = delete;

 private:
  const int64_t* previous_;
};

// Whether `e` reads CURRENT_WATERMARK.
bool reads_watermark(const Expr& e);

// The value of call `e` (kind kCall) whose i-th operand's value is
// `operand(i)`; asked only for operands the call needs (AND, OR, CASE and
// COALESCE stop early; a strict call at its first NULL), each at most once.
// The pointers need to live only until the call returns.
using OperandFn = absl::FunctionRef<absl::StatusOr<const Value*>(size_t)>;
absl::StatusOr<Value> evaluate_call(const Expr& e, OperandFn operand);

// The order of two sort keys (values of one type per position): < 0, 0 or
// > 0 as `a` sorts before, with or after `b`, position i descending where
// descending[i]; NULL after every value either way.
int compare_sort_keys(const std::vector<Value>& a, const std::vector<Value>& b, const std::vector<bool>& descending);

// A literal as SQL would print it ('text', 12, 1.5, TRUE, NULL).
std::string literal_text(const Value& v, const Type& type);

}  // namespace weir::sql

#endif  // WEIR_SQL_EXPRESSION_H_
