// The interval join as a keyed co-process function: each side's records are
// buffered by event time in keyed map state; a record joins the buffered
// records of the other side within the interval; a timer drops records once
// the watermark shows no partner can still arrive. An emitted pair carries
// the later of the two timestamps.
#ifndef WEIR_DETAIL_INTERVAL_JOIN_H_
#define WEIR_DETAIL_INTERVAL_JOIN_H_

#include <algorithm>
#include <functional>
#include <vector>

#include "weir/functions.h"

namespace weir::detail {

template <typename K, typename A, typename B, typename Out>
class IntervalJoinFunction final : public KeyedCoProcessFunction<K, A, B, Out> {
 public:
  using Fn = std::function<void(const A&, const B&, Collector<Out>&)>;
  IntervalJoinFunction(int64_t lower, int64_t upper, Fn fn) : lower_(lower), upper_(upper), fn_(std::move(fn)) {}

  absl::Status open(KeyedRuntimeContext<K>& ctx) override {
    left_ = &ctx.get_map_state(MapStateDescriptor<int64_t, std::vector<A>>{"_join/left"});
    right_ = &ctx.get_map_state(MapStateDescriptor<int64_t, std::vector<B>>{"_join/right"});
    return absl::OkStatus();
  }

  void process_element1(const A& a, KeyedContext<K>& ctx, Collector<Out>& out) override {
    int64_t ts = ctx.timestamp();
    for (const auto& [tb, bs] : right_->entries()) {
      if (tb < ts + lower_ || tb > ts + upper_) continue;
      for (const B& b : bs) emit(a, b, std::max(ts, tb), out);
    }
    add(left_, ts, a);
    ctx.timer_service().register_event_time_timer(ts + std::max<int64_t>(upper_, 0));
  }

  void process_element2(const B& b, KeyedContext<K>& ctx, Collector<Out>& out) override {
    int64_t ts = ctx.timestamp();
    for (const auto& [ta, as] : left_->entries()) {
      if (ts < ta + lower_ || ts > ta + upper_) continue;
      for (const A& a : as) emit(a, b, std::max(ts, ta), out);
    }
    add(right_, ts, b);
    ctx.timer_service().register_event_time_timer(ts - std::min<int64_t>(lower_, 0));
  }

  // A left record at ta can meet right records up to ta + upper, so it is
  // kept until the watermark reaches that; a right record at tb can meet left
  // records up to tb - lower, kept as long. (Records behind the watermark are
  // not expected: sources' watermarks bound their lateness.)
  void on_timer(int64_t t, KeyedTimerContext<K>&, Collector<Out>&) override {
    for (const auto& [ta, as] : left_->entries()) {
      if (ta + std::max<int64_t>(upper_, 0) <= t) left_->remove(ta);
    }
    for (const auto& [tb, bs] : right_->entries()) {
      if (tb - std::min<int64_t>(lower_, 0) <= t) right_->remove(tb);
    }
  }

 private:
  template <typename T>
  static void add(MapState<int64_t, std::vector<T>>* m, int64_t ts, const T& v) {
    std::vector<T> list = m->get(ts).value_or(std::vector<T>{});
    list.push_back(v);
    m->put(ts, list);
  }
  void emit(const A& a, const B& b, int64_t ts, Collector<Out>& out) {
    int64_t saved = current_timestamp();
    current_timestamp() = ts;
    fn_(a, b, out);
    current_timestamp() = saved;
  }

  const int64_t lower_, upper_;
  Fn fn_;
  MapState<int64_t, std::vector<A>>* left_ = nullptr;
  MapState<int64_t, std::vector<B>>* right_ = nullptr;
};

}  // namespace weir::detail

#endif  // WEIR_DETAIL_INTERVAL_JOIN_H_
