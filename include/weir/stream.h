// The DataStream API: build a job as a graph of transformations, then run it.
//
//   weir::StreamEnvironment env(config);
//   env.from_source<Line>(make_source)
//      .map([](const Line& l) { return parse(l); })
//      .key_by([](const Rec& r) { return r.key; })
//      .process<Out>(make_function)
//      .sink_to(make_sink);
//   auto result = env.execute("my-job");
//
// DataStream values are cheap handles into the environment's graph; the
// environment must outlive them. Building a job is single-threaded.
#ifndef WEIR_STREAM_H_
#define WEIR_STREAM_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "weir/config.h"
#include "weir/detail/graph.h"
#include "weir/detail/operators.h"
#include "weir/functions.h"
#include "weir/job_control.h"
#include "weir/job_result.h"
#include "weir/watermark.h"
#include "weir/window.h"
#include "weir/detail/interval_join.h"
#include "weir/detail/window_operator.h"

namespace weir {

template <typename T>
using SourceFactory = std::function<std::unique_ptr<Source<T>>()>;
template <typename T>
using SinkFactory = std::function<std::unique_ptr<Sink<T>>()>;

template <typename T>
class DataStream;

class StreamEnvironment {
 public:
  explicit StreamEnvironment(JobConfig config = {}) : config_(std::move(config)) {}
  StreamEnvironment(const StreamEnvironment&) = delete;
  StreamEnvironment& operator=(const StreamEnvironment&) = delete;

  JobConfig& config() { return config_; }
  const detail::StreamGraph& graph() const { return graph_; }

  template <Serializable T>
  DataStream<T> from_source(SourceFactory<T> factory, std::string name = "source",
                            std::optional<WatermarkStrategy<T>> watermarks = std::nullopt);

  // An error found while the job was being defined (for example an invalid
  // window size); execute() reports the first one instead of running.
  void record_error(const absl::Status& s) {
    if (build_error_.ok() && !s.ok()) build_error_ = s;
  }
  const absl::Status& build_error() const { return build_error_; }

  // Runs the job in an embedded cluster (a JobManager and a TaskManager in
  // this process) until it finishes, fails for good, or is cancelled.
  // `control`, when given, takes savepoints and stops the job on request
  // (see weir/job_control.h).
  absl::StatusOr<JobResult> execute(const std::string& job_name, JobControl* control = nullptr);

  // Internal: used by DataStream.
  detail::StreamNode& add_node(std::string name) {
    detail::StreamNode n;
    n.id = static_cast<int>(graph_.nodes.size());
    n.name = std::move(name);
    graph_.nodes.push_back(std::move(n));
    return graph_.nodes.back();
  }
  detail::StreamNode& node(int id) { return graph_.nodes[id]; }
  void add_edge(detail::StreamEdge e) { graph_.edges.push_back(std::move(e)); }

 private:
  JobConfig config_;
  detail::StreamGraph graph_;
  absl::Status build_error_;
};

// Settings of the last operator added: parallelism, uid, name.
class OperatorHandle {
 public:
  OperatorHandle(StreamEnvironment* env, int node) : env_(env), node_(node) {}
  OperatorHandle& parallelism(int p) {
    env_->node(node_).parallelism = p;
    return *this;
  }
  OperatorHandle& uid(std::string u) {
    env_->node(node_).uid = std::move(u);
    return *this;
  }
  OperatorHandle& name(std::string n) {
    env_->node(node_).name = std::move(n);
    return *this;
  }

 private:
  StreamEnvironment* env_;
  int node_;
};

template <typename K, typename T>
class KeyedStream;
template <typename A, typename B>
class ConnectedStreams;
template <typename K, typename A, typename B>
class IntervalJoin;
template <typename A, typename B>
class JoinedStreams;

template <typename T>
class DataStream {
 public:
  DataStream(StreamEnvironment* env, std::vector<int> nodes,
             detail::PartitionKind kind = detail::PartitionKind::kDefault,
             std::function<uint64_t(const T&)> key_hash = nullptr, std::string tag = "")
      : env_(env),
        nodes_(std::move(nodes)),
        kind_(kind),
        key_hash_(std::move(key_hash)),
        tag_(std::move(tag)) {}

  // The records the operator behind this stream emitted to side output `tag`.
  template <Serializable U>
  DataStream<U> get_side_output(const OutputTag<U>& tag) const {
    return DataStream<U>(env_, nodes_, detail::PartitionKind::kDefault, nullptr, tag.id);
  }

