#include "sql/binder.h"

#include <algorithm>
#include <map>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "sql/parser.h"

namespace weir::sql {

using nlohmann::json;

std::string node_name(const json& n) { return n.is_object() && !n.empty() ? n.begin().key() : ""; }

int location_of(const json& n) {
  if (!n.is_object()) return -1;
  if (n.contains("location") && n["location"].is_number() && n["location"].get<int>() >= 0) return n["location"].get<int>();
  for (const auto& [k, v] : n.items()) {
    if (v.is_object()) {
      const int l = location_of(v);
      if (l >= 0) return l;
    }
  }
  return -1;
}

std::vector<std::string> strings_of(const json& list) {
  std::vector<std::string> out;
  for (const auto& s : list) {
    if (s.contains("String")) out.push_back(s["String"].value("sval", ""));
  }
  return out;
}

absl::Status sql_error(std::string_view text, int offset, const std::string& what) {
  return absl::InvalidArgumentError(position_of(text, std::max(offset, 0)) + ": " + what);
}

absl::Status sql_unsupported(std::string_view text, int offset, const std::string& what) {
  return sql_error(text, offset, what + " is not supported yet");
}

absl::StatusOr<Expr> Binder::bind(const json& n, const std::vector<Scope>& scopes) const {
  auto e = bind_node(n, scopes);
  if (!e.ok() || e->kind != Expr::Kind::kCall || !e->is_constant()) return e;
  // Constant folding: a constant expression is its value.
  auto v = evaluate(*e, Row{});
  if (!v.ok()) return error(location_of(n), std::string(v.status().message()));
  return Expr::constant(*std::move(v), e->type);
}

absl::StatusOr<Expr> Binder::bind_node(const json& n, const std::vector<Scope>& scopes) const {
  const std::string kind = node_name(n);
  const json& b = n[kind];
  const int at = location_of(n);
  if (over_ != nullptr && kind == "FuncCall" && b.contains("over")) {
    const std::vector<std::string> names = strings_of(b["funcname"]);
    const std::string name = absl::AsciiStrToLower(names.empty() ? "" : names.back());
    if (is_aggregate_function(name)) return aggregate_call(b, name, at);
    return unsupported(at, absl::AsciiStrToUpper(name) + "() OVER (...) beside OVER aggregates in one SELECT");
  }
  if (grouping_ != nullptr) {
    if (kind == "FuncCall") {
      const std::vector<std::string> names = strings_of(b["funcname"]);
      const std::string name = absl::AsciiStrToLower(names.empty() ? "" : names.back());
      if (is_aggregate_function(name)) return aggregate_call(b, name, at);
    }
    if (auto key = grouping_key(n)) return *std::move(key);
    if (kind == "ColumnRef") {
      auto plain = Binder(text_).bind(n, grouping_->input);
      if (!plain.ok()) return plain.status();
      return error(at, "column " + absl::StrJoin(strings_of(b["fields"]), ".") +
                           " is neither grouped (GROUP BY) nor inside an aggregate");
    }
  }
  if (kind == "ColumnRef") return column(b, scopes, at);
  if (kind == "A_Const") return literal(b, at);
  if (kind == "TypeCast") return type_cast(b, scopes, at);
  if (kind == "A_Expr") return operator_call(b, scopes, at);
  if (kind == "BoolExpr") {
    const std::string op = b.value("boolop", "");
    std::vector<Expr> args;
    bool nullable = false;
    for (const auto& a : b["args"]) {
      auto x = bind(a, scopes);
      if (!x.ok()) return x.status();
      if (x->type.kind != TypeKind::kBoolean && x->type.kind != TypeKind::kNull) {
        return error(location_of(a), op.substr(0, op.find('_')) + " needs BOOLEAN operands, not " + std::string(type_name(x->type.kind)));
      }
      nullable = nullable || x->type.nullable;
      args.push_back(*std::move(x));
    }
    const Op o = op == "AND_EXPR" ? Op::kAnd : op == "OR_EXPR" ? Op::kOr : Op::kNot;
    return Expr::call(o, {TypeKind::kBoolean, nullable}, std::move(args));
  }
  if (kind == "NullTest") {
    auto x = bind(b["arg"], scopes);
    if (!x.ok()) return x.status();
    const Op o = b.value("nulltesttype", "") == "IS_NULL" ? Op::kIsNull : Op::kIsNotNull;
    return Expr::call(o, {TypeKind::kBoolean, false}, {*std::move(x)});
  }
  if (kind == "CoalesceExpr") {
    std::vector<Expr> args;
    Type t{TypeKind::kNull};
    bool nullable = true;
    for (const auto& a : b["args"]) {
      auto x = bind(a, scopes);
      if (!x.ok()) return x.status();
      auto c = common_type(t, x->type);
      if (!c) return error(location_of(a), "COALESCE of " + std::string(type_name(t.kind)) + " and " + std::string(type_name(x->type.kind)));
      t = *c;
      nullable = nullable && x->type.nullable;
      args.push_back(*std::move(x));
    }
    for (Expr& a : args) {
      if (t.kind == TypeKind::kDecimal || a.type.kind == TypeKind::kDecimal) a = cast_to(std::move(a), t);
    }
    t.nullable = nullable;
    return Expr::call(Op::kCoalesce, t, std::move(args));
  }
  if (kind == "CaseExpr") return case_expr(b, scopes, at);
  if (kind == "FuncCall") return function(b, scopes, at);
  return unsupported(at, "the expression " + kind);
}

absl::StatusOr<Expr> Binder::column(const json& b, const std::vector<Scope>& scopes, int at) const {
  const std::vector<std::string> parts = strings_of(b["fields"]);
  if (parts.empty()) return unsupported(at, "this column reference");
  // t.c, or a ROW's field: a column of a ROW type is flattened into
  // columns named row.field (CREATE TABLE), so `person.id` (or
  // `t.person.id`) names column "person.id".
  auto find = [&](const std::string* qualifier, const std::string& name) -> absl::StatusOr<std::optional<Expr>> {
    std::optional<Expr> found;
    int offset = 0;
    for (const Scope& s : scopes) {
      const bool qualified_here = qualifier == nullptr || absl::EqualsIgnoreCase(*qualifier, s.qualifier);
      for (size_t i = 0; qualified_here && i < s.columns.size(); ++i) {
        if (!absl::EqualsIgnoreCase(s.columns[i].name, name) || (qualifier == nullptr && s.is_hidden(i))) continue;
        if (found) return error(at, "column " + absl::StrJoin(parts, ".") + " is ambiguous (qualify it with its table)");
        found = Expr::column_ref(offset + static_cast<int>(i), s.columns[i].type);
      }
      offset += static_cast<int>(s.columns.size());
    }
    return found;
  };
  absl::StatusOr<std::optional<Expr>> found = std::optional<Expr>();
  if (parts.size() > 1) {
    const std::string rest = absl::StrJoin(parts.begin() + 1, parts.end(), ".");
    found = find(&parts[0], rest);
    if (!found.ok()) return found.status();
  }
  if (!*found) {
    found = find(nullptr, absl::StrJoin(parts, "."));
    if (!found.ok()) return found.status();
  }
  if (!*found) return error(at, "no column " + absl::StrJoin(parts, "."));
  return **std::move(found);
}

absl::StatusOr<Expr> Binder::operator_call(const json& b, const std::vector<Scope>& scopes, int at) const {
  const std::string kind = b.value("kind", "");
  const std::vector<std::string> name = strings_of(b["name"]);
  const std::string op = name.empty() ? "?" : name.back();
  if (kind == "AEXPR_IN") return in_list(b, op == "<>", scopes, at);
  if (kind == "AEXPR_BETWEEN" || kind == "AEXPR_NOT_BETWEEN") {
    return between(b, kind == "AEXPR_NOT_BETWEEN", scopes, at);
  }
  if (kind == "AEXPR_LIKE") {  // name "~~" (LIKE) or "!~~" (NOT LIKE)
    auto x = bind(b.value("lexpr", json::object()), scopes);
    if (!x.ok()) return x.status();
    auto p = bind(b.value("rexpr", json::object()), scopes);
    if (!p.ok()) return p.status();
    for (const Expr* e : {&*x, &*p}) {
      if (e->type.kind != TypeKind::kVarchar && e->type.kind != TypeKind::kNull) {
        return error(at, "LIKE needs VARCHAR operands, not " + std::string(type_name(e->type.kind)));
      }
    }
    const bool nullable = x->type.nullable || p->type.nullable;
    Expr like = Expr::call(Op::kLike, {TypeKind::kBoolean, nullable}, {*std::move(x), *std::move(p)});
    if (op == "!~~") return Expr::call(Op::kNot, {TypeKind::kBoolean, nullable}, {std::move(like)});
    return like;
  }
  if (kind == "AEXPR_NULLIF") {  // NULLIF(a, b): CASE WHEN a = b THEN NULL ELSE a END
    auto a = bind(b.value("lexpr", json::object()), scopes);
    if (!a.ok()) return a.status();
    auto x = bind(b.value("rexpr", json::object()), scopes);
    if (!x.ok()) return x.status();
    if (!common_type(a->type, x->type)) {
      return error(at, "NULLIF compares " + std::string(type_name(a->type.kind)) + " with " + std::string(type_name(x->type.kind)));
    }
    Type result = a->type;
    result.nullable = true;
    Expr equal = comparison(Op::kEqual, *a, *std::move(x));
    Expr e = Expr::call(Op::kCase, result, {std::move(equal), Expr::constant(Value{}, result), *std::move(a)});
    e.has_else = true;
    return e;
  }
  if (kind != "AEXPR_OP") {
    static const std::map<std::string, std::string> kKinds = {
        {"AEXPR_ILIKE", "ILIKE"}, {"AEXPR_DISTINCT", "IS DISTINCT FROM"},
        {"AEXPR_SIMILAR", "SIMILAR TO"}, {"AEXPR_OP_ANY", "ANY"}, {"AEXPR_OP_ALL", "ALL"}};
    auto it = kKinds.find(kind);
    return unsupported(at, it == kKinds.end() ? kind : it->second);
  }
  std::vector<Expr> args;
  for (const char* side : {"lexpr", "rexpr"}) {
    if (!b.contains(side)) continue;
    auto x = bind(b[side], scopes);
    if (!x.ok()) return x.status();
    args.push_back(*std::move(x));
  }
  bool nullable = false;
  for (const Expr& a : args) nullable = nullable || a.type.nullable;
  auto mismatch = [&] {
    std::vector<std::string> types;
    for (const Expr& a : args) types.emplace_back(type_name(a.type.kind));
    return error(at, "operator " + op + " does not apply to " + absl::StrJoin(types, " and "));
  };
  if (args.size() == 1) {
    if (op != "-" && op != "+") return unsupported(at, "the prefix operator " + op);
    if (!args[0].type.numeric() && args[0].type.kind != TypeKind::kInterval) return mismatch();
    if (op == "+") return std::move(args[0]);
    const Type t = args[0].type;
    return Expr::call(Op::kNegate, t, std::move(args));
  }
  const TypeKind l = args[0].type.kind, r = args[1].type.kind;
  static const std::map<std::string, Op> kArithmetic = {
      {"+", Op::kAdd}, {"-", Op::kSubtract}, {"*", Op::kMultiply}, {"/", Op::kDivide}, {"%", Op::kModulo}};
  static const std::map<std::string, Op> kCompare = {
      {"=", Op::kEqual},      {"<>", Op::kNotEqual}, {"!=", Op::kNotEqual},    {"<", Op::kLess},
      {"<=", Op::kLessEqual}, {">", Op::kGreater},   {">=", Op::kGreaterEqual}};
  if (auto a = kArithmetic.find(op); a != kArithmetic.end()) {
    std::optional<TypeKind> t;
    const bool plus_minus = a->second == Op::kAdd || a->second == Op::kSubtract;
    if (args[0].type.numeric() && args[1].type.numeric()) {
      if (auto c = common_type(args[0].type, args[1].type)) t = c->kind;
    } else if (plus_minus && l == TypeKind::kTimestamp && r == TypeKind::kInterval) {
      t = TypeKind::kTimestamp;
    } else if (a->second == Op::kAdd && l == TypeKind::kInterval && r == TypeKind::kTimestamp) {
      t = TypeKind::kTimestamp;
    } else if (plus_minus && l == TypeKind::kInterval && r == TypeKind::kInterval) {
      t = TypeKind::kInterval;
    } else if (a->second == Op::kSubtract && l == TypeKind::kTimestamp && r == TypeKind::kTimestamp) {
      t = TypeKind::kInterval;
    } else if (l == TypeKind::kNull || r == TypeKind::kNull) {
      t = l == TypeKind::kNull ? r : l;
    }
    if (!t) return mismatch();
    if (*t == TypeKind::kDecimal || (*t == TypeKind::kDouble && (l == TypeKind::kDecimal || r == TypeKind::kDecimal))) {
      return decimal_arithmetic(a->second, std::move(args[0]), std::move(args[1]), at);
    }
    return Expr::call(a->second, {*t, nullable}, std::move(args));
  }
  if (auto c = kCompare.find(op); c != kCompare.end()) {
    if (!common_type(args[0].type, args[1].type)) return mismatch();
    return comparison(c->second, std::move(args[0]), std::move(args[1]));
  }
  if (op == "||") return Expr::call(Op::kConcat, {TypeKind::kVarchar, nullable}, std::move(args));
  return unsupported(at, "the operator " + op);
}

// x IN (a, b, ...) is x = a OR x = b OR ...; NOT IN is x <> a AND ...
// (SQL's NULL rules follow from OR's and AND's), one OR (AND) over all the
// comparisons: linear in the list, however long.
absl::StatusOr<Expr> Binder::in_list(const json& b, bool negated, const std::vector<Scope>& scopes, int at) const {
  auto x = bind(b["lexpr"], scopes);
  if (!x.ok()) return x.status();
  const json list = b.value("rexpr", json::object());
  if (node_name(list) != "List") return unsupported(at, "IN (SELECT ...)");
  std::vector<Expr> comparisons;
  bool nullable = false;
  for (const auto& item : list["List"].value("items", json::array())) {
    auto v = bind(item, scopes);
    if (!v.ok()) return v.status();
    if (!common_type(x->type, v->type)) {
      return error(location_of(item), "IN compares " + std::string(type_name(x->type.kind)) + " with " +
                                          std::string(type_name(v->type.kind)));
    }
    comparisons.push_back(comparison(negated ? Op::kNotEqual : Op::kEqual, *x, *std::move(v)));
    nullable = nullable || comparisons.back().type.nullable;
  }
  if (comparisons.empty()) return error(at, "IN needs at least one value");
  if (comparisons.size() == 1) return std::move(comparisons[0]);
  return Expr::call(negated ? Op::kAnd : Op::kOr, {TypeKind::kBoolean, nullable}, std::move(comparisons));
}

// x BETWEEN a AND b is x >= a AND x <= b; NOT BETWEEN is x < a OR x > b.
absl::StatusOr<Expr> Binder::between(const json& b, bool negated, const std::vector<Scope>& scopes, int at) const {
  auto x = bind(b["lexpr"], scopes);
  if (!x.ok()) return x.status();
  const json rexpr = b.value("rexpr", json::object());
  const json bounds = rexpr.is_object() ? rexpr.value("List", json::object()).value("items", json::array()) : json::array();
  if (bounds.size() != 2) return error(at, "BETWEEN needs two bounds");
  std::vector<Expr> cmp;
  for (size_t i = 0; i < 2; ++i) {
    auto v = bind(bounds[i], scopes);
    if (!v.ok()) return v.status();
    if (!common_type(x->type, v->type)) {
      return error(location_of(bounds[i]), "BETWEEN compares " + std::string(type_name(x->type.kind)) + " with " +
                                               std::string(type_name(v->type.kind)));
    }
    const Op op = i == 0 ? (negated ? Op::kLess : Op::kGreaterEqual) : (negated ? Op::kGreater : Op::kLessEqual);
    cmp.push_back(comparison(op, *x, *std::move(v)));
  }
  const bool nullable = cmp[0].type.nullable || cmp[1].type.nullable;
  return Expr::call(negated ? Op::kOr : Op::kAnd, {TypeKind::kBoolean, nullable}, std::move(cmp));
}

absl::StatusOr<Expr> Binder::case_expr(const json& b, const std::vector<Scope>& scopes, int at) const {
  std::optional<Expr> subject;  // CASE x WHEN v ...: each WHEN is x = v
  if (b.contains("arg")) {
    auto x = bind(b["arg"], scopes);
    if (!x.ok()) return x.status();
    subject = *std::move(x);
  }
  std::vector<Expr> args;
  Type result{TypeKind::kNull};
  std::vector<size_t> results;  // where in args
  bool nullable = !b.contains("defresult");
  auto add_result = [&](const json& n) -> absl::Status {
    auto r = bind(n, scopes);
    if (!r.ok()) return r.status();
    auto t = common_type(result, r->type);
    if (!t) return error(location_of(n), "CASE results of " + std::string(type_name(result.kind)) + " and " + std::string(type_name(r->type.kind)));
    result = *t;
    results.push_back(args.size());
    nullable = nullable || r->type.nullable;
    args.push_back(*std::move(r));
    return absl::OkStatus();
  };
  for (const auto& w : b["args"]) {
    const json& cw = w["CaseWhen"];
    auto cond = bind(cw["expr"], scopes);
    if (!cond.ok()) return cond.status();
    if (subject) {
      if (!common_type(subject->type, cond->type)) return error(location_of(cw["expr"]), "CASE compares " + std::string(type_name(subject->type.kind)) + " with " + std::string(type_name(cond->type.kind)));
      cond = comparison(Op::kEqual, *subject, *std::move(cond));
    } else if (cond->type.kind != TypeKind::kBoolean && cond->type.kind != TypeKind::kNull) {
      return error(location_of(cw["expr"]), "WHEN needs a BOOLEAN, not " + std::string(type_name(cond->type.kind)));
    }
    args.push_back(*std::move(cond));
    absl::Status s = add_result(cw["result"]);
    if (!s.ok()) return s;
  }
  const bool has_else = b.contains("defresult");
  if (has_else) {
    absl::Status s = add_result(b["defresult"]);
    if (!s.ok()) return s;
  }
  // Results of one DECIMAL scale (or DOUBLE): as the common type.
  for (size_t i : results) {
    if (result.kind == TypeKind::kDecimal || args[i].type.kind == TypeKind::kDecimal) args[i] = cast_to(std::move(args[i]), result);
  }
  result.nullable = nullable;
  Expr e = Expr::call(Op::kCase, result, std::move(args));
  e.has_else = has_else;
  (void)at;
  return e;
}

}  // namespace weir::sql
