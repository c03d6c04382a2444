#include "sql/query_planner.h"

#include <algorithm>
#include <functional>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"

namespace weir::sql {

bool reads_columns(const Expr& e, int first, int end) {
  if (e.kind == Expr::Kind::kColumn) return e.column >= first && e.column < end;
  return std::any_of(e.args.begin(), e.args.end(), [&](const Expr& a) { return reads_columns(a, first, end); });
}

Expr shifted(Expr e, int by) {
  if (e.kind == Expr::Kind::kColumn) e.column += by;
  for (Expr& a : e.args) a = shifted(std::move(a), by);
  return e;
}

void conjuncts(Expr e, std::vector<Expr>* out) {
  if (e.kind == Expr::Kind::kCall && e.op == Op::kAnd) {
    for (Expr& a : e.args) conjuncts(std::move(a), out);
    return;
  }
  out->push_back(std::move(e));
}

void for_each_child(const ast::Expr& e, const std::function<void(const ast::Expr&)>& f) {
  if (e.subject) f(*e.subject);
  for (const ast::Expr& a : e.args) f(a);
  if (e.otherwise) f(*e.otherwise);
  if (e.filter) f(*e.filter);
  if (e.over) {
    for (const ast::Expr& k : e.over->partition_by) f(k);
    for (const ast::SortItem& o : e.over->order_by) f(o.expr);
    if (e.over->preceding) f(*e.over->preceding);
  }
}

namespace {

// Whether an aggregate call stands in `e` (outside subqueries): a SELECT
// of aggregates without GROUP BY aggregates all rows as one group.
bool has_aggregate(const ast::Expr& e) {
  if (e.kind == ast::Expr::Kind::kFunction) {
    if (e.over) return false;  // OVER a window: no grouping
    if (is_aggregate_function(absl::AsciiStrToLower(e.name()))) return true;
  }
  bool found = false;
  for_each_child(e, [&](const ast::Expr& c) { found = found || has_aggregate(c); });
  return found;
}

bool has_aggregate(const ast::Select& s) {
  return std::any_of(s.targets.begin(), s.targets.end(), [](const ast::Select::Target& t) { return has_aggregate(t.expr); });
}

}  // namespace

const Column& column_at(const std::vector<Scope>& scopes, int i) {
  for (const Scope& s : scopes) {
    if (i < static_cast<int>(s.columns.size())) return s.columns[i];
    i -= static_cast<int>(s.columns.size());
  }
  static const Column kNone;
  return kNone;
}

absl::StatusOr<std::unique_ptr<PlanNode>> QueryPlanner::select(const ast::Select& s, int offset) {
  // GROUP BY TUMBLE(ts, ...): the window table function it means.
  if (auto legacy = as_window_table_function(s, text_)) {
    if (!legacy->ok()) return legacy->status();
    return select(**legacy, offset);
  }
  // What is not built yet, named where it stands.
  using SetOp = ast::Select::SetOp;
  if (s.set_op == SetOp::kUnion && s.all) return union_all(s, offset);
  if (s.set_op != SetOp::kNone) {
    return unsupported(s.offset, s.set_op == SetOp::kUnion ? "UNION without ALL (UNION ALL is)" : "INTERSECT and EXCEPT");
  }
  if (!s.order_by.empty()) return unsupported(s.order_by[0].offset, "ORDER BY");
  if (s.limit) return unsupported(s.limit->offset, "LIMIT");
  if (!s.unsupported.empty()) return unsupported(s.unsupported[0].offset, s.unsupported[0].name);
  if (s.distinct) {
    // SELECT DISTINCT: a GROUP BY of every column selected.
    ast::Select plain = s;
    plain.distinct = false;
    auto rows = select(plain, offset);
    if (!rows.ok()) return rows.status();
    auto distinct = std::make_unique<PlanNode>();
    distinct->kind = PlanNode::Kind::kAggregate;
    distinct->columns = (*rows)->columns;
    for (size_t i = 0; i < distinct->columns.size(); ++i) {
      distinct->exprs.push_back(Expr::column_ref(static_cast<int>(i), distinct->columns[i].type));
    }
    distinct->input = *std::move(rows);
    return distinct;
  }
  if (s.from.empty()) return unsupported(offset, "SELECT without FROM");
  std::vector<Scope> scopes;
  auto first = from_item(s.from[0], &scopes, offset);
  if (!first.ok()) return first.status();
  Node node = *std::move(first);
  for (size_t i = 1; i < s.from.size(); ++i) {  // FROM a, b: a join, its keys from WHERE
    if (is_unnest(s.from[i])) {  // FROM t, UNNEST(t.c): per row of t, its collection's elements
      auto unnested = unnest(std::move(node), s.from[i], &scopes, false);
      if (!unnested.ok()) return unnested.status();
      node = *std::move(unnested);
      continue;
    }
    auto next = from_item(s.from[i], &scopes, offset);
    if (!next.ok()) return next.status();
    node = cross(std::move(node), *std::move(next));
  }
  if (s.where) {
    auto cond = binder_.bind(*s.where, scopes);
    if (!cond.ok()) return cond.status();
    if (cond->type.kind != TypeKind::kBoolean && cond->type.kind != TypeKind::kNull) {
      return error(s.where->offset, "WHERE needs a BOOLEAN, not " + std::string(type_name(cond->type.kind)));
    }
    auto filtered = where(std::move(node), *std::move(cond));
    if (!filtered.ok()) return filtered.status();
    node = *std::move(filtered);
  }
  absl::Status joined = finish_joins(node.get(), s.from.size() > 1 ? s.from[1].offset : offset);
  if (!joined.ok()) return joined;
  if (!s.group_by.empty() || s.having || has_aggregate(s)) return grouped(s, std::move(node), scopes, offset);
  if (has_over_aggregate(s)) return over(s, std::move(node), scopes, offset);
  return project(s, std::move(node), scopes, offset);
}

absl::StatusOr<std::unique_ptr<PlanNode>> QueryPlanner::project(const ast::Select& s, Node input,
                                                                const std::vector<Scope>& scopes, int offset,
                                                                OverCalls* over) {
  const Binder over_binder(text_, nullptr, over);
  const Binder& binder = over != nullptr ? over_binder : binder_;
  auto project = std::make_unique<PlanNode>();
  project->kind = PlanNode::Kind::kProject;
  int unnamed = 0;
  const int width = static_cast<int>(input->columns.size());
  for (const ast::Select::Target& t : s.targets) {
    const ast::Expr& val = t.expr;
    if (over == nullptr && val.kind == ast::Expr::Kind::kFunction && val.over) {
      // ROW_NUMBER() OVER (...): a rank below this projection, its number
      // the column after the input's.
      auto rank = row_number(val, std::move(input), scopes);
      if (!rank.ok()) return rank.status();
      input = *std::move(rank);
      project->columns.push_back({t.alias.empty() ? "EXPR$" + std::to_string(unnamed) : t.alias, {TypeKind::kBigInt, false}});
      project->exprs.push_back(Expr::column_ref(width, {TypeKind::kBigInt, false}));
      ++unnamed;
      continue;
    }
    if (val.kind == ast::Expr::Kind::kStar) {
      // * or t.*: every column (of t).
      const std::vector<std::string>& parts = val.names;
      int at = 0;
      bool any = false;
      for (const Scope& sc : scopes) {
        const bool mine = parts.empty() || absl::EqualsIgnoreCase(parts[0], sc.qualifier);
        for (size_t i = 0; mine && i < sc.columns.size(); ++i) {
          if (parts.empty() && sc.is_hidden(i)) continue;
          project->exprs.push_back(Expr::column_ref(at + static_cast<int>(i), sc.columns[i].type));
          project->columns.push_back(sc.columns[i]);
          any = true;
        }
        at += static_cast<int>(sc.columns.size());
      }
      if (!any) return error(val.offset, "no table " + (parts.empty() ? std::string("?") : parts[0]) + " in FROM");
      continue;
    }
    auto e = binder.bind(val, scopes);
    if (!e.ok()) return e.status();
    std::string name = t.alias;
    if (name.empty()) {
      const bool plain = e->kind == Expr::Kind::kColumn && e->column < width;
      name = plain ? column_at(scopes, e->column).name : "EXPR$" + std::to_string(unnamed);
      // A ROW's field (column "person.id", CREATE TABLE) is named by the
      // field, as Flink names it: id.
      if (plain && name.find('.') != std::string::npos) name = name.substr(name.rfind('.') + 1);
    }
    ++unnamed;
    project->columns.push_back({name, e->type});
    project->exprs.push_back(*std::move(e));
  }
  (void)offset;
  if (over != nullptr) {  // the OVER window's calls, a column each after its input's
    input->aggregates = over->calls;
    for (size_t i = 0; i < over->calls.size(); ++i) {
      input->columns.push_back({"$over" + std::to_string(i), over->calls[i].type});
    }
  }
  // Two columns of one name are allowed (as in PostgreSQL and Flink); a
  // reference to that name from outside is ambiguous.
  project->input = std::move(input);
  prune_inputs(project.get());
  return project;
}

absl::StatusOr<std::unique_ptr<PlanNode>> QueryPlanner::where(Node input, Expr cond) {
  if (input->kind == PlanNode::Kind::kJoin) return join_where(std::move(input), std::move(cond));
  // WHERE rn <= N (or rn < N, rn = 1) over a projection of a rank's row
  // number: the rank's limit (TOP-N), no filter.
  if (input->kind == PlanNode::Kind::kProject && input->input->kind == PlanNode::Kind::kRank && input->input->limit == 0) {
    PlanNode& rank = *input->input;
    const int rn_column = static_cast<int>(rank.columns.size()) - 1;
    std::vector<Expr> parts, rest;
    conjuncts(std::move(cond), &parts);
    for (Expr& c : parts) {
      int64_t limit = 0;
      if (c.kind == Expr::Kind::kCall && c.args.size() == 2 && c.args[0].kind == Expr::Kind::kColumn &&
          c.args[1].kind == Expr::Kind::kLiteral && std::holds_alternative<int64_t>(c.args[1].literal)) {
        const Expr& rn = input->exprs[c.args[0].column];
        const int64_t n = std::get<int64_t>(c.args[1].literal);
        if (rn.kind == Expr::Kind::kColumn && rn.column == rn_column) {
          limit = c.op == Op::kLessEqual ? n : c.op == Op::kLess ? n - 1 : c.op == Op::kEqual && n == 1 ? 1 : 0;
        }
      }
      if (limit > 0 && rank.limit == 0) {
        rank.limit = limit;
      } else {
        rest.push_back(std::move(c));
      }
    }
    if (rest.empty()) return input;
    cond = conjunction(std::move(rest));
  }
  return filter_over(std::move(input), std::move(cond));
}

absl::StatusOr<std::unique_ptr<PlanNode>> QueryPlanner::row_number(const ast::Expr& f, Node input,
                                                                   const std::vector<Scope>& scopes) {
  const int at = f.offset;
  const std::string name = absl::AsciiStrToUpper(f.names.empty() ? "?" : f.name());
  auto rank = std::make_unique<PlanNode>();
  rank->kind = PlanNode::Kind::kRank;
  if (name == "RANK") {
    rank->rank_function = PlanNode::RankFunction::kRank;
  } else if (name == "DENSE_RANK") {
    rank->rank_function = PlanNode::RankFunction::kDenseRank;
  } else if (name != "ROW_NUMBER") {
    return error(at, name + "() OVER (...) is not supported yet (ROW_NUMBER(), RANK() and DENSE_RANK() OVER (...) "
                            "are, for TOP-N)");
  }
  if (!f.args.empty()) return error(at, name + "() takes no arguments");
  if (input->kind == PlanNode::Kind::kRank) return unsupported(at, "two ranking functions in one SELECT");
  const ast::Over& over = *f.over;
  if (!over.name.empty() || !over.base.empty()) return unsupported(at, name + "() OVER a named window");
  for (const ast::Expr& k : over.partition_by) {
    auto e = binder_.bind(k, scopes);
    if (!e.ok()) return e.status();
    rank->exprs.push_back(*std::move(e));
  }
  for (const ast::SortItem& o : over.order_by) {
    auto e = binder_.bind(o.expr, scopes);
    if (!e.ok()) return e.status();
    rank->order_keys.push_back(*std::move(e));
    rank->descending.push_back(o.descending);
  }
  if (rank->order_keys.empty()) return error(at, name + "() needs an ORDER BY in its OVER (...)");
  if (over.start == ast::Over::Start::kPreceding) return unsupported(at, "a window frame");
  rank->columns = input->columns;
  rank->columns.push_back({"$rn", {TypeKind::kBigInt, false}});
  rank->input = std::move(input);
  return rank;
}

absl::Status check_ranks(const PlanNode& n, std::string_view text, int offset) {
  if (n.kind == PlanNode::Kind::kRank && n.limit == 0) {
    return sql_unsupported(text, offset,
                           std::string(rank_function_name(n.rank_function)) +
                               "() without WHERE rn <= N in the query around it (TOP-N)");
  }
  for (const PlanNode* c : {n.input.get(), n.right.get()}) {
    if (c == nullptr) continue;
    absl::Status s = check_ranks(*c, text, offset);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

// Of `cond` over the columns of `scan` (all of its table's), the
// conjuncts that read partition columns only go into the scan's
// partition_filter, over the partition columns in partition-by order.
void QueryPlanner::push_partition_conditions(PlanNode* scan, const Expr& cond) const {
  const TableDef* t = find_table_(scan->table);
  if (t == nullptr) return;
  auto by = t->options.find("partition-by");
  if (by == t->options.end()) return;
  std::vector<Expr> as_partition(scan->columns.size());  // column i of the scan, as the partition row has it
  std::vector<bool> partition(scan->columns.size(), false);
  int k = 0;
  std::vector<std::string> names;
  for (absl::string_view name : absl::StrSplit(by->second, ',')) {
    names.emplace_back(name);
    const int at = column_index(scan->columns, std::string_view(name.data(), name.size()));
    if (at < 0) return;
    as_partition[static_cast<size_t>(at)] = Expr::column_ref(k++, scan->columns[static_cast<size_t>(at)].type);
    partition[static_cast<size_t>(at)] = true;
  }
  std::function<bool(const Expr&)> partition_only = [&](const Expr& e) {
    if (e.kind == Expr::Kind::kColumn) return e.column >= 0 && partition[static_cast<size_t>(e.column)];
    return std::all_of(e.args.begin(), e.args.end(), partition_only);
  };
  std::vector<Expr> all;
  conjuncts(cond, &all);
  for (const Expr& c : all) {
    if (!partition_only(c)) continue;
    Expr pushed = compose(c, as_partition);
    scan->partition_columns = names;
    if (!scan->partition_filter) {
      scan->partition_filter = std::move(pushed);
    } else {
      std::vector<Expr> parts;
      parts.push_back(*std::move(scan->partition_filter));
      parts.push_back(std::move(pushed));
      scan->partition_filter = conjunction(std::move(parts));
    }
  }
}

// The conjuncts `column = constant` of `cond` into `scan`'s equal_to (a
// source may leave out the rows that fail them).
void push_equalities(PlanNode* scan, const Expr& cond) {
  std::vector<Expr> parts;
  conjuncts(cond, &parts);
  const int width = static_cast<int>(scan->columns.size());
  for (const Expr& c : parts) {
    if (c.kind != Expr::Kind::kCall || c.op != Op::kEqual || c.args.size() != 2) continue;
    for (int side = 0; side < 2; ++side) {
      const Expr& col = c.args[side];
      const Expr& value = c.args[1 - side];
      if (col.kind == Expr::Kind::kColumn && col.column < width && value.kind == Expr::Kind::kLiteral &&
          !std::holds_alternative<std::monostate>(value.literal) && value.type.kind == col.type.kind) {
        scan->equal_to.emplace_back(scan->columns[col.column].name, value.literal);
        break;
      }
    }
  }
}

std::unique_ptr<PlanNode> QueryPlanner::filter_over(Node input, Expr cond) const {
  if (input->kind == PlanNode::Kind::kScan) {
    push_partition_conditions(input.get(), cond);
    push_equalities(input.get(), cond);
  }
  if (input->kind == PlanNode::Kind::kFilter && input->input->kind == PlanNode::Kind::kScan) {
    push_partition_conditions(input->input.get(), cond);
    push_equalities(input->input.get(), cond);
  }
  // Below a window table function when it reads none of the window's
  // columns (filter push-down).
  if (input->kind == PlanNode::Kind::kWindow && !reads_columns(cond, static_cast<int>(input->input->columns.size()))) {
    input->input = filter_over(std::move(input->input), std::move(cond));
    return input;
  }
  if (input->kind == PlanNode::Kind::kFilter) {  // one filter of both conditions
    std::vector<Expr> parts;
    parts.push_back(std::move(input->exprs[0]));
    parts.push_back(std::move(cond));
    input->exprs[0] = conjunction(std::move(parts));
    return input;
  }
  auto filter = std::make_unique<PlanNode>();
  filter->kind = PlanNode::Kind::kFilter;
  filter->columns = input->columns;
  filter->exprs.push_back(std::move(cond));
  filter->input = std::move(input);
  return filter;
}

absl::StatusOr<std::unique_ptr<PlanNode>> QueryPlanner::from_item(const ast::TableRef& item, std::vector<Scope>* scopes,
                                                                  int offset) {
  using Kind = ast::TableRef::Kind;
  const int at = item.offset >= 0 ? item.offset : offset;
  if ((item.kind == Kind::kTable || item.kind == Kind::kSubquery) && ++relations_ > kMaxPlanRelations) {
    return error(at, "the statement reads more than " + std::to_string(kMaxPlanRelations) +
                         " tables, views and subqueries (a view counts each time it is read; "
                         "weir's limit, docs/sql.md \"Limits\")");
  }
  const bool nests = item.kind == Kind::kSubquery ||
                     (item.kind == Kind::kTable && find_table_(item.name) == nullptr && find_view_ &&
                      find_view_(item.name) != nullptr);
  if (nests && nesting_ >= kMaxQueryNesting) {
    return error(at, "subqueries and views nest deeper than " + std::to_string(kMaxQueryNesting) +
                         " levels here (views expanded; weir's limit, docs/sql.md \"Limits\")");
  }
  nesting_ += nests ? 1 : 0;
  auto planned = relation(item, scopes, offset);
  nesting_ -= nests ? 1 : 0;
  return planned;
}

absl::StatusOr<Scope> QueryPlanner::scope_of(const ast::TableRef& item, std::string qualifier,
                                             std::vector<Column> columns) const {
  if (item.alias) qualifier = *item.alias;
  if (!item.alias_columns.empty()) {
    if (item.alias_columns.size() > columns.size()) {
      return error(item.offset, qualifier + " names " + std::to_string(item.alias_columns.size()) + " columns, it has " +
                                    std::to_string(columns.size()));
    }
    for (size_t i = 0; i < item.alias_columns.size(); ++i) columns[i].name = item.alias_columns[i];
  }
  return Scope{std::move(qualifier), std::move(columns)};
}

absl::StatusOr<std::unique_ptr<PlanNode>> QueryPlanner::relation(const ast::TableRef& item, std::vector<Scope>* scopes,
                                                                 int offset) {
  switch (item.kind) {
    case ast::TableRef::Kind::kTable: {
      const std::string& name = item.name;
      const TableDef* t = find_table_(name);
      if (t == nullptr && find_view_) {
        if (const ast::CreateView* v = find_view_(name)) {
          if (!item.alias_columns.empty()) return unsupported(item.offset, "column aliases on a view (name them in CREATE VIEW)");
          return view(*v, item.alias, scopes, offset);
        }
      }
      if (t == nullptr) return error(item.offset >= 0 ? item.offset : offset, "no table " + name + " (declare it with CREATE TABLE)");
      // t FOR SYSTEM_TIME AS OF x: the join with it decides (join_planner.cc
      // temporal); a changing table is joined only as a versioned table.
      if (temporal_ != nullptr) {
        for (const TemporalMark& m : *temporal_) {
          if (m.table_offset != item.offset) continue;
          const std::string& c = t->connector();
          const bool versioned = t->watermark && t->options.contains("primary-key");
          if (c != "filesystem" && c != "values" && c != "postgres" && !versioned) {
            return unsupported(m.table_offset, "a temporal join with the versions of a changing table without a "
                                               "PRIMARY KEY and a WATERMARK (" + c + ", FOR SYSTEM_TIME AS OF)");
          }
        }
      }
      auto scope = scope_of(item, t->name, t->columns);
      if (!scope.ok()) return scope.status();
      scopes->push_back(*std::move(scope));
      return scan_of(*t);
    }
    case ast::TableRef::Kind::kSubquery: {
      auto inner = select(*item.query, offset);
      if (!inner.ok()) return inner.status();
      auto scope = scope_of(item, "", (*inner)->columns);
      if (!scope.ok()) return scope.status();
      scopes->push_back(*std::move(scope));
      return inner;
    }
    case ast::TableRef::Kind::kFunction:
      if (is_unnest(item)) {
        return unsupported(item.offset >= 0 ? item.offset : offset,
                           "UNNEST without a table before it (FROM t CROSS JOIN UNNEST(t.c) AS u (x) is supported)");
      }
      return window_function(item, scopes, offset);
    case ast::TableRef::Kind::kJoin:
      return join(item, scopes, offset);
    case ast::TableRef::Kind::kUnsupported:
      break;
  }
  return unsupported(item.offset >= 0 ? item.offset : offset, item.what);
}

namespace {

void mark(const Expr& e, std::vector<bool>* used, int offset = 0) {
  if (e.kind == Expr::Kind::kColumn) (*used)[e.column + offset] = true;
  for (const Expr& a : e.args) mark(a, used, offset);
}

// The expressions of `top` that read its input's columns.
std::vector<Expr*> reading_input(PlanNode* top) {
  std::vector<Expr*> out;
  for (Expr& e : top->exprs) out.push_back(&e);
  for (AggregateCall& a : top->aggregates) {
    if (a.arg) out.push_back(&*a.arg);
    if (a.filter) out.push_back(&*a.filter);
  }
  return out;
}

// Projection push-down into a join below `top`: each side reads only the
// columns used above the join, by its condition and by its keys (a
// projection of them goes under the join, and is pruned in turn).
// Filters between `top` and the join (WHERE above an outer join) read the
// join's row as `top` does.
void prune_join(PlanNode* top) {
  std::vector<PlanNode*> filters;
  PlanNode* j = top->input.get();
  while (j->kind == PlanNode::Kind::kFilter) {
    filters.push_back(j);
    j = j->input.get();
  }
  const int width = static_cast<int>(j->columns.size());
  const int left_width = static_cast<int>(j->input->columns.size());
  std::vector<bool> used(width, false);
  std::vector<Expr*> above = reading_input(top);
  for (PlanNode* f : filters) above.push_back(&f->exprs[0]);
  for (const Expr* e : above) mark(*e, &used);
  if (!j->exprs.empty()) mark(j->exprs[0], &used);
  if (j->temporal_left_time) mark(*j->temporal_left_time, &used);
  if (j->temporal_right_time) mark(*j->temporal_right_time, &used, left_width);
  for (const Expr& k : j->left_keys) mark(k, &used);
  for (const Expr& k : j->right_keys) mark(k, &used, left_width);
  if (j->left_filter) mark(*j->left_filter, &used);
  if (j->right_filter) mark(*j->right_filter, &used, left_width);
  std::vector<int> to(width, -1);
  int kept = 0;
  for (int i = 0; i < width; ++i) {
    if (used[i]) to[i] = kept++;
  }
  // Each side: a projection of its used columns, keys renumbered.
  auto narrow_side = [&](std::unique_ptr<PlanNode>& side, std::vector<Expr>& keys, std::optional<Expr>& filter,
                         std::optional<Expr>& time, int from) {
    const int n = static_cast<int>(side->columns.size());
    std::vector<int> local(n, -1);
    auto p = std::make_unique<PlanNode>();
    p->kind = PlanNode::Kind::kProject;
    for (int i = 0; i < n; ++i) {
      if (!used[from + i]) continue;
      local[i] = static_cast<int>(p->exprs.size());
      p->exprs.push_back(Expr::column_ref(i, side->columns[i].type));
      p->columns.push_back(side->columns[i]);
    }
    if (static_cast<int>(p->exprs.size()) == n) return;
    for (Expr& k : keys) renumber_columns(k, local);
    if (filter) renumber_columns(*filter, local);
    if (time) renumber_columns(*time, local);
    p->input = std::move(side);
    prune_inputs(p.get());
    side = std::move(p);
  };
  narrow_side(j->input, j->left_keys, j->left_filter, j->temporal_left_time, 0);
  narrow_side(j->right, j->right_keys, j->right_filter, j->temporal_right_time, left_width);
  if (kept == width) return;
  for (Expr* e : above) renumber_columns(*e, to);
  if (!j->exprs.empty()) renumber_columns(j->exprs[0], to);
  set_join_columns(j);
  for (PlanNode* f : filters) f->columns = j->columns;
}

}  // namespace

void prune_inputs(PlanNode* top) {
  const PlanNode* below = top->input.get();
  while (below->kind == PlanNode::Kind::kFilter) below = below->input.get();
  if (below->kind == PlanNode::Kind::kJoin) {
    prune_join(top);
  } else {
    prune_scan(top);
  }
}

void prune_scan(PlanNode* top) {
  std::vector<PlanNode*> chain;  // from top's input down, without the scan
  PlanNode* n = top->input.get();
  while (n->kind == PlanNode::Kind::kFilter || n->kind == PlanNode::Kind::kWindow || n->kind == PlanNode::Kind::kRank ||
         n->kind == PlanNode::Kind::kOver) {
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
    if (a.filter) above.push_back(&*a.filter);
  }
  for (PlanNode* c : chain) {
    if (c->kind == PlanNode::Kind::kFilter) above.push_back(&c->exprs[0]);
    if (c->kind == PlanNode::Kind::kRank || c->kind == PlanNode::Kind::kOver) {
      for (Expr& e : c->exprs) above.push_back(&e);
      for (Expr& e : c->order_keys) above.push_back(&e);
    }
    for (AggregateCall& a : c->aggregates) {  // kOver's
      if (a.arg) above.push_back(&*a.arg);
      if (a.filter) above.push_back(&*a.filter);
    }
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
    if (c->kind == PlanNode::Kind::kRank) cols.push_back(c->columns.back());  // the row number
    if (c->kind == PlanNode::Kind::kOver) cols.insert(cols.end(), c->columns.end() - static_cast<long>(c->aggregates.size()), c->columns.end());
    c->columns = std::move(cols);
  }
}

}  // namespace weir::sql
