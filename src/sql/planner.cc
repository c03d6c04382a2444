#include "sql/planner.h"

#include <algorithm>
#include <functional>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace weir::sql {
namespace {

using nlohmann::json;

// PostgreSQL's interval field bits (typmod of INTERVAL '4' SECOND etc.).
constexpr int64_t kMonthBit = 1 << 1, kYearBit = 1 << 2, kDayBit = 1 << 3, kHourBit = 1 << 10,
                  kMinuteBit = 1 << 11, kSecondBit = 1 << 12;

// The one key of a node object ("A_Const", "ColumnRef", ...).
std::string node_name(const json& n) { return n.is_object() && !n.empty() ? n.begin().key() : ""; }

int location_of(const json& n) {
  if (!n.is_object()) return -1;
  if (n.contains("location") && n["location"].is_number()) return n["location"].get<int>();
  for (const auto& [k, v] : n.items()) {
    if (v.is_object()) {
      const int l = location_of(v);
      if (l >= 0) return l;
    }
  }
  return -1;
}

// The string values of a list of {"String": {"sval": ...}} nodes.
std::vector<std::string> strings_of(const json& list) {
  std::vector<std::string> out;
  for (const auto& s : list) {
    if (s.contains("String")) out.push_back(s["String"].value("sval", ""));
  }
  return out;
}

// Names of the columns of a scope: what a column reference may name.
struct Scope {
  std::string qualifier;  // the table's name or alias
  std::vector<Column> columns;
};

class Planner {
 public:
  explicit Planner(const Script& script) : script_(script) {}

  absl::StatusOr<PlannedScript> run() {
    PlannedScript out;
    for (const Statement& st : script_.statements) {
      const std::string kind = node_name(st.tree);
      const json& body = st.tree[kind];
      if (kind == "CreateStmt") {
        auto t = create_table(body, st.offset);
        if (!t.ok()) return t.status();
        by_name_[absl::AsciiStrToLower(t->name)] = tables_.size();
        tables_.push_back(*std::move(t));
      } else if (kind == "InsertStmt") {
        auto p = insert(body, st.offset);
        if (!p.ok()) return p.status();
        out.inserts.push_back({st.text, st.offset, *std::move(p)});
      } else if (kind == "SelectStmt") {
        return error(st.offset, "a SELECT needs a table to go to: INSERT INTO <table> SELECT ...");
      } else {
        return error(st.offset, "unsupported statement " + kind + " (CREATE TABLE and INSERT INTO ... SELECT are)");
      }
    }
    if (out.inserts.empty()) return absl::InvalidArgumentError("the script has no INSERT INTO ... SELECT: nothing to run");
    out.tables = std::move(tables_);
    return out;
  }

 private:
  absl::Status error(int offset, const std::string& what) const {
    return absl::InvalidArgumentError(position_of(script_.text, std::max(offset, 0)) + ": " + what);
  }
  absl::Status unsupported(int offset, const std::string& what) const {
    return error(offset, what + " is not supported yet");
  }

  const TableDef* find_table(const std::string& name) const {
    auto it = by_name_.find(absl::AsciiStrToLower(name));
    return it == by_name_.end() ? nullptr : &tables_[it->second];
  }

  // ---- CREATE TABLE ---------------------------------------------------------

  absl::StatusOr<Type> column_type(const json& type_name) {
    const std::vector<std::string> names = strings_of(type_name["names"]);
    const std::string name = names.empty() ? "" : names.back();
    const int at = type_name.value("location", -1);
    auto kind = type_of_name(name);
    if (!kind) return error(at, "unknown type " + absl::AsciiStrToUpper(name));
    if (*kind == TypeKind::kTimestamp && type_name.contains("typmods")) {
      const json& mod = type_name["typmods"][0];
      const int64_t precision = mod.contains("A_Const") ? mod["A_Const"].value("ival", json::object()).value("ival", 0) : -1;
      if (precision != 3) return error(at, "TIMESTAMP(" + std::to_string(precision) + "): only TIMESTAMP(3) (milliseconds) is supported");
    }
    if (type_name.contains("arrayBounds")) return unsupported(at, "ARRAY types");
    return Type{*kind, true};
  }