  // ---- transformations ----
  template <typename F, typename Out = std::decay_t<std::invoke_result_t<F&, const T&>>>
  DataStream<Out> map(F f, std::string name = "map") const {
    return add<Out>(std::move(name), [f]() {
      return std::make_unique<detail::MapOperator<T, Out, F>>(f);
    });
  }

  template <typename F>
  DataStream<T> filter(F f, std::string name = "filter") const {
    return add<T>(std::move(name), [f]() {
      return std::make_unique<detail::FilterOperator<T, F>>(f);
    });
  }

  // `f(const T&, Collector<Out>&)` emits any number of records.
  template <Serializable Out, typename F>
  DataStream<Out> flat_map(F f, std::string name = "flat_map") const {
    return add<Out>(std::move(name), [f]() {
      return std::make_unique<detail::FlatMapOperator<T, Out, F>>(f);
    });
  }

  template <typename F, typename K = std::decay_t<std::invoke_result_t<F&, const T&>>>
  KeyedStream<K, T> key_by(F key_of) const {
    return KeyedStream<K, T>(*this, std::function<K(const T&)>(key_of));
  }

  OperatorHandle sink_to(SinkFactory<T> factory, std::string name = "sink") const {
    int id = add_raw(std::move(name), false, [factory]() {
      return std::make_unique<detail::SinkOperator<T>>(factory());
    });
    return OperatorHandle(env_, id);
  }

  // ---- partitioning of the next edge ----
  DataStream<T> rebalance() const { return with_kind(detail::PartitionKind::kRebalance); }
  DataStream<T> broadcast() const { return with_kind(detail::PartitionKind::kBroadcast); }
  DataStream<T> forward() const { return with_kind(detail::PartitionKind::kForward); }

  // Records of both streams, in no particular order between them.
  DataStream<T> union_with(const DataStream<T>& other) const {
    std::vector<int> all = nodes_;
    all.insert(all.end(), other.nodes_.begin(), other.nodes_.end());
    return DataStream<T>(env_, std::move(all), kind_, key_hash_, tag_);
  }

  // ---- settings of the operator that produced this stream ----
  DataStream<T>& parallelism(int p) {
    for (int n : nodes_) env_->node(n).parallelism = p;
    return *this;
  }
  DataStream<T>& uid(std::string u) {
    env_->node(nodes_.back()).uid = std::move(u);
    return *this;
  }
  DataStream<T>& name(std::string n) {
    env_->node(nodes_.back()).name = std::move(n);
    return *this;
  }

  StreamEnvironment* environment() const { return env_; }

  // Both streams into one two-input operator; key them with key_by(f1, f2).
  template <typename U>
  ConnectedStreams<T, U> connect(const DataStream<U>& other) const {
    return ConnectedStreams<T, U>(*this, other);
  }

  // Window join: records of both streams with equal keys that fall into the
  // same window. Finish with .where(ka).equal_to(kb).window(assigner) and then
  // .apply(fn) for every matching pair or .co_group(fn) for both sides at once.
  template <typename U>
  JoinedStreams<T, U> join(const DataStream<U>& other) const {
    return JoinedStreams<T, U>(*this, other);
  }

  // Internal: feeds this stream, hashed by `key_hash`, into input `input` of `node`.
  void connect_keyed(int node, int input, std::function<uint64_t(const T&)> key_hash) const {
    DataStream<T> hashed(env_, nodes_, detail::PartitionKind::kHash, std::move(key_hash), tag_);
    for (int from : nodes_) env_->add_edge(hashed.edge_to(from, node, input));
  }

  // Internal: used by KeyedStream.
  template <typename Out>
  DataStream<Out> add_keyed(std::string name, std::function<uint64_t(const T&)> key_hash,
                            std::function<std::unique_ptr<detail::OperatorBase>()> make) const {
    DataStream<T> hashed(env_, nodes_, detail::PartitionKind::kHash, std::move(key_hash), tag_);
    int id = hashed.add_raw(std::move(name), true, std::move(make));
    env_->node(id).make_fanout = fanout_factory<Out>();
    return DataStream<Out>(env_, {id});
  }

 private:
  DataStream<T> with_kind(detail::PartitionKind k) const {
    return DataStream<T>(env_, nodes_, k, nullptr, tag_);
  }

  template <typename Out>
  static auto fanout_factory() {
    return [](std::vector<std::unique_ptr<detail::OutputBase>> outs)
               -> std::unique_ptr<detail::OutputBase> {
      return std::make_unique<detail::FanOutput<Out>>(std::move(outs));
    };
  }

