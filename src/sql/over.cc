// OVER aggregates (sql/operators.h over_aggregate): per partition, each row
// with its calls' values over its frame.
#include <algorithm>

#include "sql/aggregate.h"
#include "sql/kept_values.h"
#include "sql/keys.h"
#include "sql/operators.h"

namespace weir::sql {
namespace {

// Per partition (the key): over event time, rows wait in map state under
// their time until the watermark passes it, then are taken in time order
// (of one time, in the order they came); a row at or before the last time
// taken is late and dropped, as Flink drops it. Over processing time, rows
// are taken as they come. A bounded frame keeps its rows (oldest first) and
// retracts each one that leaves it from the running AggregateState
// (Aggregates::update, MIN and MAX from the values kept); an unbounded
// frame only adds. ROWS: each row's frame ends at the row itself; RANGE:
// rows of one time share a frame, which ends at the last of them.
class OverRows final : public KeyedProcessFunction<std::string, Row, Row> {
 public:
  OverRows(std::shared_ptr<const Aggregates> aggregates, int time, OverFrame frame, std::string what)
      : aggregates_(std::move(aggregates)), time_(time), frame_(frame), what_(std::move(what)) {}

  absl::Status open(KeyedRuntimeContext<std::string>& ctx) override {
    acc_ = &ctx.get_state(ValueStateDescriptor<AggregateState>{"over"});
    if (frame_.preceding) {
      in_frame_ = &ctx.get_state(ValueStateDescriptor<std::vector<Row>>{"frame"});
      kept_.values = &ctx.get_map_state(MapStateDescriptor<std::string, int64_t>{"kept"});
    } else {
      seen_.values = &ctx.get_map_state(MapStateDescriptor<std::string, int64_t>{"distinct"});
    }
    if (!frame_.processing_time) {
      waiting_ = &ctx.get_map_state(MapStateDescriptor<int64_t, std::vector<Row>>{"waiting"});
      last_ = &ctx.get_state(ValueStateDescriptor<int64_t>{"last-time"});
    }
    return absl::OkStatus();
  }

  void process_element(const Row& row, Context& ctx, Collector<Row>& out) override {
    if (frame_.processing_time) {
      take({row}, ctx.timer_service().current_processing_time(), out);
      return;
    }
    if (row.is_null(time_)) return;  // no event time: in no frame
    const int64_t t = row.int64(time_);
    if (const int64_t* last = last_->peek(); last != nullptr && t <= *last) return;  // late
    std::vector<Row> rows = waiting_->get(t).value_or(std::vector<Row>{});
    if (rows.empty()) ctx.timer_service().register_event_time_timer(t);
    rows.push_back(row);
    waiting_->put(t, rows);
  }

  void on_timer(int64_t t, OnTimerContext&, Collector<Row>& out) override {
    std::optional<std::vector<Row>> rows = waiting_->get(t);
    if (!rows) return;
    waiting_->remove(t);
    take(*rows, t, out);
    last_->update(t);
  }

 private:
  // Rows of time `t` (the event time, or the clock's for processing time).
  void take(const std::vector<Row>& rows, int64_t t, Collector<Row>& out) {
    AggregateState& acc = acc_->modify();
    if (acc.values.empty()) acc = aggregates_->create();
    std::vector<Row>* kept = in_frame_ != nullptr ? &in_frame_->modify() : nullptr;
    auto add = [&](const Row& r) {
      if (kept == nullptr) {
        throw_if_error(aggregates_->add(acc, r, &seen_), what_);
        return;
      }
      throw_if_error(aggregates_->update(acc, r, 1, kept_), what_);
      kept->push_back(r);
      kept->back().values.push_back(t);  // its time, for RANGE
    };
    auto leave = [&](size_t n) {  // the n oldest rows leave the frame
      for (size_t i = 0; i < n; ++i) {
        Row r = (*kept)[i];
        r.values.pop_back();
        throw_if_error(aggregates_->update(acc, r, -1, kept_), what_);
      }
      kept->erase(kept->begin(), kept->begin() + static_cast<long>(n));
    };
    auto emit = [&](const Row& r) {
      Row o = r;
      o.kind = RowKind::kInsert;
      throw_if_error(aggregates_->results(acc, &o.values), what_);
      out.collect(std::move(o));
    };
    if (frame_.rows) {
      for (const Row& r : rows) {
        add(r);
        if (kept != nullptr && kept->size() > static_cast<size_t>(*frame_.preceding) + 1) {
          leave(kept->size() - static_cast<size_t>(*frame_.preceding) - 1);
        }
        emit(r);
      }
      return;
    }
    if (kept != nullptr) {  // RANGE: rows more than `preceding` ms before t leave
      size_t n = 0;
      while (n < kept->size() && std::get<int64_t>((*kept)[n].values.back()) < t - *frame_.preceding) ++n;
      leave(n);
    }
    for (const Row& r : rows) add(r);
    for (const Row& r : rows) emit(r);
  }

  std::shared_ptr<const Aggregates> aggregates_;
  const int time_;
  const OverFrame frame_;
  const std::string what_;
  ValueState<AggregateState>* acc_ = nullptr;
  ValueState<std::vector<Row>>* in_frame_ = nullptr;  // bounded frames: its rows, each with its time after
  MapState<int64_t, std::vector<Row>>* waiting_ = nullptr;  // event time: rows the watermark has not passed
  ValueState<int64_t>* last_ = nullptr;                    // event time: the last time taken
  KeptValues kept_;
  SeenValues seen_;
};

}  // namespace

absl::StatusOr<DataStream<Row>> over_aggregate(const DataStream<Row>& in, const PlanNode& n, const std::string& uid) {
  const Expr& order = n.order_keys.at(0);
  if (order.kind != Expr::Kind::kColumn) return absl::InternalError("OVER ... ORDER BY is not a column");
  auto keys = std::make_shared<const KeyEncoder>(n.exprs, n.input->column_names(), "PARTITION BY");
  auto aggregates = std::make_shared<const Aggregates>(n.aggregates);
  const int time = order.column;
  const OverFrame frame = *n.over;
  const std::string what = "OVER (" + frame.to_string() + ")";
  DataStream<Row> out = in.key_by([keys](const Row& row) { return keys->encode(row); })
                            .process<Row>(
                                [aggregates, time, frame, what] {
                                  return std::make_unique<OverRows>(aggregates, time, frame, what);
                                },
                                "over");
  out.uid(uid + "over");
  return out;
}

}  // namespace weir::sql
