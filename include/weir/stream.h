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

namespace weir {

template <typename T>
class DataStream;
template <typename K, typename T>
class KeyedStream;
namespace detail {
class GraphBuilder;
}  // namespace detail

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

 private:
  friend class detail::GraphBuilder;
  detail::StreamNode& add_node(std::string name) {
    detail::StreamNode n;
    n.id = static_cast<int>(graph_.nodes.size());
    n.name = std::move(name);
    graph_.nodes.push_back(std::move(n));
    return graph_.nodes.back();
  }
  detail::StreamNode& node(int id) { return graph_.nodes[id]; }
  void add_edge(detail::StreamEdge e) { graph_.edges.push_back(std::move(e)); }

  JobConfig config_;
  detail::StreamGraph graph_;
  absl::Status build_error_;
};

namespace detail {

// The graph-building side of the API, for the API's own templates (and
// operators written outside weir that need a node of their own): nodes,
// edges, keyed inputs. Jobs use DataStream and its friends instead.
class GraphBuilder {
 public:
  static StreamNode& add_node(StreamEnvironment& env, std::string name) { return env.add_node(std::move(name)); }
  static StreamNode& node(StreamEnvironment& env, int id) { return env.node(id); }
  static void add_edge(StreamEnvironment& env, StreamEdge e) { env.add_edge(std::move(e)); }
  // Feeds `stream`, hashed by `key_hash`, into input `input` of `node`.
  template <typename T>
  static void connect_keyed(const DataStream<T>& stream, int node, int input,
                            std::type_identity_t<std::function<uint64_t(const T&)>> key_hash) {
    stream.connect_keyed(node, input, std::move(key_hash));
  }
  // A keyed operator `make` builds, fed by `stream` hashed by `key_hash`.
  template <typename Out, typename T>
  static DataStream<Out> add_keyed(const DataStream<T>& stream, std::string name,
                                   std::type_identity_t<std::function<uint64_t(const T&)>> key_hash,
                                   std::function<std::unique_ptr<OperatorBase>()> make) {
    return stream.template add_keyed<Out>(std::move(name), std::move(key_hash), std::move(make));
  }
  // An operator `make` builds, fed by `stream` as partitioned.
  template <typename Out, typename T>
  static DataStream<Out> add(const DataStream<T>& stream, std::string name,
                             std::function<std::unique_ptr<OperatorBase>()> make) {
    return stream.template add<Out>(std::move(name), std::move(make));
  }
  // A keyed operator built from the key selector of `stream`.
  template <typename Out, typename K, typename T>
  static DataStream<Out> transform(
      const KeyedStream<K, T>& stream, std::string name,
      std::type_identity_t<std::function<std::unique_ptr<OperatorBase>(std::function<K(const T&)>)>> make) {
    return stream.template transform<Out>(std::move(name), std::move(make));
  }
};

// The typed factories of an edge carrying records of type T.
// Combines several outputs into one.
template <typename T>
std::unique_ptr<OutputBase> fan_out(std::vector<std::unique_ptr<OutputBase>> outs) {
  return std::make_unique<FanOutput<T>>(std::move(outs));
}
// Deserializes records into input `input` of `target`.
template <typename T>
std::unique_ptr<InputAdapter> read_input(OperatorBase* target, int input) {
  return std::make_unique<TypedInputAdapter<T>>(static_cast<Input<T>*>(target->input_at(input)));
}
// Calls `target` directly (chained).
template <typename T>
std::unique_ptr<OutputBase> chain_to(OperatorBase* target) {
  return std::make_unique<ChainedOutput<T>>(target);
}

}  // namespace detail

// Settings of the last operator added: parallelism, uid, name.
class OperatorHandle {
 public:
  OperatorHandle(StreamEnvironment* env, int node) : env_(env), node_(node) {}
  OperatorHandle& parallelism(int p) {
    detail::GraphBuilder::node(*env_, node_).parallelism = p;
    return *this;
  }
  OperatorHandle& uid(std::string u) {
    detail::GraphBuilder::node(*env_, node_).uid = std::move(u);
    return *this;
  }
  OperatorHandle& name(std::string n) {
    detail::GraphBuilder::node(*env_, node_).name = std::move(n);
    return *this;
  }