  absl::StatusOr<std::string> option_value(const json& arg, int at) {
    const std::string k = node_name(arg);
    if (k == "String") return arg[k].value("sval", "");
    if (k == "Integer") return std::to_string(arg[k].value("ival", 0));
    if (k == "Float") return arg[k].value("fval", "");
    if (k == "Boolean") return std::string(arg[k].value("boolval", false) ? "true" : "false");
    if (k == "TypeName") {
      auto n = strings_of(arg[k]["names"]);
      return n.empty() ? std::string() : n.back();
    }
    return error(at, "an option's value is a string, a number or a word");
  }

  absl::StatusOr<TableDef> create_table(const json& b, int offset) {
    TableDef t;
    t.name = b["relation"].value("relname", "");
    t.offset = offset;
    if (find_table(t.name) != nullptr) return error(b["relation"].value("location", offset), "table " + t.name + " is declared twice");
    std::vector<std::string> primary_key;
    for (const auto& e : b.value("tableElts", json::array())) {
      if (e.contains("ColumnDef")) {
        const json& c = e["ColumnDef"];
        auto type = column_type(c["typeName"]);
        if (!type.ok()) return type.status();
        for (const auto& con : c.value("constraints", json::array())) {
          const std::string kind = con["Constraint"].value("contype", "");
          if (kind == "CONSTR_NOTNULL") {
            type->nullable = false;
          } else if (kind == "CONSTR_PRIMARY") {
            type->nullable = false;
            primary_key.push_back(c.value("colname", ""));
          } else if (kind != "CONSTR_NULL") {
            return unsupported(con["Constraint"].value("location", offset), "column constraint " + kind.substr(7));
          }
        }
        if (t.index_of(c.value("colname", "")) >= 0) return error(c.value("location", offset), "column " + c.value("colname", "") + " is declared twice");
        t.columns.push_back({c.value("colname", ""), *type});
      } else if (e.contains("Constraint") && e["Constraint"].value("contype", "") == "CONSTR_PRIMARY") {
        for (const std::string& k : strings_of(e["Constraint"]["keys"])) primary_key.push_back(k);
      } else {
        return unsupported(location_of(e), "table element " + node_name(e));
      }
    }
    for (const std::string& k : primary_key) {
      const int i = t.index_of(k);
      if (i < 0) return error(offset, "table " + t.name + ": primary key column " + k + " is not a column");
      t.columns[i].type.nullable = false;
    }
    if (!primary_key.empty()) t.options["primary-key"] = absl::StrJoin(primary_key, ",");
    for (const auto& o : b.value("options", json::array())) {
      const json& d = o["DefElem"];
      const int at = d.value("location", offset);
      auto v = option_value(d.value("arg", json::object()), at);
      if (!v.ok()) return v.status();
      t.options[absl::AsciiStrToLower(d.value("defname", ""))] = *v;
    }
    if (!t.options.contains("connector")) {
      return error(offset, "table " + t.name + " has no connector: WITH (connector = '" +
                               absl::StrJoin(known_connectors(), "' | '") + "', ...)");
    }
    const auto& known = known_connectors();
    if (std::find(known.begin(), known.end(), t.connector()) == known.end()) {
      return error(offset, "table " + t.name + ": unknown connector '" + t.connector() + "' (known: " +
                               absl::StrJoin(known, ", ") + ")");
    }
    if (auto w = t.options.find("watermark"); w != t.options.end()) {
      auto spec = watermark(t, w->second, offset);
      if (!spec.ok()) return spec.status();
      t.watermark = *spec;
    }
    return t;
  }

