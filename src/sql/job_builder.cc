#include "sql/job_builder.h"

#include <stdexcept>

#include "absl/strings/str_format.h"
#include "sql/aggregate.h"
#include "sql/decimal.h"
#include "sql/values.h"
#include "sql/operators.h"
#include "sql/parser.h"
#include "weir/key_group.h"

namespace weir::sql {
namespace {

// Turns each INSERT's plan into operators, from its sink down: a node's
// operators get uids from its place in the plan, a table's source and sink
// come from the connectors by name.
class Builder {
 public:
  Builder(const PlannedScript& planned, const TableConnectors& connectors, StreamEnvironment& env)
      : planned_(planned), connectors_(connectors), env_(env) {}

  absl::Status run() {
    for (size_t i = 0; i < planned_.inserts.size(); ++i) {
      const InsertPlan& insert = planned_.inserts[i];
      prefix_ = "sql-" + std::to_string(i);
      const PlanNode& sink = *insert.root;
      // A SELECT list right below the sink writes its DECIMALs as text
      // itself; else an operator of its own does.
      sink_ = &sink;
      auto rows = stream(*sink.input, 1);
      sink_ = nullptr;
      if (!rows.ok()) return rows.status();
      const TableDef* table = find(sink.table);
      auto it = connectors_.sinks.find(table->connector());
      if (it == connectors_.sinks.end()) {
        return absl::InvalidArgumentError("table " + table->name + ": connector '" + table->connector() +
                                          "' cannot be written to from SQL yet");
      }
      DataStream<Row> out =
          wire_out(*rows, sink.columns, sink.input->kind == PlanNode::Kind::kProject, prefix_ + "-0-");
      absl::Status s = it->second(out, is_updating(*sink.input), *table, prefix_ + "-0-sink");
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }

 private:
  const TableDef* find(const std::string& name) const {
    for (const TableDef& t : planned_.tables) {
      if (t.name == name) return &t;
    }
    return nullptr;
  }

  // The columns whose SQL values differ from a connector's (sql/values.h:
  // DECIMAL, DATE, TIME, BYTES, ARRAY, MAP) as a source gives them (text, a
  // number, JSON) turned into their SQL values; a value that is none fails
  // the job naming the table, the column and what was expected.
  static DataStream<Row> wire_in(const DataStream<Row>& rows, const TableDef& table, const std::vector<Column>& columns,
                                 const std::string& uid) {
    std::vector<std::pair<size_t, Type>> typed;
    for (size_t i = 0; i < columns.size(); ++i) {
      if (has_wire_form(columns[i].type)) typed.emplace_back(i, columns[i].type);
    }
    if (typed.empty()) return rows;
    const std::string where = "table " + table.name + ", column ";
    DataStream<Row> out = rows.map(
        [typed, columns, where](const Row& in) {
          Row r = in;
          for (const auto& [i, t] : typed) {
            absl::StatusOr<Value> v = from_wire(r.values[i], t);
            if (!v.ok()) throw UnrecoverableError(where + columns[i].name + ": " + std::string(v.status().message()));
            r.values[i] = *std::move(v);
          }
          return r;
        },
        "read values of " + table.name);
    out.uid(uid + "decimals");  // the uid of the jobs before DATE, ARRAY, ... (only DECIMALs were converted)
    return out;
  }

  // The same columns as a sink writes them (text, JSON); a DECIMAL is
  // text already when `decimals_written` (a SELECT list right below the
  // sink made it).
  static DataStream<Row> wire_out(const DataStream<Row>& rows, const std::vector<Column>& columns, bool decimals_written,
                                  const std::string& uid) {
    std::vector<std::pair<size_t, Type>> typed;
    for (size_t i = 0; i < columns.size(); ++i) {
      if (has_wire_form(columns[i].type) && !(decimals_written && columns[i].type.kind == TypeKind::kDecimal)) {
        typed.emplace_back(i, columns[i].type);
      }
    }
    if (typed.empty()) return rows;
    DataStream<Row> out = rows.map(
        [typed](const Row& in) {
          Row r = in;
          for (const auto& [i, t] : typed) r.values[i] = to_wire(r.values[i], t);
          return r;
        },
        "write values");
    out.uid(uid + "decimal-text");  // as above
    return out;
  }

  // Part of the uids of a stateful node's operators: a hash of what its
  // state holds (plan.h state_layout), so a changed query does not read
  // state it would misread.
  static std::string layout_tag(const PlanNode& n) {
    const std::string layout = state_layout(n);
    return absl::StrFormat("%08x-", static_cast<uint32_t>(hash_bytes(layout.data(), layout.size())));
  }

  // Scan `n`, its rows of `columns` (n's, or n's in another order).
  absl::StatusOr<DataStream<Row>> scan(const PlanNode& n, const std::vector<Column>& columns, const std::string& uid) {
    const TableDef* table = find(n.table);
    auto it = connectors_.sources.find(table->connector());
    if (it == connectors_.sources.end()) {
      return absl::InvalidArgumentError("table " + table->name + ": connector '" + table->connector() +
                                        "' cannot be read from SQL yet");
    }
    // The columns the query reads (projection push-down); the source's
    // columns as declared are the physical ones (computed columns are made
    // above it, rules.h), and its computed expressions read those (a
    // watermark on one, event_time_of).
    TableDef scanned = *table;
    scanned.columns = columns;
    scanned.declared.clear();
    std::vector<int> to(table->columns.size(), -1);
    for (size_t i = 0; i < table->columns.size(); ++i) {
      if (table->computed_expr(table->columns[i].name) != nullptr) continue;
      to[i] = static_cast<int>(scanned.declared.size());
      scanned.declared.push_back(table->columns[i]);
    }
    for (auto& [name, e] : scanned.computed) renumber_columns(e, to);
    scanned.partition_filter = n.partition_filter;
    scanned.equal_to = n.equal_to;
    auto rows = it->second(env_, scanned, uid + "scan");
    if (!rows.ok()) return rows.status();
    return wire_in(*rows, *table, columns, uid);
  }

  absl::StatusOr<DataStream<Row>> stream(const PlanNode& n, int depth) {
    const std::string uid = prefix_ + "-" + std::to_string(depth) + "-";
    switch (n.kind) {
      case PlanNode::Kind::kScan:
        return scan(n, n.columns, uid);
      case PlanNode::Kind::kFilter:
      case PlanNode::Kind::kProject:
        return filters_and_projections(n, depth, uid);
      case PlanNode::Kind::kWindow: {
        auto in = stream(*n.input, depth + 1);
        if (!in.ok()) return in.status();
        return named(assign_windows(*in, n, uid), n);
      }
      case PlanNode::Kind::kAggregate: {
        // Directly over a window table function, the window operator makes
        // the windows (the table function itself is no operator).
        // (CUMULATE: a row per window it is in, then per key and window a
        // state and a timer, as over windowed rows.)
        const bool tvf = n.input->kind == PlanNode::Kind::kWindow && n.input->window->kind != WindowSpec::Kind::kCumulate;
        auto in = stream(tvf ? *n.input->input : *n.input, depth + (tvf ? 2 : 1));
        if (!in.ok()) return in.status();
        const std::string keeps = uid + layout_tag(n);
        if (tvf) return named(window_aggregate(*in, n, keeps), n);
        if (window_bounds(*n.input) && !is_updating(*n.input)) return named(windowed_aggregate(*in, n, keeps), n);
        if (planned_.settings.two_phase_aggregation &&
            (!is_updating(*n.input) || Aggregates(n.aggregates).merges_retractions())) {
          return named(two_phase_aggregate(*in, n, planned_.settings, keeps), n);
        }
        return named(group_aggregate(*in, n, keeps), n);
      }
      case PlanNode::Kind::kRank: {
        auto in = stream(*n.input, depth + 1);
        if (!in.ok()) return in.status();
        return named(top_n(*in, n, uid + layout_tag(n)), n);
      }
      case PlanNode::Kind::kOver: {
        auto in = stream(*n.input, depth + 1);
        if (!in.ok()) return in.status();
        return named(over_aggregate(*in, n, uid + layout_tag(n)), n);
      }
      case PlanNode::Kind::kUnion: {
        auto sides = both_sides(n, depth, "u");
        if (!sides.ok()) return sides.status();
        return sides->first.union_with(sides->second);
      }
      case PlanNode::Kind::kJoin: {
        auto sides = both_sides(n, depth, "r");
        if (!sides.ok()) return sides.status();
        return named(join(sides->first, sides->second, n, uid + layout_tag(n)), n);
      }
      case PlanNode::Kind::kUnnest: {
        auto in = stream(*n.input, depth + 1);
        if (!in.ok()) return in.status();
        return named(unnest(*in, n, n.input->column_names(), uid), n);
      }
      case PlanNode::Kind::kSink:
        break;
    }
    return absl::InternalError("a sink inside a query");
  }

  // The operator that runs `n`, named after what it does (plan.h
  // operator_name).
  static absl::StatusOr<DataStream<Row>> named(absl::StatusOr<DataStream<Row>> op, const PlanNode& n) {
    if (op.ok()) op->name(operator_name(n));
    return op;
  }

  static bool small_enough(const std::vector<Expr>& exprs) {
    constexpr size_t kMaxComposedNodes = 10000;
    size_t nodes = 0;
    for (const Expr& e : exprs) {
      nodes += expression_nodes(e);
      if (nodes > kMaxComposedNodes || expression_depth(e) > kMaxSqlNesting) return false;
    }
    return true;
  }

  // A chain of filters and projections from `n` down is one operator over
  // the rows of the node below the chain: the filters' conditions, lowest
  // first (a row a lower filter drops is not seen by a higher one), then
  // the top projection's expressions, each composed with the projections
  // below it. (The program evaluates what compositions repeat once.)
  absl::StatusOr<DataStream<Row>> filters_and_projections(const PlanNode& n, int depth, const std::string& uid) {
    std::optional<std::vector<Expr>> select;  // none: the rows as they are
    std::vector<Expr> conditions;             // lowest first
    if (n.kind == PlanNode::Kind::kProject) {
      select = n.exprs;
      // Right below the sink: DECIMALs written as text here.
      if (sink_ != nullptr && sink_->input.get() == &n) {
        for (size_t i = 0; i < select->size(); ++i) {
          const Type& to = sink_->columns[i].type;
          if (to.kind == TypeKind::kDecimal) {
            (*select)[i] = Expr::call(Op::kCast, Type{TypeKind::kVarchar, to.nullable}, {cast_to(std::move((*select)[i]), to)});
          }
        }
      }
    } else {
      conditions.push_back(n.exprs[0]);
    }
    const PlanNode* below = n.input.get();
    int below_depth = depth + 1;
    for (; below->kind == PlanNode::Kind::kFilter || below->kind == PlanNode::Kind::kProject;
         below = below->input.get(), ++below_depth) {
      if (below->kind == PlanNode::Kind::kFilter) {
        conditions.insert(conditions.begin(), below->exprs[0]);
        continue;
      }
      // Composed while the result stays small: a projection reading a
      // column many times would copy what computes it as often (the
      // program shares equal steps, but building it walks every copy).
      std::vector<Expr> next_select = below->exprs;
      if (select) {
        next_select = *select;
        for (Expr& e : next_select) e = compose(e, below->exprs);
      }
      std::vector<Expr> next_conditions = conditions;
      for (Expr& c : next_conditions) c = compose(c, below->exprs);
      if (!small_enough(next_select) || !small_enough(next_conditions)) break;
      select = std::move(next_select);
      conditions = std::move(next_conditions);
    }
    // Every column of a scan in another order, nothing computed: the
    // source gives them in that order, and no operator copies them.
    if (below->kind == PlanNode::Kind::kScan && conditions.empty() && select && select->size() == below->columns.size()) {
      std::vector<Column> order;
      std::vector<bool> taken(below->columns.size(), false);
      for (const Expr& e : *select) {
        if (e.kind != Expr::Kind::kColumn || e.column < 0 || e.column >= static_cast<int>(taken.size()) || taken[e.column]) break;
        taken[e.column] = true;
        order.push_back(below->columns[e.column]);
      }
      if (order.size() == below->columns.size()) return scan(*below, order, prefix_ + "-" + std::to_string(below_depth) + "-");
    }
    auto in = stream(*below, below_depth);
    if (!in.ok()) return in.status();
    // Every column of the input, in order (a scan pruned to what the
    // query selects): no operator at all.
    bool identity = conditions.empty() && select && select->size() == below->columns.size();
    for (size_t i = 0; identity && i < select->size(); ++i) {
      identity = (*select)[i].kind == Expr::Kind::kColumn && (*select)[i].column == static_cast<int>(i);
    }
    if (identity) return in;
    return calc(*in, conditions, select ? &*select : nullptr, readable_column_names(*below), uid);
  }

  // The two inputs of a join or union; the right side's uids carry `tag`
  // and the depth, so they differ from the left side's and from those of
  // the same nodes nested on both sides.
  absl::StatusOr<std::pair<DataStream<Row>, DataStream<Row>>> both_sides(const PlanNode& n, int depth,
                                                                         const std::string& tag) {
    auto left = stream(*n.input, depth + 1);
    if (!left.ok()) return left.status();
    const std::string saved = prefix_;
    prefix_ += tag + std::to_string(depth);
    auto right = stream(*n.right, depth + 1);
    prefix_ = saved;
    if (!right.ok()) return right.status();
    return std::make_pair(*std::move(left), *std::move(right));
  }

  const PlannedScript& planned_;
  const TableConnectors& connectors_;
  StreamEnvironment& env_;
  std::string prefix_;
  const PlanNode* sink_ = nullptr;  // the sink whose rows are being built
};

}  // namespace

std::function<int64_t(const Row&)> event_time_of(const TableDef& t, const std::vector<Column>& declared) {
  if (const Expr* e = t.computed_expr(t.watermark->column)) {
    return [e = *e](const Row& r) {
      auto v = evaluate(e, r);
      const int64_t* ms = v.ok() ? std::get_if<int64_t>(&*v) : nullptr;
      return ms != nullptr ? *ms : int64_t{0};
    };
  }
  const int time = column_index(declared, t.watermark->column);
  return [time](const Row& r) { return r.is_null(time) ? int64_t{0} : r.int64(time); };
}

absl::Status build_job(const PlannedScript& planned, const TableConnectors& connectors, StreamEnvironment& env) {
  return Builder(planned, connectors, env).run();
}

}  // namespace weir::sql
