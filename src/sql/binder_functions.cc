// Binder's function calls (sql/binder.h): aggregate calls over a GROUP BY
// (collected into the Grouping), and scalar functions with their argument
// and result types.
#include <algorithm>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "sql/binder.h"
#include "sql/functions.h"

namespace weir::sql {
namespace {

// The units of time each function takes.
const std::vector<std::string>& extract_units() {
  static const std::vector<std::string> kUnits = {"YEAR", "QUARTER", "MONTH", "WEEK", "DAY", "DOY", "DOW", "ISODOW",
                                                  "HOUR", "MINUTE", "SECOND", "MILLISECOND", "EPOCH"};
  return kUnits;
}
const std::vector<std::string>& interval_units() {
  static const std::vector<std::string> kUnits = {"MILLISECOND", "SECOND", "MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "QUARTER", "YEAR"};
  return kUnits;
}

// A unit written as a bare word (FLOOR(ts TO HOUR), TIMESTAMPADD(HOUR, ...))
// or as EXTRACT's string: upper case, if it is one of `units`.
std::optional<std::string> unit_of(const ast::Expr& a, const std::vector<std::string>& units) {
  std::string word;
  if (a.kind == ast::Expr::Kind::kColumn && a.names.size() == 1) word = a.names[0];
  if (a.kind == ast::Expr::Kind::kLiteral && a.literal.kind == ast::Literal::Kind::kString) word = a.literal.text;
  word = absl::AsciiStrToUpper(word);
  if (std::find(units.begin(), units.end(), word) == units.end()) return std::nullopt;
  return word;
}

Expr unit_constant(const std::string& unit) { return Expr::constant(unit, {TypeKind::kVarchar, false}); }

bool is_time(const Expr& e) {
  const TypeKind k = e.type.kind;
  return k == TypeKind::kTimestamp || k == TypeKind::kNull || k == TypeKind::kDate || k == TypeKind::kTime;
}

// A DATE or TIME as the TIMESTAMP of its start (a TIME on 1970-01-01):
// the time functions work on TIMESTAMPs.
Expr as_timestamp(Expr e) {
  if (e.type.kind != TypeKind::kDate && e.type.kind != TypeKind::kTime) return e;
  return cast_to(std::move(e), {TypeKind::kTimestamp, e.type.nullable});
}

}  // namespace

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
  if (auto timed = time_unit_function(e, name, scopes)) return *std::move(timed);
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
  if (auto collection = collection_function(e, name, args)) return *std::move(collection);
  if (name == "position" && e.sql_syntax && args.size() == 2) std::swap(args[0], args[1]);  // position(b, a)
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
    bool may_be_null = false;  // without a NULL argument (no match, too few pieces, ...)
  };
  static const std::vector<Signature> kFunctions = {
      {"replace", Op::kReplace, {TypeKind::kVarchar, TypeKind::kVarchar, TypeKind::kVarchar}, 3, TypeKind::kVarchar},
      {"lpad", Op::kLpad, {TypeKind::kVarchar, TypeKind::kBigInt, TypeKind::kVarchar}, 3, TypeKind::kVarchar, true},
      {"rpad", Op::kRpad, {TypeKind::kVarchar, TypeKind::kBigInt, TypeKind::kVarchar}, 3, TypeKind::kVarchar, true},
      {"initcap", Op::kInitcap, {TypeKind::kVarchar}, 1, TypeKind::kVarchar},
      {"position", Op::kPosition, {TypeKind::kVarchar, TypeKind::kVarchar}, 2, TypeKind::kBigInt},
      {"locate", Op::kPosition, {TypeKind::kVarchar, TypeKind::kVarchar, TypeKind::kBigInt}, 2, TypeKind::kBigInt},
      {"ltrim", Op::kLtrim, {TypeKind::kVarchar, TypeKind::kVarchar}, 1, TypeKind::kVarchar},
      {"rtrim", Op::kRtrim, {TypeKind::kVarchar, TypeKind::kVarchar}, 1, TypeKind::kVarchar},
      {"btrim", Op::kTrim, {TypeKind::kVarchar, TypeKind::kVarchar}, 1, TypeKind::kVarchar},
      {"json_value", Op::kJsonValue, {TypeKind::kVarchar, TypeKind::kVarchar}, 2, TypeKind::kVarchar, true},
      {"json_query", Op::kJsonQuery, {TypeKind::kVarchar, TypeKind::kVarchar}, 2, TypeKind::kVarchar, true},
      {"unix_timestamp", Op::kUnixTimestamp, {TypeKind::kVarchar, TypeKind::kVarchar}, 1, TypeKind::kBigInt},
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
    if (f.op == Op::kRegexpExtract || f.op == Op::kSplitIndex || f.may_be_null) nullable = true;
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
  // TO_TIMESTAMP(text): 'yyyy-MM-dd HH:mm:ss[.SSS]' as a TIMESTAMP(3);
  // TO_TIMESTAMP(text, pattern): text in Java's date pattern.
  if (name == "to_timestamp") {
    const auto text = [](const Expr& a) { return a.type.kind == TypeKind::kVarchar || a.type.kind == TypeKind::kNull; };
    if (args.empty() || args.size() > 2 || !text(args[0]) || (args.size() == 2 && !text(args[1]))) {
      return error(at, "TO_TIMESTAMP takes a VARCHAR and an optional VARCHAR pattern");
    }
    bool nullable = false;
    for (const Expr& a : args) nullable = nullable || a.type.nullable;
    if (args.size() == 2) return Expr::call(Op::kParseTimestamp, {TypeKind::kTimestamp, nullable}, std::move(args));
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
  if (auto other = more_functions(name, std::move(args), at)) return *std::move(other);
  return error(at, "unknown function " + upper);
}

// EXTRACT(unit FROM ts), FLOOR/CEIL(ts TO unit), TIMESTAMPADD(unit, n,
// ts) and TIMESTAMPDIFF(unit, a, b): functions one of whose arguments is a
// unit of time, not a value. nullopt for any other function.
std::optional<absl::StatusOr<Expr>> Binder::time_unit_function(const ast::Expr& e, const std::string& name,
                                                               const std::vector<Scope>& scopes) const {
  const int at = e.offset;
  const std::string upper = absl::AsciiStrToUpper(name);
  auto bound = [&](size_t i) { return bind(e.args[i], scopes); };
  auto units_error = [&](const ast::Expr& where, const std::vector<std::string>& units) -> absl::StatusOr<Expr> {
    return error(where.offset, upper + ": the unit is one of " + absl::StrJoin(units, ", "));
  };
  if (name == "extract" && e.sql_syntax && e.args.size() == 2) {
    auto unit = unit_of(e.args[0], extract_units());
    if (!unit) return units_error(e.args[0], extract_units());
    auto ts = bound(1);
    if (!ts.ok()) return ts.status();
    if (!is_time(*ts)) return error(at, "EXTRACT needs a TIMESTAMP, DATE or TIME, not " + std::string(type_name(ts->type.kind)));
    const bool nullable = ts->type.nullable;
    return Expr::call(Op::kExtract, {TypeKind::kBigInt, nullable}, {unit_constant(*unit), as_timestamp(*std::move(ts))});
  }
  if ((name == "floor" || name == "ceil" || name == "ceiling") && e.args.size() == 2) {
    auto unit = unit_of(e.args[1], interval_units());
    if (!unit) return units_error(e.args[1], interval_units());
    auto ts = bound(0);
    if (!ts.ok()) return ts.status();
    if (!is_time(*ts)) return error(at, upper + "(x TO unit) needs a TIMESTAMP, not " + std::string(type_name(ts->type.kind)));
    const Type type = ts->type.kind == TypeKind::kNull ? Type{TypeKind::kTimestamp, true} : ts->type;
    Expr rounded = Expr::call(name == "floor" ? Op::kFloorTime : Op::kCeilTime, {TypeKind::kTimestamp, type.nullable},
                              {as_timestamp(*std::move(ts)), unit_constant(*unit)});
    return cast_to(std::move(rounded), type);  // FLOOR(date TO MONTH) is a DATE
  }
  if ((name == "timestampadd" || name == "timestampdiff") && !e.args.empty()) {
    if (e.args.size() != 3) return error(at, upper + " takes a unit and two arguments");
    auto unit = unit_of(e.args[0], interval_units());
    if (!unit) return units_error(e.args[0], interval_units());
    auto a = bound(1);
    if (!a.ok()) return a.status();
    auto b = bound(2);
    if (!b.ok()) return b.status();
    const bool add = name == "timestampadd";
    const bool typed = add ? (a->type.kind == TypeKind::kBigInt || a->type.kind == TypeKind::kNull) && is_time(*b)
                           : is_time(*a) && is_time(*b);
    if (!typed) {
      return error(at, upper + (add ? " takes (unit, BIGINT, TIMESTAMP)" : " takes (unit, TIMESTAMP, TIMESTAMP)") + ", not " +
                           std::string(type_name(a->type.kind)) + " and " + std::string(type_name(b->type.kind)));
    }
    const bool nullable = a->type.nullable || b->type.nullable;
    if (add) {
      const Type type{b->type.kind == TypeKind::kNull ? TypeKind::kTimestamp : b->type.kind, nullable};
      Expr sum = Expr::call(Op::kTimestampAdd, {TypeKind::kTimestamp, nullable},
                            {unit_constant(*unit), *std::move(a), as_timestamp(*std::move(b))});
      return cast_to(std::move(sum), type);  // a DATE plus days is a DATE
    }
    return Expr::call(Op::kTimestampDiff, {TypeKind::kBigInt, nullable},
                      {unit_constant(*unit), as_timestamp(*std::move(a)), as_timestamp(*std::move(b))});
  }
  return std::nullopt;
}

// The functions that are no fixed signature: of numbers (ROUND, FLOOR,
// CEIL, POWER, ...), of several strings (CONCAT_WS), of times given in
// other forms (YEAR(ts), ..., FROM_UNIXTIME, UNIX_TIMESTAMP(),
// CURRENT_TIMESTAMP). nullopt for any other function.
std::optional<absl::StatusOr<Expr>> Binder::more_functions(const std::string& name, std::vector<Expr> args, int at) const {
  const std::string upper = absl::AsciiStrToUpper(name);
  bool nullable = false;
  for (const Expr& a : args) nullable = nullable || a.type.nullable;
  // YEAR(ts), MONTH(ts), ...: EXTRACT's units.
  static const std::vector<std::pair<const char*, const char*>> kParts = {
      {"year", "YEAR"},     {"quarter", "QUARTER"}, {"month", "MONTH"},       {"week", "WEEK"},
      {"dayofyear", "DOY"}, {"dayofmonth", "DAY"},  {"dayofweek", "DOW"},     {"second", "SECOND"}};
  for (const auto& [part, unit] : kParts) {
    if (name != part) continue;
    if (args.size() != 1 || !is_time(args[0])) return error(at, upper + " takes one TIMESTAMP or DATE");
    return Expr::call(Op::kExtract, {TypeKind::kBigInt, nullable}, {unit_constant(unit), as_timestamp(std::move(args[0]))});
  }
  if (name == "current_timestamp" || name == "localtimestamp" || name == "now") {
    if (!args.empty()) return error(at, upper + " takes no arguments");
    return Expr::call(Op::kNow, {TypeKind::kTimestamp, false}, {});
  }
  if (name == "current_watermark") {  // CURRENT_WATERMARK(ts): the watermark of ts's rows where they are filtered
    if (args.size() != 1 || args[0].kind != Expr::Kind::kColumn || args[0].type.kind != TypeKind::kTimestamp) {
      return error(at, "CURRENT_WATERMARK takes a time attribute (a TIMESTAMP column)");
    }
    return Expr::call(Op::kCurrentWatermark, {TypeKind::kTimestamp, true}, std::move(args));
  }
  if (name == "current_date" || name == "current_time" || name == "localtime") {  // today, now's time of day (UTC)
    if (!args.empty()) return error(at, upper + " takes no arguments");
    const TypeKind kind = name == "current_date" ? TypeKind::kDate : TypeKind::kTime;
    return Expr::call(Op::kCast, {kind, false}, {Expr::call(Op::kNow, {TypeKind::kTimestamp, false}, {})});
  }
  if (name == "to_date") {  // TO_DATE(text [, pattern]): 'yyyy-MM-dd' (or text in Java's pattern) as a DATE
    const auto text = [](const Expr& a) { return a.type.kind == TypeKind::kVarchar || a.type.kind == TypeKind::kNull; };
    if (args.empty() || args.size() > 2 || !text(args[0]) || (args.size() == 2 && !text(args[1]))) {
      return error(at, "TO_DATE takes a VARCHAR and an optional VARCHAR pattern");
    }
    if (args.size() == 1) return Expr::call(Op::kCast, {TypeKind::kDate, nullable}, std::move(args));
    Expr ts = Expr::call(Op::kParseTimestamp, {TypeKind::kTimestamp, nullable}, std::move(args));
    return Expr::call(Op::kCast, {TypeKind::kDate, nullable}, {std::move(ts)});
  }
  if (name == "concat_ws") {
    if (args.size() < 2) return error(at, "CONCAT_WS takes a separator and one string or more");
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i].type.kind != TypeKind::kVarchar && args[i].type.kind != TypeKind::kNull) {
        return error(at, "CONCAT_WS: argument " + std::to_string(i + 1) + " must be VARCHAR, not " +
                             std::string(type_name(args[i].type.kind)));
      }
    }
    const bool null_separator = args[0].type.nullable;
    return Expr::call(Op::kConcatWs, {TypeKind::kVarchar, null_separator}, std::move(args));
  }
  if (name == "unix_timestamp" && args.empty()) {  // now, in seconds
    Expr now = Expr::call(Op::kCast, {TypeKind::kBigInt, false}, {Expr::call(Op::kNow, {TypeKind::kTimestamp, false}, {})});
    return Expr::call(Op::kDivide, {TypeKind::kBigInt, false}, {std::move(now), Expr::constant(int64_t{1000}, {TypeKind::kBigInt, false})});
  }
  if (name == "from_unixtime") {  // seconds as text: DATE_FORMAT(seconds as a TIMESTAMP, format)
    if (args.empty() || args.size() > 2 || (args[0].type.kind != TypeKind::kBigInt && args[0].type.kind != TypeKind::kNull) ||
        (args.size() == 2 && args[1].type.kind != TypeKind::kVarchar && args[1].type.kind != TypeKind::kNull)) {
      return error(at, "FROM_UNIXTIME takes BIGINT seconds and an optional VARCHAR format");
    }
    Expr ms = Expr::call(Op::kMultiply, {TypeKind::kBigInt, args[0].type.nullable},
                         {std::move(args[0]), Expr::constant(int64_t{1000}, {TypeKind::kBigInt, false})});
    Expr ts = Expr::call(Op::kCast, {TypeKind::kTimestamp, ms.type.nullable}, {std::move(ms)});
    Expr format = args.size() == 2 ? std::move(args[1]) : Expr::constant(std::string("yyyy-MM-dd HH:mm:ss"), {TypeKind::kVarchar, false});
    return Expr::call(Op::kDateFormat, {TypeKind::kVarchar, nullable}, {std::move(ts), std::move(format)});
  }
  const bool numeric = !args.empty() && std::all_of(args.begin(), args.end(), [](const Expr& a) {
    return a.type.numeric() || a.type.kind == TypeKind::kNull;
  });
  if (name == "power" || name == "pow" || name == "sqrt" || name == "ln" || name == "log10" || name == "exp") {
    const size_t arity = name == "power" || name == "pow" ? 2 : 1;
    if (args.size() != arity || !numeric) {
      return error(at, upper + " takes " + (arity == 2 ? "two numbers" : "one number"));
    }
    for (Expr& a : args) a = cast_to(std::move(a), {TypeKind::kDouble, a.type.nullable});
    const Op op = arity == 2 ? Op::kPower : name == "sqrt" ? Op::kSqrt : name == "ln" ? Op::kLn : name == "log10" ? Op::kLog10 : Op::kExp;
    return Expr::call(op, {TypeKind::kDouble, nullable}, std::move(args));
  }
  if (name == "floor" || name == "ceil" || name == "ceiling") {
    if (args.size() != 1 || !numeric) return error(at, upper + " takes one number (or a TIMESTAMP TO a unit)");
    Type t = args[0].type;
    if (t.kind == TypeKind::kDecimal) t = Type::decimal(std::min(kMaxDecimalPrecision, t.precision - t.scale + 1), 0, t.nullable);
    return Expr::call(name == "floor" ? Op::kFloor : Op::kCeil, t, std::move(args));
  }
  if (name == "round") {
    if (args.empty() || args.size() > 2 || !args[0].type.numeric()) return error(at, "ROUND takes a number and an optional number of digits");
    int64_t digits = 0;
    if (args.size() == 2) {
      if (args[1].kind != Expr::Kind::kLiteral || !std::holds_alternative<int64_t>(args[1].literal)) {
        return error(at, "ROUND: the digits must be a constant integer");
      }
      digits = std::get<int64_t>(args[1].literal);
    }
    Type t = args[0].type;
    if (t.kind == TypeKind::kDecimal) {
      const int scale = static_cast<int>(std::clamp<int64_t>(digits, 0, t.scale));
      t = Type::decimal(std::min(kMaxDecimalPrecision, t.precision - t.scale + scale + 1), scale, t.nullable);
    }
    args.resize(1);
    args.push_back(Expr::constant(digits, {TypeKind::kBigInt, false}));
    return Expr::call(Op::kRound, t, std::move(args));
  }
  return std::nullopt;
}

}  // namespace weir::sql
