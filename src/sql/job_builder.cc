#include "sql/job_builder.h"

#include <cstdio>
#include <stdexcept>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "sql/aggregate.h"
#include "weir/connectors.h"
#include "weir/windowed_stream.h"

namespace weir::sql {
namespace {

// The value of `e` for `row`; an error fails the task with what failed and
// where (a deterministic error fails every attempt, and the restart
// strategy ends the job).
Value evaluate_or_throw(const Expr& e, const Row& row, const std::string& where) {
  auto v = evaluate(e, row);
  if (!v.ok()) throw std::runtime_error(where + ": " + std::string(v.status().message()));
  return *std::move(v);
}

// "+I[1, abc, NULL]", as Flink's print connector writes rows.
std::string print_text(const Row& row) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < row.values.size(); ++i) parts.push_back(row.text(i).value_or("NULL"));
  return std::string(row_kind_name(row.kind)) + "[" + absl::StrJoin(parts, ", ") + "]";
}

class Discard final : public Sink<Row> {
 public:
  absl::Status open(OperatorContext&) override { return absl::OkStatus(); }
  absl::Status write(const Row&) override { return absl::OkStatus(); }
};

class Builder {
 public:
  Builder(const PlannedScript& planned, const TableConnectors& connectors, StreamEnvironment& env)
      : planned_(planned), connectors_(connectors), env_(env) {}

