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
namespace {

// PostgreSQL's interval field bits (typmod of INTERVAL '4' SECOND etc.).
constexpr int64_t kMonthBit = 1 << 1, kYearBit = 1 << 2, kDayBit = 1 << 3, kHourBit = 1 << 10,
                  kMinuteBit = 1 << 11, kSecondBit = 1 << 12;

}  // namespace

using nlohmann::json;

int64_t integer_value(const json& integer, std::string_view text, int location) {
  if (integer.contains("ival")) return integer["ival"].get<int64_t>();
  // The parser's JSON leaves out a negative value (and 0): read the
  // constant where it stands, "-7" or "- 7" as PostgreSQL folds them.
  size_t i = location < 0 ? text.size() : static_cast<size_t>(location);
  auto blanks = [&] {
    while (i < text.size() && absl::ascii_isspace(static_cast<unsigned char>(text[i]))) ++i;
  };
  blanks();
  bool negative = false;
  if (i < text.size() && text[i] == '-') {
    negative = true;
    ++i;
    blanks();
  }
  int64_t v = 0;
  // (PostgreSQL makes an integer constant past 32 bits a Float: no
  // overflow here, but the text is not trusted to say so.)
  for (; i < text.size() && absl::ascii_isdigit(static_cast<unsigned char>(text[i])) && v > INT64_MIN / 100; ++i) {
    v = v * 10 - (text[i] - '0');  // as a negative number: -2^63 fits
  }
  return negative ? v : -v;
}

absl::StatusOr<Type> sql_type(const json& type_name, std::string_view text) {
  const std::vector<std::string> names = strings_of(type_name["names"]);
  const std::string name = names.empty() ? "" : names.back();
  const int at = type_name.value("location", -1);
  auto kind = type_of_name(name);
  if (!kind) return sql_error(text, at, "unknown type " + absl::AsciiStrToUpper(name));
  if (type_name.contains("arrayBounds")) return sql_unsupported(text, at, "ARRAY types");
  std::vector<int64_t> mods;
  for (const auto& m : type_name.value("typmods", json::array())) {
    mods.push_back(m.contains("A_Const") ? m["A_Const"].value("ival", json::object()).value("ival", 0) : -1);
  }
  if (*kind == TypeKind::kTimestamp && !mods.empty() && mods[0] != 3) {
    return sql_error(text, at, "TIMESTAMP(" + std::to_string(mods[0]) + "): only TIMESTAMP(3) (milliseconds) is supported");
  }
  if (*kind == TypeKind::kDecimal) {
    // DECIMAL is DECIMAL(10, 0), DECIMAL(p) DECIMAL(p, 0), as in Flink.
    const int64_t p = mods.empty() ? 10 : mods[0], sc = mods.size() < 2 ? 0 : mods[1];
    if (mods.size() > 2 || p < 1 || p > kMaxDecimalPrecision || sc < 0 || sc > p) {
      return sql_error(text, at, "DECIMAL(p, s) needs 1 <= p <= 38 and 0 <= s <= p");
    }
    if (sc > kMaxDecimalDigits) return sql_unsupported(text, at, "a DECIMAL scale over 18");
    return Type::decimal(static_cast<int>(p), static_cast<int>(sc), true);
  }
  return Type{*kind, true};
}

absl::StatusOr<Expr> Binder::literal(const json& b, int at) const {
  if (b.value("isnull", false)) return Expr::constant(Value{}, {TypeKind::kNull, true});
  if (b.contains("ival")) return Expr::constant(integer_value(b["ival"], text_, at), {TypeKind::kBigInt, false});
  if (b.contains("fval")) {
    const std::string text = b["fval"].value("fval", "0");
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
    if (!absl::SimpleAtod(text, &d)) return error(at, "not a number: " + text);
    return Expr::constant(d, {TypeKind::kDouble, false});
  }
  if (b.contains("sval")) return Expr::constant(b["sval"].value("sval", ""), {TypeKind::kVarchar, false});
  if (b.contains("boolval")) return Expr::constant(b["boolval"].value("boolval", false), {TypeKind::kBoolean, false});
  return unsupported(at, "this literal");
}

absl::StatusOr<Expr> Binder::type_cast(const json& b, const std::vector<Scope>& scopes, int at) const {
  const json& tn = b["typeName"];
  const std::vector<std::string> names = strings_of(tn["names"]);
  const std::string name = names.empty() ? "" : names.back();
  if (type_of_name(name) == TypeKind::kInterval) return interval(b, at);
  auto type = sql_type(tn, text_);
  if (!type.ok()) return type.status();
  const TypeKind* to = &type->kind;
  auto x = bind(b["arg"], scopes);
  if (!x.ok()) return x.status();
  const TypeKind from = x->type.kind;
  const bool ok = from == *to || from == TypeKind::kNull || from == TypeKind::kVarchar || *to == TypeKind::kVarchar ||
                  (x->type.numeric() && Type{*to}.numeric()) ||
                  (from == TypeKind::kBoolean && *to == TypeKind::kBigInt) ||
                  (from == TypeKind::kBigInt && (*to == TypeKind::kBoolean || *to == TypeKind::kTimestamp)) ||
                  (from == TypeKind::kTimestamp && *to == TypeKind::kBigInt);
  if (!ok) return error(at, "cannot CAST " + std::string(type_name(from)) + " to " + std::string(type_name(*to)));
  type->nullable = x->type.nullable;
  return Expr::call(Op::kCast, *type, {*std::move(x)});
}

// INTERVAL '4' SECOND (the unit as PostgreSQL's typmod), or INTERVAL
// '10 seconds'.
absl::StatusOr<Expr> Binder::interval(const json& b, int at) const {
  const json& arg = b["arg"];
  if (node_name(arg) != "A_Const" || !arg["A_Const"].contains("sval")) return unsupported(at, "an INTERVAL of an expression");
  std::string text = arg["A_Const"]["sval"].value("sval", "");
  int64_t unit_ms = 0;
  const json& tn = b["typeName"];
  if (tn.contains("typmods")) {
    const int64_t bits = tn["typmods"][0]["A_Const"].value("ival", json::object()).value("ival", 0);
    if (bits == kSecondBit) unit_ms = 1000;
    else if (bits == kMinuteBit) unit_ms = 60'000;
    else if (bits == kHourBit) unit_ms = 3'600'000;
    else if (bits == kDayBit) unit_ms = 86'400'000;
    else if (bits == kMonthBit || bits == kYearBit) return unsupported(at, "INTERVAL in months or years");
    else return unsupported(at, "this INTERVAL (one of SECOND, MINUTE, HOUR, DAY)");
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
