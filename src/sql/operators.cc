#include "sql/operators.h"

#include <algorithm>
#include <stdexcept>

#include "sql/aggregate.h"
#include "sql/keys.h"
#include "weir/windowed_stream.h"

namespace weir::sql {
namespace {

// One row per key and window: the keys in GROUP BY order (`layout`: -1 - k
// for encoded key k, else 0, 1, 2 for the window's start, end, time), then
// the aggregates' results.
class EmitGroup final : public ProcessWindowFunction<std::string, AggregateState, Row> {
 public:
  EmitGroup(std::shared_ptr<const Aggregates> aggregates, std::vector<int> layout, std::string what)
      : aggregates_(std::move(aggregates)), layout_(std::move(layout)), what_(std::move(what)) {}

  void process(const std::string& key, const Context& ctx, const std::vector<AggregateState>& in,
               Collector<Row>& out) override {
    const std::vector<Value> keys = KeyEncoder::decode(key);
    Row r;
    for (int k : layout_) {
      if (k < 0) {
        r.values.push_back(keys.at(static_cast<size_t>(-1 - k)));
      } else {
        r.values.push_back(k == 0 ? ctx.window.start : k == 1 ? ctx.window.end : ctx.window.end - 1);
      }
    }
    throw_if_error(aggregates_->results(in[0], &r.values), what_);
    out.collect(std::move(r));
  }

 private:
  std::shared_ptr<const Aggregates> aggregates_;
  std::vector<int> layout_;
  std::string what_;
};

// GROUP BY over windowed rows: per key (which holds the window's bounds) an
// AggregateState, emitted and dropped when the watermark passes the
// window's last millisecond. Rows of a window already emitted are late and
// dropped, as the window operator drops them.
class WindowedGroups final : public KeyedProcessFunction<std::string, Row, Row> {
 public:
  WindowedGroups(std::shared_ptr<const Aggregates> aggregates, int end_column, std::string what)
      : aggregates_(std::move(aggregates)), end_column_(end_column), what_(std::move(what)) {}

  absl::Status open(KeyedRuntimeContext<std::string>& ctx) override {
    state_ = &ctx.get_state(ValueStateDescriptor<AggregateState>{"groups"});
    return absl::OkStatus();
  }
  void process_element(const Row& row, Context& ctx, Collector<Row>&) override {
    const int64_t last = row.int64(end_column_) - 1;
    if (last <= ctx.timer_service().current_watermark()) return;  // late
    std::optional<AggregateState> s = state_->value();
    if (!s) {
      s = aggregates_->create();
      ctx.timer_service().register_event_time_timer(last);
    }
    throw_if_error(aggregates_->add(*s, row), what_);
    state_->update(*std::move(s));
  }
  void on_timer(int64_t, OnTimerContext& ctx, Collector<Row>& out) override {
    std::optional<AggregateState> s = state_->value();
    if (!s) return;
    Row r;
    r.values = KeyEncoder::decode(ctx.current_key());
    throw_if_error(aggregates_->results(*s, &r.values), what_);
    out.collect(std::move(r));
    state_->clear();
  }

