// The event-time temporal join (sql/plan.h PlanNode::temporal): each left
// row joined with the version of the right table's row of its key that was
// current at the left row's time.
#include <algorithm>

#include "sql/keys.h"
#include "sql/operators.h"

namespace weir::sql {
namespace {

// Per join key: the left rows waiting for the watermark to pass their time
// (a timer at each), and the right side's versions (each row a new version
// of its key from its time on). When the watermark passes a left row's
// time, every version up to that time is here (the right side's watermark
// has passed it too): the row joins the latest version at or before its
// time, or none (a LEFT JOIN pads it). Versions older than the latest one
// at or before the watermark can join nothing more and are dropped.
class TemporalJoinRows final : public KeyedCoProcessFunction<std::string, Row, Row, Row> {
 public:
  TemporalJoinRows(int left_time, int right_time, int right_width, bool outer, std::optional<Expr> condition,
                   std::string where)
      : left_time_(left_time), right_time_(right_time), right_width_(right_width), outer_(outer),
        condition_(std::move(condition)), where_(std::move(where)) {}

  absl::Status open(KeyedRuntimeContext<std::string>& ctx) override {
    left_ = &ctx.get_list_state(ListStateDescriptor<std::string>{"temporal-left"});
    versions_ = &ctx.get_list_state(ListStateDescriptor<std::string>{"temporal-versions"});
    return absl::OkStatus();
  }

  void process_element1(const Row& row, Context& ctx, Collector<Row>& out) override {
    const bool null_key = KeyEncoder::join_key_has_null(ctx.current_key());
    if (row.is_null(left_time_) || null_key) {  // no time or no key: joins nothing
      if (outer_) out.collect(padded(row));
      return;
    }
    left_->add(encode_values(row));
    ctx.timer_service().register_event_time_timer(row.int64(left_time_));
  }

  void process_element2(const Row& row, Context& ctx, Collector<Row>&) override {
    if (row.is_null(right_time_) || KeyEncoder::join_key_has_null(ctx.current_key())) return;  // no version of anything
    versions_->add(encode_values(row));
  }

  void on_timer(int64_t, OnTimerContext& ctx, Collector<Row>& out) override {
    const int64_t watermark = ctx.timer_service().current_watermark();
    std::vector<Row> versions;
    for (const std::string& v : versions_->get()) versions.push_back(decode_values(v));
    // By time; among versions of one time the one that came last wins.
    std::stable_sort(versions.begin(), versions.end(),
                     [&](const Row& a, const Row& b) { return a.int64(right_time_) < b.int64(right_time_); });
    std::vector<std::string> waiting;
    for (std::string& encoded : left_->get()) {
      Row l = decode_values(encoded);
      const int64_t t = l.int64(left_time_);
      if (t > watermark) {
        waiting.push_back(std::move(encoded));
        continue;
      }
      const Row* version = nullptr;
      for (const Row& v : versions) {
        if (v.int64(right_time_) > t) break;
        version = &v;
      }
      if (version != nullptr && passes(l, *version)) {
        out.collect(joined_row(l, *version, RowKind::kInsert));
      } else if (outer_) {
        out.collect(padded(l));
      }
    }
    if (waiting.empty()) {
      left_->clear();
    } else {
      left_->update(std::move(waiting));
    }
    // Keep the version current at the watermark and those after it.
    size_t first = 0;
    for (size_t i = 0; i < versions.size(); ++i) {
      if (versions[i].int64(right_time_) <= watermark) first = i;
    }
    if (first > 0) {
      std::vector<std::string> kept;
      for (size_t i = first; i < versions.size(); ++i) kept.push_back(encode_values(versions[i]));
      versions_->update(std::move(kept));
    }
  }

 private:
  bool passes(const Row& l, const Row& r) const {
    if (!condition_) return true;
    const Value v = evaluate_or_throw(*condition_, joined_row(l, r, RowKind::kInsert), where_);
    return std::holds_alternative<bool>(v) && std::get<bool>(v);
  }
  Row padded(const Row& l) const {
    Row none;
    none.values.resize(static_cast<size_t>(right_width_));
    return joined_row(l, none, RowKind::kInsert);
  }

  const int left_time_, right_time_, right_width_;
  const bool outer_;
  const std::optional<Expr> condition_;
  const std::string where_;
  ListState<std::string>* left_ = nullptr;
  ListState<std::string>* versions_ = nullptr;
};

}  // namespace

absl::StatusOr<DataStream<Row>> temporal_join(const DataStream<Row>& left, const DataStream<Row>& right, const PlanNode& n,
                                              const std::string& uid) {
  if (!n.temporal_left_time || !n.temporal_right_time || n.temporal_left_time->kind != Expr::Kind::kColumn ||
      n.temporal_right_time->kind != Expr::Kind::kColumn) {
    return absl::InternalError("a temporal join without its times");
  }
  auto lk = std::make_shared<const KeyEncoder>(n.left_keys, n.input->column_names(), "JOIN ON");
  auto rk = std::make_shared<const KeyEncoder>(n.right_keys, n.right->column_names(), "JOIN ON");
  std::optional<Expr> condition;
  if (!n.exprs.empty()) condition = n.exprs[0];
  const std::string where = condition ? "JOIN ON " + condition->to_string(n.column_names()) : "";
  const int left_time = n.temporal_left_time->column, right_time = n.temporal_right_time->column;
  const int right_width = static_cast<int>(n.right->columns.size());
  const bool outer = n.join_type == PlanNode::JoinType::kLeft;
  DataStream<Row> out = left.connect(right)
                            .key_by([lk](const Row& row) { return lk->encode_join(row); },
                                    [rk](const Row& row) { return rk->encode_join(row); })
                            .process<Row>(
                                [left_time, right_time, right_width, outer, condition, where] {
                                  return std::make_unique<TemporalJoinRows>(left_time, right_time, right_width, outer,
                                                                            condition, where);
                                },
                                "temporal-join");
  out.uid(uid + "temporal-join");
  return out;
}

}  // namespace weir::sql