  template <typename Out, typename Make>
  DataStream<Out> add(std::string name, Make make) const {
    int id = add_raw(std::move(name), false, std::move(make));
    env_->node(id).make_fanout = fanout_factory<Out>();
    return DataStream<Out>(env_, {id});
  }

  int add_raw(std::string name, bool keyed,
              std::function<std::unique_ptr<detail::OperatorBase>()> make) const {
    detail::StreamNode& n = env_->add_node(std::move(name));
    n.make_operator = std::move(make);
    n.is_keyed = keyed;
    int id = n.id;
    for (int from : nodes_) env_->add_edge(edge_to(from, id));
    return id;
  }

  detail::StreamEdge edge_to(int from, int to, int input = 0) const {
    detail::StreamEdge e;
    e.from = from;
    e.to = to;
    e.input = input;
    e.kind = kind_;
    e.tag = tag_;
    e.make_fanout = fanout_factory<T>();
    detail::PartitionKind kind = kind_;
    std::function<uint64_t(const T&)> key_hash = key_hash_;
    e.make_writer = [kind, key_hash](detail::PartitionWriter* w, int max_parallelism)
        -> std::unique_ptr<detail::OutputBase> {
      detail::ChannelSelector<T> select;
      switch (kind) {
        case detail::PartitionKind::kHash:
          select = [key_hash, max_parallelism](const T& r, int n) {
            return operator_index_for_key_group(max_parallelism, n,
                                                key_group_for_hash(key_hash(r), max_parallelism));
          };
          break;
        case detail::PartitionKind::kBroadcast:
          select = [](const T&, int) { return -1; };
          break;
        default:  // rebalance; forward and default-with-one-channel skip it
          select = [next = 0](const T&, int n) mutable {
            int c = next;
            next = next + 1 == n ? 0 : next + 1;
            return c;
          };
          break;
      }
      return std::make_unique<detail::PartitionOutput<T>>(w, std::move(select));
    };
    e.make_reader = [input](detail::OperatorBase* target) -> std::unique_ptr<detail::InputAdapter> {
      return std::make_unique<detail::TypedInputAdapter<T>>(
          static_cast<detail::Input<T>*>(target->input_at(input)));
    };
    e.make_chained = [](detail::OperatorBase* target) -> std::unique_ptr<detail::OutputBase> {
      return std::make_unique<detail::ChainedOutput<T>>(target);
    };
    return e;
  }

  template <typename U>
  friend class DataStream;

  StreamEnvironment* env_;
  std::vector<int> nodes_;
  detail::PartitionKind kind_;
  std::function<uint64_t(const T&)> key_hash_;  // for kHash
  std::string tag_;                             // side output of nodes_, or empty
};

template <typename K, typename T>
class WindowedStream;

template <typename K, typename T>
class KeyedStream {
 public:
  KeyedStream(DataStream<T> input, std::function<K(const T&)> key_of)
      : input_(std::move(input)), key_of_(std::move(key_of)) {}

  // Groups each key's records into windows (see weir/window.h).
  WindowedStream<K, T> window(WindowAssigner assigner) const {
    return WindowedStream<K, T>(*this, assigner);
  }
  // Windows of `n` records per key, fired and emptied every n records.
  WindowedStream<K, T> count_window(int64_t n) const {
    WindowAssigner a;
    a.kind = WindowAssigner::Kind::kGlobal;
    a.count = n;
    return WindowedStream<K, T>(*this, a);
  }

  // Internal: adds a keyed operator built from the key selector.
  template <typename Out>
  DataStream<Out> transform(
      std::string name,
      std::function<std::unique_ptr<detail::OperatorBase>(std::function<K(const T&)>)> make) const {
    auto key_of = key_of_;
    std::function<uint64_t(const T&)> key_hash = [key_of](const T& r) {
      return KeyHash<K>{}(key_of(r));
    };
    return input_.template add_keyed<Out>(std::move(name), std::move(key_hash),
                                          [key_of, make]() { return make(key_of); });
  }
  StreamEnvironment* environment() const { return input_.environment(); }
  const DataStream<T>& stream() const { return input_; }
  const std::function<K(const T&)>& key_selector() const { return key_of_; }

  // Joins records of this stream and `other` with equal keys whose times
  // are close: finish with .between(lower, upper).process(fn).
  template <typename U>
  IntervalJoin<K, T, U> interval_join(const KeyedStream<K, U>& other) const {
    return IntervalJoin<K, T, U>(*this, other);
  }

