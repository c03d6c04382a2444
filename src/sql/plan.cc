#include "sql/plan.h"

#include <algorithm>

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

const Expr* TableDef::computed_expr(std::string_view name) const {
  for (const auto& [n, e] : computed) {
    if (absl::EqualsIgnoreCase(n, std::string(name))) return &e;
  }
  return nullptr;
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

void set_join_columns(PlanNode* join) {
  using JoinType = PlanNode::JoinType;
  join->columns = join->input->columns;
  join->columns.insert(join->columns.end(), join->right->columns.begin(), join->right->columns.end());
  const size_t width = join->input->columns.size();
  for (size_t i = 0; i < join->columns.size(); ++i) {
    const bool padded = i < width ? join->join_type == JoinType::kRight || join->join_type == JoinType::kFull
                                  : join->join_type == JoinType::kLeft || join->join_type == JoinType::kFull;
    if (padded) join->columns[i].type.nullable = true;
  }
}

bool is_window_rank(const PlanNode& n) {
  if (n.kind != PlanNode::Kind::kRank || is_updating(*n.input)) return false;
  const auto bounds = window_bounds(*n.input);
  if (!bounds) return false;
  auto partitioned_by = [&](int column) {
    return std::any_of(n.exprs.begin(), n.exprs.end(),
                       [&](const Expr& e) { return e.kind == Expr::Kind::kColumn && e.column == column; });
  };
  return partitioned_by(bounds->start) && partitioned_by(bounds->end);
}

bool is_updating(const PlanNode& n) {
  switch (n.kind) {
    case PlanNode::Kind::kAggregate:
      if (n.input->kind == PlanNode::Kind::kWindow) return false;  // the window operator's, also of processing time
      return !window_bounds(*n.input) || is_updating(*n.input);
    case PlanNode::Kind::kJoin:
      if (n.temporal) return false;  // the planner takes inserts only on both sides
      return n.join_type != PlanNode::JoinType::kInner || is_updating(*n.input) || is_updating(*n.right);
    case PlanNode::Kind::kUnion:
      return is_updating(*n.input) || is_updating(*n.right);
    case PlanNode::Kind::kScan:
      return n.changelog;
    case PlanNode::Kind::kRank:
      return !is_window_rank(n);
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
    case PlanNode::Kind::kUnnest:  // the input's columns first
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
    case PlanNode::Kind::kRank:  // the input's columns, then the row number
      return is_window_rank(n) ? window_bounds(*n.input) : std::nullopt;
    case PlanNode::Kind::kScan:
    case PlanNode::Kind::kOver:
    case PlanNode::Kind::kUnion:
    case PlanNode::Kind::kSink:
      break;
  }
  return std::nullopt;
}

namespace {

// `e` as a TIMESTAMP column plus a constant number of ms, or nullopt.
std::optional<std::pair<int, int64_t>> time_plus(const Expr& e) {
  if (e.kind == Expr::Kind::kColumn && e.type.kind == TypeKind::kTimestamp) return std::make_pair(e.column, int64_t{0});
  if (e.kind != Expr::Kind::kCall || (e.op != Op::kAdd && e.op != Op::kSubtract) || e.args.size() != 2) return std::nullopt;
  const Expr &c = e.args[0], &d = e.args[1];
  if (c.kind != Expr::Kind::kColumn || c.type.kind != TypeKind::kTimestamp || d.kind != Expr::Kind::kLiteral ||
      d.type.kind != TypeKind::kInterval || !std::holds_alternative<int64_t>(d.literal)) {
    return std::nullopt;
  }
  const int64_t ms = std::get<int64_t>(d.literal);
  return std::make_pair(c.column, e.op == Op::kAdd ? ms : -ms);
}

void and_parts(const Expr& e, std::vector<const Expr*>* out) {
  if (e.kind == Expr::Kind::kCall && e.op == Op::kAnd) {
    for (const Expr& a : e.args) and_parts(a, out);
    return;
  }
  out->push_back(&e);
}

}  // namespace

std::optional<IntervalBounds> interval_bounds(const Expr& condition, int left_width) {
  std::vector<const Expr*> parts;
  and_parts(condition, &parts);
  IntervalBounds b;
  std::optional<int64_t> lower, upper;
  for (const Expr* p : parts) {
    if (p->kind != Expr::Kind::kCall || p->args.size() != 2) continue;
    Op op = p->op;
    if (op != Op::kLess && op != Op::kLessEqual && op != Op::kGreater && op != Op::kGreaterEqual) continue;
    auto x = time_plus(p->args[0]), y = time_plus(p->args[1]);
    if (!x || !y || (x->first < left_width) == (y->first < left_width)) continue;
    if (x->first < left_width) {  // left + cx op right + cy: right - left (flipped op) cx - cy
      std::swap(x, y);
      op = op == Op::kLess ? Op::kGreater : op == Op::kLessEqual ? Op::kGreaterEqual
         : op == Op::kGreater ? Op::kLess : Op::kLessEqual;
    }
    // right + cx op left + cy: right - left op cy - cx.
    const int right = x->first - left_width, left = y->first;
    if (b.left_time < 0) b.left_time = left, b.right_time = right;
    if (b.left_time != left || b.right_time != right) continue;
    const int64_t c = y->second - x->second;
    if (op == Op::kGreaterEqual || op == Op::kGreater) {
      const int64_t lo = op == Op::kGreater ? c + 1 : c;
      lower = lower ? std::max(*lower, lo) : lo;
    } else {
      const int64_t hi = op == Op::kLess ? c - 1 : c;
      upper = upper ? std::min(*upper, hi) : hi;
    }
  }
  if (!lower || !upper || *lower > *upper) return std::nullopt;
  b.lower = *lower;
  b.upper = *upper;
  return b;
}

namespace {

std::string typed(const std::vector<Column>& columns) {
  std::vector<std::string> parts;
  for (const Column& c : columns) parts.push_back(c.name + " " + c.type.to_string());
  return "[" + absl::StrJoin(parts, ", ") + "]";
}

// One node, its expressions over the input's column names `in` (and the
// right side's `right`), without its own columns.
std::string describe(const PlanNode& n, const std::vector<std::string>& in, const std::vector<std::string>& right) {
  std::string line;
  switch (n.kind) {
    case PlanNode::Kind::kScan:
      line += "Scan(" + n.table + (n.changelog ? "; changelog by its primary key" : "");
      if (n.partition_filter) {
        line += "; partitions where " + n.partition_filter->to_string(n.partition_columns);
      }
      line += ")";
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
      static const char* kOuter[] = {"", "LeftJoin(", "RightJoin(", "FullJoin("};
      if (n.temporal && n.temporal_left_time && n.temporal_right_time) {
        keys.push_back("AS OF " + n.temporal_left_time->to_string(in) + " versions by " +
                       n.temporal_right_time->to_string(right));
      }
      line += std::string(n.temporal ? (n.join_type == PlanNode::JoinType::kLeft ? "LeftTemporalJoin(" : "TemporalJoin(")
                          : n.join_type != PlanNode::JoinType::kInner ? kOuter[static_cast<int>(n.join_type)]
                          : n.window_join                           ? "WindowJoin("
                          : n.interval_join                         ? "IntervalJoin("
                                                                    : "Join(") +
              absl::StrJoin(keys, ", ") +
              (n.exprs.empty() ? "" : "; " + n.exprs[0].to_string(both)) + unique + filters + ")";
      break;
    }
    case PlanNode::Kind::kRank: {
      std::vector<std::string> keys, order;
      for (const Expr& e : n.exprs) keys.push_back(e.to_string(in));
      for (size_t i = 0; i < n.order_keys.size(); ++i) {
        order.push_back(n.order_keys[i].to_string(in) + (n.descending[i] ? " DESC" : ""));
      }
      line += std::string(is_window_rank(n) ? "WindowRank" : "Rank") + "(partition: " + absl::StrJoin(keys, ", ") +
              "; order: " + absl::StrJoin(order, ", ") +
              (n.rank_function == PlanNode::RankFunction::kRowNumber
                   ? "; rows 1.."
                   : "; " + std::string(rank_function_name(n.rank_function)) + " 1..") +
              std::to_string(n.limit) + ")";
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
    case PlanNode::Kind::kUnnest:
      line += std::string(n.unnest_outer ? "LeftUnnest(" : "Unnest(") + n.exprs[0].to_string(in) +
              (n.ordinality ? " WITH ORDINALITY" : "") + ")";
      break;
    case PlanNode::Kind::kSink:
      line += "Sink(" + n.table + ")";
      break;
  }
  return line;
}

void explain_into(const PlanNode& n, int depth, std::string* out) {
  const std::vector<std::string> none;
  *out += std::string(static_cast<size_t>(depth) * 2, ' ') +
          describe(n, n.input ? n.input->column_names() : none, n.right ? n.right->column_names() : none) + " " +
          typed(n.columns) + "\n";
  if (n.input) explain_into(*n.input, depth + 1, out);
  if (n.right) explain_into(*n.right, depth + 1, out);
}

// "$0", "$1", ... ("$r0", ... for a join's right side): a node's
// expressions without its input's column names.
std::vector<std::string> positions(const PlanNode* n, const std::string& prefix = "$") {
  std::vector<std::string> out;
  if (n == nullptr) return out;
  for (size_t i = 0; i < n->columns.size(); ++i) out.push_back(prefix + std::to_string(i));
  return out;
}

std::string types(const PlanNode* n) {
  std::vector<std::string> parts;
  if (n != nullptr) {
    for (const Column& c : n->columns) parts.push_back(c.type.to_string());
  }
  return "[" + absl::StrJoin(parts, ", ") + "]";
}

}  // namespace

std::string explain(const PlanNode& root) {
  std::string out;
  explain_into(root, 0, &out);
  return out;
}

namespace {

// "10 s", "1 min", "1500 ms".
std::string readable_ms(int64_t ms) {
  if (ms != 0 && ms % 3600000 == 0) return std::to_string(ms / 3600000) + " h";
  if (ms != 0 && ms % 60000 == 0) return std::to_string(ms / 60000) + " min";
  if (ms != 0 && ms % 1000 == 0) return std::to_string(ms / 1000) + " s";
  return std::to_string(ms) + " ms";
}

// "HOP(dateTime, 2 s, 10 s)": the arguments in SQL's order.
std::string window_name(const WindowSpec& w) {
  std::string args = w.time_column;
  switch (w.kind) {
    case WindowSpec::Kind::kTumble:
      args += ", " + readable_ms(w.size_ms);
      break;
    case WindowSpec::Kind::kHop:
    case WindowSpec::Kind::kCumulate:
      args += ", " + readable_ms(w.slide_ms) + ", " + readable_ms(w.size_ms);
      break;
    case WindowSpec::Kind::kSession:
      args += ", " + readable_ms(w.gap_ms);
      break;
  }
  if (w.offset_ms != 0) args += ", " + readable_ms(w.offset_ms);
  static const char* kNames[] = {"TUMBLE", "HOP", "SESSION", "CUMULATE"};
  return std::string(kNames[static_cast<int>(w.kind)]) + "(" + args + ")";
}

std::string capped(std::string name) {
  if (name.size() <= kMaxOperatorName) return name;
  size_t cut = kMaxOperatorName - 3;
  while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
  name.resize(cut);
  return name + "...";
}

std::string joined(const std::vector<Expr>& exprs, const std::vector<std::string>& in) {
  std::vector<std::string> parts;
  for (const Expr& e : exprs) parts.push_back(e.to_string(in));
  return absl::StrJoin(parts, ", ");
}

}  // namespace

std::vector<std::string> readable_column_names(const PlanNode& n) {
  std::vector<std::string> names = n.column_names();
  if (n.kind != PlanNode::Kind::kAggregate || !n.input) return names;
  const std::vector<std::string> in = n.input->column_names();
  const size_t first = n.exprs.size();  // the keys, then one column per aggregate
  for (size_t i = 0; i < n.aggregates.size() && first + i < names.size(); ++i) {
    if (names[first + i].rfind("$agg", 0) == 0) names[first + i] = n.aggregates[i].to_string(in);
  }
  return names;
}

std::string calc_name(const std::vector<Expr>& conditions, const std::vector<Expr>* select,
                      const std::vector<std::string>& input_names) {
  std::string name;
  if (select != nullptr) name = "SELECT " + joined(*select, input_names);
  if (!conditions.empty()) {
    std::vector<std::string> parts;
    for (const Expr& c : conditions) parts.push_back(c.to_string(input_names));
    name += std::string(name.empty() ? "" : " ") + "WHERE " + absl::StrJoin(parts, " AND ");
  }
  return capped(std::move(name));
}

std::string operator_name(const PlanNode& n) {
  const std::vector<std::string> none;
  const std::vector<std::string> in = n.input ? readable_column_names(*n.input) : none;
  switch (n.kind) {
    case PlanNode::Kind::kScan:
      return capped("FROM " + n.table);
    case PlanNode::Kind::kWindow:
      return capped(window_name(*n.window));
    case PlanNode::Kind::kAggregate: {
      // Over a window table function: the window, and the keys without the
      // window's own columns.
      const PlanNode* window = n.input && n.input->kind == PlanNode::Kind::kWindow ? n.input.get() : nullptr;
      const int first_window_column = window ? static_cast<int>(window->input->columns.size()) : -1;
      std::vector<std::string> keys, aggs;
      for (const Expr& e : n.exprs) {
        if (window && e.kind == Expr::Kind::kColumn && e.column >= first_window_column) continue;
        keys.push_back(e.to_string(in));
      }
      for (const AggregateCall& a : n.aggregates) aggs.push_back(a.to_string(in));
      std::string name = window ? window_name(*window->window) + " " : "";
      name += aggs.empty() ? "DISTINCT" : absl::StrJoin(aggs, ", ");
      if (!keys.empty()) name += " BY " + absl::StrJoin(keys, ", ");
      return capped(std::move(name));
    }
    case PlanNode::Kind::kRank: {
      std::vector<std::string> order;
      for (size_t i = 0; i < n.order_keys.size(); ++i) {
        order.push_back(n.order_keys[i].to_string(in) + (n.descending[i] ? " DESC" : ""));
      }
      return capped(std::string(rank_function_name(n.rank_function)) + "() OVER (" +
                    (n.exprs.empty() ? "" : "PARTITION BY " + joined(n.exprs, in) + " ") + "ORDER BY " +
                    absl::StrJoin(order, ", ") + ") <= " + std::to_string(n.limit));
    }
    case PlanNode::Kind::kOver: {
      std::vector<std::string> aggs;
      for (const AggregateCall& a : n.aggregates) aggs.push_back(a.to_string(in));
      return capped(absl::StrJoin(aggs, ", ") + " OVER (" +
                    (n.exprs.empty() ? "" : "PARTITION BY " + joined(n.exprs, in) + " ") + "ORDER BY " +
                    n.order_keys[0].to_string(in) + " " + n.over->to_string() + ")");
    }
    case PlanNode::Kind::kFilter:
      return calc_name({n.exprs[0]}, nullptr, in);
    case PlanNode::Kind::kProject:
      return calc_name({}, &n.exprs, in);
    case PlanNode::Kind::kJoin:
    case PlanNode::Kind::kUnion:
    case PlanNode::Kind::kUnnest:
    case PlanNode::Kind::kSink:
      return capped(describe(n, in, n.right ? n.right->column_names() : none));
  }
  return "?";
}

std::unique_ptr<PlanNode> scan_of(const TableDef& t) {
  auto scan = std::make_unique<PlanNode>();
  scan->kind = PlanNode::Kind::kScan;
  scan->table = t.name;
  scan->columns = t.columns;
  scan->changelog = t.changelog();
  return scan;
}

std::string_view rank_function_name(PlanNode::RankFunction f) {
  switch (f) {
    case PlanNode::RankFunction::kRowNumber: return "ROW_NUMBER";
    case PlanNode::RankFunction::kRank: return "RANK";
    case PlanNode::RankFunction::kDenseRank: return "DENSE_RANK";
  }
  return "?";
}

std::string state_layout(const PlanNode& n) {
  std::string out = describe(n, positions(n.input.get()), positions(n.right.get(), "$r")) + " " + types(n.input.get()) +
                    (n.right ? " " + types(n.right.get()) : "") + " -> " + types(&n);
  // The windows of an aggregation over a window table function are made
  // by the aggregation's operator.
  if (n.kind == PlanNode::Kind::kAggregate && n.input && n.input->kind == PlanNode::Kind::kWindow) {
    out += " over " + describe(*n.input, positions(n.input->input.get()), {}) + " " + types(n.input->input.get());
  }
  return out;
}

}  // namespace weir::sql

namespace weir::sql {

void renumber_columns(Expr& e, const std::vector<int>& to) {
  if (e.kind == Expr::Kind::kColumn) e.column = to[static_cast<size_t>(e.column)];
  for (Expr& a : e.args) renumber_columns(a, to);
}

}  // namespace weir::sql
