// The SQL operators whose results are updating (a changelog): group
// aggregation, TOP-N, regular joins (sql/operators.h).
#include <algorithm>

#include "sql/aggregate.h"
#include "sql/kept_values.h"
#include "sql/keys.h"
#include "sql/local_aggregate.h"
#include "sql/operators.h"

namespace weir::sql {
namespace {

// GROUP BY without a window: per key an AggregateState; each row updates
// it and emits the change of the key's result row: +I the first time,
// then -U (the row before) and +U (the row after) when it changed. Over a
// changelog, -U and -D rows are retracted, and a group left without rows
// emits -D and is dropped; a retraction for a group not kept (never
// added) is ignored.
class GroupRows final : public KeyedProcessFunction<std::string, Row, Row> {
 public:
  // `merging`: the rows are a local pre-aggregation's partial states
  // (local_aggregate), merged in; DISTINCT values are then kept in the
  // state, as the partials carry them.
  GroupRows(std::shared_ptr<const Aggregates> aggregates, bool changelog, std::string what, bool merging = false)
      : aggregates_(std::move(aggregates)), changelog_(changelog), what_(std::move(what)), merging_(merging) {}

  absl::Status open(KeyedRuntimeContext<std::string>& ctx) override {
    state_ = &ctx.get_state(ValueStateDescriptor<AggregateState>{"group"});
    if (changelog_) {
      kept_.values = &ctx.get_map_state(MapStateDescriptor<std::string, int64_t>{"kept"});
    } else if (!merging_) {
      seen_.values = &ctx.get_map_state(MapStateDescriptor<std::string, int64_t>{"distinct"});
    }
    return absl::OkStatus();
  }
  void process_element(const Row& row, Context& ctx, Collector<Row>& out) override {
    const bool retract = row.kind == RowKind::kUpdateBefore || row.kind == RowKind::kDelete;
    const AggregateState* have = state_->peek();
    if (have == nullptr && retract) return;
    // A group is shown while it has rows. (Merged partials of a changelog
    // may bring a group's retractions before its additions, after a
    // rescale spread the partials: its state then waits, not shown.)
    std::optional<Row> before;
    if (have != nullptr && have->rows > 0) before = result(ctx.current_key(), *have, RowKind::kUpdateBefore);
    const bool fresh = have == nullptr;
    AggregateState& s = state_->modify();  // in place
    if (fresh) s = aggregates_->create();
    if (merging_) {
      throw_if_error(aggregates_->merge(s, partial_state(row)), what_);
    } else if (changelog_) {
      throw_if_error(aggregates_->update(s, row, retract ? -1 : 1, kept_), what_);
    } else {
      throw_if_error(aggregates_->add(s, row, &seen_), what_);
    }
    if (s.rows <= 0) {  // the group's last row went
      if (before) {
        before->kind = RowKind::kDelete;
        out.collect(*std::move(before));
      }
      if (s.rows == 0) {
        state_->clear();
        if (kept_.values != nullptr) kept_.values->clear();
      }
      return;
    }
    Row after = result(ctx.current_key(), s, before ? RowKind::kUpdateAfter : RowKind::kInsert);
    if (before && before->values == after.values) return;  // nothing changed
    if (before) out.collect(*std::move(before));
    out.collect(std::move(after));
  }

 private:
  Row result(const std::string& key, const AggregateState& s, RowKind kind) const {
    Row r;
    r.kind = kind;
    r.values = KeyEncoder::decode(key);
    throw_if_error(aggregates_->results(s, &r.values), what_);
    return r;
  }

