#include "sql/planner.h"

#include <algorithm>
#include <functional>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sql/binder.h"

namespace weir::sql {
namespace {

using nlohmann::json;

class Planner {
 public:
  explicit Planner(const Script& script) : script_(script), binder_(script.text) {}

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
  absl::Status error(int offset, const std::string& what) const { return sql_error(script_.text, offset, what); }
  absl::Status unsupported(int offset, const std::string& what) const {
    return sql_unsupported(script_.text, offset, what);
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
    auto e = Binder(parsed->text).bind(target, {scope});
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
      auto cond = binder_.bind(s["whereClause"], {scope});
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
      auto e = binder_.bind(val, {scope});
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

  const Script& script_;
  const Binder binder_;
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