  absl::Status run() {
    for (size_t i = 0; i < planned_.inserts.size(); ++i) {
      const InsertPlan& insert = planned_.inserts[i];
      prefix_ = "sql-" + std::to_string(i);
      const PlanNode& sink = *insert.root;
      auto rows = stream(*sink.input, 1);
      if (!rows.ok()) return rows.status();
      const TableDef* table = find(sink.table);
      auto it = connectors_.sinks.find(table->connector());
      if (it == connectors_.sinks.end()) {
        return absl::InvalidArgumentError("table " + table->name + ": connector '" + table->connector() +
                                          "' cannot be written to from SQL yet");
      }
      absl::Status s = it->second(*rows, *table, prefix_ + "-0-sink");
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

  absl::StatusOr<DataStream<Row>> stream(const PlanNode& n, int depth) {
    const std::string uid = prefix_ + "-" + std::to_string(depth) + "-";
    switch (n.kind) {
      case PlanNode::Kind::kScan: {
        const TableDef* table = find(n.table);
        auto it = connectors_.sources.find(table->connector());
        if (it == connectors_.sources.end()) {
          return absl::InvalidArgumentError("table " + table->name + ": connector '" + table->connector() +
                                            "' cannot be read from SQL yet");
        }
        // The columns the query reads (projection push-down), in the
        // scan's order.
        TableDef scanned = *table;
        scanned.columns = n.columns;
        return it->second(env_, scanned, uid + "scan");
      }
      case PlanNode::Kind::kFilter: {
        auto in = stream(*n.input, depth + 1);
        if (!in.ok()) return in.status();
        const Expr cond = n.exprs[0];
        const std::string where = "WHERE " + cond.to_string(n.input->column_names());
        DataStream<Row> out = in->filter(
            [cond, where](const Row& row) {
              const Value v = evaluate_or_throw(cond, row, where);
              return std::holds_alternative<bool>(v) && std::get<bool>(v);
            },
            "filter");
        out.uid(uid + "filter");
        return out;
      }
      case PlanNode::Kind::kProject: {
        auto in = stream(*n.input, depth + 1);
        if (!in.ok()) return in.status();
        // Every column of the input, in order (a scan pruned to what the
        // query selects): no operator at all.
        bool identity = n.exprs.size() == n.input->columns.size();
        for (size_t i = 0; identity && i < n.exprs.size(); ++i) {
          identity = n.exprs[i].kind == Expr::Kind::kColumn && n.exprs[i].column == static_cast<int>(i);
        }
        if (identity) return in;
        const std::vector<Expr> exprs = n.exprs;
        std::vector<std::string> where;
        for (const Expr& e : exprs) where.push_back("SELECT " + e.to_string(n.input->column_names()));
        DataStream<Row> out = in->map(
            [exprs, where](const Row& row) {
              Row r;
              r.kind = row.kind;
              r.values.reserve(exprs.size());
              for (size_t i = 0; i < exprs.size(); ++i) r.values.push_back(evaluate_or_throw(exprs[i], row, where[i]));
              return r;
            },
            "project");
        out.uid(uid + "project");
        return out;
      }
      case PlanNode::Kind::kWindow: {
        auto in = stream(*n.input, depth + 1);
        if (!in.ok()) return in.status();
        return assign_windows(*in, n, uid);
      }
      case PlanNode::Kind::kAggregate:
        return window_aggregate(n, depth, uid);
      case PlanNode::Kind::kSink:
        break;
    }
    return absl::InternalError("a sink inside a query");
  }

  // A window table function on its own: each row once per window it falls
  // in (by its event time column), the window's columns appended.
  absl::StatusOr<DataStream<Row>> assign_windows(const DataStream<Row>& in, const PlanNode& n, const std::string& uid) {
    const WindowSpec w = *n.window;
    if (w.kind == WindowSpec::Kind::kSession) {
      return absl::InvalidArgumentError("SESSION windows need a GROUP BY window_start, window_end: on its own, a "
                                        "session window table function is not supported yet");
    }
    const int time = index_of(n.input->columns, w.time_column);
    if (time < 0) return absl::InternalError("the window's time column is not in its input");
    DataStream<Row> out = in.flat_map<Row>(
        [w, time](const Row& row, Collector<Row>& out) {
          if (row.is_null(time)) return;  // no event time: in no window
          const int64_t ts = row.int64(time);
          const int64_t slide = w.kind == WindowSpec::Kind::kHop ? w.slide_ms : w.size_ms;
          const int64_t last = ts - (((ts - w.offset_ms) % slide) + slide) % slide;
          for (int64_t start = last; start > ts - w.size_ms; start -= slide) {
            Row r = row;
            r.values.push_back(start);
            r.values.push_back(start + w.size_ms);
            r.values.push_back(start + w.size_ms - 1);
            out.collect(std::move(r));
          }
        },
        "window");
    out.uid(uid + "window");
    return out;
  }

  // GROUP BY window_start, window_end, keys... over a window table
  // function: the engine's window operator, keyed by the other keys (their
  // values encoded), aggregating incrementally; a row per key and window
  // when the watermark passes the window's end.
  absl::StatusOr<DataStream<Row>> window_aggregate(const PlanNode& n, int depth, const std::string& uid) {
    const PlanNode& window = *n.input;
    if (window.kind != PlanNode::Kind::kWindow) return absl::InternalError("an aggregate over no window");
    auto in = stream(*window.input, depth + 2);
    if (!in.ok()) return in.status();
    const WindowSpec w = *window.window;
    const int first = static_cast<int>(window.input->columns.size());
    // Keys: the window's columns come from the window, the others from the
    // rows, encoded into the key.
    std::vector<Expr> row_keys;
    std::vector<int> layout;  // per output key: -1 - k for row key k, else 0/1/2 = start/end/time
    for (const Expr& k : n.exprs) {
      if (k.kind == Expr::Kind::kColumn && k.column >= first) {
        layout.push_back(k.column - first);
      } else {
        layout.push_back(-1 - static_cast<int>(row_keys.size()));
        row_keys.push_back(k);
      }
    }
    std::vector<std::string> where;
    for (const Expr& k : row_keys) where.push_back("GROUP BY " + k.to_string(window.column_names()));
    auto key_of = [row_keys, where](const Row& row) {
      std::string key;
      ByteWriter out(&key);
      for (size_t i = 0; i < row_keys.size(); ++i) Serializer<Value>::write(out, evaluate_or_throw(row_keys[i], row, where[i]));
      return key;
    };
    WindowAssigner assigner;
    switch (w.kind) {
      case WindowSpec::Kind::kTumble:
        assigner = TumblingEventTimeWindows::of(Duration(w.size_ms), Duration(w.offset_ms));
        break;
      case WindowSpec::Kind::kHop:
        assigner = SlidingEventTimeWindows::of(Duration(w.size_ms), Duration(w.slide_ms), Duration(w.offset_ms));
        break;
      case WindowSpec::Kind::kSession:
        assigner = EventTimeSessionWindows::with_gap(Duration(w.gap_ms));
        break;
    }
    auto aggregates = std::make_shared<const Aggregates>(n.aggregates);
    const std::string what = "GROUP BY over " + w.to_string();
    auto check = [what](const absl::Status& s) {
      if (!s.ok()) throw std::runtime_error(what + ": " + std::string(s.message()));
    };
    AggregateFunction<Row, AggregateState, AggregateState> fn{
        [aggregates] { return aggregates->create(); },
        [aggregates, check](AggregateState& acc, const Row& row) { check(aggregates->add(acc, row)); },
        [](const AggregateState& acc) { return acc; },
        [aggregates, check](const AggregateState& a, const AggregateState& b) {
          AggregateState both = a;
          check(aggregates->merge(both, b));
          return both;
        }};
    const size_t width = n.columns.size();
    DataStream<Row> out =
        in->key_by(key_of)
            .window(assigner)
            .aggregate<AggregateState, AggregateState, Row>(
                std::move(fn),
                [aggregates, layout, width, check] {
                  return std::make_unique<EmitGroup>(aggregates, layout, width, check);
                },
                "window-aggregate");
    out.uid(uid + "window-aggregate");
    return out;
  }

  // One row per key and window: the keys in GROUP BY order, then the
  // aggregates' results.
  class EmitGroup final : public ProcessWindowFunction<std::string, AggregateState, Row> {
   public:
    EmitGroup(std::shared_ptr<const Aggregates> aggregates, std::vector<int> layout, size_t width,
              std::function<void(const absl::Status&)> check)
        : aggregates_(std::move(aggregates)), layout_(std::move(layout)), width_(width), check_(std::move(check)) {}

    void process(const std::string& key, const Context& ctx, const std::vector<AggregateState>& in,
                 Collector<Row>& out) override {
      std::vector<Value> row_keys;
      ByteReader reader(key);
      while (!reader.at_end() && reader.ok()) row_keys.push_back(Serializer<Value>::read(reader));
      Row r;
      r.values.reserve(width_);
      for (int k : layout_) {
        if (k < 0) {
          r.values.push_back(row_keys.at(static_cast<size_t>(-1 - k)));
        } else {
          r.values.push_back(k == 0 ? ctx.window.start : k == 1 ? ctx.window.end : ctx.window.end - 1);
        }
      }
      check_(aggregates_->results(in[0], &r.values));
      out.collect(std::move(r));
    }

   private:
    std::shared_ptr<const Aggregates> aggregates_;
    std::vector<int> layout_;
    size_t width_;
    std::function<void(const absl::Status&)> check_;
  };

  static int index_of(const std::vector<Column>& columns, const std::string& name) {
    for (size_t i = 0; i < columns.size(); ++i) {
      if (absl::EqualsIgnoreCase(columns[i].name, name)) return static_cast<int>(i);
    }
    return -1;
  }

  const PlannedScript& planned_;
  const TableConnectors& connectors_;
  StreamEnvironment& env_;
  std::string prefix_;
};

}  // namespace

Schema csv_schema(const TableDef& table) {
  std::vector<Field> fields;
  for (const Column& c : table.columns) {
    FieldType t = FieldType::kInt64;
    switch (c.type.kind) {
      case TypeKind::kBoolean: t = FieldType::kBool; break;
      case TypeKind::kDouble: t = FieldType::kDouble; break;
      case TypeKind::kVarchar: t = FieldType::kString; break;
      default: t = FieldType::kInt64; break;
    }
    fields.push_back({c.name, t, c.type.nullable});
  }
  return Schema(std::move(fields));
}

TableConnectors TableConnectors::built_in() {
  TableConnectors c;
  c.sinks["blackhole"] = [](const DataStream<Row>& rows, const TableDef&, const std::string& uid) {
    rows.sink_to([] { return std::make_unique<Discard>(); }, "blackhole").uid(uid);
    return absl::OkStatus();
  };
  c.sinks["print"] = [](const DataStream<Row>& rows, const TableDef&, const std::string& uid) {
    rows.map([](const Row& r) { return print_text(r); }, "print-format")
        .uid(uid + "-format")
        .sink_to([] { return std::make_unique<PrintSink>(); }, "print")
        .uid(uid);
    return absl::OkStatus();
  };
  c.sinks["filesystem"] = [](const DataStream<Row>& rows, const TableDef& t, const std::string& uid) -> absl::Status {
    auto path = t.options.find("path");
    if (path == t.options.end() || path->second.empty()) {
      return absl::InvalidArgumentError("table " + t.name + ": the filesystem connector needs path = 'DIRECTORY'");
    }
    auto format = t.options.find("format");
    if (format != t.options.end() && format->second != "csv") {
      return absl::InvalidArgumentError("table " + t.name + ": format '" + format->second +
                                        "' is not supported by the filesystem sink yet (csv is)");
    }
    const std::string dir = path->second;
    encode_rows(rows, csv_format(csv_schema(t)), "csv")
        .uid(uid + "-format")
        .sink_to([dir] { return std::make_unique<ExactlyOnceFileSink>(dir, "part"); }, "files")
        .uid(uid);
    return absl::OkStatus();
  };
  return c;
}

absl::Status build_job(const PlannedScript& planned, const TableConnectors& connectors, StreamEnvironment& env) {
  return Builder(planned, connectors, env).run();
}

}  // namespace weir::sql