  // `watermark = 'ts - INTERVAL ''4'' SECOND'` (or just 'ts').
  absl::StatusOr<WatermarkSpec> watermark(const TableDef& t, const std::string& text, int offset) {
    auto parsed = parse_script("SELECT " + text);
    const std::string what = "table " + t.name + ": watermark '" + text + "'";
    if (!parsed.ok() || parsed->statements.size() != 1) {
      return error(offset, what + ": not an expression (ts or ts - INTERVAL 'n' SECOND)");
    }
    const json& target = parsed->statements[0].tree["SelectStmt"]["targetList"][0]["ResTarget"]["val"];
    Scope scope{t.name, t.columns};
    Planner inner(*parsed);
    auto e = inner.bind(target, {scope});
    if (!e.ok()) return error(offset, what + ": " + std::string(e.status().message()));
    WatermarkSpec spec;
    const Expr* col = &*e;
    if (e->kind == Expr::Kind::kCall && e->op == Op::kSubtract && e->args[1].kind == Expr::Kind::kLiteral &&
        e->args[1].type.kind == TypeKind::kInterval) {
      spec.delay_ms = std::get<int64_t>(e->args[1].literal);
      col = &e->args[0];
    }
    if (col->kind != Expr::Kind::kColumn || col->type.kind != TypeKind::kTimestamp || spec.delay_ms < 0) {
      return error(offset, what + ": must be a TIMESTAMP(3) column, or one minus a constant INTERVAL");
    }
    spec.column = t.columns[col->column].name;
    return spec;
  }

  // ---- INSERT and SELECT ------------------------------------------------------

  absl::StatusOr<std::unique_ptr<PlanNode>> insert(const json& b, int offset) {
    const std::string name = b["relation"].value("relname", "");
    const TableDef* sink = find_table(name);
    if (sink == nullptr) return error(b["relation"].value("location", offset), "no table " + name + " (declare it with CREATE TABLE)");
    if (b.contains("cols")) return unsupported(offset, "INSERT with a column list");
    auto query = select(b["selectStmt"]["SelectStmt"], offset);
    if (!query.ok()) return query.status();
    const auto& got = (*query)->columns;
    if (got.size() != sink->columns.size()) {
      return error(offset, "INSERT INTO " + name + ": the query has " + std::to_string(got.size()) +
                               " columns, the table " + std::to_string(sink->columns.size()));
    }
    for (size_t i = 0; i < got.size(); ++i) {
      if (!assignable(got[i].type.kind, sink->columns[i].type.kind)) {
        return error(offset, "INSERT INTO " + name + ": column " + sink->columns[i].name + " is " +
                                 std::string(type_name(sink->columns[i].type.kind)) + ", the query gives " +
                                 std::string(type_name(got[i].type.kind)) + " (" + got[i].name + ")");
      }
    }
    auto node = std::make_unique<PlanNode>();
    node->kind = PlanNode::Kind::kSink;
    node->table = sink->name;
    node->columns = sink->columns;
    node->input = *std::move(query);
    return node;
  }

  absl::StatusOr<std::unique_ptr<PlanNode>> select(const json& s, int offset) {
    // What is not built yet, named where it stands.
    if (s.value("op", "SETOP_NONE") != "SETOP_NONE") return unsupported(offset, "UNION / INTERSECT / EXCEPT");
    static const std::vector<std::pair<const char*, const char*>> kNotYet = {
        {"groupClause", "GROUP BY"},   {"havingClause", "HAVING"},      {"distinctClause", "DISTINCT"},
        {"sortClause", "ORDER BY"},    {"limitCount", "LIMIT"},         {"limitOffset", "OFFSET"},
        {"windowClause", "WINDOW"},    {"withClause", "WITH"},          {"valuesLists", "VALUES"}};
    for (const auto& [field, name] : kNotYet) {
      if (s.contains(field)) return unsupported(location_of(s[field].is_array() ? s[field][0] : s[field]), name);
    }
    const json from = s.value("fromClause", json::array());
    if (from.empty()) return unsupported(offset, "SELECT without FROM");
    if (from.size() > 1) return unsupported(location_of(from[1]), "a join (several tables in FROM)");
    Scope scope;
    auto input = from_item(from[0], &scope, offset);
    if (!input.ok()) return input.status();
    std::unique_ptr<PlanNode> node = *std::move(input);
    if (s.contains("whereClause")) {
      auto cond = bind(s["whereClause"], {scope});
      if (!cond.ok()) return cond.status();
      if (cond->type.kind != TypeKind::kBoolean && cond->type.kind != TypeKind::kNull) {
        return error(location_of(s["whereClause"]), "WHERE needs a BOOLEAN, not " + std::string(type_name(cond->type.kind)));
      }
      auto filter = std::make_unique<PlanNode>();
      filter->kind = PlanNode::Kind::kFilter;
      filter->columns = node->columns;
      filter->exprs.push_back(*std::move(cond));
      filter->input = std::move(node);
      node = std::move(filter);
    }
    auto project = std::make_unique<PlanNode>();
    project->kind = PlanNode::Kind::kProject;
    int unnamed = 0;
    for (const auto& t : s.value("targetList", json::array())) {
      const json& r = t["ResTarget"];
      const json& val = r["val"];
      if (node_name(val) == "ColumnRef" && !val["ColumnRef"]["fields"].empty() &&
          val["ColumnRef"]["fields"].back().contains("A_Star")) {
        for (size_t i = 0; i < scope.columns.size(); ++i) {
          project->exprs.push_back(Expr::column_ref(static_cast<int>(i), scope.columns[i].type));
          project->columns.push_back(scope.columns[i]);
        }
        continue;
      }
      auto e = bind(val, {scope});
      if (!e.ok()) return e.status();
      std::string name = r.value("name", "");
      if (name.empty()) name = e->kind == Expr::Kind::kColumn ? scope.columns[e->column].name : "EXPR$" + std::to_string(unnamed);
      ++unnamed;
      for (const Column& c : project->columns) {
        if (absl::EqualsIgnoreCase(c.name, name)) return error(r.value("location", offset), "the query names column " + name + " twice");
      }
      project->columns.push_back({name, e->type});
      project->exprs.push_back(*std::move(e));
    }
    project->input = std::move(node);
    prune_scan(project.get());
    return project;
  }

