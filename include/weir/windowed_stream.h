// Windows over a keyed stream: stream.key_by(f).window(assigner) (or
// count_window(n)) gives a WindowedStream, finished with reduce, aggregate
// or process. Include this header where a job uses windows; the semantics
// (assigners, triggers, lateness) are in weir/window.h.
#ifndef WEIR_WINDOWED_STREAM_H_
#define WEIR_WINDOWED_STREAM_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "weir/detail/window_operator.h"
#include "weir/stream.h"
#include "weir/window.h"

namespace weir {

// A keyed stream cut into windows; finish it with reduce, aggregate or
// process. Semantics in weir/window.h.
template <typename K, typename T>
class WindowedStream {
 public:
  WindowedStream(KeyedStream<K, T> input, WindowAssigner assigner)
      : input_(std::move(input)), assigner_(assigner) {}

  WindowedStream& allowed_lateness(Duration d) {
    lateness_ = d.count();
    return *this;
  }
  // Records too late for every window go to this side output instead of
  // being dropped; read it with get_side_output(tag) on the result.
  WindowedStream& side_output_late_data(OutputTag<T> tag) {
    late_tag_ = tag.id;
    return *this;
  }

  // Folds records with `f(const T&, const T&) -> T`; emits the folded value.
  template <typename F>
  DataStream<T> reduce(F f, std::string name = "window-reduce") const {
    typename detail::WindowOperator<K, T, std::optional<T>, T>::Spec spec;
    spec.create = [] { return std::optional<T>(); };
    spec.add = [f](std::optional<T>& acc, const T& r) { acc = acc ? f(*acc, r) : r; };
    spec.merge = [f](const std::optional<T>& a, const std::optional<T>& b) {
      if (!a) return b;
      if (!b) return a;
      return std::optional<T>(f(*a, *b));
    };
    spec.make_emit = [] {
      return [](const K&, const TimeWindow&, const std::optional<T>& acc, int64_t, int64_t,
                Collector<T>& out) {
        if (acc) out.collect(*acc);
      };
    };
    return build<std::optional<T>, T>(std::move(spec), std::move(name));
  }

  template <Serializable Acc, Serializable Out>
  DataStream<Out> aggregate(AggregateFunction<T, Acc, Out> agg,
                            std::string name = "window-aggregate") const {
    auto spec = incremental<Acc, Out>(agg);
    spec.make_emit = [agg] {
      return [agg](const K&, const TimeWindow&, const Acc& acc, int64_t, int64_t,
                   Collector<Out>& out) { out.collect(agg.get_result(acc)); };
    };
    return build<Acc, Out>(std::move(spec), std::move(name));
  }

  // Hands the window's records to a ProcessWindowFunction.
  template <Serializable Out>
  DataStream<Out> process(std::function<std::unique_ptr<ProcessWindowFunction<K, T, Out>>()> make,
                          std::string name = "window-process") const {
    typename detail::WindowOperator<K, T, std::vector<T>, Out>::Spec spec;
    spec.create = [] { return std::vector<T>(); };
    spec.add = [](std::vector<T>& acc, const T& r) { acc.push_back(r); };
    spec.merge = [](const std::vector<T>& a, const std::vector<T>& b) {
      std::vector<T> all = a;
      all.insert(all.end(), b.begin(), b.end());
      return all;
    };
    spec.make_emit = [make] {
      std::shared_ptr<ProcessWindowFunction<K, T, Out>> fn = make();
      return [fn](const K& key, const TimeWindow& w, const std::vector<T>& acc, int64_t wm,
                  int64_t now, Collector<Out>& out) {
        fn->process(key, {w, wm, now}, acc, out);
      };
    };
    return build<std::vector<T>, Out>(std::move(spec), std::move(name));
  }

  // Aggregates incrementally, then hands the single result to `make()`'s
  // function with the window's metadata.
  template <Serializable Acc, typename Mid, Serializable Out>
  DataStream<Out> aggregate(AggregateFunction<T, Acc, Mid> agg,
                            std::function<std::unique_ptr<ProcessWindowFunction<K, Mid, Out>>()> make,
                            std::string name = "window-aggregate") const {
    auto spec = incremental<Acc, Out>(agg);
    spec.make_emit = [agg, make] {
      std::shared_ptr<ProcessWindowFunction<K, Mid, Out>> fn = make();
      return [agg, fn](const K& key, const TimeWindow& w, const Acc& acc, int64_t wm, int64_t now,
                       Collector<Out>& out) {
        fn->process(key, {w, wm, now}, std::vector<Mid>{agg.get_result(acc)}, out);
      };
    };
    return build<Acc, Out>(std::move(spec), std::move(name));
  }

 private:
  template <typename Acc, typename Out, typename Mid>
  typename detail::WindowOperator<K, T, Acc, Out>::Spec incremental(
      const AggregateFunction<T, Acc, Mid>& agg) const {
    typename detail::WindowOperator<K, T, Acc, Out>::Spec spec;
    spec.create = agg.create_accumulator;
    spec.add = agg.add;
    spec.merge = agg.merge;
    spec.slice = static_cast<bool>(agg.merge);
    return spec;
  }

  template <typename Acc, typename Out>
  DataStream<Out> build(typename detail::WindowOperator<K, T, Acc, Out>::Spec spec,
                        std::string name) const {
    spec.assigner = assigner_;
    spec.allowed_lateness = lateness_;
    spec.late_tag = late_tag_;
    absl::Status s = assigner_.validate();
    if (s.ok() && lateness_ < 0) s = absl::InvalidArgumentError("allowed lateness must not be negative");
    if (s.ok() && assigner_.is_merging() && !spec.merge) {
      s = absl::InvalidArgumentError("session windows need an AggregateFunction with merge");
    }
    if (!s.ok()) {
      input_.environment()->record_error(
          absl::InvalidArgumentError("window '" + name + "': " + std::string(s.message())));
    }
    return detail::GraphBuilder::transform<Out>(
        input_, std::move(name), [spec](std::function<K(const T&)> key_of) -> std::unique_ptr<detail::OperatorBase> {
          return std::make_unique<detail::WindowOperator<K, T, Acc, Out>>(std::move(key_of), spec);
        });
  }

  KeyedStream<K, T> input_;
  WindowAssigner assigner_;
  int64_t lateness_ = 0;
  std::string late_tag_;
};


}  // namespace weir

#endif  // WEIR_WINDOWED_STREAM_H_
