#include "sql/plan.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"

namespace weir::sql {

int column_index(const std::vector<Column>& columns, std::string_view name) {
  for (size_t i = 0; i < columns.size(); ++i) {
    if (absl::EqualsIgnoreCase(columns[i].name, std::string(name))) return static_cast<int>(i);
  }
  return -1;
}

std::string WindowSpec::to_string() const {
  const std::string offset = std::string(offset_ms != 0 ? ", offset " + std::to_string(offset_ms) + " ms" : "") +
                             (processing_time ? ", processing time" : "");
  switch (kind) {
    case Kind::kTumble:
      return "TUMBLE(" + time_column + ", size " + std::to_string(size_ms) + " ms" + offset + ")";
    case Kind::kHop:
      return "HOP(" + time_column + ", slide " + std::to_string(slide_ms) + " ms, size " + std::to_string(size_ms) +
             " ms" + offset + ")";
    case Kind::kCumulate:
      return "CUMULATE(" + time_column + ", step " + std::to_string(slide_ms) + " ms, size " + std::to_string(size_ms) +
             " ms" + offset + ")";
    case Kind::kSession:
      return "SESSION(" + time_column + ", gap " + std::to_string(gap_ms) + " ms" + offset + ")";
  }
  return "?";
}

std::string OverFrame::to_string() const {
  std::string start = "UNBOUNDED PRECEDING";
  if (preceding) start = std::to_string(*preceding) + (rows ? "" : " ms") + " PRECEDING";
  return std::string(rows ? "ROWS" : "RANGE") + " BETWEEN " + start + " AND CURRENT ROW" +
         (processing_time ? ", processing time" : "");
}

std::string AggregateCall::to_string(const std::vector<std::string>& input) const {
  static const char* kNames[] = {"COUNT", "SUM", "MIN", "MAX", "AVG"};
  const std::string a = arg ? arg->to_string(input) : "*";
  return std::string(kNames[static_cast<int>(kind)]) + "(" + (distinct ? "DISTINCT " : "") + a + ")" +
         (filter ? " FILTER (WHERE " + filter->to_string(input) + ")" : "");
}

std::vector<std::string> PlanNode::column_names() const {
  std::vector<std::string> names;
  for (const Column& c : columns) names.push_back(c.name);
  return names;
}

bool is_updating(const PlanNode& n) {
  switch (n.kind) {
    case PlanNode::Kind::kAggregate:
      if (n.input->kind == PlanNode::Kind::kWindow) return false;  // the window operator's, also of processing time
      return !window_bounds(*n.input) || is_updating(*n.input);
    case PlanNode::Kind::kJoin:
    case PlanNode::Kind::kUnion:
      return is_updating(*n.input) || is_updating(*n.right);
    case PlanNode::Kind::kScan:
      return false;
    case PlanNode::Kind::kRank:
      return true;
    default:
      return is_updating(*n.input);
  }
}

std::optional<WindowBounds> window_bounds(const PlanNode& n) {
  switch (n.kind) {
    case PlanNode::Kind::kWindow: {
      if (n.window->processing_time) return std::nullopt;  // not closed by watermarks
      const int first = static_cast<int>(n.input->columns.size());
      return WindowBounds{first, first + 1};
    }
    case PlanNode::Kind::kFilter:
      return window_bounds(*n.input);
    case PlanNode::Kind::kProject:
    case PlanNode::Kind::kAggregate: {
      // Both bounds as plain columns of the input's (an aggregate's keys
      // are its first columns).
      auto in = window_bounds(*n.input);
      if (!in) return std::nullopt;
      WindowBounds out;
      for (size_t i = 0; i < n.exprs.size(); ++i) {
        const Expr& e = n.exprs[i];
        if (e.kind != Expr::Kind::kColumn) continue;
        if (e.column == in->start && out.start < 0) out.start = static_cast<int>(i);
        if (e.column == in->end && out.end < 0) out.end = static_cast<int>(i);
      }
      if (out.start < 0 || out.end < 0) return std::nullopt;
      return out;
    }
    case PlanNode::Kind::kJoin:
      return n.window_join ? window_bounds(*n.input) : std::nullopt;
    case PlanNode::Kind::kScan:
    case PlanNode::Kind::kRank:
    case PlanNode::Kind::kOver:
    case PlanNode::Kind::kUnion:
    case PlanNode::Kind::kSink:
      break;
  }
  return std::nullopt;
}

namespace {

std::string typed(const std::vector<Column>& columns) {
  std::vector<std::string> parts;
  for (const Column& c : columns) parts.push_back(c.name + " " + c.type.to_string());
  return "[" + absl::StrJoin(parts, ", ") + "]";
}

void explain_into(const PlanNode& n, int depth, std::string* out) {
  std::string line(static_cast<size_t>(depth) * 2, ' ');
  const std::vector<std::string> in = n.input ? n.input->column_names() : std::vector<std::string>{};
  switch (n.kind) {
    case PlanNode::Kind::kScan:
      line += "Scan(" + n.table + ")";
      break;
    case PlanNode::Kind::kFilter:
      line += "Filter(" + n.exprs[0].to_string(in) + ")";
      break;
    case PlanNode::Kind::kProject: {
      std::vector<std::string> parts;
      for (size_t i = 0; i < n.exprs.size(); ++i) {
        std::string e = n.exprs[i].to_string(in);
        parts.push_back(e == n.columns[i].name ? e : e + " AS " + n.columns[i].name);
      }
      line += "Project(" + absl::StrJoin(parts, ", ") + ")";
      break;
    }
    case PlanNode::Kind::kWindow:
      line += "Window(" + n.window->to_string() + ")";
      break;
    case PlanNode::Kind::kAggregate: {
      std::vector<std::string> keys, aggs;
      for (const Expr& e : n.exprs) keys.push_back(e.to_string(in));
      for (const AggregateCall& a : n.aggregates) aggs.push_back(a.to_string(in));
      line += "Aggregate(keys: " + absl::StrJoin(keys, ", ") + "; " + absl::StrJoin(aggs, ", ") + ")";
      break;
    }
    case PlanNode::Kind::kJoin: {
      const std::vector<std::string> right = n.right->column_names();
      std::vector<std::string> both = in;
      both.insert(both.end(), right.begin(), right.end());
      std::vector<std::string> keys;
      for (size_t i = 0; i < n.left_keys.size(); ++i) {
        keys.push_back(n.left_keys[i].to_string(in) + " = " + n.right_keys[i].to_string(right));
      }
      const std::string unique = n.left_unique && n.right_unique ? "; unique: both"
                                 : n.left_unique                    ? "; unique: left"
                                 : n.right_unique                   ? "; unique: right"
                                                                    : "";
      std::string filters;
      if (n.left_filter) filters += "; left: " + n.left_filter->to_string(in);
      if (n.right_filter) filters += "; right: " + n.right_filter->to_string(right);
      line += std::string(n.window_join ? "WindowJoin(" : "Join(") + absl::StrJoin(keys, ", ") +
              (n.exprs.empty() ? "" : "; " + n.exprs[0].to_string(both)) + unique + filters + ")";
      break;
    }
    case PlanNode::Kind::kRank: {
      std::vector<std::string> keys, order;
      for (const Expr& e : n.exprs) keys.push_back(e.to_string(in));
      for (size_t i = 0; i < n.order_keys.size(); ++i) {
        order.push_back(n.order_keys[i].to_string(in) + (n.descending[i] ? " DESC" : ""));
      }
      line += "Rank(partition: " + absl::StrJoin(keys, ", ") + "; order: " + absl::StrJoin(order, ", ") +
              "; rows 1.." + std::to_string(n.limit) + ")";
      break;
    }
    case PlanNode::Kind::kOver: {
      std::vector<std::string> keys, aggs;
      for (const Expr& e : n.exprs) keys.push_back(e.to_string(in));
      for (const AggregateCall& a : n.aggregates) aggs.push_back(a.to_string(in));
      line += "Over(partition: " + absl::StrJoin(keys, ", ") + "; order: " + n.order_keys[0].to_string(in) + " " +
              n.over->to_string() + "; " + absl::StrJoin(aggs, ", ") + ")";
      break;
    }
    case PlanNode::Kind::kUnion:
      line += "UnionAll";
      break;
    case PlanNode::Kind::kSink:
      line += "Sink(" + n.table + ")";
      break;
  }
  *out += line + " " + typed(n.columns) + "\n";
  if (n.input) explain_into(*n.input, depth + 1, out);
  if (n.right) explain_into(*n.right, depth + 1, out);
}

}  // namespace

std::string explain(const PlanNode& root) {
  std::string out;
  explain_into(root, 0, &out);
  return out;
}

}  // namespace weir::sql
