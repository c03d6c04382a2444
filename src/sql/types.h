// SQL types of weir's SQL front end and how their values are held at run
// time (as weir::Value, include/weir/formats.h):
//
//   BOOLEAN                      bool
//   BIGINT (INT, INTEGER,        int64_t   (every integer type is 64-bit;
//     SMALLINT, TINYINT)                    overflow is an error)
//   DOUBLE (FLOAT, REAL)         double
//   DECIMAL(p, s) (NUMERIC)      int64_t, the value times 10^s (exact; up to
//                                           18 digits held: p may be up to
//                                           38, a value beyond 18 digits is
//                                           an overflow error; s <= 18)
//   VARCHAR (STRING, TEXT,       std::string (any length; a declared length
//     CHAR)                                   is accepted and not enforced)
//   TIMESTAMP(3)                 int64_t, milliseconds since the epoch (UTC;
//                                           the declared precision is 3 or
//                                           none)
//   INTERVAL                     int64_t, milliseconds
//   DATE                         int64_t, days since 1970-01-01
//   TIME                         int64_t, milliseconds since midnight (the
//                                           declared precision is 0 to 3)
//   BYTES (VARBINARY, BINARY)    std::string, the bytes
//   ARRAY<T>                     std::string, the elements encoded by
//                                           sql/values.h (binary, as
//                                           Flink's BinaryArrayData); T
//                                           a type above but DECIMAL
//   MAP<K, V>                    std::string, the entries by key encoded
//                                           the same way (keys distinct
//                                           and in order, so equal maps
//                                           are equal bytes)
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

enum class TypeKind : uint8_t {
  kNull, kBoolean, kBigInt, kDouble, kVarchar, kTimestamp, kInterval, kDecimal,
  kDate, kTime, kBytes, kArray, kMap,
};

// The most digits a DECIMAL may declare, and the most it holds (and the
// largest scale).
inline constexpr int kMaxDecimalPrecision = 38;
inline constexpr int kMaxDecimalDigits = 18;

struct Type {
  TypeKind kind = TypeKind::kNull;
  bool nullable = true;
  uint8_t precision = 0;  // kDecimal: digits in all
  uint8_t scale = 0;      // kDecimal: digits after the point
  TypeKind element = TypeKind::kNull;  // kArray: the elements'; kMap: the values'
  TypeKind key = TypeKind::kNull;      // kMap: the keys'

  static Type decimal(int precision, int scale, bool nullable);
  static Type array(TypeKind element, bool nullable);
  static Type map(TypeKind key, TypeKind value, bool nullable);
  // ARRAY and MAP: their values are collections of elements (sql/values.h).
  bool collection() const { return kind == TypeKind::kArray || kind == TypeKind::kMap; }
  // The type of an ARRAY's elements or a MAP's values (nullable), and of
  // a MAP's keys.
  Type element_type() const { return Type{element, true}; }
  Type key_type() const { return Type{key, true}; }
  bool numeric() const { return kind == TypeKind::kBigInt || kind == TypeKind::kDouble || kind == TypeKind::kDecimal; }
  // "BIGINT", "VARCHAR NOT NULL", "DECIMAL(23, 3)", "ARRAY<BIGINT>", ...
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

// The common type of two operands, DECIMALs as Flink makes them (a BIGINT
// is DECIMAL(19, 0); the larger scale and the more integer digits; with a
// DOUBLE, DOUBLE); nullable if either is. nullopt when they have none.
std::optional<Type> common_type(const Type& a, const Type& b);

// Whether a value of type `from` may be stored in a column of type `to`
// without a CAST (the same type, NULL, BIGINT into DOUBLE or DECIMAL,
// DECIMAL into DOUBLE or a DECIMAL of another scale; converted as a CAST
// would).
bool assignable(TypeKind from, TypeKind to);
// The same for ARRAY and MAP too: of the same element (and key) types.
bool assignable(const Type& from, const Type& to);

}  // namespace weir::sql

#endif  // WEIR_SQL_TYPES_H_
