// QueryPlanner's window table functions and GROUP BY (sql/query_planner.h),
// and Flink's legacy group windows rewritten into them.
#include "sql/query_planner.h"

#include <algorithm>
#include <functional>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"

namespace weir::sql {

// Flink's legacy group window: GROUP BY TUMBLE(ts, size) (HOP(ts, slide,
// size), SESSION(ts, gap)) with TUMBLE_START(...), TUMBLE_END(...),
// TUMBLE_ROWTIME(...) in the select list, as the window table function it
// means:
//   SELECT ..., window_start, ... FROM TUMBLE((SELECT * FROM <from> WHERE
//   <where>), DESCRIPTOR(ts), size) GROUP BY ..., window_start, window_end
// nullopt when `s` has none.
std::optional<absl::StatusOr<ast::Select>> as_window_table_function(const ast::Select& s, std::string_view text) {
  static const std::vector<std::string> kWindows = {"tumble", "hop", "session"};
  size_t at = s.group_by.size();
  for (size_t i = 0; i < s.group_by.size(); ++i) {
    const ast::Expr& g = s.group_by[i];
    const std::string name = absl::AsciiStrToLower(g.name());
    if (g.kind != ast::Expr::Kind::kFunction || std::find(kWindows.begin(), kWindows.end(), name) == kWindows.end()) continue;
    if (at != s.group_by.size()) return sql_unsupported(text, g.offset, "two group windows in one GROUP BY");
    at = i;
  }
  if (at == s.group_by.size()) return std::nullopt;
  const ast::Expr& window = s.group_by[at];
  const std::string kind = absl::AsciiStrToLower(window.name());
  if (window.args.empty() || window.args[0].kind != ast::Expr::Kind::kColumn) {
    return sql_error(text, window.offset, absl::AsciiStrToUpper(kind) + "(time column, ...) in GROUP BY: the first argument is the time column");
  }
  // The rows: FROM and WHERE as written, every column.
  ast::Select rows;
  rows.offset = s.offset;
  rows.from = s.from;
  rows.where = s.where;
  ast::Select::Target star;
  star.expr.kind = ast::Expr::Kind::kStar;
  star.expr.offset = s.offset;
  rows.targets.push_back(std::move(star));
  ast::Expr data;
  data.kind = ast::Expr::Kind::kSubquery;
  data.offset = window.offset;
  data.query = std::move(rows);
  ast::Expr descriptor;
  descriptor.kind = ast::Expr::Kind::kFunction;
  descriptor.names = {"descriptor"};
  descriptor.offset = window.args[0].offset;
  descriptor.args.push_back(ast::Expr(window.args[0]));
  descriptor.args.back().names = {window.args[0].names.back()};  // t.ts: ts of the rows
  ast::Expr call = window;
  call.args.clear();
  call.args.push_back(std::move(data));
  call.args.push_back(std::move(descriptor));
  call.args.insert(call.args.end(), window.args.begin() + 1, window.args.end());
  ast::TableRef from;
  from.kind = ast::TableRef::Kind::kFunction;
  from.offset = window.offset;
  from.call = std::move(call);
  // Columns qualified by the one table's name or alias keep working.
  if (s.from.size() == 1 && s.from[0].kind == ast::TableRef::Kind::kTable) from.alias = s.from[0].alias.value_or(s.from[0].name);
  ast::Select out = s;
  out.from = {std::move(from)};
  out.where.reset();
  auto column = [&](const char* name, int offset) {
    ast::Expr c;
    c.kind = ast::Expr::Kind::kColumn;
    c.names = {name};
    c.offset = offset;
    return c;
  };
  out.group_by.erase(out.group_by.begin() + static_cast<long>(at));
  out.group_by.push_back(column("window_start", window.offset));
  out.group_by.push_back(column("window_end", window.offset));
  // TUMBLE_START(...) and its kin: the window's columns.
  absl::Status bad;
  std::function<void(ast::Expr&)> rewrite = [&](ast::Expr& e) {
    if (e.kind == ast::Expr::Kind::kFunction) {
      const std::string name = absl::AsciiStrToLower(e.name());
      for (const auto& [suffix, replacement] : std::vector<std::pair<std::string, const char*>>{
               {"_start", "window_start"}, {"_end", "window_end"}, {"_rowtime", "window_end"}, {"_proctime", nullptr}}) {
        if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
        const std::string of = name.substr(0, name.size() - suffix.size());
        if (std::find(kWindows.begin(), kWindows.end(), of) == kWindows.end()) continue;
        if (of != kind && bad.ok()) bad = sql_error(text, e.offset, absl::AsciiStrToUpper(name) + " of a GROUP BY " + absl::AsciiStrToUpper(kind));
        if (replacement == nullptr && bad.ok()) bad = sql_unsupported(text, e.offset, absl::AsciiStrToUpper(name));
        if (replacement == nullptr) return;
        const int where = e.offset;
        e = column(replacement, where);
        if (suffix == "_rowtime") {  // window_time, the window's last millisecond: window_end - 1 ms
          ast::Expr ms;
          ms.kind = ast::Expr::Kind::kCast;
          ms.offset = where;
          ms.type.name = "INTERVAL";
          ms.args.emplace_back();
          ms.args.back().kind = ast::Expr::Kind::kLiteral;
          ms.args.back().literal.kind = ast::Literal::Kind::kString;
          ms.args.back().literal.text = "1 millisecond";
          ast::Expr minus;
          minus.kind = ast::Expr::Kind::kOperator;
          minus.op = "-";
          minus.offset = where;
          minus.args.push_back(std::move(e));
          minus.args.push_back(std::move(ms));
          e = std::move(minus);
        }
        return;
      }
    }
    if (e.subject) rewrite(*e.subject);
    for (ast::Expr& a : e.args) rewrite(a);
    if (e.otherwise) rewrite(*e.otherwise);
    if (e.filter) rewrite(*e.filter);
  };
  for (ast::Select::Target& t : out.targets) rewrite(t.expr);
  if (out.having) rewrite(*out.having);
  if (!bad.ok()) return bad;
  return out;
}


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
    case PlanNode::Kind::kUnnest:  // the input's columns first
      return column < static_cast<int>(n.input->columns.size()) ? time_attribute(*n.input, column) : TimeAttribute::kNone;
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
absl::StatusOr<std::unique_ptr<PlanNode>> QueryPlanner::window_function(const ast::TableRef& r, std::vector<Scope>* scopes,
                                                                        int offset) {
  const ast::Expr& f = *r.call;
  const int at = f.offset;
  const std::string name = absl::AsciiStrToUpper(f.names.empty() ? "?" : f.name());
  WindowSpec w;
  size_t durations = 0, optional = 0;
  if (name == "TUMBLE") w.kind = WindowSpec::Kind::kTumble, durations = 1, optional = 1;
  else if (name == "HOP") w.kind = WindowSpec::Kind::kHop, durations = 2, optional = 1;
  else if (name == "SESSION") w.kind = WindowSpec::Kind::kSession, durations = 1;
  else if (name == "CUMULATE") w.kind = WindowSpec::Kind::kCumulate, durations = 2, optional = 1;
  else return unsupported(at, "the table function " + name + " (TUMBLE, HOP, CUMULATE and SESSION windows are)");
  std::vector<const ast::Expr*> args;
  for (const ast::Expr& a : f.args) args.push_back(&a);
  // Named arguments (DATA => TABLE t, TIMECOL => DESCRIPTOR(ts), SIZE =>
  // ...): put where their names say, as Flink's signatures name them.
  auto named = [](const ast::Expr* a) { return a->kind == ast::Expr::Kind::kNamedArg; };
  if (std::any_of(args.begin(), args.end(), named)) {
    std::vector<std::string> names = {"data", "timecol"};
    if (w.kind == WindowSpec::Kind::kTumble) names.insert(names.end(), {"size", "offset"});
    if (w.kind == WindowSpec::Kind::kHop) names.insert(names.end(), {"slide", "size", "offset"});
    if (w.kind == WindowSpec::Kind::kCumulate) names.insert(names.end(), {"step", "size", "offset"});
    if (w.kind == WindowSpec::Kind::kSession) names.push_back("gap");
    std::vector<const ast::Expr*> placed;
    std::vector<bool> given(names.size(), false);
    for (size_t i = 0; i < args.size(); ++i) {
      const ast::Expr* a = args[i];
      if (!named(a)) {
        if (std::any_of(given.begin() + static_cast<long>(std::min(i, given.size())), given.end(), [](bool g) { return g; }) ||
            i >= names.size()) {
          return error(a->offset, name + ": a positional argument after a named one");
        }
        given[i] = true;
        if (placed.size() <= i) placed.resize(i + 1, nullptr);
        placed[i] = a;
        continue;
      }
      const std::string arg = absl::AsciiStrToLower(a->names.empty() ? "" : a->names[0]);
      const auto at_name = std::find(names.begin(), names.end(), arg);
      if (at_name == names.end()) {
        return error(a->offset, name + " has no argument " + absl::AsciiStrToUpper(arg) + " (it has " +
                                    absl::AsciiStrToUpper(absl::StrJoin(names, ", ")) + ")");
      }
      const size_t k = static_cast<size_t>(at_name - names.begin());
      if (given[k]) return error(a->offset, name + ": argument " + absl::AsciiStrToUpper(arg) + " is given twice");
      given[k] = true;
      if (placed.size() <= k) placed.resize(k + 1, nullptr);
      placed[k] = &a->args[0];
    }
    for (size_t k = 0; k < placed.size(); ++k) {
      if (placed[k] == nullptr) return error(at, name + ": argument " + absl::AsciiStrToUpper(names[k]) + " is missing");
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
  const ast::Expr& data = *args[0];
  if (data.kind == ast::Expr::Kind::kSubquery && data.what.empty()) {
    auto inner = select(*data.query, offset);
    if (!inner.ok()) return inner.status();
    if (is_updating(**inner)) return unsupported(data.offset, name + " over an updating result");
    input = *std::move(inner);
  } else {
    if (data.kind != ast::Expr::Kind::kColumn || data.names.size() != 1) {
      return unsupported(data.offset, usage + " over anything but a table or (SELECT ...)");
    }
    const std::string& table_name = data.names[0];
    t = find_table_(table_name);
    const ast::CreateView* v = t == nullptr && find_view_ ? find_view_(table_name) : nullptr;
    if (v != nullptr) {  // a view: its query, as a subquery
      std::vector<Scope> view_scope;
      auto inner = view(*v, std::nullopt, &view_scope, offset);
      if (!inner.ok()) return inner.status();
      if (is_updating(**inner)) return unsupported(data.offset, name + " over an updating result");
      input = *std::move(inner);
      qualifier = view_scope[0].qualifier;
    }
    if (t == nullptr && v == nullptr) return error(data.offset, "no table " + table_name + " (declare it with CREATE TABLE)");
    if (t != nullptr) {
      if (t->changelog()) return unsupported(data.offset, name + " over an updating result");
      input = scan_of(*t);
      qualifier = t->name;
    }
  }
  // Its time attribute: the event time (a table's watermark column) or
  // PROCTIME().
  const ast::Expr& d = *args[1];
  const bool descriptor = d.kind == ast::Expr::Kind::kFunction && d.names.size() == 1 &&
                          absl::EqualsIgnoreCase(d.names[0], "descriptor") && d.args.size() == 1 &&
                          d.args[0].kind == ast::Expr::Kind::kColumn && d.args[0].names.size() == 1;
  if (!descriptor) return error(d.offset, name + ": the second argument is DESCRIPTOR(time column)");
  const std::string& column = d.args[0].names[0];
  const int column_at = d.args[0].offset;
  if (t != nullptr && !t->watermark) {
    return error(d.offset, name + ": table " + t->name + " has no event time (declare its watermark option)");
  }
  if (t != nullptr && !absl::EqualsIgnoreCase(column, t->watermark->column)) {
    return error(column_at, name + ": " + column + " is not the event time of table " + t->name +
                                " (its watermark is on " + t->watermark->column + ")");
  }
  const int time = column_index(input->columns, column);
  if (time < 0) return error(column_at, name + ": no column " + column);
  const TimeAttribute attribute = time_attribute(*input, time);
  if (attribute == TimeAttribute::kNone) {
    return error(column_at, name + ": " + column + " is no time attribute (a table's watermark column, " +
                                "or PROCTIME())");
  }
  w.time_column = input->columns[time].name;
  w.processing_time = attribute == TimeAttribute::kProcessingTime;
  if (partitions_ != nullptr) {  // SESSION(TABLE t PARTITION BY k, ...)
    for (const PartitionMark& m : *partitions_) {
      if (m.table_offset != data.offset) continue;
      for (const std::string& k : m.keys) {
        if (column_index(input->columns, k) < 0) return error(m.offset, name + ": PARTITION BY " + k + ": no such column");
      }
      w.partition_by = m.keys;
    }
  }
  // Its durations, constant INTERVALs.
  std::vector<int64_t> ms;
  for (size_t i = 2; i < args.size(); ++i) {
    auto e = binder_.bind(*args[i], {});
    if (!e.ok()) return e.status();
    if (e->kind != Expr::Kind::kLiteral || e->type.kind != TypeKind::kInterval) {
      return error(args[i]->offset, name + ": argument " + std::to_string(i + 1) + " must be a constant INTERVAL");
    }
    const int64_t v = std::get<int64_t>(e->literal);
    if (v <= 0 && i < 2 + durations) return error(args[i]->offset, name + ": a window's length must be positive");
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
  auto scope = scope_of(r, qualifier, window->columns);
  if (!scope.ok()) return scope.status();
  scopes->push_back(*std::move(scope));
  return window;
}

// SELECT ... GROUP BY over a window table function: an aggregate of each
// window's rows per key, final when the window closes (append-only).
absl::StatusOr<std::unique_ptr<PlanNode>> QueryPlanner::grouped(const ast::Select& s, Node input,
                                                                const std::vector<Scope>& scopes, int offset) {
  const int group_at = !s.group_by.empty() ? s.group_by[0].offset : offset;
  Grouping g;
  g.input = scopes;
  for (const ast::Expr& k : s.group_by) {
    auto key = binder_.bind(k, g.input);
    if (!key.ok()) return key.status();
    if (key->is_constant()) return unsupported(k.offset, "GROUP BY a constant or a column's position");
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
  // SESSION(TABLE t PARTITION BY k, ...): a session per k, as weir's
  // sessions are per GROUP BY key: the GROUP BY's other keys must be the
  // partition's columns.
  if (input->kind == PlanNode::Kind::kWindow && !input->window->partition_by.empty()) {
    std::vector<std::string> grouped_by;
    for (const Expr& k : g.keys) {
      if (k.kind != Expr::Kind::kColumn || k.column == bounds->start || k.column == bounds->end) continue;
      grouped_by.push_back(absl::AsciiStrToLower(column_at(scopes, k.column).name));
    }
    std::vector<std::string> partition;
    for (const std::string& p : input->window->partition_by) partition.push_back(absl::AsciiStrToLower(p));
    std::sort(grouped_by.begin(), grouped_by.end());
    std::sort(partition.begin(), partition.end());
    if (grouped_by != partition || g.keys.size() != partition.size() + 2) {
      return unsupported(group_at, "SESSION ... PARTITION BY " + absl::StrJoin(input->window->partition_by, ", ") +
                                       " with a GROUP BY of other keys (weir's sessions are per GROUP BY key: group by "
                                       "window_start, window_end and exactly the partition's columns)");
    }
  }
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
absl::StatusOr<std::unique_ptr<PlanNode>> QueryPlanner::grouped_output(const ast::Select& s, Node input,
                                                                       const std::vector<Scope>& scopes, Grouping g,
                                                                       int first, int offset) {
  const int group_at = !s.group_by.empty() ? s.group_by[0].offset : offset;
  // The select list and HAVING over the groups.
  const Binder grouped_binder(text_, &g);
  std::vector<Expr> targets;
  std::vector<Column> columns;
  int unnamed = 0;
  for (const ast::Select::Target& t : s.targets) {
    if (t.expr.kind == ast::Expr::Kind::kStar) {
      return error(t.offset >= 0 ? t.offset : offset, "SELECT * with GROUP BY: name the grouped columns and aggregates");
    }
    auto e = grouped_binder.bind(t.expr, {});
    if (!e.ok()) return e.status();
    std::string name = t.alias;
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
  if (s.having) {
    auto h = grouped_binder.bind(*s.having, {});
    if (!h.ok()) return h.status();
    if (h->type.kind != TypeKind::kBoolean && h->type.kind != TypeKind::kNull) {
      return error(s.having->offset, "HAVING needs a BOOLEAN, not " + std::string(type_name(h->type.kind)));
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