  // Projection push-down: a scan under a projection (and filters) reads
  // only the columns they use; their column references are renumbered.
  static void prune_scan(PlanNode* project) {
    std::vector<PlanNode*> filters;
    PlanNode* n = project->input.get();
    while (n->kind == PlanNode::Kind::kFilter) {
      filters.push_back(n);
      n = n->input.get();
    }
    if (n->kind != PlanNode::Kind::kScan) return;
    std::vector<bool> used(n->columns.size(), false);
    std::function<void(const Expr&)> mark = [&](const Expr& e) {
      if (e.kind == Expr::Kind::kColumn) used[e.column] = true;
      for (const Expr& a : e.args) mark(a);
    };
    for (const Expr& e : project->exprs) mark(e);
    for (PlanNode* f : filters) mark(f->exprs[0]);
    std::vector<int> to(n->columns.size(), -1);
    std::vector<Column> kept;
    for (size_t i = 0; i < used.size(); ++i) {
      if (!used[i]) continue;
      to[i] = static_cast<int>(kept.size());
      kept.push_back(n->columns[i]);
    }
    if (kept.size() == n->columns.size()) return;
    std::function<void(Expr&)> renumber = [&](Expr& e) {
      if (e.kind == Expr::Kind::kColumn) e.column = to[e.column];
      for (Expr& a : e.args) renumber(a);
    };
    for (Expr& e : project->exprs) renumber(e);
    for (PlanNode* f : filters) {
      renumber(f->exprs[0]);
      f->columns = kept;
    }
    n->columns = std::move(kept);
  }

  absl::StatusOr<std::unique_ptr<PlanNode>> from_item(const json& item, Scope* scope, int offset) {
    const std::string kind = node_name(item);
    if (kind == "RangeVar") {
      const json& r = item[kind];
      const std::string name = r.value("relname", "");
      const TableDef* t = find_table(name);
      if (t == nullptr) return error(r.value("location", offset), "no table " + name + " (declare it with CREATE TABLE)");
      scope->qualifier = r.contains("alias") ? r["alias"].value("aliasname", name) : t->name;
      scope->columns = t->columns;
      auto scan = std::make_unique<PlanNode>();
      scan->kind = PlanNode::Kind::kScan;
      scan->table = t->name;
      scan->columns = t->columns;
      return scan;
    }
    if (kind == "RangeSubselect") {
      const json& r = item[kind];
      auto inner = select(r["subquery"]["SelectStmt"], offset);
      if (!inner.ok()) return inner.status();
      scope->qualifier = r.contains("alias") ? r["alias"].value("aliasname", "") : "";
      scope->columns = (*inner)->columns;
      return inner;
    }
    if (kind == "RangeFunction") {
      const json& call = item[kind]["functions"][0]["List"]["items"][0];
      const auto fn = strings_of(call.value("FuncCall", json::object()).value("funcname", json::array()));
      return unsupported(location_of(call), "the table function " + absl::AsciiStrToUpper(fn.empty() ? "?" : fn.back()) +
                                                 " (TUMBLE, HOP, SESSION, CUMULATE windows)");
    }
    if (kind == "JoinExpr") return unsupported(location_of(item), "JOIN");
    return unsupported(location_of(item), "FROM " + kind);
  }