  template <Serializable Out>
  DataStream<Out> process(std::function<std::unique_ptr<KeyedProcessFunction<K, T, Out>>()> make,
                          std::string name = "process") const {
    auto key_of = key_of_;
    std::function<uint64_t(const T&)> key_hash = [key_of](const T& r) {
      return KeyHash<K>{}(key_of(r));
    };
    return input_.template add_keyed<Out>(std::move(name), std::move(key_hash), [key_of, make]() {
      return std::make_unique<detail::KeyedProcessOperator<K, T, Out>>(key_of, make());
    });
  }

 private:
  DataStream<T> input_;
  std::function<K(const T&)> key_of_;
};

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
    return input_.template transform<Out>(
        std::move(name), [spec](std::function<K(const T&)> key_of) -> std::unique_ptr<detail::OperatorBase> {
          return std::make_unique<detail::WindowOperator<K, T, Acc, Out>>(std::move(key_of), spec);
        });
  }

  KeyedStream<K, T> input_;
  WindowAssigner assigner_;
  int64_t lateness_ = 0;
  std::string late_tag_;
};

template <typename K, typename A, typename B>
class KeyedConnectedStreams {
 public:
  KeyedConnectedStreams(DataStream<A> a, DataStream<B> b, std::function<K(const A&)> ka,
                        std::function<K(const B&)> kb)
      : a_(std::move(a)), b_(std::move(b)), ka_(std::move(ka)), kb_(std::move(kb)) {}

  template <Serializable Out>
  DataStream<Out> process(std::function<std::unique_ptr<KeyedCoProcessFunction<K, A, B, Out>>()> make,
                          std::string name = "co-process") const {
    StreamEnvironment* env = a_.environment();
    detail::StreamNode& n = env->add_node(std::move(name));
    n.is_keyed = true;
    auto ka = ka_;
    auto kb = kb_;
    n.make_operator = [ka, kb, make]() {
      return std::make_unique<detail::KeyedCoProcessOperator<K, A, B, Out>>(ka, kb, make());
    };
    n.make_fanout = [](std::vector<std::unique_ptr<detail::OutputBase>> outs)
        -> std::unique_ptr<detail::OutputBase> {
      return std::make_unique<detail::FanOutput<Out>>(std::move(outs));
    };
    int id = n.id;
    a_.connect_keyed(id, 0, [ka](const A& r) { return KeyHash<K>{}(ka(r)); });
    b_.connect_keyed(id, 1, [kb](const B& r) { return KeyHash<K>{}(kb(r)); });
    return DataStream<Out>(env, {id});
  }

 private:
  DataStream<A> a_;
  DataStream<B> b_;
  std::function<K(const A&)> ka_;
  std::function<K(const B&)> kb_;
};

template <typename A, typename B>
class ConnectedStreams {
 public:
  ConnectedStreams(DataStream<A> a, DataStream<B> b) : a_(std::move(a)), b_(std::move(b)) {}

  template <typename FA, typename FB, typename K = std::decay_t<std::invoke_result_t<FA&, const A&>>>
  KeyedConnectedStreams<K, A, B> key_by(FA key_a, FB key_b) const {
    return KeyedConnectedStreams<K, A, B>(a_, b_, std::function<K(const A&)>(key_a),
                                          std::function<K(const B&)>(key_b));
  }

 private:
  DataStream<A> a_;
  DataStream<B> b_;
};

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

template <Serializable T>
DataStream<T> StreamEnvironment::from_source(SourceFactory<T> factory, std::string name,
                                             std::optional<WatermarkStrategy<T>> watermarks) {
  if (watermarks) {
    absl::Status s = watermarks->validate();
    if (!s.ok()) record_error(absl::InvalidArgumentError("source '" + name + "': " + std::string(s.message())));
  }
  detail::StreamNode& n = add_node(std::move(name));
  n.is_source = true;
  n.make_operator = [factory, watermarks]() {
    return std::make_unique<detail::SourceOperator<T>>(factory(), watermarks);
  };
  n.make_fanout = [](std::vector<std::unique_ptr<detail::OutputBase>> outs)
      -> std::unique_ptr<detail::OutputBase> {
    return std::make_unique<detail::FanOutput<T>>(std::move(outs));
  };
  return DataStream<T>(this, {n.id});
}

}  // namespace weir

#endif  // WEIR_STREAM_H_
