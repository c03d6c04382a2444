// QueryPlanner's views and UNION ALL (sql/query_planner.h): FROM v for a
// declared view, and a UNION ALL b.
#include "sql/query_planner.h"

namespace weir::sql {

absl::StatusOr<std::unique_ptr<PlanNode>> QueryPlanner::view(const ast::CreateView& v, const std::optional<std::string>& alias,
                                                             std::vector<Scope>* scopes, int offset) {
  auto rows = select(v.query, offset);
  if (!rows.ok()) return rows.status();
  for (size_t i = 0; i < v.columns.size() && i < (*rows)->columns.size(); ++i) (*rows)->columns[i].name = v.columns[i];
  scopes->push_back({alias.value_or(v.name.text), (*rows)->columns});
  return rows;
}

absl::StatusOr<std::unique_ptr<PlanNode>> QueryPlanner::union_all(const ast::Select& s, int offset) {
  auto left = select(*s.left, offset);
  if (!left.ok()) return left.status();
  auto right = select(*s.right, offset);
  if (!right.ok()) return right.status();
  const int at = s.right->offset;
  const std::vector<Column>& l = (*left)->columns;
  const std::vector<Column>& r = (*right)->columns;
  if (l.size() != r.size()) {
    return error(at, "UNION ALL of " + std::to_string(l.size()) + " and " + std::to_string(r.size()) + " columns");
  }
  // Both sides as the common types, cast in a projection where they differ.
  std::vector<Column> columns;
  for (size_t i = 0; i < l.size(); ++i) {
    auto t = common_type(l[i].type, r[i].type);
    if (!t) {
      return error(at, "UNION ALL: column " + std::to_string(i + 1) + " is " + std::string(type_name(l[i].type.kind)) +
                           " on the left and " + std::string(type_name(r[i].type.kind)) + " on the right");
    }
    columns.push_back({l[i].name, *t});
  }
  auto as_common = [&](Node side) -> Node {
    bool same = true;
    for (size_t i = 0; i < columns.size(); ++i) {
      const Type& t = side->columns[i].type;
      same = same && t.kind == columns[i].type.kind && t.scale == columns[i].type.scale;
    }
    if (same) return side;
    auto p = std::make_unique<PlanNode>();
    p->kind = PlanNode::Kind::kProject;
    for (size_t i = 0; i < columns.size(); ++i) {
      p->exprs.push_back(cast_to(Expr::column_ref(static_cast<int>(i), side->columns[i].type), columns[i].type));
      p->columns.push_back({side->columns[i].name, columns[i].type});
    }
    p->input = std::move(side);
    return p;
  };
  auto u = std::make_unique<PlanNode>();
  u->kind = PlanNode::Kind::kUnion;
  u->columns = columns;
  u->input = as_common(*std::move(left));
  u->right = as_common(*std::move(right));
  return u;
}

}  // namespace weir::sql