  // ---- expressions ------------------------------------------------------------

  absl::StatusOr<Expr> bind(const json& n, const std::vector<Scope>& scopes) {
    auto e = bind_node(n, scopes);
    if (!e.ok() || e->kind != Expr::Kind::kCall || !e->is_constant()) return e;
    // Constant folding: a constant expression is its value.
    auto v = evaluate(*e, Row{});
    if (!v.ok()) return error(location_of(n), std::string(v.status().message()));
    return Expr::constant(*std::move(v), e->type);
  }

  absl::StatusOr<Expr> bind_node(const json& n, const std::vector<Scope>& scopes) {
    const std::string kind = node_name(n);
    const json& b = n[kind];
    const int at = location_of(n);
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
      TypeKind t = TypeKind::kNull;
      bool nullable = true;
      for (const auto& a : b["args"]) {
        auto x = bind(a, scopes);
        if (!x.ok()) return x.status();
        auto c = common_type(t, x->type.kind);
        if (!c) return error(location_of(a), "COALESCE of " + std::string(type_name(t)) + " and " + std::string(type_name(x->type.kind)));
        t = *c;
        nullable = nullable && x->type.nullable;
        args.push_back(*std::move(x));
      }
      return Expr::call(Op::kCoalesce, {t, nullable}, std::move(args));
    }
    if (kind == "CaseExpr") return case_expr(b, scopes, at);
    if (kind == "FuncCall") return function(b, scopes, at);
    return unsupported(at, "the expression " + kind);
  }

  absl::StatusOr<Expr> column(const json& b, const std::vector<Scope>& scopes, int at) {
    const std::vector<std::string> parts = strings_of(b["fields"]);
    if (parts.empty() || parts.size() > 2) return unsupported(at, "this column reference");
    const std::string& name = parts.back();
    for (const Scope& s : scopes) {
      if (parts.size() == 2 && !absl::EqualsIgnoreCase(parts[0], s.qualifier)) continue;
      for (size_t i = 0; i < s.columns.size(); ++i) {
        if (absl::EqualsIgnoreCase(s.columns[i].name, name)) return Expr::column_ref(static_cast<int>(i), s.columns[i].type);
      }
    }
    return error(at, "no column " + absl::StrJoin(parts, "."));
  }

  absl::StatusOr<Expr> literal(const json& b, int at) {
    if (b.value("isnull", false)) return Expr::constant(Value{}, {TypeKind::kNull, true});
    if (b.contains("ival")) return Expr::constant(int64_t{b["ival"].value("ival", 0)}, {TypeKind::kBigInt, false});
    if (b.contains("fval")) {
      const std::string text = b["fval"].value("fval", "0");
      int64_t i;
      if (absl::SimpleAtoi(text, &i)) return Expr::constant(i, {TypeKind::kBigInt, false});  // beyond 32 bits
      double d;
      if (!absl::SimpleAtod(text, &d)) return error(at, "not a number: " + text);
      return Expr::constant(d, {TypeKind::kDouble, false});
    }
    if (b.contains("sval")) return Expr::constant(b["sval"].value("sval", ""), {TypeKind::kVarchar, false});
    if (b.contains("boolval")) return Expr::constant(b["boolval"].value("boolval", false), {TypeKind::kBoolean, false});
    return unsupported(at, "this literal");
  }