  std::shared_ptr<const Aggregates> aggregates_;
  const bool changelog_;
  const std::string what_;
  const bool merging_;
  ValueState<AggregateState>* state_ = nullptr;
  SeenValues seen_;
  KeptValues kept_;
};

// TOP-N: per partition the rows numbered up to `limit` in the order (by
// ROW_NUMBER, RANK or DENSE_RANK), as a sorted list in value state. A row
// that enters moves the ones after it down: each position whose row or
// number changed emits -U (the old row with its number) and +U (the new
// one), +I for a position filled for the first time, -D for one left empty.
// Over inserts only, a row numbered past the limit changes nothing (it can
// never rise), and only the rows within it are kept. Over a changelog every
// row of the partition is kept (a retracted row makes room for the next),
// -U and -D take out one equal row (none kept: ignored).
class TopRows final : public KeyedProcessFunction<std::string, Row, Row> {
 public:
  using RankFunction = PlanNode::RankFunction;
  // `window_end` >= 0: a window TOP-N (plan.h is_window_rank), the column
  // of the rows' window end.
  TopRows(std::vector<Expr> order, std::vector<bool> descending, int64_t limit, RankFunction function, bool changelog,
          std::string what, int window_end = -1)
      : order_(std::move(order)), descending_(std::move(descending)), limit_(static_cast<size_t>(limit)),
        function_(function), changelog_(changelog), what_(std::move(what)), window_end_(window_end) {
    // Deduplication keeping the last row: the new row wins a tie.
    new_wins_ties_ = function_ == RankFunction::kRowNumber && limit_ == 1 &&
                     std::all_of(descending_.begin(), descending_.end(), [](bool d) { return d; });
  }

  absl::Status open(KeyedRuntimeContext<std::string>& ctx) override {
    // Different names: a plan that changed between the two cannot read the
    // other's rows as its own.
    top_ = &ctx.get_state(
        ValueStateDescriptor<std::vector<Row>>{changelog_ ? "rows" : window_end_ >= 0 ? "window-top" : "top"});
    return absl::OkStatus();
  }
  void process_element(const Row& row, Context& ctx, Collector<Row>& out) override {
    if (changelog_) return update(row, out);
    if (window_end_ >= 0) return keep_for_window(row, ctx);
    if (function_ != RankFunction::kRowNumber) return update(row, out);
    static const std::vector<Row> kNone;
    const std::vector<Row>* have = top_->peek();
    const std::vector<Row>& old = have != nullptr ? *have : kNone;
    const size_t at = position(old, row);
    if (at >= limit_) return;
    // Row number i + 1 now belongs to the new row (i == at) or the one above it.
    for (size_t i = at; i < std::min(old.size() + 1, limit_); ++i) {
      if (i < old.size()) out.collect(ranked(old[i], i + 1, RowKind::kUpdateBefore));
      out.collect(ranked(i == at ? row : old[i - 1], i + 1, i < old.size() ? RowKind::kUpdateAfter : RowKind::kInsert));
    }
    std::vector<Row>& top = top_->modify();  // in place: `old` is not used past here
    top.insert(top.begin() + static_cast<long>(at), row);
    if (top.size() > limit_) top.pop_back();
  }

 private:
  // Where `row` goes among `rows` (sorted): after the rows it ties with,
  // unless the new row wins ties.
  size_t position(const std::vector<Row>& rows, const Row& row) const {
    const std::vector<Value> key = sort_key(row);
    size_t at = 0;
    while (at < rows.size()) {
      const int c = compare(key, sort_key(rows[at]));
      if (c < 0 || (c == 0 && new_wins_ties_)) break;
      ++at;
    }
    return at;
  }

  // The numbers of the first of sorted `rows`, as many as are numbered
  // within the limit.
  std::vector<int64_t> numbers(const std::vector<Row>& rows) const {
    std::vector<int64_t> n;
    std::vector<Value> previous;
    for (size_t i = 0; i < rows.size(); ++i) {
      int64_t number = static_cast<int64_t>(i + 1);
      if (function_ != RankFunction::kRowNumber) {
        std::vector<Value> key = sort_key(rows[i]);
        if (i > 0 && compare(key, previous) == 0) {
          number = n.back();
        } else if (function_ == RankFunction::kDenseRank) {
          number = i == 0 ? 1 : n.back() + 1;
        }
        previous = std::move(key);
      }
      if (number > static_cast<int64_t>(limit_)) break;
      n.push_back(number);
    }
    return n;
  }

