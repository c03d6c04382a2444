// Binder's function calls (sql/binder.h): aggregate calls over a GROUP BY
// (collected into the Grouping), and scalar functions with their argument
// and result types.
#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "sql/binder.h"
#include "sql/functions.h"

namespace weir::sql {

bool is_aggregate_function(std::string_view name) {
  return name == "count" || name == "sum" || name == "min" || name == "max" || name == "avg";
}

std::optional<Expr> Binder::grouping_key(const ast::Expr& n) const {
  auto plain = Binder(text_).bind(n, grouping_->input);
  if (!plain.ok()) return std::nullopt;
  for (size_t i = 0; i < grouping_->keys.size(); ++i) {
    if (grouping_->keys[i] == *plain) return Expr::column_ref(static_cast<int>(i), plain->type);
  }
  return std::nullopt;
}

absl::StatusOr<Expr> Binder::aggregate_call(const ast::Expr& e, const std::string& name) const {
  const int at = e.offset;
  const std::string upper = absl::AsciiStrToUpper(name);
  if (over_ == nullptr && e.over) return unsupported(at, upper + " OVER (...) in a SELECT with GROUP BY");
  if (e.ordered) return unsupported(at, upper + " with ORDER BY");
  const std::vector<Scope>& input = over_ != nullptr ? over_->input : grouping_->input;
  AggregateCall call;
  call.distinct = e.distinct;
  const std::vector<ast::Expr>& args = e.args;
  if (e.star) {
    if (name != "count") return error(at, upper + "(*): only COUNT takes *");
  } else {
    if (args.size() != 1) return error(at, upper + " takes one argument");
    // The argument reads the rows of the group; no aggregate inside.
    auto arg = Binder(text_).bind(args[0], input);
    if (!arg.ok()) return arg.status();
    call.arg = *std::move(arg);
  }
  if (e.filter) {
    auto f = Binder(text_).bind(*e.filter, input);
    if (!f.ok()) return f.status();
    if (f->type.kind != TypeKind::kBoolean && f->type.kind != TypeKind::kNull) {
      return error(e.filter->offset, "FILTER (WHERE ...) needs a BOOLEAN, not " + std::string(type_name(f->type.kind)));
    }
    call.filter = *std::move(f);
  }
  const TypeKind t = call.arg ? call.arg->type.kind : TypeKind::kBigInt;
  const std::string what = upper + " of " + std::string(type_name(t));
  if (name == "count") {
    call.kind = AggregateCall::Kind::kCount;
    call.type = {TypeKind::kBigInt, false};
  } else if (name == "sum" || name == "avg") {
    if (t != TypeKind::kBigInt && t != TypeKind::kDouble && t != TypeKind::kDecimal) {
      return error(at, what + ": it needs BIGINT, DECIMAL or DOUBLE");
    }
    call.kind = name == "sum" ? AggregateCall::Kind::kSum : AggregateCall::Kind::kAvg;
    call.type = {t, true};
    // As Flink: SUM of DECIMAL(p, s) is DECIMAL(38, s), AVG DECIMAL(38, max(6, s)).
    if (t == TypeKind::kDecimal) {
      const int s = call.arg->type.scale;
      call.type = Type::decimal(kMaxDecimalPrecision, name == "sum" ? s : std::max(6, s), true);
    }
  } else {
    if (t == TypeKind::kNull) return error(at, what + ": the argument has no type");
    call.kind = name == "min" ? AggregateCall::Kind::kMin : AggregateCall::Kind::kMax;
    call.type = call.arg->type;  // a DECIMAL keeps its scale
    call.type.nullable = true;
  }
  auto& calls = over_ != nullptr ? over_->calls : grouping_->calls;
  size_t i = std::find(calls.begin(), calls.end(), call) - calls.begin();
  if (i == calls.size()) calls.push_back(call);
  const size_t first = over_ != nullptr ? static_cast<size_t>(over_->width) : grouping_->keys.size();
  return Expr::column_ref(static_cast<int>(first + i), call.type);
}

absl::StatusOr<Expr> Binder::function(const ast::Expr& e, const std::vector<Scope>& scopes) const {
  const int at = e.offset;
  const std::string name = absl::AsciiStrToLower(e.name());
  if (is_aggregate_function(name)) {
    return error(at, "the aggregate " + absl::AsciiStrToUpper(name) +
                         " is not allowed here (only in the select list and HAVING, not nested)");
  }
  if (e.over) return unsupported(at, absl::AsciiStrToUpper(name) + "() OVER (...) here");
  if (e.star) return error(at, absl::AsciiStrToUpper(name) + "(*): only COUNT takes *");
  if (e.distinct || e.filter || e.ordered) {
    return error(at, absl::AsciiStrToUpper(name) + " is no aggregate: DISTINCT, FILTER and ORDER BY belong to aggregates");
  }
  std::vector<Expr> args;
  for (const ast::Expr& a : e.args) {
    auto x = bind(a, scopes);
    if (!x.ok()) return x.status();
    args.push_back(*std::move(x));
  }
  const std::string upper = absl::AsciiStrToUpper(name);
  auto one_arg = [&](bool ok_type, TypeKind result, Op op) -> absl::StatusOr<Expr> {
    if (args.size() != 1) return error(at, upper + " takes one argument");
    if (!ok_type) return error(at, upper + " does not apply to " + std::string(type_name(args[0].type.kind)));
    const bool nullable = args[0].type.nullable;
    return Expr::call(op, {result, nullable}, std::move(args));
  };
  const bool text = args.size() == 1 && (args[0].type.kind == TypeKind::kVarchar || args[0].type.kind == TypeKind::kNull);
  if (name == "lower") return one_arg(text, TypeKind::kVarchar, Op::kLower);
  if (name == "upper") return one_arg(text, TypeKind::kVarchar, Op::kUpper);
  if (name == "char_length" || name == "character_length") return one_arg(text, TypeKind::kBigInt, Op::kCharLength);
  if (name == "mod") {
    if (args.size() != 2) return error(at, "MOD takes two arguments");
    if (args[0].type.kind != TypeKind::kBigInt || args[1].type.kind != TypeKind::kBigInt) {
      return error(at, "MOD needs BIGINT arguments");
    }
    const bool nullable = args[0].type.nullable || args[1].type.nullable;
    return Expr::call(Op::kModulo, {TypeKind::kBigInt, nullable}, std::move(args));
  }
  // String and time functions (sql/functions.h): argument types, then the
  // result's.
  struct Signature {
    const char* name;
    Op op;
    std::vector<TypeKind> args;  // the required ones, then optional ones
    size_t required;
    TypeKind result;
  };
  static const std::vector<Signature> kFunctions = {
      {"regexp_extract", Op::kRegexpExtract, {TypeKind::kVarchar, TypeKind::kVarchar, TypeKind::kBigInt}, 2, TypeKind::kVarchar},
      {"regexp", Op::kRegexp, {TypeKind::kVarchar, TypeKind::kVarchar}, 2, TypeKind::kBoolean},
      {"split_index", Op::kSplitIndex, {TypeKind::kVarchar, TypeKind::kVarchar, TypeKind::kBigInt}, 3, TypeKind::kVarchar},
      {"substring", Op::kSubstring, {TypeKind::kVarchar, TypeKind::kBigInt, TypeKind::kBigInt}, 2, TypeKind::kVarchar},
      {"substr", Op::kSubstring, {TypeKind::kVarchar, TypeKind::kBigInt, TypeKind::kBigInt}, 2, TypeKind::kVarchar},
      {"date_format", Op::kDateFormat, {TypeKind::kTimestamp, TypeKind::kVarchar}, 2, TypeKind::kVarchar},
      {"hour", Op::kHour, {TypeKind::kTimestamp}, 1, TypeKind::kBigInt},
      {"minute", Op::kMinute, {TypeKind::kTimestamp}, 1, TypeKind::kBigInt},
      {"count_char", Op::kCountChar, {TypeKind::kVarchar, TypeKind::kVarchar}, 2, TypeKind::kBigInt},
  };
  for (const Signature& f : kFunctions) {
    if (name != f.name) continue;
    if (args.size() < f.required || args.size() > f.args.size()) {
      return error(at, upper + " takes " + (f.required == f.args.size() ? std::to_string(f.required)
                                                                        : std::to_string(f.required) + " or " + std::to_string(f.args.size())) +
                           " arguments");
    }
    bool nullable = false;
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i].type.kind != f.args[i] && args[i].type.kind != TypeKind::kNull) {
        return error(at, upper + ": argument " + std::to_string(i + 1) + " must be " +
                             std::string(type_name(f.args[i])) + ", not " + std::string(type_name(args[i].type.kind)));
      }
      nullable = nullable || args[i].type.nullable;
    }
    // A constant pattern that is no regular expression fails here, not on
    // the first row.
    if ((f.op == Op::kRegexpExtract || f.op == Op::kRegexp) && args[1].kind == Expr::Kind::kLiteral &&
        std::holds_alternative<std::string>(args[1].literal)) {
      absl::Status s = check_regex(std::get<std::string>(args[1].literal));
      if (!s.ok()) return error(e.args[1].offset, upper + ": " + std::string(s.message()));
    }
    // May be NULL without a NULL argument: no match, too few pieces.
    if (f.op == Op::kRegexpExtract || f.op == Op::kSplitIndex) nullable = true;
    return Expr::call(f.op, {f.result, nullable}, std::move(args));
  }
  // IF(condition, a, b): CASE WHEN condition THEN a ELSE b END.
  if (name == "if") {
    if (args.size() != 3) return error(at, "IF takes three arguments (a condition, then two values)");
    if (args[0].type.kind != TypeKind::kBoolean && args[0].type.kind != TypeKind::kNull) {
      return error(at, "IF needs a BOOLEAN condition, not " + std::string(type_name(args[0].type.kind)));
    }
    auto t = common_type(args[1].type, args[2].type);
    if (!t) {
      return error(at, "IF gives " + std::string(type_name(args[1].type.kind)) + " or " +
                           std::string(type_name(args[2].type.kind)) + ": no common type");
    }
    Type result = *t;
    result.nullable = args[1].type.nullable || args[2].type.nullable;
    std::vector<Expr> parts = {std::move(args[0]), cast_to(std::move(args[1]), result), cast_to(std::move(args[2]), result)};
    Expr e = Expr::call(Op::kCase, result, std::move(parts));
    e.has_else = true;
    return e;
  }
  // CONCAT(a, b, ...): a || b || ... (NULL when any is).
  if (name == "concat") {
    if (args.empty()) return error(at, "CONCAT takes one argument or more");
    bool nullable = false;
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i].type.kind != TypeKind::kVarchar && args[i].type.kind != TypeKind::kNull) {
        return error(at, "CONCAT: argument " + std::to_string(i + 1) + " must be VARCHAR, not " +
                             std::string(type_name(args[i].type.kind)));
      }
      nullable = nullable || args[i].type.nullable;
    }
    Expr e = std::move(args[0]);
    for (size_t i = 1; i < args.size(); ++i) {
      e = Expr::call(Op::kConcat, {TypeKind::kVarchar, nullable}, {std::move(e), std::move(args[i])});
    }
    return e;
  }
  // TO_TIMESTAMP_LTZ(epoch, precision): epoch seconds (0) or milliseconds
  // (3) as a TIMESTAMP_LTZ(3) (weir's timestamps are UTC instants).
  if (name == "to_timestamp_ltz") {
    if (args.size() != 2 || args[0].type.kind != TypeKind::kBigInt || args[1].kind != Expr::Kind::kLiteral ||
        !std::holds_alternative<int64_t>(args[1].literal)) {
      return error(at, "TO_TIMESTAMP_LTZ takes a BIGINT epoch and a constant precision (0 or 3)");
    }
    const int64_t precision = std::get<int64_t>(args[1].literal);
    if (precision != 0 && precision != 3) return unsupported(at, "TO_TIMESTAMP_LTZ of precision " + std::to_string(precision));
    Expr epoch = std::move(args[0]);
    const bool nullable = epoch.type.nullable;
    if (precision == 0) {
      epoch = Expr::call(Op::kMultiply, {TypeKind::kBigInt, nullable},
                         {std::move(epoch), Expr::constant(int64_t{1000}, {TypeKind::kBigInt, false})});
    }
    return Expr::call(Op::kCast, {TypeKind::kTimestamp, nullable}, {std::move(epoch)});
  }
  // TO_TIMESTAMP(text): 'yyyy-MM-dd HH:mm:ss[.SSS]' as a TIMESTAMP(3).
  if (name == "to_timestamp") {
    if (args.size() != 1) return unsupported(at, "TO_TIMESTAMP with a format");
    if (args[0].type.kind != TypeKind::kVarchar && args[0].type.kind != TypeKind::kNull) {
      return error(at, "TO_TIMESTAMP takes a VARCHAR, not " + std::string(type_name(args[0].type.kind)));
    }
    const bool nullable = args[0].type.nullable;
    return Expr::call(Op::kCast, {TypeKind::kTimestamp, nullable}, std::move(args));
  }
  if (name == "proctime") {
    if (!args.empty()) return error(at, "PROCTIME takes no arguments");
    return Expr::call(Op::kProctime, {TypeKind::kTimestamp, false}, {});
  }
  if (name == "abs") {
    const bool numeric = args.size() == 1 && args[0].type.numeric();
    if (numeric) {
      const Type t = args[0].type;  // a DECIMAL keeps its scale
      return Expr::call(Op::kAbs, t, std::move(args));
    }
    return one_arg(false, TypeKind::kBigInt, Op::kAbs);
  }
  return error(at, "unknown function " + upper);
}

}  // namespace weir::sql
