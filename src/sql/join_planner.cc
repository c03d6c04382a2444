// QueryPlanner's joins (sql/query_planner.h): INNER JOIN ... ON / USING and
// FROM a, b. A join's condition and the WHERE above it are split into
// conjuncts: those reading one side are pushed below the join, equalities
// between the sides become its keys, the rest stay as its condition.
#include <algorithm>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "sql/query_planner.h"
#include "sql/table_options.h"

namespace weir::sql {

std::unique_ptr<PlanNode> QueryPlanner::cross(Node left, Node right) {
  auto j = std::make_unique<PlanNode>();
  j->kind = PlanNode::Kind::kJoin;
  j->input = std::move(left);
  j->right = std::move(right);
  set_join_columns(j.get());
  return j;
}

absl::StatusOr<std::unique_ptr<PlanNode>> QueryPlanner::join(const ast::TableRef& j, std::vector<Scope>* scopes, int offset) {
  const int at = j.offset;
  using JoinType = PlanNode::JoinType;
  static const std::map<ast::TableRef::JoinType, JoinType> kTypes = {{ast::TableRef::JoinType::kInner, JoinType::kInner},
                                                                    {ast::TableRef::JoinType::kLeft, JoinType::kLeft},
                                                                    {ast::TableRef::JoinType::kRight, JoinType::kRight},
                                                                    {ast::TableRef::JoinType::kFull, JoinType::kFull}};
  auto known = kTypes.find(j.join_type);
  if (known == kTypes.end()) return unsupported(at, "a join of type " + j.what);
  const JoinType join_type = known->second;
  if (j.natural) return unsupported(at, "NATURAL JOIN");
  if (!j.using_columns.empty() && (join_type == JoinType::kRight || join_type == JoinType::kFull)) {
    return unsupported(at, "USING in a RIGHT or FULL JOIN (ON is)");
  }
  if (j.alias) return unsupported(at, "an alias for a join");
  const size_t left_scopes = scopes->size();
  auto left = from_item(*j.left, scopes, offset);
  if (!left.ok()) return left.status();
  if (is_unnest(*j.right)) {
    // t CROSS JOIN UNNEST(t.c), t JOIN UNNEST(t.c) ON TRUE, t LEFT JOIN
    // UNNEST(t.c) ON TRUE: per row of t, its collection's elements.
    const bool on_true = !j.on || (j.on->kind == ast::Expr::Kind::kLiteral && j.on->literal.kind == ast::Literal::Kind::kBoolean &&
                                   j.on->literal.boolean);
    if (!on_true || !j.using_columns.empty()) {
      return unsupported(j.on ? j.on->offset : at, "a join condition with UNNEST other than ON TRUE (a WHERE filters its rows)");
    }
    if (join_type != JoinType::kInner && join_type != JoinType::kLeft) return unsupported(at, "a RIGHT or FULL JOIN with UNNEST");
    return unnest(*std::move(left), *j.right, scopes, join_type == JoinType::kLeft);
  }
  const size_t right_scopes = scopes->size();
  auto right = from_item(*j.right, scopes, offset);
  if (!right.ok()) return right.status();
  // The side an outer join pads with NULLs: its columns are nullable for
  // what reads them above the join.
  auto pad = [&](size_t from, size_t to) {
    for (size_t i = from; i < to; ++i) {
      for (Column& c : (*scopes)[i].columns) c.type.nullable = true;
    }
  };
  if (join_type == JoinType::kLeft || join_type == JoinType::kFull) pad(right_scopes, scopes->size());
  if (join_type == JoinType::kRight || join_type == JoinType::kFull) pad(left_scopes, right_scopes);
  Node node = cross(*std::move(left), *std::move(right));
  node->join_type = join_type;
  set_join_columns(node.get());
  if (!j.using_columns.empty()) {
    // USING (c, ...): left.c = right.c for each.
    const std::vector<Scope> l(scopes->begin() + static_cast<long>(left_scopes), scopes->begin() + static_cast<long>(right_scopes));
    const std::vector<Scope> r(scopes->begin() + static_cast<long>(right_scopes), scopes->end());
    const int width = static_cast<int>(node->input->columns.size());
    for (const std::string& c : j.using_columns) {
      ast::Expr ref;
      ref.kind = ast::Expr::Kind::kColumn;
      ref.names = {c};
      ref.offset = at;
      auto a = binder_.bind(ref, l);
      if (!a.ok()) return error(at, "USING (" + c + "): the left side has no column " + c);
      auto b = binder_.bind(ref, r);
      if (!b.ok()) return error(at, "USING (" + c + "): the right side has no column " + c);
      Expr eq = Expr::call(Op::kEqual, {TypeKind::kBoolean, a->type.nullable || b->type.nullable},
                           {*std::move(a), shifted(*std::move(b), width)});
      auto joined = join_on(std::move(node), std::move(eq));
      if (!joined.ok()) return joined.status();
      node = *std::move(joined);
      // Unqualified, c is the left side's (equal to the right's in an inner
      // join): the right side's c only by its qualified name.
      for (size_t i = right_scopes; i < scopes->size(); ++i) {
        Scope& sc = (*scopes)[i];
        sc.hidden.resize(sc.columns.size(), false);
        for (size_t k = 0; k < sc.columns.size(); ++k) {
          if (absl::EqualsIgnoreCase(sc.columns[k].name, c)) sc.hidden[k] = true;
        }
      }
    }
  }
  if (j.on) {
    const std::vector<Scope> mine(scopes->begin() + static_cast<long>(left_scopes), scopes->end());
    auto cond = binder_.bind(*j.on, mine);
    if (!cond.ok()) return cond.status();
    if (cond->type.kind != TypeKind::kBoolean) {
      return error(j.on->offset, "ON needs a BOOLEAN, not " + std::string(type_name(cond->type.kind)));
    }
    auto joined = join_on(std::move(node), *std::move(cond));
    if (!joined.ok()) return joined.status();
    node = *std::move(joined);
  }
  if (j.right->kind == ast::TableRef::Kind::kTable && temporal_ != nullptr) {
    for (const TemporalMark& m : *temporal_) {
      if (m.table_offset != j.right->offset) continue;
      const std::vector<Scope> left_side(scopes->begin() + static_cast<long>(left_scopes),
                                         scopes->begin() + static_cast<long>(right_scopes));
      absl::Status t = temporal(node.get(), m, *j.right, left_side);
      if (!t.ok()) return t;
    }
  }
  absl::Status s = finish_joins(node.get(), at);
  if (!s.ok()) return s;
  return node;
}

// JOIN t FOR SYSTEM_TIME AS OF x: with x the left side's event time, the
// versions of t (a versioned table: its PRIMARY KEY, the join's keys, and
// its WATERMARK's event time); with x a processing time, t as it is read
// (a table that never changes: a file, a values table, a PostgreSQL table
// read once; a lookup join is a join with it).
absl::Status QueryPlanner::temporal(PlanNode* join, const TemporalMark& mark, const ast::TableRef& right,
                                    const std::vector<Scope>& left_scopes) {
  const TableDef* t = find_table_(right.name);
  if (t == nullptr) return absl::OkStatus();  // a view: planned as its query
  auto parsed = parse_expression(Script{std::string(text_), {}}, mark.time);
  if (!parsed.ok()) return parsed.status();
  auto time = binder_.bind(*parsed, left_scopes);
  if (!time.ok()) return time.status();
  const bool event_time = time->kind == Expr::Kind::kColumn &&
                          time_attribute(*join->input, time->column) == TimeAttribute::kEventTime;
  const std::string& c = t->connector();
  if (!event_time) {
    if (c != "filesystem" && c != "values" && c != "postgres") {
      return unsupported(mark.table_offset, "a processing-time temporal join (a lookup) with the versions of a changing "
                                            "table (" + c + ", FOR SYSTEM_TIME AS OF)");
    }
    return absl::OkStatus();
  }
  auto pk = t->options.find("primary-key");
  if (pk == t->options.end() || !t->watermark) {
    return error(mark.table_offset, "FOR SYSTEM_TIME AS OF an event time joins the versions of a versioned table: " +
                                        t->name + " needs a PRIMARY KEY and a WATERMARK");
  }
  using JoinType = PlanNode::JoinType;
  if (join->join_type != JoinType::kInner && join->join_type != JoinType::kLeft) {
    return unsupported(mark.table_offset, "a RIGHT or FULL temporal join");
  }
  if (is_updating(*join->input) || is_updating(*join->right)) {
    return unsupported(mark.table_offset, "a temporal join of an updating input");
  }
  for (const std::string& key : std::vector<std::string>(absl::StrSplit(pk->second, ','))) {
    bool joined = false;
    for (const Expr& k : join->right_keys) {
      joined = joined || (k.kind == Expr::Kind::kColumn &&
                          absl::EqualsIgnoreCase(join->right->columns[static_cast<size_t>(k.column)].name, key));
    }
    if (!joined) {
      return error(mark.table_offset, "a temporal join is on the versioned table's PRIMARY KEY: ON ... = " + t->name + "." +
                                          std::string(key) + " is missing");
    }
  }
  const int right_time = column_index(join->right->columns, t->watermark->column);
  if (right_time < 0) return absl::InternalError("the versioned table's time column is not read");
  join->temporal = true;
  join->temporal_left_time = *time;
  join->temporal_right_time = Expr::column_ref(right_time, join->right->columns[static_cast<size_t>(right_time)].type);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<PlanNode>> QueryPlanner::join_on(Node join, Expr cond) {
  // Conjuncts reading one side go below the join to that side, except to
  // an outer join's preserved side: its ON decides which pairs join, never
  // which rows of a preserved side appear (a conjunct over the padded side
  // alone filters it: a row it drops partners nobody). Equalities between
  // the sides are keys; the rest is checked per pair.
  using JoinType = PlanNode::JoinType;
  const bool to_left = join->join_type == JoinType::kInner || join->join_type == JoinType::kRight;
  const bool to_right = join->join_type == JoinType::kInner || join->join_type == JoinType::kLeft;
  const int width = static_cast<int>(join->input->columns.size());
  std::vector<Expr> parts;
  conjuncts(std::move(cond), &parts);
  std::vector<Expr> rest;
  if (!join->exprs.empty()) rest.push_back(std::move(join->exprs[0]));
  join->exprs.clear();
  for (Expr& c : parts) {
    const bool left = reads_columns(c, 0, width), right = reads_columns(c, width);
    if (!right && to_left) {  // the left side's own (or a constant)
      auto l = where(std::move(join->input), std::move(c));
      if (!l.ok()) return l.status();
      join->input = *std::move(l);
      continue;
    }
    if (!left && to_right) {
      auto r = where(std::move(join->right), shifted(std::move(c), -width));
      if (!r.ok()) return r.status();
      join->right = *std::move(r);
      continue;
    }
    if (left && right && key_of(c, width, join.get())) continue;
    rest.push_back(std::move(c));
  }
  set_columns_and_condition(join.get(), std::move(rest));
  return join;
}

// Whether conjunct `c` of a join (`width`: the left side's columns) is an
// equality between an expression of each side; if so it is added to the
// join's keys, both sides cast to their common type so equal values encode
// equally (BIGINT 2 and DOUBLE 2.0).
bool QueryPlanner::key_of(const Expr& c, int width, PlanNode* join) {
  if (c.kind != Expr::Kind::kCall || c.op != Op::kEqual) return false;
  Expr a = c.args[0], b = c.args[1];
  if (reads_columns(a, width) && !reads_columns(a, 0, width) && !reads_columns(b, width)) std::swap(a, b);
  if (reads_columns(a, width) || reads_columns(b, 0, width)) return false;
  const auto common = common_type(a.type, b.type);
  if (!common) return false;
  join->left_keys.push_back(cast_to(std::move(a), *common));
  join->right_keys.push_back(shifted(cast_to(std::move(b), *common), -width));
  return true;
}

// A join's columns (plan.h set_join_columns) and its condition, the
// conjunction of `rest`.
void QueryPlanner::set_columns_and_condition(PlanNode* join, std::vector<Expr> rest) {
  // The left side's columns are unchanged by filters below it: `rest`
  // still reads the join's row.
  set_join_columns(join);
  if (!rest.empty()) {
    join->exprs.push_back(conjunction(std::move(rest)));
  }
}

absl::StatusOr<std::unique_ptr<PlanNode>> QueryPlanner::join_where(Node join, Expr cond) {
  // Above an outer join a WHERE is a filter of its rows (padded ones too).
  if (join->join_type != PlanNode::JoinType::kInner) return filter_over(std::move(join), std::move(cond));
  return join_on(std::move(join), std::move(cond));
}

absl::Status QueryPlanner::finish_joins(PlanNode* n, int offset) {
  if (n->kind == PlanNode::Kind::kUnnest) return finish_joins(n->input.get(), offset);
  if (n->kind != PlanNode::Kind::kJoin) return absl::OkStatus();
  for (PlanNode* side : {n->input.get(), n->right.get()}) {
    absl::Status s = finish_joins(side, offset);
    if (!s.ok()) return s;
  }
  if (n->left_keys.empty()) {
    return unsupported(offset, "a join without an equality between its two sides (a cross join)");
  }
  if (n->temporal) return absl::OkStatus();
  // An outer join, or one of an updating input, is a regular join that
  // takes changes back (operators.h changelog_join): no window, interval
  // or unique side.
  if (is_updating(*n)) return absl::OkStatus();
  // A window join: both sides windowed, and joined on both bounds.
  const auto l = window_bounds(*n->input), r = window_bounds(*n->right);
  if (l && r) {
    auto joined_on = [&](int a, int b) {
      for (size_t i = 0; i < n->left_keys.size(); ++i) {
        const Expr &x = n->left_keys[i], &y = n->right_keys[i];
        if (x.kind == Expr::Kind::kColumn && y.kind == Expr::Kind::kColumn && x.column == a && y.column == b) return true;
      }
      return false;
    };
    n->window_join = joined_on(l->start, r->start) && joined_on(l->end, r->end);
  }
  // An interval join: the condition bounds the sides' event times by each
  // other.
  if (!n->window_join && !n->exprs.empty()) {
    const auto b = interval_bounds(n->exprs[0], static_cast<int>(n->input->columns.size()));
    n->interval_join = b && time_attribute(*n->input, b->left_time) == TimeAttribute::kEventTime &&
                       time_attribute(*n->right, b->right_time) == TimeAttribute::kEventTime;
  }
  n->left_unique = unique_on(*n->input, n->left_keys);
  n->right_unique = unique_on(*n->right, n->right_keys);
  // A unique side's filter goes into the join, so that the other side's
  // rows do not wait forever for a row the filter dropped.
  auto pull_filter = [](std::unique_ptr<PlanNode>& side, std::optional<Expr>& filter) {
    if (side->kind != PlanNode::Kind::kFilter) return;
    filter = std::move(side->exprs[0]);
    side = std::move(side->input);
  };
  if (n->left_unique && !n->right_unique) pull_filter(n->input, n->left_filter);
  if (n->right_unique && !n->left_unique) pull_filter(n->right, n->right_filter);
  return absl::OkStatus();
}

// The sets of columns of `n` whose values no two of its rows share: a
// scanned table's PRIMARY KEY, through filters and projections that keep
// its columns.
std::vector<std::vector<int>> QueryPlanner::unique_keys(const PlanNode& n) const {
  switch (n.kind) {
    case PlanNode::Kind::kScan: {
      const TableDef* t = find_table_(n.table);
      if (t == nullptr) return {};
      // Its PRIMARY KEY, and the keys its connector knows unique among
      // the rows where they are not NULL (table_options.h).
      std::vector<std::string> keys = source_unique_keys(*t);
      if (t->options.contains("primary-key")) keys.push_back(t->options.at("primary-key"));
      std::vector<std::vector<int>> out;
      for (const std::string& k : keys) {
        std::vector<int> key;
        for (absl::string_view c : absl::StrSplit(k, ',')) {
          const int i = column_index(n.columns, std::string_view(c.data(), c.size()));
          if (i < 0) break;  // not read: the rows may repeat on what is
          key.push_back(i);
        }
        if (key.size() == static_cast<size_t>(std::count(k.begin(), k.end(), ',') + 1)) out.push_back(std::move(key));
      }
      return out;
    }
    case PlanNode::Kind::kFilter:
      return unique_keys(*n.input);
    case PlanNode::Kind::kProject: {
      std::vector<std::vector<int>> out;
      for (const std::vector<int>& key : unique_keys(*n.input)) {
        std::vector<int> mapped;
        for (int c : key) {
          for (size_t i = 0; i < n.exprs.size(); ++i) {
            if (n.exprs[i].kind == Expr::Kind::kColumn && n.exprs[i].column == c) {
              mapped.push_back(static_cast<int>(i));
              break;
            }
          }
        }
        if (mapped.size() == key.size()) out.push_back(std::move(mapped));
      }
      return out;
    }
    default:
      return {};
  }
}

// Whether rows of `side` are unique per value of `keys` (over its columns):
// an append-only side whose keys read every column of a unique key.
bool QueryPlanner::unique_on(const PlanNode& side, const std::vector<Expr>& keys) const {
  if (is_updating(side)) return false;
  std::vector<int> columns;  // read as they are (or cast, which keeps them apart)
  for (const Expr& k : keys) {
    const Expr* e = &k;
    if (e->kind == Expr::Kind::kCall && e->op == Op::kCast && e->type.kind != TypeKind::kDouble) e = &e->args[0];
    if (e->kind == Expr::Kind::kColumn) columns.push_back(e->column);
  }
  for (const std::vector<int>& key : unique_keys(side)) {
    if (std::all_of(key.begin(), key.end(), [&](int c) { return std::find(columns.begin(), columns.end(), c) != columns.end(); })) {
      return true;
    }
  }
  return false;
}

bool QueryPlanner::is_unnest(const ast::TableRef& item) {
  return item.kind == ast::TableRef::Kind::kFunction && item.call && absl::EqualsIgnoreCase(item.call->name(), "unnest");
}

absl::StatusOr<std::unique_ptr<PlanNode>> QueryPlanner::unnest(Node input, const ast::TableRef& item,
                                                               std::vector<Scope>* scopes, bool outer) {
  const ast::Expr& call = *item.call;
  if (call.args.size() != 1) return unsupported(call.offset, "UNNEST of more than one collection");
  auto collection = binder_.bind(call.args[0], *scopes);
  if (!collection.ok()) return collection.status();
  const Type t = collection->type;
  if (!t.collection()) {
    Type shown = t;
    shown.nullable = true;
    return error(call.args[0].offset, "UNNEST takes an ARRAY or a MAP, not " + shown.to_string());
  }
  auto n = std::make_unique<PlanNode>();
  n->kind = PlanNode::Kind::kUnnest;
  n->ordinality = item.ordinality;
  n->unnest_outer = outer;
  std::vector<Column> added;
  if (t.kind == TypeKind::kMap) {
    added.push_back({"KEY", t.key_type()});
    added.push_back({"VALUE", t.element_type()});
  } else {
    added.push_back({"EXPR$0", t.element_type()});
  }
  if (item.ordinality) added.push_back({"ORDINALITY", {TypeKind::kBigInt, outer}});
  auto scope = scope_of(item, "", added);
  if (!scope.ok()) return scope.status();
  n->columns = input->columns;
  n->columns.insert(n->columns.end(), scope->columns.begin(), scope->columns.end());
  n->exprs.push_back(*std::move(collection));
  n->input = std::move(input);
  scopes->push_back(*std::move(scope));
  return n;
}

}  // namespace weir::sql