 private:
  std::shared_ptr<const Aggregates> aggregates_;
  const int end_column_;
  const std::string what_;
  ValueState<AggregateState>* state_ = nullptr;
};
}  // namespace

Value evaluate_or_throw(const Expr& e, const Row& row, const std::string& where) {
  auto v = evaluate(e, row);
  if (!v.ok()) throw UnrecoverableError(where + ": " + std::string(v.status().message()));
  return *std::move(v);
}

absl::StatusOr<DataStream<Row>> assign_windows(const DataStream<Row>& in, const PlanNode& n, const std::string& uid) {
  const WindowSpec w = *n.window;
  if (w.kind == WindowSpec::Kind::kSession) {
    return absl::InvalidArgumentError("SESSION windows need a GROUP BY window_start, window_end: on its own, a "
                                      "session window table function is not supported yet");
  }
  const int time = column_index(n.input->columns, w.time_column);
  if (time < 0) return absl::InternalError("the window's time column is not in its input");
  DataStream<Row> out = in.flat_map<Row>(
      [w, time](const Row& row, Collector<Row>& out) {
        if (row.is_null(time)) return;  // no event time: in no window
        const int64_t ts = row.int64(time);
        if (w.kind == WindowSpec::Kind::kCumulate) {  // one start; an end every step after the row
          const int64_t start = ts - (((ts - w.offset_ms) % w.size_ms) + w.size_ms) % w.size_ms;
          for (int64_t end = start + w.slide_ms; end <= start + w.size_ms; end += w.slide_ms) {
            if (end <= ts) continue;
            Row r = row;
            r.values.push_back(start);
            r.values.push_back(end);
            r.values.push_back(end - 1);
            out.collect(std::move(r));
          }
          return;
        }
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

absl::StatusOr<DataStream<Row>> window_aggregate(const DataStream<Row>& in, const PlanNode& n, const std::string& uid) {
  const PlanNode& window = *n.input;
  const WindowSpec w = *window.window;
  const int first = static_cast<int>(window.input->columns.size());
  // Keys: the window's columns come from the window, the others from the
  // rows, encoded into the key.
  std::vector<Expr> row_keys;
  std::vector<int> layout;
  for (const Expr& k : n.exprs) {
    if (k.kind == Expr::Kind::kColumn && k.column >= first) {
      layout.push_back(k.column - first);
    } else {
      layout.push_back(-1 - static_cast<int>(row_keys.size()));
      row_keys.push_back(k);
    }
  }
  auto keys = std::make_shared<const KeyEncoder>(row_keys, window.column_names(), "GROUP BY");
  WindowAssigner assigner;
  switch (w.kind) {
    case WindowSpec::Kind::kTumble:
      if (w.processing_time) {
        assigner = TumblingProcessingTimeWindows::of(Duration(w.size_ms), Duration(w.offset_ms));
      } else {
        assigner = TumblingEventTimeWindows::of(Duration(w.size_ms), Duration(w.offset_ms));
      }
      break;
    case WindowSpec::Kind::kHop:
      if (w.processing_time) {
        assigner = SlidingProcessingTimeWindows::of(Duration(w.size_ms), Duration(w.slide_ms), Duration(w.offset_ms));
      } else {
        assigner = SlidingEventTimeWindows::of(Duration(w.size_ms), Duration(w.slide_ms), Duration(w.offset_ms));
      }
      break;
    case WindowSpec::Kind::kCumulate:
      return absl::InternalError("CUMULATE windows are made by assign_windows, not the window operator");
    case WindowSpec::Kind::kSession:
      if (w.processing_time) {
        assigner = ProcessingTimeSessionWindows::with_gap(Duration(w.gap_ms));
      } else {
        assigner = EventTimeSessionWindows::with_gap(Duration(w.gap_ms));
      }
      break;
  }
  auto aggregates = std::make_shared<const Aggregates>(n.aggregates);
  const std::string what = "GROUP BY over " + w.to_string();
  AggregateFunction<Row, AggregateState, AggregateState> fn{
      [aggregates] { return aggregates->create(); },
      [aggregates, what](AggregateState& acc, const Row& row) { throw_if_error(aggregates->add(acc, row), what); },
      [](const AggregateState& acc) { return acc; },
      [aggregates, what](const AggregateState& a, const AggregateState& b) {
        AggregateState both = a;
        throw_if_error(aggregates->merge(both, b), what);
        return both;
      }};
  DataStream<Row> out = in.key_by([keys](const Row& row) { return keys->encode(row); })
                            .window(assigner)
                            .aggregate<AggregateState, AggregateState, Row>(
                                std::move(fn),
                                [aggregates, layout, what] { return std::make_unique<EmitGroup>(aggregates, layout, what); },
                                "window-aggregate");
  out.uid(uid + "window-aggregate");
  return out;
}

absl::StatusOr<DataStream<Row>> windowed_aggregate(const DataStream<Row>& in, const PlanNode& n,
                                                   const std::string& uid) {
  const auto bounds = window_bounds(*n.input);
  if (!bounds) return absl::InternalError("a windowed GROUP BY over rows without window bounds");
  auto keys = std::make_shared<const KeyEncoder>(n.exprs, n.input->column_names(), "GROUP BY");
  auto aggregates = std::make_shared<const Aggregates>(n.aggregates);
  const int end = bounds->end;
  const std::string what = "GROUP BY over windowed rows";
  DataStream<Row> out =
      in.key_by([keys](const Row& row) { return keys->encode(row); })
          .process<Row>([aggregates, end, what] { return std::make_unique<WindowedGroups>(aggregates, end, what); },
                        "windowed-aggregate");
  out.uid(uid + "windowed-aggregate");
  return out;
}
}  // namespace weir::sql
