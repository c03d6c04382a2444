#include "sql/planner.h"

#include <algorithm>
#include <functional>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "sql/binder.h"
#include "sql/query_planner.h"
#include "weir/config.h"

namespace weir::sql {
namespace {

using nlohmann::json;

class Planner {
 public:
  Planner(const Script& script, const PlanOptions& options)
      : script_(script), options_(options), binder_(script.text) {}

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
      } else if (kind == "ViewStmt") {
        absl::Status v = create_view(body, st.offset);
        if (!v.ok()) return v;
      } else if (kind == "InsertStmt") {
        auto p = insert(body, st.offset);
        if (!p.ok()) return p.status();
        out.inserts.push_back({st.text, st.offset, *std::move(p)});
      } else if (kind == "VariableSetStmt") {
        absl::Status set = setting(body, st.offset, &out.settings);
        if (!set.ok()) return set;
      } else if (kind == "SelectStmt" && !options_.result_table.empty()) {
        if (!out.inserts.empty()) return error(st.offset, "one SELECT at a time");
        auto p = result_query(body, st.offset, &out.result_order);
        if (!p.ok()) return p.status();
        out.inserts.push_back({st.text, st.offset, *std::move(p)});
      } else if (kind == "SelectStmt") {
        return error(st.offset, "a SELECT needs a table to go to: INSERT INTO <table> SELECT ...");
      } else {
        return error(st.offset, "unsupported statement " + kind + " (CREATE TABLE, CREATE VIEW, SET and INSERT INTO ... SELECT are)");
      }
    }
    if (out.inserts.empty() && !options_.declarations_only) return absl::InvalidArgumentError("the script has no INSERT INTO ... SELECT: nothing to run");
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

  absl::StatusOr<Type> column_type(const json& type_name) { return sql_type(type_name, script_.text); }

