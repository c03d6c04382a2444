// QueryPlanner's window table functions and GROUP BY (sql/query_planner.h).
#include "sql/query_planner.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"

namespace weir::sql {

using nlohmann::json;

// What column `column` of `n`'s rows is: the event time of a table (its
// watermark column, selected as it is), PROCTIME(), or neither.
QueryPlanner::TimeAttribute QueryPlanner::time_attribute(const PlanNode& n, int column) const {
  switch (n.kind) {
    case PlanNode::Kind::kScan: {
      const TableDef* t = find_table_(n.table);
      const bool event = t != nullptr && t->watermark && absl::EqualsIgnoreCase(n.columns[column].name, t->watermark->column);
      const Expr* computed = t != nullptr ? t->computed_expr(n.columns[column].name) : nullptr;
      if (computed != nullptr && computed->kind == Expr::Kind::kCall && computed->op == Op::kProctime) {
        return TimeAttribute::kProcessingTime;  // `c AS PROCTIME()`
      }
      return event ? TimeAttribute::kEventTime : TimeAttribute::kNone;
    }
    case PlanNode::Kind::kFilter:
      return time_attribute(*n.input, column);
    case PlanNode::Kind::kProject: {
      const Expr& e = n.exprs[column];
      if (e.kind == Expr::Kind::kCall && e.op == Op::kProctime) return TimeAttribute::kProcessingTime;
      return e.kind == Expr::Kind::kColumn ? time_attribute(*n.input, e.column) : TimeAttribute::kNone;
    }
    default:
      return TimeAttribute::kNone;
  }
}

// FROM TUMBLE(t, DESCRIPTOR(ts), size [, offset]), HOP(t, DESCRIPTOR(ts),
// slide, size [, offset]) or SESSION(t, DESCRIPTOR(ts), gap): the rows of
// table t with the window columns after its own (for HOP, once per
// window). t is a table or a subquery; ts its time attribute: the event
// time (a table's watermark column, also through a subquery) or a
// PROCTIME() column of the subquery (processing-time windows).
absl::StatusOr<std::unique_ptr<PlanNode>> QueryPlanner::window_function(const json& r, std::vector<Scope>* scopes,
                                                                        int offset) {
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
  else if (name == "CUMULATE") w.kind = WindowSpec::Kind::kCumulate, durations = 2, optional = 1;
  else return unsupported(at, "the table function " + name + " (TUMBLE, HOP, CUMULATE and SESSION windows are)");
  json args = f.value("args", json::array());
  // Named arguments (DATA => TABLE t, TIMECOL => DESCRIPTOR(ts), SIZE =>
  // ...): put where their names say, as Flink's signatures name them.
  if (std::any_of(args.begin(), args.end(), [](const json& a) { return node_name(a) == "NamedArgExpr"; })) {
    std::vector<std::string> names = {"data", "timecol"};
    if (w.kind == WindowSpec::Kind::kTumble) names.insert(names.end(), {"size", "offset"});
    if (w.kind == WindowSpec::Kind::kHop) names.insert(names.end(), {"slide", "size", "offset"});
    if (w.kind == WindowSpec::Kind::kCumulate) names.insert(names.end(), {"step", "size", "offset"});
    if (w.kind == WindowSpec::Kind::kSession) names.push_back("gap");
    json placed = json::array();
    std::vector<bool> given(names.size(), false);
    for (size_t i = 0; i < args.size(); ++i) {
      const json& a = args[i];
      if (node_name(a) != "NamedArgExpr") {
        if (std::any_of(given.begin() + static_cast<long>(i), given.end(), [](bool g) { return g; }) || i >= names.size()) {
          return error(location_of(a), name + ": a positional argument after a named one");
        }
        given[i] = true;
        while (placed.size() <= i) placed.push_back(json());
        placed[i] = a;
        continue;
      }
      const std::string arg = absl::AsciiStrToLower(a["NamedArgExpr"].value("name", ""));
      const auto at_name = std::find(names.begin(), names.end(), arg);
      if (at_name == names.end()) {
        return error(location_of(a), name + " has no argument " + absl::AsciiStrToUpper(arg) + " (it has " +
                                         absl::AsciiStrToUpper(absl::StrJoin(names, ", ")) + ")");
      }
      const size_t k = static_cast<size_t>(at_name - names.begin());
      if (given[k]) return error(location_of(a), name + ": argument " + absl::AsciiStrToUpper(arg) + " is given twice");
      given[k] = true;
      while (placed.size() <= k) placed.push_back(json());
      placed[k] = a["NamedArgExpr"]["arg"];
    }
    for (size_t k = 0; k < placed.size(); ++k) {
      if (placed[k].is_null()) return error(at, name + ": argument " + absl::AsciiStrToUpper(names[k]) + " is missing");
    }
    args = std::move(placed);
  }
  const std::string usage = name + "(table, DESCRIPTOR(time column), " +
                            (name == "HOP" ? "slide, size [, offset])" : name == "CUMULATE" ? "step, size [, offset])" : name == "TUMBLE" ? "size [, offset])" : "gap)");
  if (args.size() < 2 + durations || args.size() > 2 + durations + optional) return error(at, "the window function " + usage);
  // The table: a declared table, or a subquery ((SELECT ...), whose rows
  // may carry PROCTIME()).
  Node input;
  std::string qualifier;
  const TableDef* t = nullptr;
  if (node_name(args[0]) == "SubLink" && args[0]["SubLink"].contains("subselect")) {
    auto inner = select(args[0]["SubLink"]["subselect"]["SelectStmt"], offset);
    if (!inner.ok()) return inner.status();
    if (is_updating(**inner)) return unsupported(location_of(args[0]), name + " over an updating result");
    input = *std::move(inner);
  } else {
    const auto table_name = node_name(args[0]) == "ColumnRef" ? strings_of(args[0]["ColumnRef"]["fields"]) : std::vector<std::string>{};
    if (table_name.size() != 1) return unsupported(location_of(args[0]), usage + " over anything but a table or (SELECT ...)");
    t = find_table_(table_name[0]);
    const json* v = t == nullptr && find_view_ ? find_view_(table_name[0]) : nullptr;
    if (v != nullptr) {  // a view: its query, as a subquery
      std::vector<Scope> view_scope;
      auto inner = view(*v, json::object(), &view_scope, offset);
      if (!inner.ok()) return inner.status();
      if (is_updating(**inner)) return unsupported(location_of(args[0]), name + " over an updating result");
      input = *std::move(inner);
      qualifier = view_scope[0].qualifier;
    }
    if (t == nullptr && v == nullptr) return error(location_of(args[0]), "no table " + table_name[0] + " (declare it with CREATE TABLE)");
    if (t != nullptr) {
      if (t->changelog()) return unsupported(location_of(args[0]), name + " over an updating result");
      input = scan_of(*t);
      qualifier = t->name;
    }
  }
  // Its time attribute: the event time (a table's watermark column) or
  // PROCTIME().
  const json& d = args[1];
  const auto d_name = node_name(d) == "FuncCall" ? strings_of(d["FuncCall"].value("funcname", json::array())) : std::vector<std::string>{};
  const json d_args = node_name(d) == "FuncCall" ? d["FuncCall"].value("args", json::array()) : json::array();
  const auto column = d_args.size() == 1 && node_name(d_args[0]) == "ColumnRef" ? strings_of(d_args[0]["ColumnRef"]["fields"])
                                                                                 : std::vector<std::string>{};
  if (d_name.size() != 1 || !absl::EqualsIgnoreCase(d_name[0], "descriptor") || column.size() != 1) {
    return error(location_of(d), name + ": the second argument is DESCRIPTOR(time column)");
  }
  if (t != nullptr && !t->watermark) {
    return error(location_of(d), name + ": table " + t->name + " has no event time (declare its watermark option)");
  }
  if (t != nullptr && !absl::EqualsIgnoreCase(column[0], t->watermark->column)) {
    return error(location_of(d_args[0]), name + ": " + column[0] + " is not the event time of table " + t->name +
                                             " (its watermark is on " + t->watermark->column + ")");
  }
  const int time = column_index(input->columns, column[0]);
  if (time < 0) return error(location_of(d_args[0]), name + ": no column " + column[0]);
  const TimeAttribute attribute = time_attribute(*input, time);
  if (attribute == TimeAttribute::kNone) {
    return error(location_of(d_args[0]), name + ": " + column[0] + " is no time attribute (a table's watermark column, " +
                                             "or PROCTIME())");
  }
  w.time_column = input->columns[time].name;
  w.processing_time = attribute == TimeAttribute::kProcessingTime;
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
    case WindowSpec::Kind::kCumulate: {
      w.slide_ms = ms[0];
      w.size_ms = ms[1];
      w.offset_ms = ms.size() > 2 ? ms[2] : 0;
      const char* slide = w.kind == WindowSpec::Kind::kHop ? "slide" : "step";
      if (w.size_ms % w.slide_ms != 0) {
        return error(at, name + ": the size (" + std::to_string(w.size_ms) + " ms) must be a multiple of the " + slide +
                             " (" + std::to_string(w.slide_ms) + " ms)");
      }
      if (w.kind == WindowSpec::Kind::kCumulate && w.processing_time) return unsupported(at, "CUMULATE over PROCTIME()");
      break;
    }
    case WindowSpec::Kind::kSession:
      w.gap_ms = ms[0];
      break;
  }
  if (w.offset_ms < 0 || (w.size_ms > 0 && w.offset_ms >= (w.kind == WindowSpec::Kind::kHop ? w.slide_ms : w.size_ms))) {
    return error(at, name + ": the offset must be at least 0 and less than the " + (w.kind == WindowSpec::Kind::kHop ? "slide" : "size"));
  }
  auto window = std::make_unique<PlanNode>();
  window->kind = PlanNode::Kind::kWindow;
  window->columns = input->columns;
  for (const char* c : {"window_start", "window_end", "window_time"}) {
    window->columns.push_back({c, {TypeKind::kTimestamp, false}});
  }
  window->window = w;
  window->input = std::move(input);
  scopes->push_back({r.contains("alias") ? r["alias"].value("aliasname", qualifier) : qualifier, window->columns});
  (void)offset;
  return window;
}

