// Joins of two streams: interval joins of keyed streams
// (a.key_by(f).interval_join(b.key_by(g)).between(lo, hi).process(fn)) and
// window joins (a.join(b).where(f).equal_to(g).window(assigner).apply(fn) or
// .co_group(fn)). Include this header where a job joins streams.
#ifndef WEIR_JOINS_H_
#define WEIR_JOINS_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "weir/detail/interval_join.h"
#include "weir/stream.h"
#include "weir/window.h"
#include "weir/windowed_stream.h"

namespace weir {

template <typename K, typename A, typename B>
class IntervalJoin {
 public:
  IntervalJoin(KeyedStream<K, A> a, KeyedStream<K, B> b) : a_(std::move(a)), b_(std::move(b)) {}

  // Pairs (a, b) with a.time + lower <= b.time <= a.time + upper.
  IntervalJoin& between(Duration lower, Duration upper) {
    lower_ = lower.count();
    upper_ = upper.count();
    return *this;
  }

  template <Serializable Out>
  DataStream<Out> process(std::function<void(const A&, const B&, Collector<Out>&)> fn,
                          std::string name = "interval-join") const {
    if (lower_ > upper_) {
      a_.environment()->record_error(absl::InvalidArgumentError(
          "interval join '" + name + "': lower bound " + std::to_string(lower_) +
          " ms is above the upper bound " + std::to_string(upper_) + " ms"));
    }
    int64_t lo = lower_, hi = upper_;
    return KeyedConnectedStreams<K, A, B>(a_.stream(), b_.stream(), a_.key_selector(), b_.key_selector())
        .template process<Out>(
            [fn, lo, hi] { return std::make_unique<detail::IntervalJoinFunction<K, A, B, Out>>(lo, hi, fn); },
            std::move(name));
  }

 private:
  KeyedStream<K, A> a_;
  KeyedStream<K, B> b_;
  int64_t lower_ = 0;
  int64_t upper_ = 0;
};

namespace detail {
// One record of either side of a window join, so both sides share one window.
template <typename A, typename B>
struct JoinSide {
  std::optional<A> left;
  std::optional<B> right;
  auto weir_fields() { return std::tie(left, right); }
};
}  // namespace detail

// The window stage of a window join; see DataStream::join.
template <typename K, typename A, typename B>
class WindowJoin {
 public:
  WindowJoin(DataStream<A> a, DataStream<B> b, std::function<K(const A&)> ka,
             std::function<K(const B&)> kb, WindowAssigner assigner)
      : a_(std::move(a)), b_(std::move(b)), ka_(std::move(ka)), kb_(std::move(kb)), assigner_(assigner) {}

  // Calls `fn(key, window, lefts, rights, out)` once per key and window in
  // which at least one side has records (an outer co-group; an inner join
  // skips the calls where one side is empty).
  template <Serializable Out>
  DataStream<Out> co_group(
      std::function<void(const K&, const TimeWindow&, const std::vector<A>&, const std::vector<B>&,
                         Collector<Out>&)> fn,
      std::string name = "window-co-group") const {
    using Side = detail::JoinSide<A, B>;
    class Split final : public ProcessWindowFunction<K, Side, Out> {
     public:
      explicit Split(decltype(fn) f) : fn_(std::move(f)) {}
      void process(const K& key, const typename ProcessWindowFunction<K, Side, Out>::Context& ctx,
                   const std::vector<Side>& elements, Collector<Out>& out) override {
        std::vector<A> lefts;
        std::vector<B> rights;
        for (const Side& s : elements) {
          if (s.left) lefts.push_back(*s.left);
          if (s.right) rights.push_back(*s.right);
        }
        fn_(key, ctx.window, lefts, rights, out);
      }

     private:
      decltype(fn) fn_;
    };
    auto left = a_.map([](const A& r) { return Side{r, std::nullopt}; }, name + "-left");
    auto right = b_.map([](const B& r) { return Side{std::nullopt, r}; }, name + "-right");
    auto ka = ka_;
    auto kb = kb_;
    return left.union_with(right)
        .key_by([ka, kb](const Side& s) -> K { return s.left ? ka(*s.left) : kb(*s.right); })
        .window(assigner_)
        .template process<Out>([fn] { return std::make_unique<Split>(fn); }, std::move(name));
  }

  // Calls `fn(a, b, out)` for every pair of records with equal keys in the
  // same window (an inner join, like Flink's JoinedStreams).
  template <Serializable Out>
  DataStream<Out> apply(std::function<void(const A&, const B&, Collector<Out>&)> fn,
                        std::string name = "window-join") const {
    return co_group<Out>(
        [fn](const K&, const TimeWindow&, const std::vector<A>& lefts, const std::vector<B>& rights,
             Collector<Out>& out) {
          for (const A& a : lefts) {
            for (const B& b : rights) fn(a, b, out);
          }
        },
        std::move(name));
  }

 private:
  DataStream<A> a_;
  DataStream<B> b_;
  std::function<K(const A&)> ka_;
  std::function<K(const B&)> kb_;
  WindowAssigner assigner_;
};

template <typename A, typename B>
class JoinedStreams {
 public:
  JoinedStreams(DataStream<A> a, DataStream<B> b) : a_(std::move(a)), b_(std::move(b)) {}

  template <typename K>
  class Where {
   public:
    Where(DataStream<A> a, DataStream<B> b, std::function<K(const A&)> ka)
        : a_(std::move(a)), b_(std::move(b)), ka_(std::move(ka)) {}

    class EqualTo {
     public:
      EqualTo(const Where& w, std::function<K(const B&)> kb) : w_(w), kb_(std::move(kb)) {}
      WindowJoin<K, A, B> window(WindowAssigner assigner) const {
        return WindowJoin<K, A, B>(w_.a_, w_.b_, w_.ka_, kb_, assigner);
      }

     private:
      Where w_;
      std::function<K(const B&)> kb_;
    };

    template <typename FB>
    EqualTo equal_to(FB kb) const {
      return EqualTo(*this, std::function<K(const B&)>(kb));
    }

   private:
    DataStream<A> a_;
    DataStream<B> b_;
    std::function<K(const A&)> ka_;
  };

  template <typename FA, typename K = std::decay_t<std::invoke_result_t<FA&, const A&>>>
  Where<K> where(FA ka) const {
    return Where<K>(a_, b_, std::function<K(const A&)>(ka));
  }

 private:
  DataStream<A> a_;
  DataStream<B> b_;
};


}  // namespace weir

#endif  // WEIR_JOINS_H_