  absl::StatusOr<Expr> type_cast(const json& b, const std::vector<Scope>& scopes, int at) {
    const json& tn = b["typeName"];
    const std::vector<std::string> names = strings_of(tn["names"]);
    const std::string name = names.empty() ? "" : names.back();
    auto to = type_of_name(name);
    if (!to) return error(tn.value("location", at), "unknown type " + absl::AsciiStrToUpper(name));
    if (*to == TypeKind::kInterval) return interval(b, at);
    auto x = bind(b["arg"], scopes);
    if (!x.ok()) return x.status();
    const TypeKind from = x->type.kind;
    const bool ok = from == *to || from == TypeKind::kNull || from == TypeKind::kVarchar || *to == TypeKind::kVarchar ||
                    (x->type.numeric() && (*to == TypeKind::kBigInt || *to == TypeKind::kDouble)) ||
                    (from == TypeKind::kBoolean && *to == TypeKind::kBigInt) ||
                    (from == TypeKind::kBigInt && (*to == TypeKind::kBoolean || *to == TypeKind::kTimestamp)) ||
                    (from == TypeKind::kTimestamp && *to == TypeKind::kBigInt);
    if (!ok) return error(at, "cannot CAST " + std::string(type_name(from)) + " to " + std::string(type_name(*to)));
    const bool nullable = x->type.nullable;
    return Expr::call(Op::kCast, {*to, nullable}, {*std::move(x)});
  }