// SELECT ... GROUP BY over a window table function: an aggregate of each
// window's rows per key, final when the window closes (append-only).
absl::StatusOr<std::unique_ptr<PlanNode>> QueryPlanner::grouped(const json& s, Node input,
                                                                const std::vector<Scope>& scopes, int offset) {
  const int group_at = s.contains("groupClause") ? location_of(s["groupClause"][0]) : offset;
  Grouping g;
  g.input = scopes;
  for (const auto& k : s.value("groupClause", json::array())) {
    const std::string kind = node_name(k);
    if (kind == "GroupingSet") return unsupported(location_of(k), "GROUPING SETS, ROLLUP and CUBE");
    auto key = binder_.bind(k, g.input);
    if (!key.ok()) return key.status();
    if (key->is_constant()) return unsupported(location_of(k), "GROUP BY a constant or a column's position");
    g.keys.push_back(*std::move(key));
  }
  // The window: the rows' window bounds (of a window table function, or
  // columns of windowed rows: a GROUP BY over window bounds, a window join)
  // must both be grouping keys.
  // Without a window: a group aggregation, its result updated as rows come
  // (a changelog). Over an updating result the window's columns are plain
  // columns: the rows of a window are no longer final when it ends.
  auto bounds = is_updating(*input) ? std::nullopt : window_bounds(*input);
  if (input->kind == PlanNode::Kind::kWindow) {  // also processing-time windows: the window operator's
    const int first = static_cast<int>(input->input->columns.size());
    bounds = WindowBounds{first, first + 1};
  }
  if (!bounds) return grouped_output(s, std::move(input), scopes, std::move(g), INT32_MAX, offset);
  bool start = false, end = false;
  for (const Expr& k : g.keys) {
    start = start || (k.kind == Expr::Kind::kColumn && k.column == bounds->start);
    end = end || (k.kind == Expr::Kind::kColumn && k.column == bounds->end);
  }
  const std::string over = input->kind == PlanNode::Kind::kWindow ? input->window->to_string() : "windowed rows";
  if (!start || !end) return error(group_at, "GROUP BY over " + over + " needs both window_start and window_end");
  // Directly over a window table function, the engine's window operator
  // makes the windows: a key reading the window's columns is one of them.
  const int first = input->kind == PlanNode::Kind::kWindow ? static_cast<int>(input->input->columns.size()) : INT32_MAX;
  for (const Expr& k : g.keys) {
    if (reads_columns(k, first) && k.kind != Expr::Kind::kColumn) {
      return unsupported(group_at, "GROUP BY an expression of window_start, window_end or window_time");
    }
  }
  return grouped_output(s, std::move(input), scopes, std::move(g), first, offset);
}