  absl::StatusOr<std::string> option_value(const json& arg, int at) {
    const std::string k = node_name(arg);
    if (k == "String") return arg[k].value("sval", "");
    if (k == "Integer") {  // `at`: the option's name; its value after the '='
      const size_t eq = script_.text.find('=', static_cast<size_t>(std::max(at, 0)));
      return std::to_string(integer_value(arg[k], script_.text, eq == std::string::npos ? -1 : static_cast<int>(eq + 1)));
    }
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
    if (find_table(t.name) != nullptr || find_view(t.name) != nullptr) {
      return error(b["relation"].value("location", offset), "table " + t.name + " is declared twice");
    }
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
    // PARTITION BY LIST (c, ...) (Flink's PARTITIONED BY (c, ...)): a
    // filesystem table's subdirectories.
    if (b.contains("partspec")) {
      std::vector<std::string> by;
      for (const auto& p : b["partspec"].value("partParams", json::array())) {
        const json& pe = p["PartitionElem"];
        if (!pe.contains("name")) return unsupported(pe.value("location", offset), "partitioning by an expression");
        const std::string c = pe.value("name", "");
        if (t.index_of(c) < 0) return error(pe.value("location", offset), "table " + t.name + ": partition column " + c + " is not a column");
        by.push_back(c);
      }
      if (by.size() == t.columns.size()) return error(offset, "table " + t.name + ": every column is a partition column");
      t.options["partition-by"] = absl::StrJoin(by, ",");
    }
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

  const json* find_view(const std::string& name) const {
    auto it = views_.find(absl::AsciiStrToLower(name));
    return it == views_.end() ? nullptr : &it->second;
  }

  QueryPlanner query_planner() const {
    return QueryPlanner(
        script_.text, [this](const std::string& n) { return find_table(n); },
        [this](const std::string& n) { return find_view(n); });
  }

  // ---- CREATE VIEW --------------------------------------------------------------

  // CREATE VIEW v [(c, ...)] AS SELECT ...: planned here (an error names the
  // view's own text), then planned again where a query reads it.
  absl::Status create_view(const json& b, int offset) {
    const std::string name = b["view"].value("relname", "");
    const int at = b["view"].value("location", offset);
    if (find_table(name) != nullptr || find_view(name) != nullptr) return error(at, "view " + name + " is declared twice");
    if (b.value("replace", false)) return unsupported(at, "CREATE OR REPLACE VIEW");
    if (!b.contains("query") || !b["query"].contains("SelectStmt")) return error(at, "a view is CREATE VIEW v AS SELECT ...");
    auto rows = query_planner().select(b["query"]["SelectStmt"], offset);
    if (!rows.ok()) return rows.status();
    absl::Status ranks = check_ranks(**rows, script_.text, offset);
    if (!ranks.ok()) return ranks;
    if (b.contains("aliases") && strings_of(b["aliases"]).size() != (*rows)->columns.size()) {
      return error(at, "view " + name + " names " + std::to_string(strings_of(b["aliases"]).size()) +
                           " columns, its query has " + std::to_string((*rows)->columns.size()));
    }
    views_[absl::AsciiStrToLower(name)] = b;
    return absl::OkStatus();
  }

  // ---- INSERT and SELECT ------------------------------------------------------

  absl::StatusOr<std::unique_ptr<PlanNode>> insert(const json& b, int offset) {
    const std::string name = b["relation"].value("relname", "");
    const TableDef* sink = find_table(name);
    if (sink == nullptr) return error(b["relation"].value("location", offset), "no table " + name + " (declare it with CREATE TABLE)");
    if (b.contains("cols")) return unsupported(offset, "INSERT with a column list");
    QueryPlanner queries = query_planner();
    auto query = queries.select(b["selectStmt"]["SelectStmt"], offset);
    if (!query.ok()) return query.status();
    absl::Status ranks = check_ranks(**query, script_.text, offset);
    if (!ranks.ok()) return ranks;
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
    // A DECIMAL of another scale, or a number into a DECIMAL or from one
    // into a DOUBLE: converted as a CAST would, in a projection below the
    // sink.
    std::vector<Expr> converted;
    bool convert = false;
    for (size_t i = 0; i < got.size(); ++i) {
      Expr e = Expr::column_ref(static_cast<int>(i), got[i].type);
      const Type& to = sink->columns[i].type;
      if (got[i].type.kind == TypeKind::kDecimal || to.kind == TypeKind::kDecimal) {
        e = cast_to(std::move(e), to);
        convert = convert || e.kind != Expr::Kind::kColumn;
      }
      converted.push_back(std::move(e));
    }
    if (convert) {
      auto project = std::make_unique<PlanNode>();
      project->kind = PlanNode::Kind::kProject;
      for (size_t i = 0; i < got.size(); ++i) {
        project->columns.push_back({got[i].name, converted[i].type});
      }
      project->exprs = std::move(converted);
      project->input = *std::move(query);
      *query = std::move(project);
    }
    auto node = std::make_unique<PlanNode>();
    node->kind = PlanNode::Kind::kSink;
    node->table = sink->name;
    node->columns = sink->columns;
    node->input = *std::move(query);
    return node;
  }

  // SET "key" = 'value' (Flink's SET 'key' = 'value': PostgreSQL's grammar
  // takes a name, quoted where it has dashes, not a string).
  absl::Status setting(const json& b, int offset, Settings* settings) const {
    const std::string name = b.value("name", "");
    if (b.value("kind", "") != "VAR_SET_VALUE" || !b.contains("args") || b["args"].size() != 1) {
      return unsupported(offset, "SET of this form (SET \"key\" = 'value' is)");
    }
    const json& arg = b["args"][0];
    const std::string k = node_name(arg);
    std::string value;
    if (k == "A_Const" && arg[k].contains("sval")) {
      value = arg[k]["sval"].value("sval", "");
    } else if (k == "A_Const" && arg[k].contains("ival")) {
      value = std::to_string(integer_value(arg[k]["ival"], script_.text, location_of(arg)));
    } else {
      return error(location_of(arg), "SET " + name + ": the value is a string or a number");
    }
    if (name == "table.optimizer.agg-phase-strategy") {
      const std::string v = absl::AsciiStrToUpper(value);
      if (v != "TWO_PHASE" && v != "ONE_PHASE" && v != "AUTO") {
        return error(location_of(arg), "SET " + name + ": '" + value + "' is none of TWO_PHASE, ONE_PHASE, AUTO");
      }
      settings->two_phase_aggregation = v == "TWO_PHASE";
    } else if (name == "table.exec.mini-batch.size") {
      if (!absl::SimpleAtoi(value, &settings->mini_batch_rows) || settings->mini_batch_rows < 1) {
        return error(location_of(arg), "SET " + name + ": '" + value + "' is no positive number");
      }
    } else if (name == "table.exec.mini-batch.allow-latency") {
      auto d = parse_duration(value);
      if (!d.ok() || d->count() < 1) return error(location_of(arg), "SET " + name + ": '" + value + "' is no duration ('100ms', '1s')");
      settings->mini_batch_latency_ms = d->count();
    } else {
      return error(offset, "SET: unknown setting \"" + name + "\" (known: table.optimizer.agg-phase-strategy, "
                           "table.exec.mini-batch.size, table.exec.mini-batch.allow-latency)");
    }
    return absl::OkStatus();
  }

  // A bare SELECT into the result table (PlanOptions::result_table); its
  // ORDER BY (output columns by name or position) and LIMIT into `order`.
  absl::StatusOr<std::unique_ptr<PlanNode>> result_query(const json& b, int offset, ResultOrder* order) {
    json select = b;
    if (select.contains("limitCount")) {
      const json& n = select["limitCount"];
      if (node_name(n) != "A_Const" || !(n["A_Const"].contains("ival") || n["A_Const"].contains("isnull"))) {
        return unsupported(location_of(n), "LIMIT of an expression");
      }
      if (!n["A_Const"].contains("isnull")) {  // LIMIT ALL: none
        order->limit = integer_value(n["A_Const"]["ival"], script_.text, location_of(n));
        if (*order->limit < 0) return error(location_of(n), "LIMIT must not be negative");
      }
      select.erase("limitCount");
      select.erase("limitOption");
    }
    json sort = select.value("sortClause", json::array());
    select.erase("sortClause");
    QueryPlanner queries = query_planner();
    auto query = queries.select(select, offset);
    if (!query.ok()) return query.status();
    absl::Status ranks = check_ranks(**query, script_.text, offset);
    if (!ranks.ok()) return ranks;
    const std::vector<Column>& columns = (*query)->columns;
    for (const json& item : sort) {
      const json& by = item["SortBy"];
      const json& n = by["node"];
      const int at = location_of(n);
      int column = -1;
      if (node_name(n) == "ColumnRef") {
        const std::vector<std::string> names = strings_of(n["ColumnRef"]["fields"]);
        if (names.size() == 1) column = column_index(columns, names[0]);
        if (column < 0) return error(at, "ORDER BY " + absl::StrJoin(names, ".") + ": not a column of the result");
      } else if (node_name(n) == "A_Const" && n["A_Const"].contains("ival")) {
        const int64_t i = integer_value(n["A_Const"]["ival"], script_.text, at);
        if (i < 1 || i > static_cast<int64_t>(columns.size())) {
          return error(at, "ORDER BY " + std::to_string(i) + ": the result has " + std::to_string(columns.size()) + " columns");
        }
        column = static_cast<int>(i - 1);
      } else {
        return unsupported(at, "ORDER BY an expression (a column of the result or its position is)");
      }
      if (by.value("sortby_nulls", "SORTBY_NULLS_DEFAULT") != "SORTBY_NULLS_DEFAULT") {
        return unsupported(at, "NULLS FIRST and NULLS LAST");
      }
      order->keys.emplace_back(column, by.value("sortby_dir", "SORTBY_DEFAULT") == "SORTBY_DESC");
    }
    TableDef result;
    result.name = options_.result_table;
    result.offset = offset;
    result.columns = columns;
    result.options["connector"] = options_.result_connector;
    auto node = std::make_unique<PlanNode>();
    node->kind = PlanNode::Kind::kSink;
    node->table = result.name;
    node->columns = columns;
    node->input = *std::move(query);
    tables_.push_back(std::move(result));
    return node;
  }

  const Script& script_;
  const PlanOptions options_;
  const Binder binder_;
  std::vector<TableDef> tables_;            // declared so far
  std::map<std::string, size_t> by_name_;  // lower-case name -> index into tables_
  std::map<std::string, json> views_;       // lower-case name -> its ViewStmt
};

}  // namespace

const std::vector<std::string>& known_connectors() {
  static const std::vector<std::string> kKnown = {"nexmark", "values", "filesystem", "kafka", "upsert-kafka", "postgres", "print", "blackhole"};
  return kKnown;
}

absl::StatusOr<PlannedScript> plan_script(const Script& script, const PlanOptions& options) {
  return Planner(script, options).run();
}

std::string explain(const PlannedScript& planned) {
  std::string out;
  for (const InsertPlan& p : planned.inserts) {
    out += "== " + p.statement + "\n" + explain(*p.root);
  }
  return out;
}

}  // namespace weir::sql