  // INTERVAL '4' SECOND (the unit as PostgreSQL's typmod), or INTERVAL
  // '10 seconds'.
  absl::StatusOr<Expr> interval(const json& b, int at) {
    const json& arg = b["arg"];
    if (node_name(arg) != "A_Const" || !arg["A_Const"].contains("sval")) return unsupported(at, "an INTERVAL of an expression");
    std::string text = arg["A_Const"]["sval"].value("sval", "");
    int64_t unit_ms = 0;
    const json& tn = b["typeName"];
    if (tn.contains("typmods")) {
      const int64_t bits = tn["typmods"][0]["A_Const"].value("ival", json::object()).value("ival", 0);
      if (bits == kSecondBit) unit_ms = 1000;
      else if (bits == kMinuteBit) unit_ms = 60'000;
      else if (bits == kHourBit) unit_ms = 3'600'000;
      else if (bits == kDayBit) unit_ms = 86'400'000;
      else if (bits == kMonthBit || bits == kYearBit) return unsupported(at, "INTERVAL in months or years");
      else return unsupported(at, "this INTERVAL (one of SECOND, MINUTE, HOUR, DAY)");
    } else {
      // "10 seconds", "2 minute", ...
      std::vector<std::string> words = absl::StrSplit(absl::StripAsciiWhitespace(text), ' ', absl::SkipEmpty());
      if (words.size() != 2) return error(at, "INTERVAL '" + text + "': a number and a unit ('10 seconds')");
      std::string u = absl::AsciiStrToLower(words[1]);
      if (!u.empty() && u.back() == 's') u.pop_back();
      static const std::map<std::string, int64_t> kUnits = {
          {"millisecond", 1}, {"second", 1000}, {"minute", 60'000}, {"hour", 3'600'000}, {"day", 86'400'000}};
      auto it = kUnits.find(u);
      if (it == kUnits.end()) return error(at, "INTERVAL '" + text + "': unknown unit " + words[1]);
      unit_ms = it->second;
      text = words[0];
    }
    double n;
    if (!absl::SimpleAtod(absl::StripAsciiWhitespace(text), &n)) return error(at, "INTERVAL '" + text + "': not a number");
    return Expr::constant(static_cast<int64_t>(n * static_cast<double>(unit_ms)), {TypeKind::kInterval, false});
  }

  absl::StatusOr<Expr> operator_call(const json& b, const std::vector<Scope>& scopes, int at) {
    const std::string kind = b.value("kind", "");
    const std::vector<std::string> name = strings_of(b["name"]);
    const std::string op = name.empty() ? "?" : name.back();
    if (kind != "AEXPR_OP") {
      static const std::map<std::string, std::string> kKinds = {
          {"AEXPR_LIKE", "LIKE"}, {"AEXPR_ILIKE", "ILIKE"}, {"AEXPR_IN", "IN"}, {"AEXPR_BETWEEN", "BETWEEN"},
          {"AEXPR_NOT_BETWEEN", "NOT BETWEEN"}, {"AEXPR_DISTINCT", "IS DISTINCT FROM"},
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
        t = common_type(l, r);
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
      return Expr::call(a->second, {*t, nullable}, std::move(args));
    }
    if (auto c = kCompare.find(op); c != kCompare.end()) {
      if (!common_type(l, r)) return mismatch();
      return Expr::call(c->second, {TypeKind::kBoolean, nullable}, std::move(args));
    }
    if (op == "||") return Expr::call(Op::kConcat, {TypeKind::kVarchar, nullable}, std::move(args));
    return unsupported(at, "the operator " + op);
  }

  absl::StatusOr<Expr> case_expr(const json& b, const std::vector<Scope>& scopes, int at) {
    std::optional<Expr> subject;  // CASE x WHEN v ...: each WHEN is x = v
    if (b.contains("arg")) {
      auto x = bind(b["arg"], scopes);
      if (!x.ok()) return x.status();
      subject = *std::move(x);
    }
    std::vector<Expr> args;
    TypeKind result = TypeKind::kNull;
    bool nullable = !b.contains("defresult");
    auto add_result = [&](const json& n) -> absl::Status {
      auto r = bind(n, scopes);
      if (!r.ok()) return r.status();
      auto t = common_type(result, r->type.kind);
      if (!t) return error(location_of(n), "CASE results of " + std::string(type_name(result)) + " and " + std::string(type_name(r->type.kind)));
      result = *t;
      nullable = nullable || r->type.nullable;
      args.push_back(*std::move(r));
      return absl::OkStatus();
    };
    for (const auto& w : b["args"]) {
      const json& cw = w["CaseWhen"];
      auto cond = bind(cw["expr"], scopes);
      if (!cond.ok()) return cond.status();
      if (subject) {
        if (!common_type(subject->type.kind, cond->type.kind)) return error(location_of(cw["expr"]), "CASE compares " + std::string(type_name(subject->type.kind)) + " with " + std::string(type_name(cond->type.kind)));
        const bool n = subject->type.nullable || cond->type.nullable;
        cond = Expr::call(Op::kEqual, {TypeKind::kBoolean, n}, {*subject, *std::move(cond)});
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
    Expr e = Expr::call(Op::kCase, {result, nullable}, std::move(args));
    e.has_else = has_else;
    (void)at;
    return e;
  }

  absl::StatusOr<Expr> function(const json& b, const std::vector<Scope>& scopes, int at) {
    const std::vector<std::string> names = strings_of(b["funcname"]);
    const std::string name = absl::AsciiStrToLower(names.empty() ? "" : names.back());
    static const std::vector<std::string> kAggregates = {"count", "sum", "min", "max", "avg"};
    if (std::find(kAggregates.begin(), kAggregates.end(), name) != kAggregates.end()) {
      return unsupported(at, "the aggregate " + absl::AsciiStrToUpper(name) + " (GROUP BY)");
    }
    if (b.contains("over")) return unsupported(at, "OVER windows");
    std::vector<Expr> args;
    for (const auto& a : b.value("args", json::array())) {
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
    if (name == "abs") {
      const bool numeric = args.size() == 1 && args[0].type.numeric();
      return one_arg(numeric, numeric ? args[0].type.kind : TypeKind::kBigInt, Op::kAbs);
    }
    return error(at, "unknown function " + upper);
  }

  const Script& script_;
  std::vector<TableDef> tables_;            // declared so far
  std::map<std::string, size_t> by_name_;  // lower-case name -> index into tables_
};

}  // namespace

const std::vector<std::string>& known_connectors() {
  static const std::vector<std::string> kKnown = {"nexmark", "filesystem", "kafka", "postgres", "print", "blackhole"};
  return kKnown;
}

absl::StatusOr<PlannedScript> plan_script(const Script& script) { return Planner(script).run(); }

std::string explain(const PlannedScript& planned) {
  std::string out;
  for (const InsertPlan& p : planned.inserts) {
    out += "== " + p.statement + "\n" + explain(*p.root);
  }
  return out;
}

}  // namespace weir::sql
