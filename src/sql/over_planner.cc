// QueryPlanner's OVER aggregates (sql/query_planner.h): `agg(x) OVER (
// PARTITION BY k ORDER BY t frame)` in a select list, every call over one
// window (inline, or named in the SELECT's WINDOW clause).
#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "sql/query_planner.h"

namespace weir::sql {

namespace {

// The aggregate calls with OVER in `e` (outside subqueries), in order.
void over_calls(const ast::Expr& e, std::vector<const ast::Expr*>* out) {
  if (e.kind == ast::Expr::Kind::kFunction && e.over) {
    if (is_aggregate_function(absl::AsciiStrToLower(e.name()))) out->push_back(&e);
    return;
  }
  for_each_child(e, [&](const ast::Expr& c) { over_calls(c, out); });
}

void over_calls(const ast::Select& s, std::vector<const ast::Expr*>* out) {
  for (const ast::Select::Target& t : s.targets) over_calls(t.expr, out);
}

}  // namespace

bool has_over_aggregate(const ast::Select& s) {
  std::vector<const ast::Expr*> calls;
  over_calls(s, &calls);
  return !calls.empty();
}

absl::StatusOr<std::unique_ptr<PlanNode>> QueryPlanner::over(const ast::Select& s, Node input,
                                                             const std::vector<Scope>& scopes, int offset) {
  std::vector<const ast::Expr*> calls;  // into s
  over_calls(s, &calls);
  if (calls.empty()) return absl::InternalError("no OVER aggregate in the select list");
  if (is_updating(*input)) return unsupported(calls[0]->offset, "an OVER aggregate over an updating result");
  // Each call's window, bound; all must be one.
  std::optional<PlanNode> window;
  for (const ast::Expr* c : calls) {
    const int at = c->offset;
    const ast::Over* def = &*c->over;
    if (!def->name.empty()) {  // OVER w: the WINDOW clause's w
      const ast::Over* named = nullptr;
      for (const ast::Select::NamedWindow& w : s.windows) {
        if (named == nullptr && w.name == def->name) named = &w.over;
      }
      if (named == nullptr) return error(at, "no window " + def->name + " (name it in the SELECT's WINDOW clause)");
      def = named;
    }
    if (!def->base.empty()) return unsupported(at, "a window that extends another (OVER (w ...))");
    PlanNode w;
    w.kind = PlanNode::Kind::kOver;
    for (const ast::Expr& k : def->partition_by) {
      auto e = binder_.bind(k, scopes);
      if (!e.ok()) return e.status();
      w.exprs.push_back(*std::move(e));
    }
    const std::vector<ast::SortItem>& order = def->order_by;
    const std::string usage = "OVER (...) needs ORDER BY one time attribute, ascending (a table's watermark column, "
                              "or PROCTIME())";
    if (order.size() != 1) return error(order.empty() ? at : order[1].offset, usage);
    auto time = binder_.bind(order[0].expr, scopes);
    if (!time.ok()) return time.status();
    const TimeAttribute attribute =
        time->kind == Expr::Kind::kColumn ? time_attribute(*input, time->column) : TimeAttribute::kNone;
    if (attribute == TimeAttribute::kNone || order[0].descending) return error(order[0].offset, usage);
    w.order_keys.push_back(*std::move(time));
    w.descending.push_back(false);
    OverFrame frame;
    frame.processing_time = attribute == TimeAttribute::kProcessingTime;
    if (def->unit == ast::Over::Unit::kGroups) return unsupported(at, "a GROUPS frame");
    if (def->exclude) return unsupported(at, "EXCLUDE in a window frame");
    if (!def->ends_at_current_row) return unsupported(at, "a window frame that does not end at the CURRENT ROW");
    frame.rows = def->unit == ast::Over::Unit::kRows;
    if (def->start == ast::Over::Start::kPreceding) {
      const ast::Expr& start = *def->preceding;
      auto e = binder_.bind(start, {});
      if (!e.ok()) return e.status();
      const bool interval = e->type.kind == TypeKind::kInterval;
      if (e->kind != Expr::Kind::kLiteral || !std::holds_alternative<int64_t>(e->literal) || interval == frame.rows) {
        return error(start.offset, frame.rows ? "ROWS n PRECEDING: n must be a constant number of rows"
                                              : "RANGE ... PRECEDING: the offset must be a constant INTERVAL");
      }
      frame.preceding = std::get<int64_t>(e->literal);
      if (*frame.preceding < 0) return error(start.offset, "a frame's offset must not be negative");
    } else if (def->start != ast::Over::Start::kUnboundedPreceding) {
      return unsupported(at, "a window frame that starts at the CURRENT ROW or after it");
    }
    w.over = frame;
    if (!window) {
      window = std::move(w);
    } else if (window->exprs != w.exprs || window->order_keys != w.order_keys || window->over != w.over) {
      return unsupported(at, "OVER aggregates over different windows in one SELECT");
    }
  }
  auto node = std::make_unique<PlanNode>(std::move(*window));
  node->columns = input->columns;
  node->input = std::move(input);
  OverCalls collected{scopes, static_cast<int>(node->columns.size()), {}};
  return project(s, std::move(node), scopes, offset, &collected);
}

}  // namespace weir::sql
