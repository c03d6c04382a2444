#include "sql/plan.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"

namespace weir::sql {

int TableDef::index_of(std::string_view name) const {
  for (size_t i = 0; i < columns.size(); ++i) {
    if (absl::EqualsIgnoreCase(columns[i].name, std::string(name))) return static_cast<int>(i);
  }
  return -1;
}

std::vector<std::string> PlanNode::column_names() const {
  std::vector<std::string> names;
  for (const Column& c : columns) names.push_back(c.name);
  return names;
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
    case PlanNode::Kind::kSink:
      line += "Sink(" + n.table + ")";
      break;
  }
  *out += line + " " + typed(n.columns) + "\n";
  if (n.input) explain_into(*n.input, depth + 1, out);
}

}  // namespace

std::string explain(const PlanNode& root) {
  std::string out;
  explain_into(root, 0, &out);
  return out;
}

}  // namespace weir::sql
