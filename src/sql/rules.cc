#include "sql/rules.h"

#include <numeric>

#include "absl/strings/match.h"
#include "sql/query_planner.h"
#include "sql/table_options.h"

namespace weir::sql {
namespace {

void mark_columns(const Expr& e, std::vector<bool>* used) {
  if (e.kind == Expr::Kind::kColumn && e.column >= 0 && static_cast<size_t>(e.column) < used->size()) {
    (*used)[static_cast<size_t>(e.column)] = true;
  }
  for (const Expr& a : e.args) mark_columns(a, used);
}

std::vector<int> identity(size_t n) {
  std::vector<int> to(n);
  std::iota(to.begin(), to.end(), 0);
  return to;
}

// `e` with column `column` (of type `type`) replaced by `value`.
Expr substitute(Expr e, int column, const Value& value) {
  if (e.kind == Expr::Kind::kColumn && e.column == column) return Expr::constant(value, e.type);
  for (Expr& a : e.args) a = substitute(std::move(a), column, value);
  return e;
}

// Keeps of `n`'s columns those `needed` says (a node that cannot drop
// columns keeps them all); returns where each old column went (-1: gone).
std::vector<int> prune(PlanNode* n, const std::vector<bool>& needed) {
  const size_t width = n->columns.size();
  switch (n->kind) {
    case PlanNode::Kind::kProject: {
      std::vector<bool> below(n->input->columns.size(), false);
      std::vector<int> to(width, -1);
      std::vector<Expr> exprs;
      std::vector<Column> columns;
      for (size_t i = 0; i < width; ++i) {
        // One column at least: a projection of none is no row shape.
        if (!needed[i] && !(i + 1 == width && exprs.empty())) continue;
        to[i] = static_cast<int>(exprs.size());
        exprs.push_back(n->exprs[i]);
        columns.push_back(n->columns[i]);
        mark_columns(exprs.back(), &below);
      }
      const std::vector<int> moved = prune(n->input.get(), below);
      for (Expr& e : exprs) renumber_columns(e, moved);
      n->exprs = std::move(exprs);
      n->columns = std::move(columns);
      return to;
    }
    case PlanNode::Kind::kFilter: {
      std::vector<bool> below = needed;
      mark_columns(n->exprs[0], &below);
      const std::vector<int> moved = prune(n->input.get(), below);
      renumber_columns(n->exprs[0], moved);
      n->columns = n->input->columns;
      return moved;
    }
    case PlanNode::Kind::kScan: {
      std::vector<int> to(width, -1);
      std::vector<Column> columns;
      for (size_t i = 0; i < width; ++i) {
        if (!needed[i] && !(i + 1 == width && columns.empty())) continue;
        to[i] = static_cast<int>(columns.size());
        columns.push_back(n->columns[i]);
      }
      n->columns = std::move(columns);
      return to;
    }
    case PlanNode::Kind::kWindow:
    case PlanNode::Kind::kUnnest: {
      // The input's columns read above, and the window's time column (the
      // columns the collection to unnest reads); then the node's own.
      const size_t in = n->input->columns.size();
      std::vector<bool> below(needed.begin(), needed.begin() + static_cast<long>(in));
      if (n->kind == PlanNode::Kind::kUnnest) mark_columns(n->exprs[0], &below);
      for (size_t i = 0; n->window && i < in; ++i) {
        if (absl::EqualsIgnoreCase(n->input->columns[i].name, n->window->time_column)) below[i] = true;
      }
      const std::vector<int> moved = prune(n->input.get(), below);
      if (n->kind == PlanNode::Kind::kUnnest) renumber_columns(n->exprs[0], moved);
      std::vector<int> to(width, -1);
      std::vector<Column> columns = n->input->columns;
      for (size_t i = 0; i < in; ++i) to[i] = moved[i];
      for (size_t i = in; i < width; ++i) {
        to[i] = static_cast<int>(columns.size());
        columns.push_back(n->columns[i]);
      }
      n->columns = std::move(columns);
      return to;
    }
    case PlanNode::Kind::kAggregate: {
      // Its keys and its calls' arguments; over a window table function
      // also the window's bounds the keys read (they are the window's).
      std::vector<bool> below(n->input->columns.size(), false);
      for (const Expr& k : n->exprs) mark_columns(k, &below);
      for (const AggregateCall& a : n->aggregates) {
        if (a.arg) mark_columns(*a.arg, &below);
        if (a.filter) mark_columns(*a.filter, &below);
      }
      const std::vector<int> moved = prune(n->input.get(), below);
      for (Expr& k : n->exprs) renumber_columns(k, moved);
      for (AggregateCall& a : n->aggregates) {
        if (a.arg) renumber_columns(*a.arg, moved);
        if (a.filter) renumber_columns(*a.filter, moved);
      }
      return identity(width);
    }
    default: {
      // Joins, ranks, OVER windows and unions read every column of their
      // inputs (the planner pruned a join's sides already).
      for (PlanNode* child : {n->input.get(), n->right.get()}) {
        if (child != nullptr) prune(child, std::vector<bool>(child->columns.size(), true));
      }
      return identity(width);
    }
  }
}

}  // namespace

Expr fold_constants(Expr e) {
  for (Expr& a : e.args) a = fold_constants(std::move(a));
  if (e.kind != Expr::Kind::kCall) return e;
  if (e.op == Op::kCase) {
    // Branches whose condition is a constant FALSE or NULL never apply;
    // one whose condition is a constant TRUE ends the CASE.
    const size_t pairs = (e.args.size() - (e.has_else ? 1 : 0)) / 2;
    std::vector<Expr> kept;
    std::optional<Expr> result;  // the CASE's value when no kept branch applies
    for (size_t p = 0; p < pairs; ++p) {
      Expr& when = e.args[2 * p];
      if (when.kind == Expr::Kind::kLiteral) {
        const bool* b = std::get_if<bool>(&when.literal);
        if (b == nullptr || !*b) continue;
        result = std::move(e.args[2 * p + 1]);
        break;
      }
      kept.push_back(std::move(when));
      kept.push_back(std::move(e.args[2 * p + 1]));
    }
    if (!result) result = e.has_else ? std::move(e.args.back()) : Expr::constant(Value{}, e.type);
    if (kept.empty()) {
      Expr out = cast_to(*std::move(result), e.type);
      out.type.nullable = e.type.nullable;
      return out;
    }
    kept.push_back(*std::move(result));
    e.args = std::move(kept);
    e.has_else = true;
    return e;
  }
  if (!e.is_constant()) return e;
  auto v = evaluate(e, Row{});
  if (!v.ok()) return e;  // an error is the row's, when it is evaluated
  return Expr::constant(*std::move(v), e.type);
}

void expand_computed_columns(std::unique_ptr<PlanNode>& n, const FindTableFn& find) {
  if (n->input) expand_computed_columns(n->input, find);
  if (n->right) expand_computed_columns(n->right, find);
  if (n->kind != PlanNode::Kind::kScan) return;
  const TableDef* t = find(n->table);
  if (t == nullptr || t->computed.empty()) return;
  bool any = false;
  for (const Column& c : n->columns) any = any || t->computed_expr(c.name) != nullptr;
  if (!any) return;
  // The computed columns' expressions, a column pinned by the scan's
  // conditions (event_type = 2) replaced by its value.
  std::vector<Expr> exprs;
  for (const Column& c : n->columns) {
    if (const Expr* e = t->computed_expr(c.name)) {
      Expr x = *e;
      for (const auto& [name, value] : n->equal_to) x = substitute(std::move(x), t->index_of(name), value);
      exprs.push_back(fold_constants(std::move(x)));
    } else {
      exprs.push_back(Expr::column_ref(t->index_of(c.name), c.type));
    }
  }
  // The physical columns read: those the scan gave and those the computed
  // ones read, in the table's order.
  std::vector<bool> read(t->columns.size(), false);
  for (const Expr& e : exprs) mark_columns(e, &read);
  for (const Column& c : n->columns) {
    if (t->computed_expr(c.name) == nullptr) read[static_cast<size_t>(t->index_of(c.name))] = true;
  }
  auto scan = std::make_unique<PlanNode>();
  scan->kind = PlanNode::Kind::kScan;
  scan->table = n->table;
  scan->changelog = n->changelog;
  scan->partition_filter = n->partition_filter;
  scan->partition_columns = n->partition_columns;
  scan->equal_to = n->equal_to;
  std::vector<int> to(t->columns.size(), -1);
  for (size_t i = 0; i < t->columns.size(); ++i) {
    if (!read[i]) continue;
    to[i] = static_cast<int>(scan->columns.size());
    scan->columns.push_back(t->columns[i]);
  }
  for (Expr& e : exprs) renumber_columns(e, to);
  auto project = std::make_unique<PlanNode>();
  project->kind = PlanNode::Kind::kProject;
  project->columns = n->columns;
  project->exprs = std::move(exprs);
  project->input = std::move(scan);
  n = std::move(project);
}

void drop_applied_conditions(std::unique_ptr<PlanNode>& n, const FindTableFn& find) {
  if (n->input) drop_applied_conditions(n->input, find);
  if (n->right) drop_applied_conditions(n->right, find);
  if (n->kind != PlanNode::Kind::kFilter) return;
  // The scan under the filter, maybe under the projection of its computed
  // columns; `via`: that projection.
  PlanNode* via = n->input->kind == PlanNode::Kind::kProject ? n->input.get() : nullptr;
  PlanNode* scan = via != nullptr ? via->input.get() : n->input.get();
  if (scan->kind != PlanNode::Kind::kScan || scan->equal_to.empty()) return;
  const TableDef* t = find(scan->table);
  if (t == nullptr) return;
  std::vector<Expr> parts, kept;
  conjuncts(n->exprs[0], &parts);
  for (Expr& c : parts) {
    bool applied = false;
    if (c.kind == Expr::Kind::kCall && c.op == Op::kEqual && c.args.size() == 2) {
      for (int side = 0; side < 2 && !applied; ++side) {
        const Expr* col = &c.args[side];
        const Expr& value = c.args[1 - side];
        if (col->kind != Expr::Kind::kColumn || value.kind != Expr::Kind::kLiteral) continue;
        if (via != nullptr) col = &via->exprs[static_cast<size_t>(col->column)];
        if (col->kind != Expr::Kind::kColumn) continue;
        const std::string& name = scan->columns[static_cast<size_t>(col->column)].name;
        if (!source_applies_equality(t->connector(), name)) continue;
        for (const auto& [pinned, v] : scan->equal_to) {
          applied = applied || (absl::EqualsIgnoreCase(pinned, name) && v == value.literal);
        }
      }
    }
    if (!applied) kept.push_back(std::move(c));
  }
  if (kept.empty()) {
    n = std::move(n->input);
    return;
  }
  n->exprs[0] = conjunction(std::move(kept));
}

void prune_columns(PlanNode* n) { prune(n, std::vector<bool>(n->columns.size(), true)); }

void apply_rules(std::unique_ptr<PlanNode>& root, const FindTableFn& find) {
  expand_computed_columns(root, find);
  drop_applied_conditions(root, find);
  prune_columns(root.get());
}

}  // namespace weir::sql
