// QueryPlanner's OVER aggregates (sql/query_planner.h): `agg(x) OVER (
// PARTITION BY k ORDER BY t frame)` in a select list, every call over one
// window (inline, or named in the SELECT's WINDOW clause).
#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "sql/query_planner.h"

namespace weir::sql {

using nlohmann::json;

namespace {

// PostgreSQL's frame option bits (nodes/parsenodes.h, FRAMEOPTION_*).
constexpr int kRows = 0x4, kGroups = 0x8, kStartUnboundedPreceding = 0x20, kEndCurrentRow = 0x400,
              kStartOffsetPreceding = 0x800, kExclude = 0x8000 | 0x10000 | 0x20000;

// The aggregate calls with OVER in `n` (outside subqueries), in order.
void over_calls(const json& n, std::vector<const json*>* out) {
  if (n.is_array()) {
    for (const json& x : n) over_calls(x, out);
    return;
  }
  if (!n.is_object() || n.contains("SubLink") || n.contains("SelectStmt")) return;
  if (n.contains("FuncCall") && n["FuncCall"].contains("over")) {
    const auto names = strings_of(n["FuncCall"].value("funcname", json::array()));
    if (!names.empty() && is_aggregate_function(absl::AsciiStrToLower(names.back()))) out->push_back(&n);
    return;
  }
  for (const auto& [k, v] : n.items()) over_calls(v, out);
}

}  // namespace

bool has_over_aggregate(const json& n) {
  std::vector<const json*> calls;
  over_calls(n, &calls);
  return !calls.empty();
}

absl::StatusOr<std::unique_ptr<PlanNode>> QueryPlanner::over(const json& s, Node input,
                                                             const std::vector<Scope>& scopes, int offset) {
  std::vector<const json*> calls;  // into s
  if (s.contains("targetList")) over_calls(s["targetList"], &calls);
  if (calls.empty()) return absl::InternalError("no OVER aggregate in the select list");
  if (is_updating(*input)) return unsupported(location_of(*calls[0]), "an OVER aggregate over an updating result");
  // Each call's window, bound; all must be one.
  std::optional<PlanNode> window;
  for (const json* c : calls) {
    const int at = location_of(*c);
    json def = (*c)["FuncCall"]["over"];
    if (def.contains("name")) {  // OVER w: the WINDOW clause's w
      const std::string name = def["name"];
      bool found = false;
      if (s.contains("windowClause")) {
        for (const json& w : s["windowClause"]) {
          if (!found && w.contains("WindowDef") && w["WindowDef"].value("name", "") == name) {
            def = w["WindowDef"];
            found = true;
          }
        }
      }
      if (!found) return error(at, "no window " + name + " (name it in the SELECT's WINDOW clause)");
    }
    if (def.contains("refname")) return unsupported(at, "a window that extends another (OVER (w ...))");
    PlanNode w;
    w.kind = PlanNode::Kind::kOver;
    for (const json& k : def.value("partitionClause", json::array())) {
      auto e = binder_.bind(k, scopes);
      if (!e.ok()) return e.status();
      w.exprs.push_back(*std::move(e));
    }
    const json order = def.value("orderClause", json::array());
    const std::string usage = "OVER (...) needs ORDER BY one time attribute, ascending (a table's watermark column, "
                              "or PROCTIME())";
    if (order.size() != 1) return error(order.empty() ? at : location_of(order[1]), usage);
    const json sort = order[0].value("SortBy", json::object());
    auto time = binder_.bind(sort.value("node", json::object()), scopes);
    if (!time.ok()) return time.status();
    const TimeAttribute attribute =
        time->kind == Expr::Kind::kColumn ? time_attribute(*input, time->column) : TimeAttribute::kNone;
    if (attribute == TimeAttribute::kNone || sort.value("sortby_dir", "") == "SORTBY_DESC") {
      return error(location_of(order[0]), usage);
    }
    w.order_keys.push_back(*std::move(time));
    w.descending.push_back(false);
    OverFrame frame;
    frame.processing_time = attribute == TimeAttribute::kProcessingTime;
    const int options = def.value("frameOptions", 0);
    if (options & kGroups) return unsupported(at, "a GROUPS frame");
    if (options & kExclude) return unsupported(at, "EXCLUDE in a window frame");
    if (!(options & kEndCurrentRow)) return unsupported(at, "a window frame that does not end at the CURRENT ROW");
    frame.rows = (options & kRows) != 0;
    if (options & kStartOffsetPreceding) {
      const json& start = def["startOffset"];
      auto e = binder_.bind(start, {});
      if (!e.ok()) return e.status();
      const bool interval = e->type.kind == TypeKind::kInterval;
      if (e->kind != Expr::Kind::kLiteral || !std::holds_alternative<int64_t>(e->literal) || interval == frame.rows) {
        return error(location_of(start), frame.rows ? "ROWS n PRECEDING: n must be a constant number of rows"
                                                    : "RANGE ... PRECEDING: the offset must be a constant INTERVAL");
      }
      frame.preceding = std::get<int64_t>(e->literal);
      if (*frame.preceding < 0) return error(location_of(start), "a frame's offset must not be negative");
    } else if (!(options & kStartUnboundedPreceding)) {
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
