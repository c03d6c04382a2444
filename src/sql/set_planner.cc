// QueryPlanner's views and UNION ALL (sql/query_planner.h): FROM v for a
// declared view, and a UNION ALL b.
#include "sql/query_planner.h"

namespace weir::sql {

using nlohmann::json;

absl::StatusOr<std::unique_ptr<PlanNode>> QueryPlanner::view(const json& v, const json& range,
                                                             std::vector<Scope>* scopes, int offset) {
  auto rows = select(v["query"]["SelectStmt"], offset);
  if (!rows.ok()) return rows.status();
  if (v.contains("aliases")) {
    const std::vector<std::string> names = strings_of(v["aliases"]);
    for (size_t i = 0; i < names.size() && i < (*rows)->columns.size(); ++i) (*rows)->columns[i].name = names[i];
  }
  const std::string name = v["view"].value("relname", "");
  scopes->push_back({range.contains("alias") ? range["alias"].value("aliasname", name) : name, (*rows)->columns});
  return rows;
}

absl::StatusOr<std::unique_ptr<PlanNode>> QueryPlanner::union_all(const json& s, int offset) {
  auto left = select(s["larg"], offset);
  if (!left.ok()) return left.status();
  auto right = select(s["rarg"], offset);
  if (!right.ok()) return right.status();
  const int at = location_of(s["rarg"]);
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
