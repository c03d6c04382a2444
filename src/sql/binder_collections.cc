// Binder's ARRAY and MAP expressions (sql/binder.h): the constructors
// ARRAY[...] and MAP[...], subscripts x[i], and the functions of
// collections (CARDINALITY, ELEMENT, ARRAY_CONTAINS, ARRAY_JOIN, MAP_KEYS,
// MAP_VALUES), as Flink types them.
#include "absl/strings/ascii.h"
#include "sql/binder.h"

namespace weir::sql {
namespace {

std::string shown(const Type& t) {
  Type u = t;
  u.nullable = true;
  return u.to_string();
}

}  // namespace

// The common element type of `values` (each cast to it): of a type an
// ARRAY or MAP holds.
absl::StatusOr<TypeKind> Binder::element_kind(std::vector<Expr>* values, const std::vector<int>& offsets,
                                              const std::string& what) const {
  Type common{TypeKind::kNull};
  for (size_t i = 0; i < values->size(); ++i) {
    auto c = common_type(common, (*values)[i].type);
    if (!c) return error(offsets[i], what + " of " + shown(common) + " and " + shown((*values)[i].type));
    common = *c;
  }
  if (common.kind == TypeKind::kDecimal) {
    return unsupported(offsets.empty() ? 0 : offsets[0], what + " of DECIMAL values (CAST them to DOUBLE)");
  }
  if (common.collection() || common.kind == TypeKind::kInterval) {
    return unsupported(offsets.empty() ? 0 : offsets[0], what + " of " + std::string(type_name(common.kind)) + " values");
  }
  for (Expr& v : *values) v = cast_to(std::move(v), {common.kind, v.type.nullable});
  return common.kind;
}

absl::StatusOr<Expr> Binder::array_constructor(const ast::Expr& e, const std::vector<Scope>& scopes) const {
  std::vector<Expr> args;
  std::vector<int> offsets;
  for (const ast::Expr& a : e.args) {
    auto x = bind(a, scopes);
    if (!x.ok()) return x.status();
    args.push_back(*std::move(x));
    offsets.push_back(a.offset);
  }
  if (args.empty()) return error(e.offset, "ARRAY[] needs an element (its type)");
  auto kind = element_kind(&args, offsets, "ARRAY");
  if (!kind.ok()) return kind.status();
  return Expr::call(Op::kMakeArray, Type::array(*kind, false), std::move(args));
}

absl::StatusOr<Expr> Binder::map_constructor(const ast::Expr& e, std::vector<Expr> args) const {
  if (args.empty() || args.size() % 2 != 0) return error(e.offset, "MAP[...] takes keys and values in pairs: MAP[k1, v1, k2, v2]");
  std::vector<Expr> keys, values;
  std::vector<int> key_offsets, value_offsets;
  for (size_t i = 0; i < args.size(); ++i) {
    (i % 2 == 0 ? keys : values).push_back(std::move(args[i]));
    (i % 2 == 0 ? key_offsets : value_offsets).push_back(e.args[i].offset);
  }
  auto key = element_kind(&keys, key_offsets, "MAP keys");
  if (!key.ok()) return key.status();
  auto value = element_kind(&values, value_offsets, "MAP values");
  if (!value.ok()) return value.status();
  std::vector<Expr> pairs;
  for (size_t i = 0; i < keys.size(); ++i) {
    pairs.push_back(std::move(keys[i]));
    pairs.push_back(std::move(values[i]));
  }
  return Expr::call(Op::kMakeMap, Type::map(*key, *value, false), std::move(pairs));
}

absl::StatusOr<Expr> Binder::subscript(const ast::Expr& e, const std::vector<Scope>& scopes) const {
  auto base = bind(e.args[0], scopes);
  if (!base.ok()) return base.status();
  auto index = bind(e.args[1], scopes);
  if (!index.ok()) return index.status();
  const Type t = base->type;
  if (t.kind == TypeKind::kArray) {
    if (index->type.kind != TypeKind::kBigInt && index->type.kind != TypeKind::kNull) {
      return error(e.args[1].offset, "an ARRAY's index is a whole number (from 1), not " + shown(index->type));
    }
  } else if (t.kind == TypeKind::kMap) {
    auto c = common_type(t.key_type(), index->type);
    if (!c || c->kind != t.key) return error(e.args[1].offset, "a key of " + shown(t) + " is no " + shown(index->type));
    *index = cast_to(*std::move(index), {t.key, index->type.nullable});
  } else {
    return error(e.offset, "x[...] takes an ARRAY or a MAP, not " + shown(t));
  }
  return Expr::call(t.kind == TypeKind::kArray ? Op::kElementAt : Op::kValueAt, t.element_type(),
                    {*std::move(base), *std::move(index)});
}

std::optional<absl::StatusOr<Expr>> Binder::collection_function(const ast::Expr& e, const std::string& name,
                                                                std::vector<Expr>& args) const {
  const int at = e.offset;
  const std::string upper = absl::AsciiStrToUpper(name);
  bool nullable = false;
  for (const Expr& a : args) nullable = nullable || a.type.nullable;
  auto is = [&](size_t i, TypeKind k) { return i < args.size() && (args[i].type.kind == k || args[i].type.kind == TypeKind::kNull); };
  if (name == "map") return map_constructor(e, std::move(args));
  if (name == "cardinality") {
    if (args.size() != 1 || !(is(0, TypeKind::kArray) || is(0, TypeKind::kMap))) {
      return error(at, "CARDINALITY takes an ARRAY or a MAP");
    }
    if (args[0].type.kind == TypeKind::kMap) {  // its keys'
      const Type keys = Type::array(args[0].type.key, nullable);
      args[0] = Expr::call(Op::kMapKeys, keys, {std::move(args[0])});
    }
    return Expr::call(Op::kCardinality, {TypeKind::kBigInt, nullable}, std::move(args));
  }
  if (name == "element") {  // the one element of an ARRAY, NULL if empty; more than one is an error
    if (args.size() != 1 || args[0].type.kind != TypeKind::kArray) return error(at, "ELEMENT takes an ARRAY");
    const Type element = args[0].type.element_type();
    return Expr::call(Op::kElement, element, std::move(args));
  }
  if (name == "array_contains") {
    if (args.size() != 2 || args[0].type.kind != TypeKind::kArray) return error(at, "ARRAY_CONTAINS takes an ARRAY and a value");
    auto c = common_type(args[0].type.element_type(), args[1].type);
    if (!c || c->kind != args[0].type.element) {
      return error(at, "ARRAY_CONTAINS: " + shown(args[0].type) + " holds no " + shown(args[1].type));
    }
    args[1] = cast_to(std::move(args[1]), {args[0].type.element, args[1].type.nullable});
    return Expr::call(Op::kArrayContains, {TypeKind::kBoolean, nullable}, std::move(args));
  }
  if (name == "array_join") {  // ARRAY_JOIN(strings, separator [, null replacement])
    if (args.size() < 2 || args.size() > 3 || args[0].type.kind != TypeKind::kArray ||
        args[0].type.element != TypeKind::kVarchar || !is(1, TypeKind::kVarchar) || (args.size() == 3 && !is(2, TypeKind::kVarchar))) {
      return error(at, "ARRAY_JOIN takes an ARRAY<STRING>, a separator and an optional NULL replacement");
    }
    return Expr::call(Op::kArrayJoin, {TypeKind::kVarchar, nullable}, std::move(args));
  }
  if (name == "map_keys" || name == "map_values") {
    if (args.size() != 1 || args[0].type.kind != TypeKind::kMap) return error(at, upper + " takes a MAP");
    const TypeKind element = name == "map_keys" ? args[0].type.key : args[0].type.element;
    return Expr::call(name == "map_keys" ? Op::kMapKeys : Op::kMapValues, Type::array(element, nullable), std::move(args));
  }
  return std::nullopt;
}

}  // namespace weir::sql
