#include "sql/types.h"

#include <algorithm>
#include <map>

namespace weir::sql {

std::string_view type_name(TypeKind kind) {
  switch (kind) {
    case TypeKind::kNull: return "NULL";
    case TypeKind::kBoolean: return "BOOLEAN";
    case TypeKind::kBigInt: return "BIGINT";
    case TypeKind::kDouble: return "DOUBLE";
    case TypeKind::kVarchar: return "VARCHAR";
    case TypeKind::kTimestamp: return "TIMESTAMP(3)";
    case TypeKind::kInterval: return "INTERVAL";
    case TypeKind::kDecimal: return "DECIMAL";
    case TypeKind::kDate: return "DATE";
    case TypeKind::kTime: return "TIME";
    case TypeKind::kBytes: return "BYTES";
    case TypeKind::kArray: return "ARRAY";
    case TypeKind::kMap: return "MAP";
  }
  return "?";
}

Type Type::decimal(int precision, int scale, bool nullable) {
  Type t{TypeKind::kDecimal, nullable};
  t.precision = static_cast<uint8_t>(std::clamp(precision, 1, kMaxDecimalPrecision));
  t.scale = static_cast<uint8_t>(std::clamp(scale, 0, static_cast<int>(t.precision)));
  return t;
}

Type Type::array(TypeKind element, bool nullable) {
  Type t{TypeKind::kArray, nullable};
  t.element = element;
  return t;
}

Type Type::map(TypeKind key, TypeKind value, bool nullable) {
  Type t{TypeKind::kMap, nullable};
  t.key = key;
  t.element = value;
  return t;
}

std::string Type::to_string() const {
  std::string s(type_name(kind));
  if (kind == TypeKind::kDecimal) s += "(" + std::to_string(precision) + ", " + std::to_string(scale) + ")";
  if (kind == TypeKind::kArray) s += "<" + std::string(type_name(element)) + ">";
  if (kind == TypeKind::kMap) s += "<" + std::string(type_name(key)) + ", " + std::string(type_name(element)) + ">";
  if (!nullable && kind != TypeKind::kNull) s += " NOT NULL";
  return s;
}

std::optional<TypeKind> type_of_name(std::string_view name) {
  static const std::map<std::string_view, TypeKind> kNames = {
      {"bool", TypeKind::kBoolean},      {"boolean", TypeKind::kBoolean},   {"int8", TypeKind::kBigInt},
      {"int4", TypeKind::kBigInt},       {"int2", TypeKind::kBigInt},       {"bigint", TypeKind::kBigInt},
      {"int", TypeKind::kBigInt},        {"integer", TypeKind::kBigInt},    {"smallint", TypeKind::kBigInt},
      {"tinyint", TypeKind::kBigInt},    {"float8", TypeKind::kDouble},     {"float4", TypeKind::kDouble},
      {"double", TypeKind::kDouble},     {"numeric", TypeKind::kDecimal},   {"decimal", TypeKind::kDecimal},
      {"varchar", TypeKind::kVarchar},   {"text", TypeKind::kVarchar},      {"bpchar", TypeKind::kVarchar},
      {"string", TypeKind::kVarchar},    {"char", TypeKind::kVarchar},      {"timestamp", TypeKind::kTimestamp},
      {"interval", TypeKind::kInterval}, {"real", TypeKind::kDouble},      {"float", TypeKind::kDouble},
      {"character", TypeKind::kVarchar}, {"timestamp_ltz", TypeKind::kTimestamp}, {"dec", TypeKind::kDecimal},
      {"date", TypeKind::kDate},         {"time", TypeKind::kTime},         {"bytes", TypeKind::kBytes},
      {"bytea", TypeKind::kBytes},       {"varbinary", TypeKind::kBytes},   {"binary", TypeKind::kBytes},
  };
  auto it = kNames.find(name);
  if (it == kNames.end()) return std::nullopt;
  return it->second;
}

std::optional<TypeKind> common_type(TypeKind a, TypeKind b) {
  if (a == TypeKind::kArray || a == TypeKind::kMap || b == TypeKind::kArray || b == TypeKind::kMap) {
    return std::nullopt;  // with their element types: common_type(Type, Type)
  }
  if (a == TypeKind::kNull) return b;
  if (b == TypeKind::kNull || a == b) return a;
  if ((a == TypeKind::kBigInt && b == TypeKind::kDouble) || (a == TypeKind::kDouble && b == TypeKind::kBigInt)) {
    return TypeKind::kDouble;
  }
  return std::nullopt;
}

std::optional<Type> common_type(const Type& a, const Type& b) {
  const bool nullable = a.nullable || b.nullable;
  if (a.collection() || b.collection()) {
    if (a.kind == TypeKind::kNull || b.kind == TypeKind::kNull) {
      Type t = a.kind == TypeKind::kNull ? b : a;
      t.nullable = nullable;
      return t;
    }
    if (a.kind != b.kind || a.key != b.key || a.element != b.element) return std::nullopt;
    Type t = a;
    t.nullable = nullable;
    return t;
  }
  if (a.kind != TypeKind::kDecimal && b.kind != TypeKind::kDecimal) {
    auto k = common_type(a.kind, b.kind);
    if (!k) return std::nullopt;
    return Type{*k, nullable};
  }
  if (a.kind == TypeKind::kNull || b.kind == TypeKind::kNull) {
    Type t = a.kind == TypeKind::kNull ? b : a;
    t.nullable = nullable;
    return t;
  }
  if (a.kind == TypeKind::kDouble || b.kind == TypeKind::kDouble) return Type{TypeKind::kDouble, nullable};
  auto as_decimal = [](const Type& t) -> std::optional<Type> {
    if (t.kind == TypeKind::kDecimal) return t;
    if (t.kind == TypeKind::kBigInt) return Type::decimal(19, 0, t.nullable);
    return std::nullopt;
  };
  const auto x = as_decimal(a), y = as_decimal(b);
  if (!x || !y) return std::nullopt;
  const int scale = std::max(x->scale, y->scale);
  const int integer = std::max(x->precision - x->scale, y->precision - y->scale);
  return Type::decimal(integer + scale, scale, nullable);
}

bool assignable(const Type& from, const Type& to) {
  if (from.collection() || to.collection()) {
    if (from.kind == TypeKind::kNull) return true;
    if (from.kind != to.kind) return false;
    auto fits = [](TypeKind a, TypeKind b) { return a == b || a == TypeKind::kNull; };  // ARRAY[]: any element type
    return fits(from.element, to.element) && fits(from.key, to.key);
  }
  return assignable(from.kind, to.kind);
}

bool assignable(TypeKind from, TypeKind to) {
  return from == to || from == TypeKind::kNull || (from == TypeKind::kBigInt && to == TypeKind::kDouble) ||
         (to == TypeKind::kDecimal && from == TypeKind::kBigInt) ||
         (to == TypeKind::kDouble && from == TypeKind::kDecimal);
}

}  // namespace weir::sql