// The aggregate of grouping `g` (keys bound) over `input`, then HAVING and
// the select list over its groups. `first`: the first column of a window
// table function below, which aggregates must not read.
absl::StatusOr<std::unique_ptr<PlanNode>> QueryPlanner::grouped_output(const json& s, Node input,
                                                                       const std::vector<Scope>& scopes, Grouping g,
                                                                       int first, int offset) {
  const int group_at = s.contains("groupClause") ? location_of(s["groupClause"][0]) : offset;
  // The select list and HAVING over the groups.
  const Binder grouped_binder(text_, &g);
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
      name = column_at(scopes, g.keys[e->column].column).name;
    }
    if (name.empty()) name = "EXPR$" + std::to_string(unnamed);
    ++unnamed;
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
    if ((c.arg && reads_columns(*c.arg, first)) || (c.filter && reads_columns(*c.filter, first))) return unsupported(group_at, "an aggregate of window_start, window_end or window_time");
  }
  auto agg = std::make_unique<PlanNode>();
  agg->kind = PlanNode::Kind::kAggregate;
  for (size_t i = 0; i < g.keys.size(); ++i) {
    const Expr& k = g.keys[i];
    agg->columns.push_back({k.kind == Expr::Kind::kColumn ? column_at(scopes, k.column).name : "$key" + std::to_string(i), k.type});
  }
  for (size_t i = 0; i < g.calls.size(); ++i) agg->columns.push_back({"$agg" + std::to_string(i), g.calls[i].type});
  agg->exprs = std::move(g.keys);
  agg->aggregates = std::move(g.calls);
  agg->input = std::move(input);
  prune_inputs(agg.get());
  Node node = std::move(agg);
  if (having) node = filter_over(std::move(node), *std::move(having));
  auto project = std::make_unique<PlanNode>();
  project->kind = PlanNode::Kind::kProject;
  project->columns = std::move(columns);
  project->exprs = std::move(targets);
  project->input = std::move(node);
  return project;
}

}  // namespace weir::sql
