#include "sql/binder.h"

#include <algorithm>
#include <map>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "sql/parser.h"

namespace weir::sql {

absl::Status sql_error(std::string_view text, int offset, const std::string& what) {
  return absl::InvalidArgumentError(position_of(text, std::max(offset, 0)) + ": " + what);
}

absl::Status sql_unsupported(std::string_view text, int offset, const std::string& what) {
  return sql_error(text, offset, what + " is not supported yet");
}

absl::StatusOr<Expr> Binder::bind(const ast::Expr& n, const std::vector<Scope>& scopes) const {
  auto e = bind_node(n, scopes);
  if (!e.ok() || e->kind != Expr::Kind::kCall || !e->is_constant()) return e;
  // Constant folding: a constant expression is its value.
  auto v = evaluate(*e, Row{});
  if (!v.ok()) return error(n.offset, std::string(v.status().message()));
  return Expr::constant(*std::move(v), e->type);
}

absl::StatusOr<Expr> Binder::bind_node(const ast::Expr& e, const std::vector<Scope>& scopes) const {
  using Kind = ast::Expr::Kind;
  const std::string name = e.kind == Kind::kFunction ? absl::AsciiStrToLower(e.name()) : "";
  if (over_ != nullptr && e.kind == Kind::kFunction && e.over) {
    if (is_aggregate_function(name)) return aggregate_call(e, name);
    return unsupported(e.offset, absl::AsciiStrToUpper(name) + "() OVER (...) beside OVER aggregates in one SELECT");
  }
  if (grouping_ != nullptr) {
    if (e.kind == Kind::kFunction && is_aggregate_function(name)) return aggregate_call(e, name);
    if (auto key = grouping_key(e)) return *std::move(key);
    if (e.kind == Kind::kColumn) {
      auto plain = Binder(text_).bind(e, grouping_->input);
      if (!plain.ok()) return plain.status();
      return error(e.offset, "column " + absl::StrJoin(e.names, ".") + " is neither grouped (GROUP BY) nor inside an aggregate");
    }
  }
  switch (e.kind) {
    case Kind::kColumn:
      return column(e, scopes);
    case Kind::kLiteral:
      return literal(e);
    case Kind::kCast:
      return type_cast(e, scopes);
    case Kind::kOperator:
      return operator_call(e, scopes);
    case Kind::kAnd:
    case Kind::kOr:
    case Kind::kNot:
      return logical(e, scopes);
    case Kind::kIsNull: {
      auto x = bind(e.args[0], scopes);
      if (!x.ok()) return x.status();
      return Expr::call(e.negated ? Op::kIsNotNull : Op::kIsNull, {TypeKind::kBoolean, false}, {*std::move(x)});
    }
    case Kind::kLike:
      return like(e, scopes);
    case Kind::kIn:
      return in_list(e, scopes);
    case Kind::kBetween:
      return between(e, scopes);
    case Kind::kCase:
      return case_expr(e, scopes);
    case Kind::kCoalesce:
      return coalesce(e, scopes);
    case Kind::kNullIf:
      return null_if(e, scopes);
    case Kind::kFunction:
      return function(e, scopes);
    case Kind::kStar:
      return error(e.offset, "* stands only in a select list or COUNT(*)");
    case Kind::kSubquery:
      return unsupported(e.offset, e.what.empty() ? "a subquery as a value" : e.what);
    case Kind::kNamedArg:
      return error(e.offset, "a named argument (" + (e.names.empty() ? std::string() : e.names[0]) +
                                 " => ...) outside a window table function's call");
    case Kind::kArray:
      return array_constructor(e, scopes);
    case Kind::kSubscript:
      return subscript(e, scopes);
    case Kind::kUnsupported:
      return unsupported(e.offset, e.what);
  }
  return unsupported(e.offset, "this expression");
}

absl::StatusOr<Expr> Binder::logical(const ast::Expr& e, const std::vector<Scope>& scopes) const {
  const char* op = e.kind == ast::Expr::Kind::kAnd ? "AND" : e.kind == ast::Expr::Kind::kOr ? "OR" : "NOT";
  std::vector<Expr> args;
  bool nullable = false;
  for (const ast::Expr& a : e.args) {
    auto x = bind(a, scopes);
    if (!x.ok()) return x.status();
    if (x->type.kind != TypeKind::kBoolean && x->type.kind != TypeKind::kNull) {
      return error(a.offset, std::string(op) + " needs BOOLEAN operands, not " + std::string(type_name(x->type.kind)));
    }
    nullable = nullable || x->type.nullable;
    args.push_back(*std::move(x));
  }
  const Op o = e.kind == ast::Expr::Kind::kAnd ? Op::kAnd : e.kind == ast::Expr::Kind::kOr ? Op::kOr : Op::kNot;
  return Expr::call(o, {TypeKind::kBoolean, nullable}, std::move(args));
}

absl::StatusOr<Expr> Binder::coalesce(const ast::Expr& e, const std::vector<Scope>& scopes) const {
  std::vector<Expr> args;
  Type t{TypeKind::kNull};
  bool nullable = true;
  for (const ast::Expr& a : e.args) {
    auto x = bind(a, scopes);
    if (!x.ok()) return x.status();
    auto c = common_type(t, x->type);
    if (!c) return error(a.offset, "COALESCE of " + std::string(type_name(t.kind)) + " and " + std::string(type_name(x->type.kind)));
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

absl::StatusOr<Expr> Binder::column(const ast::Expr& e, const std::vector<Scope>& scopes) const {
  const std::vector<std::string>& parts = e.names;
  const int at = e.offset;
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

absl::StatusOr<Expr> Binder::like(const ast::Expr& e, const std::vector<Scope>& scopes) const {
  auto x = bind(e.args[0], scopes);
  if (!x.ok()) return x.status();
  auto p = bind(e.args[1], scopes);
  if (!p.ok()) return p.status();
  for (const Expr* a : {&*x, &*p}) {
    if (a->type.kind != TypeKind::kVarchar && a->type.kind != TypeKind::kNull) {
      return error(e.offset, "LIKE needs VARCHAR operands, not " + std::string(type_name(a->type.kind)));
    }
  }
  const bool nullable = x->type.nullable || p->type.nullable;
  Expr like = Expr::call(Op::kLike, {TypeKind::kBoolean, nullable}, {*std::move(x), *std::move(p)});
  if (e.negated) return Expr::call(Op::kNot, {TypeKind::kBoolean, nullable}, {std::move(like)});
  return like;
}

// NULLIF(a, b): CASE WHEN a = b THEN NULL ELSE a END
absl::StatusOr<Expr> Binder::null_if(const ast::Expr& e, const std::vector<Scope>& scopes) const {
  auto a = bind(e.args[0], scopes);
  if (!a.ok()) return a.status();
  auto x = bind(e.args[1], scopes);
  if (!x.ok()) return x.status();
  if (!common_type(a->type, x->type)) {
    return error(e.offset, "NULLIF compares " + std::string(type_name(a->type.kind)) + " with " + std::string(type_name(x->type.kind)));
  }
  Type result = a->type;
  result.nullable = true;
  Expr equal = comparison(Op::kEqual, *a, *std::move(x));
  Expr out = Expr::call(Op::kCase, result, {std::move(equal), Expr::constant(Value{}, result), *std::move(a)});
  out.has_else = true;
  return out;
}

absl::StatusOr<Expr> Binder::operator_call(const ast::Expr& e, const std::vector<Scope>& scopes) const {
  const std::string& op = e.op;
  const int at = e.offset;
  std::vector<Expr> args;
  for (const ast::Expr& a : e.args) {
    auto x = bind(a, scopes);
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
absl::StatusOr<Expr> Binder::in_list(const ast::Expr& e, const std::vector<Scope>& scopes) const {
  auto x = bind(e.args[0], scopes);
  if (!x.ok()) return x.status();
  std::vector<Expr> comparisons;
  bool nullable = false;
  for (size_t i = 1; i < e.args.size(); ++i) {
    const ast::Expr& item = e.args[i];
    auto v = bind(item, scopes);
    if (!v.ok()) return v.status();
    if (!common_type(x->type, v->type)) {
      return error(item.offset, "IN compares " + std::string(type_name(x->type.kind)) + " with " +
                                    std::string(type_name(v->type.kind)));
    }
    comparisons.push_back(comparison(e.negated ? Op::kNotEqual : Op::kEqual, *x, *std::move(v)));
    nullable = nullable || comparisons.back().type.nullable;
  }
  if (comparisons.empty()) return error(e.offset, "IN needs at least one value");
  if (comparisons.size() == 1) return std::move(comparisons[0]);
  return Expr::call(e.negated ? Op::kAnd : Op::kOr, {TypeKind::kBoolean, nullable}, std::move(comparisons));
}

// x BETWEEN a AND b is x >= a AND x <= b; NOT BETWEEN is x < a OR x > b.
absl::StatusOr<Expr> Binder::between(const ast::Expr& e, const std::vector<Scope>& scopes) const {
  auto x = bind(e.args[0], scopes);
  if (!x.ok()) return x.status();
  const bool negated = e.negated;
  std::vector<Expr> cmp;
  for (size_t i = 0; i < 2; ++i) {
    const ast::Expr& bound = e.args[i + 1];
    auto v = bind(bound, scopes);
    if (!v.ok()) return v.status();
    if (!common_type(x->type, v->type)) {
      return error(bound.offset, "BETWEEN compares " + std::string(type_name(x->type.kind)) + " with " +
                                     std::string(type_name(v->type.kind)));
    }
    const Op op = i == 0 ? (negated ? Op::kLess : Op::kGreaterEqual) : (negated ? Op::kGreater : Op::kLessEqual);
    cmp.push_back(comparison(op, *x, *std::move(v)));
  }
  const bool nullable = cmp[0].type.nullable || cmp[1].type.nullable;
  return Expr::call(negated ? Op::kOr : Op::kAnd, {TypeKind::kBoolean, nullable}, std::move(cmp));
}

absl::StatusOr<Expr> Binder::case_expr(const ast::Expr& e, const std::vector<Scope>& scopes) const {
  std::optional<Expr> subject;  // CASE x WHEN v ...: each WHEN is x = v
  if (e.subject) {
    auto x = bind(*e.subject, scopes);
    if (!x.ok()) return x.status();
    subject = *std::move(x);
  }
  std::vector<Expr> args;
  Type result{TypeKind::kNull};
  std::vector<size_t> results;  // where in args
  const bool has_else = static_cast<bool>(e.otherwise);
  bool nullable = !has_else;
  auto add_result = [&](const ast::Expr& n) -> absl::Status {
    auto r = bind(n, scopes);
    if (!r.ok()) return r.status();
    auto t = common_type(result, r->type);
    if (!t) return error(n.offset, "CASE results of " + std::string(type_name(result.kind)) + " and " + std::string(type_name(r->type.kind)));
    result = *t;
    results.push_back(args.size());
    nullable = nullable || r->type.nullable;
    args.push_back(*std::move(r));
    return absl::OkStatus();
  };
  for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
    const ast::Expr& when = e.args[i];
    auto cond = bind(when, scopes);
    if (!cond.ok()) return cond.status();
    if (subject) {
      if (!common_type(subject->type, cond->type)) return error(when.offset, "CASE compares " + std::string(type_name(subject->type.kind)) + " with " + std::string(type_name(cond->type.kind)));
      cond = comparison(Op::kEqual, *subject, *std::move(cond));
    } else if (cond->type.kind != TypeKind::kBoolean && cond->type.kind != TypeKind::kNull) {
      return error(when.offset, "WHEN needs a BOOLEAN, not " + std::string(type_name(cond->type.kind)));
    }
    args.push_back(*std::move(cond));
    absl::Status s = add_result(e.args[i + 1]);
    if (!s.ok()) return s;
  }
  if (has_else) {
    absl::Status s = add_result(*e.otherwise);
    if (!s.ok()) return s;
  }
  // Results of one DECIMAL scale (or DOUBLE): as the common type.
  for (size_t i : results) {
    if (result.kind == TypeKind::kDecimal || args[i].type.kind == TypeKind::kDecimal) args[i] = cast_to(std::move(args[i]), result);
  }
  result.nullable = nullable;
  Expr out = Expr::call(Op::kCase, result, std::move(args));
  out.has_else = has_else;
  return out;
}

}  // namespace weir::sql
