// Binder's constants and types (sql/binder.h): literals, CAST, INTERVAL,
// type names with their modifiers, and the types DECIMAL arithmetic gives.
#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "sql/binder.h"
#include "sql/decimal.h"

namespace weir::sql {

absl::StatusOr<Type> sql_type(const ast::DataType& d, std::string_view text) {
  Type type;
  if (d.name == "DECIMAL" || d.name == "DEC" || d.name == "NUMERIC") {
    // DECIMAL is DECIMAL(10, 0), DECIMAL(p) DECIMAL(p, 0), as in Flink.
    const int p = d.params.empty() ? 10 : d.params[0], sc = d.params.size() < 2 ? 0 : d.params[1];
    if (d.params.size() > 2 || p < 1 || p > kMaxDecimalPrecision || sc < 0 || sc > p) {
      return sql_error(text, d.offset, "DECIMAL(p, s) needs 1 <= p <= 38 and 0 <= s <= p");
    }
    if (sc > kMaxDecimalDigits) return sql_unsupported(text, d.offset, "a DECIMAL scale over 18");
    type = Type::decimal(p, sc, true);
  } else if (d.name == "ARRAY" || d.name == "MAP") {
    // Elements of a scalar type: DECIMAL, ROW and collections inside a
    // collection are not held yet.
    std::vector<TypeKind> kinds;
    for (const ast::DataType& e : d.elements) {
      auto et = sql_type(e, text);
      if (!et.ok()) return et.status();
      if (et->kind == TypeKind::kDecimal || et->collection() || et->kind == TypeKind::kInterval) {
        return sql_unsupported(text, e.offset, d.name + " of " + e.name);
      }
      kinds.push_back(et->kind);
    }
    if (kinds.size() != (d.name == "MAP" ? 2u : 1u)) return sql_error(text, d.offset, d.name + " needs its element types");
    type = d.name == "MAP" ? Type::map(kinds[0], kinds[1], true) : Type::array(kinds[0], true);
  } else if (auto kind = type_of_name(absl::AsciiStrToLower(d.name)); kind && *kind != TypeKind::kDecimal) {
    type.kind = *kind;
    if (type.kind == TypeKind::kTime && !d.params.empty() && (d.params.size() > 1 || d.params[0] > 3)) {
      return sql_error(text, d.offset, "TIME(" + std::to_string(d.params[0]) + "): weir's times hold milliseconds (TIME(3))");
    }
    const bool sized = d.name == "CHAR" || d.name == "CHARACTER" || d.name == "VARCHAR" || d.name == "BINARY" ||
                       d.name == "VARBINARY" || type.kind == TypeKind::kTime;
    if (type.kind == TypeKind::kTimestamp && !d.params.empty() && (d.params.size() > 1 || d.params[0] > 3)) {
      return sql_error(text, d.offset, d.name + "(" + std::to_string(d.params[0]) + "): weir's timestamps hold milliseconds (" +
                                           d.name + "(3))");
    }
    if (!d.params.empty() && !sized && type.kind != TypeKind::kTimestamp) return sql_error(text, d.offset, d.name + " takes no length");
  } else if (d.name == "MULTISET" || d.name == "RAW" || d.name == "ROW" || d.name == "TIME_LTZ") {
    return sql_unsupported(text, d.offset, "the type " + d.name);
  } else {
    return sql_error(text, d.offset, "unknown type " + d.name);
  }
  type.nullable = !d.not_null;
  return type;
}

absl::StatusOr<Expr> Binder::literal(const ast::Expr& e) const {
  const ast::Literal& l = e.literal;
  switch (l.kind) {
    case ast::Literal::Kind::kNull:
      return Expr::constant(Value{}, {TypeKind::kNull, true});
    case ast::Literal::Kind::kInteger:
      return Expr::constant(l.integer, {TypeKind::kBigInt, false});
    case ast::Literal::Kind::kString:
      return Expr::constant(l.text, {TypeKind::kVarchar, false});
    case ast::Literal::Kind::kBoolean:
      return Expr::constant(l.boolean, {TypeKind::kBoolean, false});
    case ast::Literal::Kind::kNumber:
      break;
  }
  const std::string& text = l.text;
  int64_t i;
  if (absl::SimpleAtoi(text, &i)) return Expr::constant(i, {TypeKind::kBigInt, false});  // beyond 32 bits
  // 1.25 is a DECIMAL(3, 2), as in Flink; with an exponent (or more
  // digits than a DECIMAL holds), a DOUBLE.
  const size_t point = text.find('.');
  size_t digits = 0;
  for (char c : text) digits += absl::ascii_isdigit(static_cast<unsigned char>(c)) ? 1 : 0;
  if (point != std::string::npos && text.find_first_of("eE") == std::string::npos && digits <= kMaxDecimalDigits) {
    const int scale = static_cast<int>(text.size() - point - 1);
    auto unscaled = parse_decimal(text, scale);
    if (unscaled.ok()) {  // the precision: the digits of the unscaled value (0.908: 3)
      const int precision = static_cast<int>(std::to_string(std::llabs(*unscaled)).size());
      return Expr::constant(*unscaled, Type::decimal(std::max(precision, scale), scale, false));
    }
  }
  double d;
  if (!absl::SimpleAtod(text, &d)) return error(e.offset, "not a number: " + text);
  return Expr::constant(d, {TypeKind::kDouble, false});
}

absl::StatusOr<Expr> Binder::type_cast(const ast::Expr& e, const std::vector<Scope>& scopes) const {
  const int at = e.offset;
  if (e.type.name == "INTERVAL") return interval(e);
  auto type = sql_type(e.type, text_);
  if (!type.ok()) return type.status();
  if (type->kind == TypeKind::kTimestamp && !e.type.params.empty() && e.type.params[0] != 3) {
    return error(e.type.offset, "TIMESTAMP(" + std::to_string(e.type.params[0]) + "): only TIMESTAMP(3) (milliseconds) is supported");
  }
  const TypeKind* to = &type->kind;
  auto x = bind(e.args[0], scopes);
  if (!x.ok()) return x.status();
  const TypeKind from = x->type.kind;
  const bool to_collection = type->collection();
  const bool ok = (from == *to && !to_collection) || from == TypeKind::kNull || *to == TypeKind::kVarchar ||
                  (from == TypeKind::kVarchar && !to_collection) ||
                  (x->type.numeric() && Type{*to}.numeric()) ||
                  (from == TypeKind::kBoolean && *to == TypeKind::kBigInt) ||
                  (from == TypeKind::kBigInt && (*to == TypeKind::kBoolean || *to == TypeKind::kTimestamp)) ||
                  (from == TypeKind::kTimestamp &&
                   (*to == TypeKind::kBigInt || *to == TypeKind::kDate || *to == TypeKind::kTime)) ||
                  (from == TypeKind::kDate && *to == TypeKind::kTimestamp) ||
                  (to_collection && assignable(x->type, *type));
  const char* what = e.try_cast ? "TRY_CAST" : "CAST";
  if (!ok) {
    Type shown_from = x->type, shown_to = *type;
    shown_from.nullable = shown_to.nullable = true;
    return error(at, std::string("cannot ") + what + " " + shown_from.to_string() + " to " + shown_to.to_string());
  }
  type->nullable = x->type.nullable || e.try_cast;
  return Expr::call(e.try_cast ? Op::kTryCast : Op::kCast, *type, {*std::move(x)});
}

// INTERVAL '4' SECOND (the unit as the syntax gives it), or INTERVAL
// '10 seconds'.
absl::StatusOr<Expr> Binder::interval(const ast::Expr& e) const {
  const int at = e.offset;
  const ast::Expr& arg = e.args[0];
  if (arg.kind != ast::Expr::Kind::kLiteral || arg.literal.kind != ast::Literal::Kind::kString) {
    return unsupported(at, "an INTERVAL of an expression");
  }
  std::string text = arg.literal.text;
  int64_t unit_ms = 0;
  if (!e.unit.empty()) {
    static const std::map<std::string, int64_t> kUnits = {
        {"SECOND", 1000}, {"MINUTE", 60'000}, {"HOUR", 3'600'000}, {"DAY", 86'400'000}};
    auto it = kUnits.find(e.unit);
    if (e.unit == "MONTH" || e.unit == "YEAR") return unsupported(at, "INTERVAL in months or years");
    if (it == kUnits.end()) return unsupported(at, "this INTERVAL (one of SECOND, MINUTE, HOUR, DAY)");
    unit_ms = it->second;
  } else {
    // "10 seconds", "2 minute", ...
    std::vector<std::string> words = absl::StrSplit(absl::StripAsciiWhitespace(text), ' ', absl::SkipEmpty());
    if (words.size() != 2) return error(at, "INTERVAL '" + text + "': a number and a unit ('10 seconds')");
    std::string u = absl::AsciiStrToLower(words[1]);
    if (!u.empty() && u.back() == 's') u.pop_back();
    static const std::map<std::string, int64_t> kUnits = {
        {"millisecond", 1}, {"second", 1000}, {"minute", 60'000}, {"hour", 3'600'000}, {"day", 86'400'000}};
    auto it = kUnits.find(u);
    if (it == kUnits.end()) return error(at, "INTERVAL '" + text + "': unknown unit " + words[1]);
    unit_ms = it->second;
    text = words[0];
  }
  double n;
  if (!absl::SimpleAtod(absl::StripAsciiWhitespace(text), &n)) return error(at, "INTERVAL '" + text + "': not a number");
  const double ms = n * static_cast<double>(unit_ms);
  // Within +-2^62 ms (146 million years): representable, and room to add.
  if (!(std::abs(ms) < 4.6e18)) return error(at, "INTERVAL '" + text + "': out of range");
  return Expr::constant(static_cast<int64_t>(ms), {TypeKind::kInterval, false});
}

// Arithmetic with a DECIMAL operand. Beside a DOUBLE, DOUBLE. Else, as
// Flink types it: + and - (and %) at the larger scale, one more integer
// digit; * at the sum of the scales (and precisions, plus one); / at max(6, the dividend's scale)
// (Flink's rule asks for more digits than a DECIMAL holds here). A BIGINT
// is DECIMAL(19, 0).
absl::StatusOr<Expr> Binder::decimal_arithmetic(Op op, Expr a, Expr b, int at) const {
  const bool nullable = a.type.nullable || b.type.nullable;
  const auto common = common_type(a.type, b.type);
  if (common->kind == TypeKind::kDouble) {
    a = cast_to(std::move(a), *common);
    b = cast_to(std::move(b), *common);
    return Expr::call(op, {TypeKind::kDouble, nullable}, {std::move(a), std::move(b)});
  }
  auto digits = [](const Type& t) { return t.kind == TypeKind::kDecimal ? static_cast<int>(t.precision) : 19; };
  auto scale = [](const Type& t) { return t.kind == TypeKind::kDecimal ? static_cast<int>(t.scale) : 0; };
  Type t;
  switch (op) {
    case Op::kAdd:
    case Op::kSubtract:
    case Op::kModulo:
      t = Type::decimal(common->precision + 1, common->scale, nullable);
      a = cast_to(std::move(a), t);
      b = cast_to(std::move(b), t);
      break;
    case Op::kMultiply:
      if (scale(a.type) + scale(b.type) > kMaxDecimalDigits) return unsupported(at, "a DECIMAL product with a scale over 18");
      t = Type::decimal(digits(a.type) + digits(b.type) + 1, scale(a.type) + scale(b.type), nullable);
      break;
    case Op::kDivide: {
      const int s = std::max(6, scale(a.type));
      t = Type::decimal(std::min(kMaxDecimalPrecision, digits(a.type) - scale(a.type) + scale(b.type) + s), s, nullable);
      break;
    }
    default:
      return error(at, "not arithmetic");
  }
  t.nullable = nullable;
  return Expr::call(op, t, {std::move(a), std::move(b)});
}


}  // namespace weir::sql
