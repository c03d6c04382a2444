// SQL types of weir's SQL front end and how their values are held at run
// time (as weir::Value, include/weir/formats.h):
//
//   BOOLEAN                      bool
//   BIGINT (INT, INTEGER,        int64_t   (every integer type is 64-bit;
//     SMALLINT, TINYINT)                    overflow is an error)
//   DOUBLE (FLOAT, REAL,         double
//     DECIMAL, NUMERIC)
//   VARCHAR (STRING, TEXT,       std::string (any length; a declared length
//     CHAR)                                   is accepted and not enforced)
//   TIMESTAMP(3)                 int64_t, milliseconds since the epoch (UTC;
//                                           the declared precision is 3 or
//                                           none)
//   INTERVAL                     int64_t, milliseconds
//
// NULL of any type is std::monostate. Each column and expression also says
// whether it can be NULL.
#ifndef WEIR_SQL_TYPES_H_
#define WEIR_SQL_TYPES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace weir::sql {

enum class TypeKind : uint8_t { kNull, kBoolean, kBigInt, kDouble, kVarchar, kTimestamp, kInterval };

struct Type {
  TypeKind kind = TypeKind::kNull;
  bool nullable = true;

  bool numeric() const { return kind == TypeKind::kBigInt || kind == TypeKind::kDouble; }
  // "BIGINT", "VARCHAR NOT NULL", ...
  std::string to_string() const;
  bool operator==(const Type&) const = default;
};

std::string_view type_name(TypeKind kind);

// The type of a PostgreSQL type name as the parser spells it ("int8",
// "varchar", "timestamp", "interval", "float8", ...); nullopt when weir's
// SQL has no such type.
std::optional<TypeKind> type_of_name(std::string_view name);

// The common type of two operands (BIGINT and DOUBLE give DOUBLE; NULL
// gives the other); nullopt when they have none.
std::optional<TypeKind> common_type(TypeKind a, TypeKind b);

// Whether a value of type `from` may be stored in a column of type `to`
// without a CAST (the same type, NULL, or BIGINT into DOUBLE).
bool assignable(TypeKind from, TypeKind to);

}  // namespace weir::sql

#endif  // WEIR_SQL_TYPES_H_
