#include "sql/types.h"

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
  }
  return "?";
}

std::string Type::to_string() const {
  std::string s(type_name(kind));
  if (!nullable && kind != TypeKind::kNull) s += " NOT NULL";
  return s;
}

std::optional<TypeKind> type_of_name(std::string_view name) {
  static const std::map<std::string_view, TypeKind> kNames = {
      {"bool", TypeKind::kBoolean},      {"boolean", TypeKind::kBoolean},   {"int8", TypeKind::kBigInt},
      {"int4", TypeKind::kBigInt},       {"int2", TypeKind::kBigInt},       {"bigint", TypeKind::kBigInt},
      {"int", TypeKind::kBigInt},        {"integer", TypeKind::kBigInt},    {"smallint", TypeKind::kBigInt},
      {"tinyint", TypeKind::kBigInt},    {"float8", TypeKind::kDouble},     {"float4", TypeKind::kDouble},
      {"double", TypeKind::kDouble},     {"numeric", TypeKind::kDouble},    {"decimal", TypeKind::kDouble},
      {"varchar", TypeKind::kVarchar},   {"text", TypeKind::kVarchar},      {"bpchar", TypeKind::kVarchar},
      {"string", TypeKind::kVarchar},    {"char", TypeKind::kVarchar},      {"timestamp", TypeKind::kTimestamp},
      {"interval", TypeKind::kInterval},
  };
  auto it = kNames.find(name);
  if (it == kNames.end()) return std::nullopt;
  return it->second;
}

std::optional<TypeKind> common_type(TypeKind a, TypeKind b) {
  if (a == TypeKind::kNull) return b;
  if (b == TypeKind::kNull || a == b) return a;
  if ((a == TypeKind::kBigInt && b == TypeKind::kDouble) || (a == TypeKind::kDouble && b == TypeKind::kBigInt)) {
    return TypeKind::kDouble;
  }
  return std::nullopt;
}

bool assignable(TypeKind from, TypeKind to) {
  return from == to || from == TypeKind::kNull || (from == TypeKind::kBigInt && to == TypeKind::kDouble);
}

}  // namespace weir::sql