  // A window TOP-N: the window's rows numbered within the limit wait, and
  // are emitted (+I) when the watermark passes the window's end; a row
  // after that is late and dropped.
  void keep_for_window(const Row& row, Context& ctx) {
    const int64_t last = row.int64(window_end_) - 1;
    if (last <= ctx.timer_service().current_watermark()) return;
    const std::vector<Row>* have = top_->peek();
    if (have == nullptr) ctx.timer_service().register_event_time_timer(last);
    const size_t at = have == nullptr ? 0 : position(*have, row);
    if (function_ == RankFunction::kRowNumber && at >= limit_) return;
    std::vector<Row>& top = top_->modify();
    top.insert(top.begin() + static_cast<long>(at), row);
    top.resize(numbers(top).size());
  }
  void on_timer(int64_t, OnTimerContext&, Collector<Row>& out) override {
    const std::vector<Row>* top = top_->peek();
    if (top == nullptr) return;
    const std::vector<int64_t> n = numbers(*top);
    for (size_t i = 0; i < n.size(); ++i) out.collect(ranked((*top)[i], n[i], RowKind::kInsert));
    top_->clear();
  }

  // The row goes in (or, from a changelog, out of) the partition's rows,
  // and each position whose row or number differs from before emits its
  // change. Over inserts only, rows numbered past the limit are dropped.
  void update(const Row& row, Collector<Row>& out) {
    const bool retract = row.kind == RowKind::kUpdateBefore || row.kind == RowKind::kDelete;
    const std::vector<Row>* have = top_->peek();
    if (retract && have == nullptr) return;
    std::vector<Row> before;
    std::vector<int64_t> before_numbers;
    if (have != nullptr) {
      before_numbers = numbers(*have);
      before.assign(have->begin(), have->begin() + static_cast<long>(before_numbers.size()));
    }
    std::vector<Row>& rows = top_->modify();
    if (retract) {
      auto it = std::find_if(rows.begin(), rows.end(), [&](const Row& r) { return r.values == row.values; });
      if (it == rows.end()) return;
      rows.erase(it);
    } else {
      Row r = row;
      r.kind = RowKind::kInsert;
      rows.insert(rows.begin() + static_cast<long>(position(rows, r)), std::move(r));
    }
    const std::vector<int64_t> after = numbers(rows);
    for (size_t i = 0; i < std::max(before.size(), after.size()); ++i) {
      if (i >= after.size()) {
        out.collect(ranked(before[i], before_numbers[i], RowKind::kDelete));
      } else if (i >= before.size()) {
        out.collect(ranked(rows[i], after[i], RowKind::kInsert));
      } else if (before[i].values != rows[i].values || before_numbers[i] != after[i]) {
        out.collect(ranked(before[i], before_numbers[i], RowKind::kUpdateBefore));
        out.collect(ranked(rows[i], after[i], RowKind::kUpdateAfter));
      }
    }
    if (!changelog_) rows.resize(after.size());
    if (rows.empty()) top_->clear();
  }

  std::vector<Value> sort_key(const Row& row) const {
    std::vector<Value> k;
    for (const Expr& e : order_) k.push_back(evaluate_or_throw(e, row, what_));
    return k;
  }
  // <0: a ranks before b. NULL ranks after every value (NULLS LAST).
  int compare(const std::vector<Value>& a, const std::vector<Value>& b) const {
    return compare_sort_keys(a, b, descending_);
  }
  static Row ranked(const Row& r, int64_t number, RowKind kind) {
    Row out = r;
    out.kind = kind;
    out.values.push_back(number);
    return out;
  }

