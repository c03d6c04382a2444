// Expressions (sql/expression.h), in this order: the strict operators
// (arithmetic, comparison, casts and rounding, each checked for overflow and
// range as the SQL type says; apply_strict), building and printing trees
// (what EXPLAIN and operator names show), the helpers the planner combines
// them with (conjunction, comparison, compose), and evaluation, where the
// operators that see NULLs themselves (AND, OR, CASE, COALESCE, IS NULL)
// take their operands lazily (evaluate_call).
#include "sql/expression.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "absl/container/inlined_vector.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "sql/decimal.h"
#include "sql/functions.h"

namespace weir::sql {
namespace {

double as_double(const Value& v) {
  return std::holds_alternative<double>(v) ? std::get<double>(v) : static_cast<double>(std::get<int64_t>(v));
}

absl::Status overflow(Op op, TypeKind type = TypeKind::kBigInt) {
  return absl::OutOfRangeError(std::string(type == TypeKind::kDecimal ? "DECIMAL" : "BIGINT") + " overflow in " +
                               std::string(op_name(op)));
}

absl::StatusOr<Value> arithmetic(Op op, TypeKind type, const Value& a, const Value& b) {
  if (type == TypeKind::kDouble) {
    const double x = as_double(a), y = as_double(b);
    switch (op) {
      case Op::kAdd: return x + y;
      case Op::kSubtract: return x - y;
      case Op::kMultiply: return x * y;
      case Op::kDivide:
        if (y == 0) return absl::OutOfRangeError("division by zero");
        return x / y;
      case Op::kModulo:
        if (y == 0) return absl::OutOfRangeError("division by zero");
        return std::fmod(x, y);
      default: break;
    }
    return absl::InternalError("not arithmetic");
  }
  // BIGINT, TIMESTAMP and INTERVAL are all int64 milliseconds or integers.
  const int64_t x = std::get<int64_t>(a), y = std::get<int64_t>(b);
  int64_t r = 0;
  switch (op) {
    case Op::kAdd:
      if (__builtin_add_overflow(x, y, &r)) return overflow(op, type);
      return r;
    case Op::kSubtract:
      if (__builtin_sub_overflow(x, y, &r)) return overflow(op, type);
      return r;
    case Op::kMultiply:
      if (__builtin_mul_overflow(x, y, &r)) return overflow(op, type);
      return r;
    case Op::kDivide:
    case Op::kModulo:
      if (y == 0) return absl::OutOfRangeError("division by zero");
      if (x == INT64_MIN && y == -1) return overflow(op);
      return op == Op::kDivide ? x / y : x % y;
    default: break;
  }
  return absl::InternalError("not arithmetic");
}

// -1, 0, 1; both operands non-NULL and of comparable types.
int compare(const Value& a, const Value& b) {
  if (std::holds_alternative<double>(a) || std::holds_alternative<double>(b)) {
    const double x = as_double(a), y = as_double(b);
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (std::holds_alternative<int64_t>(a)) {
    const int64_t x = std::get<int64_t>(a), y = std::get<int64_t>(b);
    return x < y ? -1 : (x > y ? 1 : 0);
  }
  if (std::holds_alternative<bool>(a)) return static_cast<int>(std::get<bool>(a)) - static_cast<int>(std::get<bool>(b));
  const int c = std::get<std::string>(a).compare(std::get<std::string>(b));
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

// A DECIMAL value of type `t` (precision up to 18) must have at most
// t.precision digits.
absl::StatusOr<Value> fits(int64_t unscaled, const Type& t) {
  if (t.precision <= kMaxDecimalDigits && (unscaled >= pow10(t.precision) || unscaled <= -pow10(t.precision))) {
    return absl::OutOfRangeError("CAST to " + t.to_string() + ": " + decimal_text(unscaled, t.scale) + " has too many digits");
  }
  return unscaled;
}

absl::StatusOr<Value> cast(const Value& v, const Type& from_type, const Type& to_type) {
  const TypeKind from = from_type.kind, to = to_type.kind;
  if (is_null(v)) return v;
  if (to == TypeKind::kDecimal) {
    absl::StatusOr<int64_t> d = absl::InvalidArgumentError("");
    switch (from) {
      case TypeKind::kDecimal: d = rescale(std::get<int64_t>(v), from_type.scale, to_type.scale); break;
      case TypeKind::kBigInt: d = rescale(std::get<int64_t>(v), 0, to_type.scale); break;
      case TypeKind::kDouble: d = double_to_decimal(std::get<double>(v), to_type.scale); break;
      case TypeKind::kVarchar: d = parse_decimal(std::get<std::string>(v), to_type.scale); break;
      default:
        return absl::InvalidArgumentError("cannot CAST " + std::string(type_name(from)) + " to DECIMAL");
    }
    if (!d.ok()) return absl::Status(d.status().code(), "CAST to " + to_type.to_string() + ": " + std::string(d.status().message()));
    return fits(*d, to_type);
  }
  if (from == TypeKind::kDecimal) {
    const int64_t u = std::get<int64_t>(v);
    switch (to) {
      case TypeKind::kBigInt: return u / pow10(from_type.scale);  // truncated, as Flink
      case TypeKind::kDouble: return decimal_to_double(u, from_type.scale);
      case TypeKind::kVarchar: return decimal_text(u, from_type.scale);
      default:
        return absl::InvalidArgumentError("cannot CAST DECIMAL to " + std::string(type_name(to)));
    }
  }
  if (from == to) return v;
  if (to == TypeKind::kVarchar) return value_text(v, from_type);
  constexpr int64_t kDayMs = 86'400'000;
  switch (to) {
    case TypeKind::kBigInt:
      if (from == TypeKind::kDouble) {
        const double d = std::trunc(std::get<double>(v));
        if (!(d >= -9.2233720368547758e18 && d < 9.2233720368547758e18)) return absl::OutOfRangeError("CAST to BIGINT: out of range");
        return static_cast<int64_t>(d);
      }
      if (from == TypeKind::kBoolean) return static_cast<int64_t>(std::get<bool>(v));
      if (from == TypeKind::kTimestamp || from == TypeKind::kInterval) return std::get<int64_t>(v);
      if (from == TypeKind::kVarchar) {
        int64_t n;
        if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(std::get<std::string>(v)), &n)) {
          return absl::InvalidArgumentError("CAST to BIGINT: not an integer: '" + std::get<std::string>(v) + "'");
        }
        return n;
      }
      break;
    case TypeKind::kDouble:
      if (from == TypeKind::kBigInt) return static_cast<double>(std::get<int64_t>(v));
      if (from == TypeKind::kVarchar) {
        double d;
        if (!absl::SimpleAtod(absl::StripAsciiWhitespace(std::get<std::string>(v)), &d)) {
          return absl::InvalidArgumentError("CAST to DOUBLE: not a number: '" + std::get<std::string>(v) + "'");
        }
        return d;
      }
      break;
    case TypeKind::kVarchar:
      break;
    case TypeKind::kBoolean:
      if (from == TypeKind::kBigInt) return std::get<int64_t>(v) != 0;
      if (from == TypeKind::kVarchar) {
        const std::string s = absl::AsciiStrToLower(absl::StripAsciiWhitespace(std::get<std::string>(v)));
        if (s == "true" || s == "t" || s == "1") return true;
        if (s == "false" || s == "f" || s == "0") return false;
        return absl::InvalidArgumentError("CAST to BOOLEAN: not a truth value: '" + std::get<std::string>(v) + "'");
      }
      break;
    case TypeKind::kTimestamp:
      if (from == TypeKind::kBigInt) return std::get<int64_t>(v);
      if (from == TypeKind::kDate) return std::get<int64_t>(v) * kDayMs;
      if (from == TypeKind::kTime) return v;  // on 1970-01-01
      if (from == TypeKind::kVarchar) {
        auto ms = parse_timestamp_text(std::string(absl::StripAsciiWhitespace(std::get<std::string>(v))));
        if (!ms) return absl::InvalidArgumentError("CAST to TIMESTAMP: not a timestamp: '" + std::get<std::string>(v) + "'");
        return *ms;
      }
      break;
    case TypeKind::kDate:
      if (from == TypeKind::kTimestamp) {
        const int64_t ms = std::get<int64_t>(v);
        return ms / kDayMs - (ms % kDayMs < 0 ? 1 : 0);  // the day it falls in, also before 1970
      }
      if (from == TypeKind::kVarchar) {
        auto d = parse_date(std::get<std::string>(v));
        if (!d.ok()) return absl::InvalidArgumentError("CAST to DATE: " + std::string(d.status().message()));
        return *d;
      }
      break;
    case TypeKind::kTime:
      if (from == TypeKind::kTimestamp) return (std::get<int64_t>(v) % kDayMs + kDayMs) % kDayMs;
      if (from == TypeKind::kVarchar) {
        auto t = parse_time(std::get<std::string>(v));
        if (!t.ok()) return absl::InvalidArgumentError("CAST to TIME: " + std::string(t.status().message()));
        return *t;
      }
      break;
    case TypeKind::kBytes:
      if (from == TypeKind::kVarchar) return v;  // the text's UTF-8 bytes
      break;
    case TypeKind::kArray:
    case TypeKind::kMap:
      break;
    case TypeKind::kInterval:
      if (from == TypeKind::kBigInt) return std::get<int64_t>(v);
      break;
    case TypeKind::kNull:
    case TypeKind::kDecimal:
      break;
  }
  return absl::InvalidArgumentError("cannot CAST " + std::string(type_name(from)) + " to " + std::string(type_name(to)));
}

int64_t power_of_ten(int n) {
  int64_t p = 1;
  for (int i = 0; i < n; ++i) p *= 10;
  return p;
}

// ROUND(x, digits), FLOOR(x), CEIL(x) of a number `x` of type `from`,
// as type `to` (a DECIMAL's scale: the digits kept). Halves round away
// from zero, as Flink's ROUND does.
absl::StatusOr<Value> round_number(Op op, const Value& x, const Type& from, const Type& to, int64_t digits) {
  if (from.kind == TypeKind::kDouble) {
    const double d = std::get<double>(x);
    if (op == Op::kFloor) return std::floor(d);
    if (op == Op::kCeil) return std::ceil(d);
    if (digits > 300 || digits < -300) return digits > 0 ? d : 0.0;
    const double f = std::pow(10.0, static_cast<double>(digits));
    return std::round(d * f) / f;
  }
  const int64_t n = std::get<int64_t>(x);
  const int scale = from.kind == TypeKind::kDecimal ? from.scale : 0;
  // The digits dropped: `drop` decimal places of the unscaled value.
  int64_t drop = op == Op::kRound ? scale - digits : scale;
  if (drop <= 0) return n;  // nothing to drop (the scale stays: `to` is `from`)
  if (drop > 18) return int64_t{0};
  const int64_t f = power_of_ten(static_cast<int>(drop));
  int64_t q = n / f;
  const int64_t r = n % f;
  if (op == Op::kFloor && r < 0) --q;
  if (op == Op::kCeil && r > 0) ++q;
  if (op == Op::kRound && (r >= 0 ? r : -r) >= f - (r >= 0 ? r : -r)) q += n < 0 ? -1 : 1;
  // Rounded to the left of the point (ROUND(x, -2)): back to the scale of `to`.
  const int64_t back = static_cast<int64_t>(to.kind == TypeKind::kDecimal ? to.scale : 0) - (scale - drop);
  if (back > 0) {
    int64_t out;
    if (back > 18 || __builtin_mul_overflow(q, power_of_ten(static_cast<int>(back)), &out)) {
      return absl::OutOfRangeError(std::string(op_name(op)) + ": overflow");
    }
    return out;
  }
  return q;
}

// A strict call `e` of non-NULL operand values `v`.
absl::StatusOr<Value> apply_strict(const Expr& e, absl::Span<const Value* const> v) {
  switch (e.op) {
    case Op::kAdd:
    case Op::kSubtract:
    case Op::kMultiply:
    case Op::kDivide:
    case Op::kModulo:
      if (e.type.kind == TypeKind::kDecimal && e.op == Op::kDivide) {
        // Operands of other scales: the quotient at the result's scale.
        if (std::get<int64_t>(*v[1]) == 0) return absl::OutOfRangeError("division by zero");
        auto q = decimal_divide(std::get<int64_t>(*v[0]), e.args[0].type.scale, std::get<int64_t>(*v[1]),
                                e.args[1].type.scale, e.type.scale);
        if (!q.ok()) return q.status();
        return *q;
      }
      // DECIMAL operands of + - % have the result's scale (the binder casts
      // them), and a product's scale is the sum of its operands'.
      return arithmetic(e.op, e.type.kind, *v[0], *v[1]);
    case Op::kNegate:
      if (std::holds_alternative<double>(*v[0])) return -std::get<double>(*v[0]);
      if (std::get<int64_t>(*v[0]) == INT64_MIN) return overflow(e.op);
      return -std::get<int64_t>(*v[0]);
    case Op::kEqual: return compare(*v[0], *v[1]) == 0;
    case Op::kNotEqual: return compare(*v[0], *v[1]) != 0;
    case Op::kLess: return compare(*v[0], *v[1]) < 0;
    case Op::kLessEqual: return compare(*v[0], *v[1]) <= 0;
    case Op::kGreater: return compare(*v[0], *v[1]) > 0;
    case Op::kGreaterEqual: return compare(*v[0], *v[1]) >= 0;
    case Op::kNot: return !std::get<bool>(*v[0]);
    case Op::kProctime:
    case Op::kNow: return absl::ToUnixMillis(absl::Now());
    case Op::kCast: return cast(*v[0], e.args[0].type, e.type);
    case Op::kTryCast: {
      auto c = cast(*v[0], e.args[0].type, e.type);
      return c.ok() ? *std::move(c) : Value{};
    }
    case Op::kRound:
    case Op::kFloor:
    case Op::kCeil:
      return round_number(e.op, *v[0], e.args[0].type, e.type, v.size() > 1 ? std::get<int64_t>(*v[1]) : 0);
    case Op::kConcat: {
      std::string s;
      for (size_t i = 0; i < v.size(); ++i) {
        auto t = cast(*v[i], e.args[i].type, Type{TypeKind::kVarchar});
        if (!t.ok()) return t.status();
        s += std::get<std::string>(*t);
      }
      return s;
    }
    case Op::kLower: return absl::AsciiStrToLower(std::get<std::string>(*v[0]));
    case Op::kUpper: return absl::AsciiStrToUpper(std::get<std::string>(*v[0]));
    case Op::kCharLength: {
      // Characters, not bytes: UTF-8 continuation bytes are not counted.
      int64_t n = 0;
      for (unsigned char c : std::get<std::string>(*v[0])) n += (c & 0xC0) != 0x80;
      return n;
    }
    case Op::kAbs:
      if (std::holds_alternative<double>(*v[0])) return std::fabs(std::get<double>(*v[0]));
      if (std::get<int64_t>(*v[0]) == INT64_MIN) return overflow(e.op);
      return std::llabs(std::get<int64_t>(*v[0]));
    default:
      return evaluate_function(e.op, v);
  }
  return absl::InternalError("cannot evaluate " + std::string(op_name(e.op)));
}

absl::StatusOr<Value> value_of(absl::StatusOr<const Value*> v) {
  if (!v.ok()) return v.status();
  return **v;
}

}  // namespace

int compare_sort_keys(const std::vector<Value>& a, const std::vector<Value>& b, const std::vector<bool>& descending) {
  for (size_t i = 0; i < a.size(); ++i) {
    const bool an = std::holds_alternative<std::monostate>(a[i]), bn = std::holds_alternative<std::monostate>(b[i]);
    if (an || bn) {
      if (an != bn) return an ? 1 : -1;
      continue;
    }
    if (a[i] == b[i]) continue;
    const bool less = a[i] < b[i];
    return (less != descending[i]) ? -1 : 1;
  }
  return 0;
}

std::string_view op_name(Op op) {
  switch (op) {
    case Op::kAdd: return "+";
    case Op::kSubtract: return "-";
    case Op::kMultiply: return "*";
    case Op::kDivide: return "/";
    case Op::kModulo: return "%";
    case Op::kNegate: return "-";
    case Op::kEqual: return "=";
    case Op::kNotEqual: return "<>";
    case Op::kLess: return "<";
    case Op::kLessEqual: return "<=";
    case Op::kGreater: return ">";
    case Op::kGreaterEqual: return ">=";
    case Op::kAnd: return "AND";
    case Op::kOr: return "OR";
    case Op::kNot: return "NOT";
    case Op::kIsNull: return "IS NULL";
    case Op::kIsNotNull: return "IS NOT NULL";
    case Op::kCast: return "CAST";
    case Op::kCase: return "CASE";
    case Op::kCoalesce: return "COALESCE";
    case Op::kConcat: return "||";
    case Op::kLower: return "LOWER";
    case Op::kUpper: return "UPPER";
    case Op::kCharLength: return "CHAR_LENGTH";
    case Op::kAbs: return "ABS";
    case Op::kRegexpExtract: return "REGEXP_EXTRACT";
    case Op::kRegexp: return "REGEXP";
    case Op::kLike: return "LIKE";
    case Op::kSplitIndex: return "SPLIT_INDEX";
    case Op::kSubstring: return "SUBSTRING";
    case Op::kDateFormat: return "DATE_FORMAT";
    case Op::kHour: return "HOUR";
    case Op::kMinute: return "MINUTE";
    case Op::kCountChar: return "COUNT_CHAR";
    case Op::kExtract: return "EXTRACT";
    case Op::kFloorTime: return "FLOOR";
    case Op::kCeilTime: return "CEIL";
    case Op::kTimestampAdd: return "TIMESTAMPADD";
    case Op::kTimestampDiff: return "TIMESTAMPDIFF";
    case Op::kUnixTimestamp: return "UNIX_TIMESTAMP";
    case Op::kPosition: return "POSITION";
    case Op::kTrim: return "TRIM";
    case Op::kLtrim: return "LTRIM";
    case Op::kRtrim: return "RTRIM";
    case Op::kReplace: return "REPLACE";
    case Op::kLpad: return "LPAD";
    case Op::kRpad: return "RPAD";
    case Op::kInitcap: return "INITCAP";
    case Op::kRound: return "ROUND";
    case Op::kFloor: return "FLOOR";
    case Op::kCeil: return "CEIL";
    case Op::kPower: return "POWER";
    case Op::kSqrt: return "SQRT";
    case Op::kLn: return "LN";
    case Op::kLog10: return "LOG10";
    case Op::kExp: return "EXP";
    case Op::kJsonValue: return "JSON_VALUE";
    case Op::kJsonQuery: return "JSON_QUERY";
    case Op::kTryCast: return "TRY_CAST";
    case Op::kConcatWs: return "CONCAT_WS";
    case Op::kProctime: return "PROCTIME";
    case Op::kNow: return "CURRENT_TIMESTAMP";
    case Op::kMakeArray: return "ARRAY";
    case Op::kMakeMap: return "MAP";
    case Op::kElementAt:
    case Op::kValueAt: return "[]";
    case Op::kCardinality: return "CARDINALITY";
    case Op::kElement: return "ELEMENT";
    case Op::kArrayContains: return "ARRAY_CONTAINS";
    case Op::kArrayJoin: return "ARRAY_JOIN";
    case Op::kMapKeys: return "MAP_KEYS";
    case Op::kMapValues: return "MAP_VALUES";
    case Op::kCurrentWatermark: return "CURRENT_WATERMARK";
    case Op::kParseTimestamp: return "TO_TIMESTAMP";
  }
  return "?";
}

Expr Expr::column_ref(int index, Type type) {
  Expr e;
  e.kind = Kind::kColumn;
  e.column = index;
  e.type = type;
  return e;
}

Expr Expr::constant(Value v, Type type) {
  Expr e;
  e.kind = Kind::kLiteral;
  type.nullable = std::holds_alternative<std::monostate>(v);
  e.type = type;
  e.literal = std::move(v);
  return e;
}

Expr Expr::call(Op op, Type type, std::vector<Expr> args) {
  Expr e;
  e.kind = Kind::kCall;
  e.op = op;
  e.type = type;
  e.args = std::move(args);
  return e;
}

bool Expr::is_constant() const {
  if (kind == Kind::kColumn || (kind == Kind::kCall && (op == Op::kProctime || op == Op::kNow || op == Op::kCurrentWatermark))) {
    return false;
  }
  for (const Expr& a : args) {
    if (!a.is_constant()) return false;
  }
  return true;
}

std::string literal_text(const Value& v, const Type& t) {
  const TypeKind type = t.kind;
  if (std::holds_alternative<std::monostate>(v)) return "NULL";
  if (std::holds_alternative<bool>(v)) return std::get<bool>(v) ? "TRUE" : "FALSE";
  if (std::holds_alternative<double>(v)) return absl::StrCat(std::get<double>(v));
  if (type == TypeKind::kArray) return "ARRAY" + value_text(v, t);
  if (type == TypeKind::kMap) return "MAP" + value_text(v, t);
  if (type == TypeKind::kBytes) return "X'" + absl::BytesToHexString(std::get<std::string>(v)) + "'";
  if (std::holds_alternative<std::string>(v)) {
    std::string s = "'";
    for (char c : std::get<std::string>(v)) s += c == '\'' ? std::string("''") : std::string(1, c);
    return s + "'";
  }
  const int64_t n = std::get<int64_t>(v);
  if (type == TypeKind::kTimestamp) return "TIMESTAMP '" + timestamp_text(n) + "'";
  if (type == TypeKind::kDate) return "DATE '" + date_text(n) + "'";
  if (type == TypeKind::kTime) return "TIME '" + time_text(n) + "'";
  if (type == TypeKind::kInterval) return "INTERVAL '" + absl::StrCat(n) + "' MILLISECOND";
  if (type == TypeKind::kDecimal) return decimal_text(n, t.scale);
  return absl::StrCat(n);
}

std::string Expr::to_string(const std::vector<std::string>& input) const {
  if (kind == Kind::kColumn) return column >= 0 && column < static_cast<int>(input.size()) ? input[column] : "$" + std::to_string(column);
  if (kind == Kind::kLiteral) return literal_text(literal, type);
  std::vector<std::string> a;
  for (const Expr& x : args) a.push_back(x.to_string(input));
  switch (op) {
    case Op::kNegate: return "-" + a[0];
    case Op::kNot: return "NOT " + a[0];
    case Op::kIsNull:
    case Op::kIsNotNull: return a[0] + " " + std::string(op_name(op));
    case Op::kCast:
    case Op::kTryCast: {
      Type shown = type;
      shown.nullable = true;
      return std::string(op == Op::kCast ? "CAST(" : "TRY_CAST(") + a[0] + " AS " + shown.to_string() + ")";
    }
    case Op::kNow: return "CURRENT_TIMESTAMP";
    case Op::kCase: {
      std::string s = "CASE";
      const size_t pairs = (args.size() - (has_else ? 1 : 0)) / 2;
      for (size_t i = 0; i < pairs; ++i) s += " WHEN " + a[2 * i] + " THEN " + a[2 * i + 1];
      if (has_else) s += " ELSE " + a.back();
      return s + " END";
    }
    case Op::kLike: return "(" + a[0] + " LIKE " + a[1] + ")";
    case Op::kCoalesce:
    case Op::kLower:
    case Op::kUpper:
    case Op::kCharLength:
    case Op::kAbs:
    case Op::kRegexpExtract:
    case Op::kRegexp:
    case Op::kSplitIndex:
    case Op::kSubstring:
    case Op::kDateFormat:
    case Op::kHour:
    case Op::kMinute:
    case Op::kCountChar:
    case Op::kExtract:
    case Op::kFloorTime:
    case Op::kCeilTime:
    case Op::kTimestampAdd:
    case Op::kTimestampDiff:
    case Op::kUnixTimestamp:
    case Op::kPosition:
    case Op::kTrim:
    case Op::kLtrim:
    case Op::kRtrim:
    case Op::kReplace:
    case Op::kLpad:
    case Op::kRpad:
    case Op::kInitcap:
    case Op::kRound:
    case Op::kFloor:
    case Op::kCeil:
    case Op::kPower:
    case Op::kSqrt:
    case Op::kLn:
    case Op::kLog10:
    case Op::kExp:
    case Op::kJsonValue:
    case Op::kJsonQuery:
    case Op::kConcatWs:
    case Op::kCardinality:
    case Op::kElement:
    case Op::kArrayContains:
    case Op::kArrayJoin:
    case Op::kMapKeys:
    case Op::kMapValues:
    case Op::kCurrentWatermark:
    case Op::kParseTimestamp:
    case Op::kProctime: return std::string(op_name(op)) + "(" + absl::StrJoin(a, ", ") + ")";
    case Op::kMakeArray:
    case Op::kMakeMap: return std::string(op_name(op)) + "[" + absl::StrJoin(a, ", ") + "]";
    case Op::kElementAt:
    case Op::kValueAt: return a[0] + "[" + a[1] + "]";
    case Op::kAnd:
    case Op::kOr: return "(" + absl::StrJoin(a, " " + std::string(op_name(op)) + " ") + ")";
    default: return "(" + a[0] + " " + std::string(op_name(op)) + " " + a[1] + ")";
  }
}

Expr cast_to(Expr e, const Type& to) {
  const Type& from = e.type;
  if (from.kind == TypeKind::kNull || (from.kind == to.kind && (to.kind != TypeKind::kDecimal || from.scale == to.scale))) {
    return e;
  }
  Type t = to;
  t.nullable = from.nullable;
  if (e.kind == Expr::Kind::kLiteral) {
    auto v = cast(e.literal, from, t);
    if (v.ok()) return Expr::constant(*std::move(v), t);
  }
  return Expr::call(Op::kCast, t, {std::move(e)});
}

Expr conjunction(std::vector<Expr> parts) {
  if (parts.size() == 1) return std::move(parts[0]);
  std::vector<Expr> args;
  bool nullable = false;
  for (Expr& p : parts) {
    nullable = nullable || p.type.nullable;
    if (p.kind == Expr::Kind::kCall && p.op == Op::kAnd) {
      for (Expr& a : p.args) args.push_back(std::move(a));
    } else {
      args.push_back(std::move(p));
    }
  }
  return Expr::call(Op::kAnd, {TypeKind::kBoolean, nullable}, std::move(args));
}

size_t expression_nodes(const Expr& e) {
  size_t n = 1;
  for (const Expr& a : e.args) n += expression_nodes(a);
  return n;
}

int expression_depth(const Expr& e) {
  int deepest = 0;
  for (const Expr& a : e.args) deepest = std::max(deepest, expression_depth(a));
  return deepest + 1;
}

Expr compose(const Expr& e, const std::vector<Expr>& columns) {
  if (e.kind == Expr::Kind::kColumn) return columns[static_cast<size_t>(e.column)];
  if (e.kind == Expr::Kind::kLiteral) return e;
  Expr out = e;
  for (Expr& a : out.args) a = compose(a, columns);
  return out;
}

Expr comparison(Op op, Expr a, Expr b) {
  const bool decimal = a.type.kind == TypeKind::kDecimal || b.type.kind == TypeKind::kDecimal;
  if (decimal) {
    if (auto t = common_type(a.type, b.type)) {
      a = cast_to(std::move(a), *t);
      b = cast_to(std::move(b), *t);
    }
  }
  const bool nullable = a.type.nullable || b.type.nullable;
  return Expr::call(op, {TypeKind::kBoolean, nullable}, {std::move(a), std::move(b)});
}

namespace {
thread_local const int64_t* current_watermark = nullptr;
}  // namespace

WatermarkScope::WatermarkScope(const int64_t* watermark) : previous_(current_watermark) { current_watermark = watermark; }
WatermarkScope::~WatermarkScope() { current_watermark = previous_; }

bool reads_watermark(const Expr& e) {
  if (e.kind == Expr::Kind::kCall && e.op == Op::kCurrentWatermark) return true;
  for (const Expr& a : e.args) {
    if (reads_watermark(a)) return true;
  }
  return false;
}

absl::StatusOr<Value> evaluate_call(const Expr& e, OperandFn operand) {
  // Operators that look at NULLs themselves, evaluating lazily.
  switch (e.op) {
    case Op::kCurrentWatermark:  // the argument names the time attribute; its value is not read
      if (current_watermark == nullptr) {
        return absl::FailedPreconditionError("CURRENT_WATERMARK is read only in a WHERE clause or a SELECT list");
      }
      if (*current_watermark == INT64_MIN) return Value{};
      return *current_watermark;
    case Op::kAnd:
    case Op::kOr: {
      const bool stop_on = e.op == Op::kOr;  // OR stops on TRUE, AND on FALSE
      bool saw_null = false;
      for (size_t i = 0; i < e.args.size(); ++i) {
        auto v = operand(i);
        if (!v.ok()) return v.status();
        if (is_null(**v)) {
          saw_null = true;
        } else if (std::get<bool>(**v) == stop_on) {
          return stop_on;
        }
      }
      return saw_null ? Value{} : Value{!stop_on};
    }
    case Op::kIsNull:
    case Op::kIsNotNull: {
      auto v = operand(0);
      if (!v.ok()) return v.status();
      return is_null(**v) == (e.op == Op::kIsNull);
    }
    case Op::kCoalesce:
      for (size_t i = 0; i < e.args.size(); ++i) {
        auto v = operand(i);
        if (!v.ok()) return v.status();
        if (!is_null(**v)) return **v;
      }
      return Value{};
    case Op::kConcatWs: {  // NULL only when the separator is
      auto sep = operand(0);
      if (!sep.ok()) return sep.status();
      if (is_null(**sep)) return Value{};
      std::string out;
      bool first = true;
      for (size_t i = 1; i < e.args.size(); ++i) {
        auto v = operand(i);
        if (!v.ok()) return v.status();
        if (is_null(**v)) continue;
        if (!first) out += std::get<std::string>(**sep);
        out += std::get<std::string>(**v);
        first = false;
      }
      return out;
    }
    case Op::kMakeArray:
    case Op::kMakeMap: {  // NULL elements and values are kept
      std::vector<Value> elements;
      for (size_t i = 0; i < e.args.size(); ++i) {
        auto v = operand(i);
        if (!v.ok()) return v.status();
        elements.push_back(**v);
      }
      if (e.op == Op::kMakeArray) return encode_elements(elements);
      std::vector<std::pair<Value, Value>> entries;
      for (size_t i = 0; i + 1 < elements.size(); i += 2) entries.emplace_back(std::move(elements[i]), std::move(elements[i + 1]));
      auto m = encode_map(std::move(entries));
      if (!m.ok()) return m.status();
      return *std::move(m);
    }
    case Op::kCase: {
      const size_t pairs = (e.args.size() - (e.has_else ? 1 : 0)) / 2;
      for (size_t i = 0; i < pairs; ++i) {
        auto when = operand(2 * i);
        if (!when.ok()) return when.status();
        if (!is_null(**when) && std::get<bool>(**when)) return value_of(operand(2 * i + 1));
      }
      return e.has_else ? value_of(operand(e.args.size() - 1)) : Value{};
    }
    default:
      break;
  }
  absl::InlinedVector<const Value*, 4> v;
  for (size_t i = 0; i < e.args.size(); ++i) {
    auto x = operand(i);
    if (!x.ok()) return x.status();
    if (is_null(**x)) return Value{};  // strict from here on
    v.push_back(*x);
  }
  return apply_strict(e, v);
}

absl::StatusOr<Value> evaluate(const Expr& e, const Row& row) {
  if (e.kind == Expr::Kind::kColumn) return row.values[e.column];
  if (e.kind == Expr::Kind::kLiteral) return e.literal;
  absl::InlinedVector<Value, 4> held(e.args.size());
  return evaluate_call(e, [&](size_t i) -> absl::StatusOr<const Value*> {
    const Expr& a = e.args[i];
    if (a.kind == Expr::Kind::kColumn) return &row.values[a.column];
    if (a.kind == Expr::Kind::kLiteral) return &a.literal;
    auto x = evaluate(a, row);
    if (!x.ok()) return x.status();
    held[i] = *std::move(x);
    return &held[i];
  });
}

}  // namespace weir::sql
