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
    // The text must parse as one bare expression: a SELECT of one target and
    // nothing else (a comment, a second statement or a FROM in the option fails).
    const json* target = nullptr;
    if (parsed.ok() && parsed->statements.size() == 1 && parsed->statements[0].tree.contains("SelectStmt")) {
      const json& select = parsed->statements[0].tree["SelectStmt"];
      const bool bare = !select.contains("fromClause") && !select.contains("whereClause") &&
                        !select.contains("groupClause") && !select.contains("distinctClause");
      if (bare && select.contains("targetList") && select["targetList"].size() == 1) {
        const json& res = select["targetList"][0];
        if (res.contains("ResTarget") && res["ResTarget"].contains("val")) target = &res["ResTarget"]["val"];
      }
    }
    if (target == nullptr) return error(offset, what + ": not an expression (ts or ts - INTERVAL 'n' SECOND)");
    Scope scope{t.name, t.columns};
    auto e = Binder(parsed->text).bind(*target, {scope});
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
        {"distinctClause", "DISTINCT"},
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
      node = filter_over(std::move(node), *std::move(cond));
    }
    if (s.contains("groupClause") || s.contains("havingClause")) return grouped(s, std::move(node), scope, offset);
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

  // A filter of `cond` over `input`; below a window table function when the
  // condition reads none of the window's columns (filter push-down).
  static std::unique_ptr<PlanNode> filter_over(std::unique_ptr<PlanNode> input, Expr cond) {
    if (input->kind == PlanNode::Kind::kWindow && !reads_columns_from(cond, static_cast<int>(input->input->columns.size()))) {
      input->input = filter_over(std::move(input->input), std::move(cond));
      return input;
    }
    auto filter = std::make_unique<PlanNode>();
    filter->kind = PlanNode::Kind::kFilter;
    filter->columns = input->columns;
    filter->exprs.push_back(std::move(cond));
    filter->input = std::move(input);
    return filter;
  }

  // Whether `e` reads a column at or after `first`.
  static bool reads_columns_from(const Expr& e, int first) {
    if (e.kind == Expr::Kind::kColumn) return e.column >= first;
    return std::any_of(e.args.begin(), e.args.end(), [first](const Expr& a) { return reads_columns_from(a, first); });
  }

  // ---- GROUP BY -------------------------------------------------------------

  // SELECT ... GROUP BY over a window table function: an aggregate of each
  // window's rows per key, final when the window closes (append-only).
  absl::StatusOr<std::unique_ptr<PlanNode>> grouped(const json& s, std::unique_ptr<PlanNode> input, const Scope& scope,
                                                    int offset) {
    const int group_at = s.contains("groupClause") ? location_of(s["groupClause"][0]) : offset;
    Grouping g;
    g.input = {scope};
    for (const auto& k : s.value("groupClause", json::array())) {
      const std::string kind = node_name(k);
      if (kind == "GroupingSet") return unsupported(location_of(k), "GROUPING SETS, ROLLUP and CUBE");
      auto key = binder_.bind(k, g.input);
      if (!key.ok()) return key.status();
      if (key->is_constant()) return unsupported(location_of(k), "GROUP BY a constant or a column's position");
      g.keys.push_back(*std::move(key));
    }
    // The window: under filters of the rows, a window table function whose
    // window_start and window_end are both grouping keys.
    const PlanNode* window = input.get();
    while (window->kind == PlanNode::Kind::kFilter) window = window->input.get();
    if (window->kind != PlanNode::Kind::kWindow) {
      return unsupported(group_at, "GROUP BY without a window table function (an updating result)");
    }
    const int first = static_cast<int>(window->input->columns.size());
    bool start = false, end = false;
    for (const Expr& k : g.keys) {
      if (!reads_columns_from(k, first)) continue;
      if (k.kind != Expr::Kind::kColumn) return unsupported(group_at, "GROUP BY an expression of window_start, window_end or window_time");
      start = start || k.column == first;
      end = end || k.column == first + 1;
    }
    if (!start || !end) {
      return error(group_at, "GROUP BY over " + window->window->to_string() + " needs both window_start and window_end");
    }
    if (input.get() != window) return unsupported(group_at, "WHERE on window_start, window_end or window_time before GROUP BY");
    // The select list and HAVING over the groups.
    const Binder grouped_binder(script_.text, &g);
    std::vector<Expr> targets;
    std::vector<Column> columns;
    int unnamed = 0;
    for (const auto& t : s.value("targetList", json::array())) {
      const json& r = t["ResTarget"];
      if (node_name(r["val"]) == "ColumnRef" && r["val"]["ColumnRef"]["fields"].back().contains("A_Star")) {
        return error(r.value("location", offset), "SELECT * with GROUP BY: name the grouped columns and aggregates");
      }
      auto e = grouped_binder.bind(r["val"], {});
      if (!e.ok()) return e.status();
      std::string name = r.value("name", "");
      if (name.empty() && e->kind == Expr::Kind::kColumn && e->column < static_cast<int>(g.keys.size()) &&
          g.keys[e->column].kind == Expr::Kind::kColumn) {
        name = scope.columns[g.keys[e->column].column].name;
      }
      if (name.empty()) name = "EXPR$" + std::to_string(unnamed);
      ++unnamed;
      for (const Column& c : columns) {
        if (absl::EqualsIgnoreCase(c.name, name)) return error(r.value("location", offset), "the query names column " + name + " twice");
      }
      columns.push_back({name, e->type});
      targets.push_back(*std::move(e));
    }
    std::optional<Expr> having;
    if (s.contains("havingClause")) {
      auto h = grouped_binder.bind(s["havingClause"], {});
      if (!h.ok()) return h.status();
      if (h->type.kind != TypeKind::kBoolean && h->type.kind != TypeKind::kNull) {
        return error(location_of(s["havingClause"]), "HAVING needs a BOOLEAN, not " + std::string(type_name(h->type.kind)));
      }
      having = *std::move(h);
    }
    for (const AggregateCall& c : g.calls) {
      if (c.arg && reads_columns_from(*c.arg, first)) return unsupported(group_at, "an aggregate of window_start, window_end or window_time");
    }
    auto agg = std::make_unique<PlanNode>();
    agg->kind = PlanNode::Kind::kAggregate;
    for (size_t i = 0; i < g.keys.size(); ++i) {
      const Expr& k = g.keys[i];
      agg->columns.push_back({k.kind == Expr::Kind::kColumn ? scope.columns[k.column].name : "$key" + std::to_string(i), k.type});
    }
    for (size_t i = 0; i < g.calls.size(); ++i) agg->columns.push_back({"$agg" + std::to_string(i), g.calls[i].type});
    agg->exprs = std::move(g.keys);
    agg->aggregates = std::move(g.calls);
    agg->input = std::move(input);
    prune_scan(agg.get());
    std::unique_ptr<PlanNode> node = std::move(agg);
    if (having) node = filter_over(std::move(node), *std::move(having));
    auto project = std::make_unique<PlanNode>();
    project->kind = PlanNode::Kind::kProject;
    project->columns = std::move(columns);
    project->exprs = std::move(targets);
    project->input = std::move(node);
    return project;
  }

  // Projection push-down: a scan under `top` (through filters and a window
  // table function) reads only the columns that `top` and they use (and the
  // event time a window needs); their column references are renumbered.
  static void prune_scan(PlanNode* top) {
    std::vector<PlanNode*> chain;  // from top's input down, without the scan
    PlanNode* n = top->input.get();
    while (n->kind == PlanNode::Kind::kFilter || n->kind == PlanNode::Kind::kWindow) {
      chain.push_back(n);
      n = n->input.get();
    }
    if (n->kind != PlanNode::Kind::kScan) return;
    PlanNode* scan = n;
    const int width = static_cast<int>(scan->columns.size());
    std::vector<bool> used(width, false);
    std::function<void(const Expr&)> mark = [&](const Expr& e) {
      if (e.kind == Expr::Kind::kColumn && e.column < width) used[e.column] = true;
      for (const Expr& a : e.args) mark(a);
    };
    std::vector<Expr*> above;  // every expression reading the chain's columns
    for (Expr& e : top->exprs) above.push_back(&e);
    for (AggregateCall& a : top->aggregates) {
      if (a.arg) above.push_back(&*a.arg);
    }
    for (PlanNode* c : chain) {
      if (c->kind == PlanNode::Kind::kFilter) above.push_back(&c->exprs[0]);
      if (c->kind == PlanNode::Kind::kWindow) {
        for (int i = 0; i < width; ++i) used[i] = used[i] || absl::EqualsIgnoreCase(scan->columns[i].name, c->window->time_column);
      }
    }
    for (const Expr* e : above) mark(*e);
    std::vector<int> to(width, -1);
    std::vector<Column> kept;
    for (int i = 0; i < width; ++i) {
      if (!used[i]) continue;
      to[i] = static_cast<int>(kept.size());
      kept.push_back(scan->columns[i]);
    }
    if (static_cast<int>(kept.size()) == width) return;
    const int shift = width - static_cast<int>(kept.size());
    std::function<void(Expr&)> renumber = [&](Expr& e) {
      if (e.kind == Expr::Kind::kColumn) e.column = e.column < width ? to[e.column] : e.column - shift;
      for (Expr& a : e.args) renumber(a);
    };
    for (Expr* e : above) renumber(*e);
    scan->columns = std::move(kept);
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      PlanNode* c = *it;
      std::vector<Column> cols = c->input->columns;
      if (c->kind == PlanNode::Kind::kWindow) cols.insert(cols.end(), c->columns.end() - kWindowColumns, c->columns.end());
      c->columns = std::move(cols);
    }
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
    if (kind == "RangeFunction") return window_function(item[kind], scope, offset);
    if (kind == "JoinExpr") return unsupported(location_of(item), "JOIN");
    return unsupported(location_of(item), "FROM " + kind);
  }

  // FROM TUMBLE(t, DESCRIPTOR(ts), size [, offset]), HOP(t, DESCRIPTOR(ts),
  // slide, size [, offset]) or SESSION(t, DESCRIPTOR(ts), gap): the rows of
  // table t with the window columns after its own (for HOP, once per
  // window). ts must be t's event time (its watermark column).
  absl::StatusOr<std::unique_ptr<PlanNode>> window_function(const json& r, Scope* scope, int offset) {
    const json& call = r["functions"][0]["List"]["items"][0];
    const int at = location_of(call);
    if (node_name(call) != "FuncCall") return unsupported(at, "FROM " + node_name(call));
    const json& f = call["FuncCall"];
    const auto fn = strings_of(f.value("funcname", json::array()));
    const std::string name = absl::AsciiStrToUpper(fn.empty() ? "?" : fn.back());
    WindowSpec w;
    size_t durations = 0, optional = 0;
    if (name == "TUMBLE") w.kind = WindowSpec::Kind::kTumble, durations = 1, optional = 1;
    else if (name == "HOP") w.kind = WindowSpec::Kind::kHop, durations = 2, optional = 1;
    else if (name == "SESSION") w.kind = WindowSpec::Kind::kSession, durations = 1;
    else if (name == "CUMULATE") return unsupported(at, "the window function CUMULATE");
    else return unsupported(at, "the table function " + name + " (TUMBLE, HOP and SESSION windows are)");
    const json args = f.value("args", json::array());
    const std::string usage = name + "(table, DESCRIPTOR(time column), " +
                              (name == "HOP" ? "slide, size [, offset])" : name == "TUMBLE" ? "size [, offset])" : "gap)");
    if (args.size() < 2 + durations || args.size() > 2 + durations + optional) return error(at, "the window function " + usage);
    // The table.
    const auto table_name = node_name(args[0]) == "ColumnRef" ? strings_of(args[0]["ColumnRef"]["fields"]) : std::vector<std::string>{};
    if (table_name.size() != 1) return unsupported(location_of(args[0]), usage + " over anything but a declared table");
    const TableDef* t = find_table(table_name[0]);
    if (t == nullptr) return error(location_of(args[0]), "no table " + table_name[0] + " (declare it with CREATE TABLE)");
    // Its event time.
    const json& d = args[1];
    const auto d_name = node_name(d) == "FuncCall" ? strings_of(d["FuncCall"].value("funcname", json::array())) : std::vector<std::string>{};
    const json d_args = node_name(d) == "FuncCall" ? d["FuncCall"].value("args", json::array()) : json::array();
    const auto column = d_args.size() == 1 && node_name(d_args[0]) == "ColumnRef" ? strings_of(d_args[0]["ColumnRef"]["fields"])
                                                                                   : std::vector<std::string>{};
    if (d_name.size() != 1 || !absl::EqualsIgnoreCase(d_name[0], "descriptor") || column.size() != 1) {
      return error(location_of(d), name + ": the second argument is DESCRIPTOR(time column)");
    }
    if (!t->watermark) {
      return error(location_of(d), name + ": table " + t->name + " has no event time (declare its watermark option)");
    }
    if (!absl::EqualsIgnoreCase(column[0], t->watermark->column)) {
      return error(location_of(d_args[0]), name + ": " + column[0] + " is not the event time of table " + t->name +
                                               " (its watermark is on " + t->watermark->column + ")");
    }
    w.time_column = t->watermark->column;
    // Its durations, constant INTERVALs.
    std::vector<int64_t> ms;
    for (size_t i = 2; i < args.size(); ++i) {
      auto e = binder_.bind(args[i], {});
      if (!e.ok()) return e.status();
      if (e->kind != Expr::Kind::kLiteral || e->type.kind != TypeKind::kInterval) {
        return error(location_of(args[i]), name + ": argument " + std::to_string(i + 1) + " must be a constant INTERVAL");
      }
      const int64_t v = std::get<int64_t>(e->literal);
      if (v <= 0 && i < 2 + durations) return error(location_of(args[i]), name + ": a window's length must be positive");
      ms.push_back(v);
    }
    switch (w.kind) {
      case WindowSpec::Kind::kTumble:
        w.size_ms = ms[0];
        w.offset_ms = ms.size() > 1 ? ms[1] : 0;
        break;
      case WindowSpec::Kind::kHop:
        w.slide_ms = ms[0];
        w.size_ms = ms[1];
        w.offset_ms = ms.size() > 2 ? ms[2] : 0;
        if (w.size_ms % w.slide_ms != 0) {
          return error(at, "HOP: the size (" + std::to_string(w.size_ms) + " ms) must be a multiple of the slide (" +
                               std::to_string(w.slide_ms) + " ms)");
        }
        break;
      case WindowSpec::Kind::kSession:
        w.gap_ms = ms[0];
        break;
    }
    if (w.offset_ms < 0 || (w.size_ms > 0 && w.offset_ms >= (w.kind == WindowSpec::Kind::kHop ? w.slide_ms : w.size_ms))) {
      return error(at, name + ": the offset must be at least 0 and less than the " + (w.kind == WindowSpec::Kind::kHop ? "slide" : "size"));
    }
    auto scan = std::make_unique<PlanNode>();
    scan->kind = PlanNode::Kind::kScan;
    scan->table = t->name;
    scan->columns = t->columns;
    auto window = std::make_unique<PlanNode>();
    window->kind = PlanNode::Kind::kWindow;
    window->columns = t->columns;
    for (const char* c : {"window_start", "window_end", "window_time"}) {
      window->columns.push_back({c, {TypeKind::kTimestamp, false}});
    }
    window->window = w;
    window->input = std::move(scan);
    scope->qualifier = r.contains("alias") ? r["alias"].value("aliasname", t->name) : t->name;
    scope->columns = window->columns;
    (void)offset;
    return window;
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