  const std::vector<Expr> order_;
  const std::vector<bool> descending_;
  const size_t limit_;
  const RankFunction function_;
  const bool changelog_;
  const std::string what_;
  const int window_end_;
  bool new_wins_ties_ = false;
  ValueState<std::vector<Row>>* top_ = nullptr;
};

// An inner equi-join: both sides' rows per key, each new row joined with
// every row of the other side so far (left columns first), kept if the
// condition holds; a unique side's partners kept only until it comes. A
// window join drops the key's rows once the watermark passes their
// window's last millisecond.
class JoinRows final : public KeyedCoProcessFunction<std::string, Row, Row, Row> {
 public:
  JoinRows(std::optional<Expr> condition, std::string where, int left_end, int right_end, bool left_unique,
           bool right_unique, std::optional<Expr> left_filter, std::optional<Expr> right_filter,
           std::optional<IntervalBounds> interval)
      : condition_(std::move(condition)), where_(std::move(where)), left_end_(left_end), right_end_(right_end),
        left_unique_(left_unique), right_unique_(right_unique), left_filter_(std::move(left_filter)),
        right_filter_(std::move(right_filter)), interval_(interval) {}

  absl::Status open(KeyedRuntimeContext<std::string>& ctx) override {
    left_ = &ctx.get_list_state(ListStateDescriptor<std::string>{"left"});
    right_ = &ctx.get_list_state(ListStateDescriptor<std::string>{"right"});
    return absl::OkStatus();
  }
  void process_element1(const Row& row, Context& ctx, Collector<Row>& out) override {
    if (!keep(row, left_end_, ctx)) return;
    if (interval_ && !in_time(row, interval_->left_time, interval_->upper, ctx)) return;
    const bool passes = holds(left_filter_, row);
    const std::vector<std::string> rights = right_->get();
    for (const std::string& r : rights) {
      if (passes && !r.empty()) emit(row, decoded(r), out);
    }
    settle(passes ? encoded(row) : std::string(), left_unique_, right_unique_, !rights.empty(), left_, right_);
  }
  void process_element2(const Row& row, Context& ctx, Collector<Row>& out) override {
    if (!keep(row, right_end_, ctx)) return;
    if (interval_ && !in_time(row, interval_->right_time, -interval_->lower, ctx)) return;
    const bool passes = holds(right_filter_, row);
    const std::vector<std::string> lefts = left_->get();
    for (const std::string& l : lefts) {
      if (passes && !l.empty()) emit(decoded(l), row, out);
    }
    settle(passes ? encoded(row) : std::string(), right_unique_, left_unique_, !lefts.empty(), right_, left_);
  }
  void on_timer(int64_t t, OnTimerContext&, Collector<Row>&) override {
    if (!interval_) {  // a window join: the window ended
      left_->clear();
      right_->clear();
      return;
    }
    // An interval join: rows no partner to come can meet any more.
    expire(left_, interval_->left_time, interval_->upper, t);
    expire(right_, interval_->right_time, -interval_->lower, t);
  }