 private:
  StreamEnvironment* env_;
  int node_;
};

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
    for (int n : nodes_) detail::GraphBuilder::node(*env_, n).parallelism = p;
    return *this;
  }
  DataStream<T>& uid(std::string u) {
    detail::GraphBuilder::node(*env_, nodes_.back()).uid = std::move(u);
    return *this;
  }
  DataStream<T>& name(std::string n) {
    detail::GraphBuilder::node(*env_, nodes_.back()).name = std::move(n);
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
  // .apply(fn) for every matching pair or .co_group(fn) for both sides at once
  // (include weir/joins.h).
  template <typename U>
  JoinedStreams<T, U> join(const DataStream<U>& other) const {
    return JoinedStreams<T, U>(*this, other);
  }

 private:
  friend class detail::GraphBuilder;
  template <typename U>
  friend class DataStream;

  DataStream<T> with_kind(detail::PartitionKind k) const {
    return DataStream<T>(env_, nodes_, k, nullptr, tag_);
  }

  // Feeds this stream, hashed by `key_hash`, into input `input` of `node`.
  void connect_keyed(int node, int input, std::function<uint64_t(const T&)> key_hash) const {
    DataStream<T> hashed(env_, nodes_, detail::PartitionKind::kHash, std::move(key_hash), tag_);
    for (int from : nodes_) detail::GraphBuilder::add_edge(*env_, hashed.edge_to(from, node, input));
  }

  template <typename Out>
  DataStream<Out> add_keyed(std::string name, std::function<uint64_t(const T&)> key_hash,
                            std::function<std::unique_ptr<detail::OperatorBase>()> make) const {
    DataStream<T> hashed(env_, nodes_, detail::PartitionKind::kHash, std::move(key_hash), tag_);
    int id = hashed.add_raw(std::move(name), true, std::move(make));
    return DataStream<Out>(env_, {id});
  }

  template <typename Out, typename Make>
  DataStream<Out> add(std::string name, Make make) const {
    int id = add_raw(std::move(name), false, std::move(make));
    return DataStream<Out>(env_, {id});
  }

  int add_raw(std::string name, bool keyed,
              std::function<std::unique_ptr<detail::OperatorBase>()> make) const {
    detail::StreamNode& n = detail::GraphBuilder::add_node(*env_, std::move(name));
    n.make_operator = std::move(make);
    n.is_keyed = keyed;
    int id = n.id;
    for (int from : nodes_) detail::GraphBuilder::add_edge(*env_, edge_to(from, id));
    return id;
  }

  detail::StreamEdge edge_to(int from, int to, int input = 0) const {
    detail::StreamEdge e;
    e.from = from;
    e.to = to;
    e.input = input;
    e.kind = kind_;
    e.tag = tag_;
    e.make_fanout = &detail::fan_out<T>;
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
    e.make_reader = &detail::read_input<T>;
    e.make_chained = &detail::chain_to<T>;
    return e;
  }

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

  // Groups each key's records into windows (see weir/window.h; a job that
  // uses windows includes weir/windowed_stream.h).
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

  StreamEnvironment* environment() const { return input_.environment(); }
  const DataStream<T>& stream() const { return input_; }
  const std::function<K(const T&)>& key_selector() const { return key_of_; }

  // Joins records of this stream and `other` with equal keys whose times
  // are close: finish with .between(lower, upper).process(fn) (include
  // weir/joins.h).
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
    return detail::GraphBuilder::add_keyed<Out>(input_, std::move(name), std::move(key_hash), [key_of, make]() {
      return std::make_unique<detail::KeyedProcessOperator<K, T, Out>>(key_of, make());
    });
  }

 private:
  friend class detail::GraphBuilder;

  // A keyed operator built from the key selector.
  template <typename Out>
  DataStream<Out> transform(
      std::string name,
      std::function<std::unique_ptr<detail::OperatorBase>(std::function<K(const T&)>)> make) const {
    auto key_of = key_of_;
    std::function<uint64_t(const T&)> key_hash = [key_of](const T& r) {
      return KeyHash<K>{}(key_of(r));
    };
    return detail::GraphBuilder::add_keyed<Out>(input_, std::move(name), std::move(key_hash),
                                                [key_of, make]() { return make(key_of); });
  }

  DataStream<T> input_;
  std::function<K(const T&)> key_of_;
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
    detail::StreamNode& n = detail::GraphBuilder::add_node(*env, std::move(name));
    n.is_keyed = true;
    auto ka = ka_;
    auto kb = kb_;
    n.make_operator = [ka, kb, make]() {
      return std::make_unique<detail::KeyedCoProcessOperator<K, A, B, Out>>(ka, kb, make());
    };
    int id = n.id;
    detail::GraphBuilder::connect_keyed<A>(a_, id, 0, [ka](const A& r) { return KeyHash<K>{}(ka(r)); });
    detail::GraphBuilder::connect_keyed<B>(b_, id, 1, [kb](const B& r) { return KeyHash<K>{}(kb(r)); });
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
  return DataStream<T>(this, {n.id});
}

}  // namespace weir

#endif  // WEIR_STREAM_H_
