// Keys of the SQL operators (sql/operators.h): grouping, partitioning and
// join keys are the key values encoded (Serializer<Value>) into one string,
// so rows hash to key groups by value and keyed state is keyed by it.
// Internal to src/sql.
#ifndef WEIR_SQL_KEYS_H_
#define WEIR_SQL_KEYS_H_

#include <stdexcept>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "sql/operators.h"
#include "weir/formats.h"

namespace weir::sql {

// Encodes the values of `keys` over a row into one string key.
class KeyEncoder {
 public:
  KeyEncoder(std::vector<Expr> keys, const std::vector<std::string>& input, const std::string& what)
      : keys_(std::move(keys)) {
    for (const Expr& k : keys_) where_.push_back(what + " " + k.to_string(input));
  }
  std::string encode(const Row& row) const {
    std::string key;
    ByteWriter out(&key);
    for (size_t i = 0; i < keys_.size(); ++i) Serializer<Value>::write(out, evaluate_or_throw(keys_[i], row, where_[i]));
    return key;
  }
  // A join's key: a first byte saying whether a value is NULL (NULL equals
  // nothing), so the join need not decode the key to know.
  std::string encode_join(const Row& row) const {
    std::string key(1, '\0');
    ByteWriter out(&key);
    for (size_t i = 0; i < keys_.size(); ++i) {
      const Value v = evaluate_or_throw(keys_[i], row, where_[i]);
      if (std::holds_alternative<std::monostate>(v)) key[0] = '\1';
      Serializer<Value>::write(out, v);
    }
    return key;
  }
  static bool join_key_has_null(const std::string& key) { return !key.empty() && key[0] != '\0'; }
  static std::vector<Value> decode(const std::string& key) {
    std::vector<Value> values;
    ByteReader in(key);
    while (in.ok() && !in.at_end()) values.push_back(Serializer<Value>::read(in));
    return values;
  }

 private:
  std::vector<Expr> keys_;
  std::vector<std::string> where_;
};

// A row's values encoded (Serializer<Value>), without its kind: how the
// operators keep rows in state, a fraction of a weir::Row's size.
inline std::string encode_values(const Row& row) {
  std::string s;
  ByteWriter out(&s);
  out.put_varint(row.values.size());
  for (const Value& v : row.values) Serializer<Value>::write(out, v);
  return s;
}
inline Row decode_values(const std::string& s) {
  Row r;
  ByteReader in(s);
  r.values.resize(in.get_varint());
  for (Value& v : r.values) v = Serializer<Value>::read(in);
  return r;
}

// A join's row: `left`'s values, then `right`'s.
inline Row joined_row(const Row& left, const Row& right, RowKind kind) {
  Row both;
  both.kind = kind;
  both.values.reserve(left.values.size() + right.values.size());
  both.values.insert(both.values.end(), left.values.begin(), left.values.end());
  both.values.insert(both.values.end(), right.values.begin(), right.values.end());
  return both;
}

inline void throw_if_error(const absl::Status& s, const std::string& what) {
  if (!s.ok()) throw std::runtime_error(what + ": " + std::string(s.message()));
}

}  // namespace weir::sql

#endif  // WEIR_SQL_KEYS_H_