 private:
  // Rows in state are their values encoded (keys.h encode_values; inputs
  // are inserts only: no kind). A unique side's row that failed its own
  // filter is kept as an empty string.
  static std::string encoded(const Row& row) { return encode_values(row); }
  static Row decoded(const std::string& s) { return decode_values(s); }
  bool holds(const std::optional<Expr>& filter, const Row& row) const {
    if (!filter) return true;
    const Value v = evaluate_or_throw(*filter, row, where_filter_);
    return std::holds_alternative<bool>(v) && std::get<bool>(v);
  }
  // After `row` of one side met the other side's rows: with unique sides
  // (sql/plan.h), the other side's rows have met their only partner if this
  // side is unique, and this row has met every partner it will if the other
  // side is unique and its row is here; else it waits for them.
  static void settle(const std::string& row, bool unique, bool other_unique, bool other_here,
                     ListState<std::string>* mine, ListState<std::string>* others) {
    if (unique && other_here) others->clear();
    if (!(other_unique && other_here)) mine->add(row);
  }
  // Whether a row joins at all: not with a NULL key (NULL equals
  // nothing), and in a window join not after its window.
  bool keep(const Row& row, int end_column, Context& ctx) {
    if (KeyEncoder::join_key_has_null(ctx.current_key())) return false;
    if (end_column < 0) return true;
    const int64_t last = row.int64(end_column) - 1;
    if (last <= ctx.timer_service().current_watermark()) return false;  // late
    ctx.timer_service().register_event_time_timer(last);
    return true;
  }
  // An interval join's row: late (before the watermark) it joins nothing;
  // else it is kept until the watermark passes its time + `reach` (the
  // last time of a partner, relative to its own). Cleanup timers are on
  // whole seconds, so a key's rows go a second's worth at a time (a row
  // kept a little longer meets no partner: the condition checks each
  // pair).
  static bool in_time(const Row& row, int time_column, int64_t reach, Context& ctx) {
    constexpr int64_t kCleanupStep = 1000;
    if (row.is_null(time_column)) return false;
    const int64_t t = row.int64(time_column);
    if (t < ctx.timer_service().current_watermark()) return false;  // late
    const int64_t gone = t + reach + 1;
    ctx.timer_service().register_event_time_timer(gone + ((kCleanupStep - gone % kCleanupStep) % kCleanupStep));
    return true;
  }
  static void expire(ListState<std::string>* rows, int time_column, int64_t reach, int64_t now) {
    std::vector<std::string> kept;
    bool dropped = false;
    for (std::string& r : rows->get()) {
      if (!r.empty() && decoded(r).int64(time_column) + reach + 1 <= now) {
        dropped = true;
        continue;
      }
      kept.push_back(std::move(r));
    }
    if (!dropped) return;
    if (kept.empty()) {
      rows->clear();
    } else {
      rows->update(std::move(kept));
    }
  }
  void emit(const Row& l, const Row& r, Collector<Row>& out) const {
    Row both = joined_row(l, r, RowKind::kInsert);
    if (condition_) {
      const Value v = evaluate_or_throw(*condition_, both, where_);
      if (!std::holds_alternative<bool>(v) || !std::get<bool>(v)) return;
    }
    out.collect(std::move(both));
  }

  const std::optional<Expr> condition_;
  const std::string where_;
  const int left_end_, right_end_;
  const bool left_unique_, right_unique_;
  const std::optional<Expr> left_filter_, right_filter_;
  const std::optional<IntervalBounds> interval_;
  const std::string where_filter_ = "WHERE of a join's unique side";
  ListState<std::string>* left_ = nullptr;
  ListState<std::string>* right_ = nullptr;
};

}  // namespace

absl::StatusOr<DataStream<Row>> group_aggregate(const DataStream<Row>& in, const PlanNode& n, const std::string& uid) {
  if (n.aggregates.size() > 64) return absl::InvalidArgumentError("a GROUP BY has at most 64 aggregates");
  auto keys = std::make_shared<const KeyEncoder>(n.exprs, n.input->column_names(), "GROUP BY");
  auto aggregates = std::make_shared<const Aggregates>(n.aggregates);
  const std::string what = "GROUP BY";
  const bool changelog = is_updating(*n.input);
  DataStream<Row> out = in.key_by([keys](const Row& row) { return keys->encode(row); })
                            .process<Row>(
                                [aggregates, changelog, what] {
                                  return std::make_unique<GroupRows>(aggregates, changelog, what);
                                },
                                "group-aggregate");
  out.uid(uid + "group-aggregate");
  return out;
}

absl::StatusOr<DataStream<Row>> two_phase_aggregate(const DataStream<Row>& in, const PlanNode& n,
                                                    const Settings& settings, const std::string& uid) {
  if (n.aggregates.size() > 64) return absl::InvalidArgumentError("a GROUP BY has at most 64 aggregates");
  auto keys = std::make_shared<const KeyEncoder>(n.exprs, n.input->column_names(), "GROUP BY");
  auto aggregates = std::make_shared<const Aggregates>(n.aggregates);
  const std::string what = "GROUP BY";
  DataStream<Row> partials = local_aggregate(in, keys, aggregates, is_updating(*n.input), settings, uid);
  partials.name("LOCAL " + operator_name(n));
  DataStream<Row> out = partials.key_by([](const Row& row) { return std::get<std::string>(row.values[0]); })
                            .process<Row>(
                                [aggregates, what] {
                                  return std::make_unique<GroupRows>(aggregates, false, what, /*merging=*/true);
                                },
                                "global-aggregate");
  out.uid(uid + "global-aggregate");
  return out;
}

absl::StatusOr<DataStream<Row>> top_n(const DataStream<Row>& in, const PlanNode& n, const std::string& uid) {
  auto keys = std::make_shared<const KeyEncoder>(n.exprs, n.input->column_names(), "PARTITION BY");
  const std::vector<Expr> order = n.order_keys;
  const std::vector<bool> descending = n.descending;
  const int64_t limit = n.limit;
  const PlanNode::RankFunction function = n.rank_function;
  const bool changelog = is_updating(*n.input);
  const int window_end = is_window_rank(n) ? window_bounds(*n.input)->end : -1;
  const std::string what = std::string(rank_function_name(function)) + "() ORDER BY";
  DataStream<Row> out = in.key_by([keys](const Row& row) { return keys->encode(row); })
                            .process<Row>(
                                [order, descending, limit, function, changelog, what, window_end] {
                                  return std::make_unique<TopRows>(order, descending, limit, function, changelog,
                                                                   what, window_end);
                                },
                                window_end >= 0 ? "window-top-n" : "top-n");
  out.uid(uid + (window_end >= 0 ? "window-top-n" : "top-n"));
  return out;
}

absl::StatusOr<DataStream<Row>> join(const DataStream<Row>& left, const DataStream<Row>& right, const PlanNode& n,
                                     const std::string& uid) {
  if (n.temporal) return temporal_join(left, right, n, uid);
  if (is_updating(n)) return changelog_join(left, right, n, uid);
  auto lk = std::make_shared<const KeyEncoder>(n.left_keys, n.input->column_names(), "JOIN ON");
  auto rk = std::make_shared<const KeyEncoder>(n.right_keys, n.right->column_names(), "JOIN ON");
  std::optional<Expr> condition;
  if (!n.exprs.empty()) condition = n.exprs[0];
  const std::string where = condition ? "JOIN ON " + condition->to_string(n.column_names()) : "";
  int left_end = -1, right_end = -1;
  if (n.window_join) {
    left_end = window_bounds(*n.input)->end;
    right_end = window_bounds(*n.right)->end;
  }
  std::optional<IntervalBounds> interval;
  if (n.interval_join) {
    interval = interval_bounds(n.exprs.at(0), static_cast<int>(n.input->columns.size()));
    if (!interval) return absl::InternalError("an interval join without bounds");
  }
  DataStream<Row> out =
      left.connect(right)
          .key_by([lk](const Row& row) { return lk->encode_join(row); },
                  [rk](const Row& row) { return rk->encode_join(row); })
          .process<Row>(
              [condition, where, left_end, right_end, left_unique = n.left_unique, right_unique = n.right_unique,
               left_filter = n.left_filter, right_filter = n.right_filter, interval] {
                return std::make_unique<JoinRows>(condition, where, left_end, right_end, left_unique, right_unique,
                                                  left_filter, right_filter, interval);
              },
              n.window_join ? "window-join" : n.interval_join ? "interval-join" : "join");
  out.uid(uid + "join");
  return out;
}

}  // namespace weir::sql
