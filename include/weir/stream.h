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
#include "weir/detail/keyed_operators.h"
#include "weir/functions.h"
#include "weir/job_control.h"
#include "weir/job_result.h"
#include "weir/stream_operator.h"
#include "weir/watermark.h"
#include "weir/window.h"

namespace weir {

template <typename T>
class DataStream;
template <typename K, typename T>
class KeyedStream;
namespace detail {
class GraphBuilder;
class StreamRef;
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
  friend class detail::StreamRef;
  detail::StreamNode& add_node(std::string name);
  detail::StreamNode& node(int id) { return graph_.nodes[id]; }
  void add_edge(detail::StreamEdge e);
  int add_stream(detail::StreamSpec spec);

  JobConfig config_;
  detail::StreamGraph graph_;
  std::vector<detail::StreamSpec> streams_;  // behind the StreamRefs
  absl::Status build_error_;
};

namespace detail {

// The untyped part of a DataStream: a handle to what the environment keeps
// of the stream (StreamSpec: the nodes whose records it carries, and how the
// edges to the next operator partition them). Two words, trivially copied;
// the graph building is compiled once (src/graph/stream_builder.cc) rather
// than per record type.
class StreamRef {
 public:
  // A stream of the records of node `node`.
  StreamRef(StreamEnvironment* env, int node, const RecordOps* ops);

  // Adds an operator that `make` builds, fed by this stream; its node id.
  int add_operator(std::string name, bool keyed, std::function<std::unique_ptr<OperatorBase>()> make) const;
  // Feeds this stream into input `input` of `node`.
  void connect(int node, int input) const;
  // This stream with the next edge partitioned by `kind` (`key_hash` for kHash).
  StreamRef partitioned(PartitionKind kind, std::shared_ptr<const void> key_hash = nullptr) const;
  // This stream with the next edge exchanging records as `mode` says.
  StreamRef exchanged(ExchangeMode mode) const;
  // Records of both.
  StreamRef union_with(const StreamRef& other) const;
  // Feeds this stream back into input 0 of the iteration head `head`.
  void connect_feedback(int head) const;
  // The records of the side output `tag` of this stream's operators.
  StreamRef side_output(const RecordOps* ops, std::string tag) const;

  void set_parallelism(int p) const;
  void set_uid(std::string uid) const;
  void set_name(std::string name) const;
  StreamEnvironment* environment() const { return env_; }

 private:
  StreamRef(StreamEnvironment* env, StreamSpec spec);
  const StreamSpec& spec() const;

  StreamEnvironment* env_;
  int id_;  // in the environment's streams
};

// A key hash as StreamRef and StreamEdge keep it.
template <typename T>
std::shared_ptr<const void> erase_key_hash(std::function<uint64_t(const T&)> key_hash) {
  return std::make_shared<const std::function<uint64_t(const T&)>>(std::move(key_hash));
}

// The graph-building side of the API, for the API's own templates and the
// SQL planner: nodes, edges, keyed inputs. Jobs use DataStream and its
// friends instead, and write their own operators with transform().
class GraphBuilder {
 public:
  static StreamNode& add_node(StreamEnvironment& env, std::string name) { return env.add_node(std::move(name)); }
  static StreamNode& node(StreamEnvironment& env, int id) { return env.node(id); }
  static void add_edge(StreamEnvironment& env, StreamEdge e) { env.add_edge(std::move(e)); }
  // Feeds `stream`, hashed by `key_hash`, into input `input` of `node`.
  template <typename T>
  static void connect_keyed(const DataStream<T>& stream, int node, int input,
                            std::type_identity_t<std::function<uint64_t(const T&)>> key_hash) {
    stream.ref_.partitioned(PartitionKind::kHash, erase_key_hash<T>(std::move(key_hash))).connect(node, input);
  }
  // A keyed operator `make` builds, fed by `stream` hashed by `key_hash`.
  template <typename Out, typename T>
  static DataStream<Out> add_keyed(const DataStream<T>& stream, std::string name,
                                   std::type_identity_t<std::function<uint64_t(const T&)>> key_hash,
                                   std::function<std::unique_ptr<OperatorBase>()> make) {
    int id = stream.ref_.partitioned(PartitionKind::kHash, erase_key_hash<T>(std::move(key_hash)))
                 .add_operator(std::move(name), true, std::move(make));
    return DataStream<Out>(stream.environment(), id);
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
  // Feeds `stream`, partitioned as it says, into input `input` of `node`.
  template <typename T>
  static void connect(const DataStream<T>& stream, int node, int input) {
    stream.ref_.connect(node, input);
  }
  // The stream of records node `id` emits.
  template <typename T>
  static DataStream<T> stream_of(StreamEnvironment* env, int id) {
    return DataStream<T>(env, id);
  }
};

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
template <typename T>
class IterativeStream;
template <typename K, typename A, typename B>
class IntervalJoin;
template <typename A, typename B>
class JoinedStreams;

template <typename T>
class DataStream {
 public:
  // The records the operator behind this stream emitted to side output `tag`.
  template <Serializable U>
  DataStream<U> get_side_output(const OutputTag<U>& tag) const {
    return DataStream<U>(ref_.side_output(&detail::kRecordOps<U>, tag.id));
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

  // A custom operator (weir/stream_operator.h): one instance per subtask,
  // built by `make`.
  template <Serializable Out>
  DataStream<Out> transform(std::string name,
                            std::function<std::unique_ptr<OneInputStreamOperator<T, Out>>()> make) const {
    return add<Out>(std::move(name), [make]() {
      return std::make_unique<detail::OneInputCustomOperator<T, Out>>(make());
    });
  }

  template <typename F, typename K = std::decay_t<std::invoke_result_t<F&, const T&>>>
  KeyedStream<K, T> key_by(F key_of) const {
    return KeyedStream<K, T>(*this, std::function<K(const T&)>(key_of));
  }

  OperatorHandle sink_to(SinkFactory<T> factory, std::string name = "sink") const {
    int id = ref_.add_operator(std::move(name), false, [factory]() {
      return std::make_unique<detail::SinkOperator<T>>(factory());
    });
    return OperatorHandle(ref_.environment(), id);
  }

  // ---- partitioning of the next edge ----
  DataStream<T> rebalance() const { return DataStream<T>(ref_.partitioned(detail::PartitionKind::kRebalance)); }
  DataStream<T> broadcast() const { return DataStream<T>(ref_.partitioned(detail::PartitionKind::kBroadcast)); }
  DataStream<T> forward() const { return DataStream<T>(ref_.partitioned(detail::PartitionKind::kForward)); }
  // How the next edge exchanges records, whatever the job's --exchange or
  // runtime mode say (weir/config.h, ExchangeMode): e.g. blocking after an
  // expensive stage whose results a failure downstream should not recompute.
  // A blocking or persisted edge is never chained. Combines with the
  // partitioning: stream.exchange(ExchangeMode::kBlocking).key_by(...).
  DataStream<T> exchange(ExchangeMode mode) const { return DataStream<T>(ref_.exchanged(mode)); }

  // Records of both streams, in no particular order between them.
  DataStream<T> union_with(const DataStream<T>& other) const { return DataStream<T>(ref_.union_with(other.ref_)); }

  // The start of an iteration (a cycle in the dataflow): the returned
  // stream carries this stream's records and those fed back to it by
  // IterativeStream::close_with. On bounded input the iteration ends once
  // its input ended and a whole round passed with no record moving in the
  // loop; its checkpoints record the records on the back edge as channel
  // state, so the cycle recovers exactly-once.
  IterativeStream<T> iterate(std::string name = "iteration-head") const;

  // ---- settings of the operator that produced this stream ----
  DataStream<T>& parallelism(int p) {
    ref_.set_parallelism(p);
    return *this;
  }
  DataStream<T>& uid(std::string u) {
    ref_.set_uid(std::move(u));
    return *this;
  }
  DataStream<T>& name(std::string n) {
    ref_.set_name(std::move(n));
    return *this;
  }

  StreamEnvironment* environment() const { return ref_.environment(); }

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
  friend class StreamEnvironment;
  template <typename U>
  friend class DataStream;
  template <typename U>
  friend class IterativeStream;

  // The records node `node` emits.
  DataStream(StreamEnvironment* env, int node) : ref_(env, node, &detail::kRecordOps<T>) {}
  explicit DataStream(detail::StreamRef ref) : ref_(ref) {}

  template <typename Out>
  DataStream<Out> add(std::string name, std::function<std::unique_ptr<detail::OperatorBase>()> make) const {
    return DataStream<Out>(ref_.environment(), ref_.add_operator(std::move(name), false, std::move(make)));
  }

  detail::StreamRef ref_;
};

// The head of an iteration: a DataStream of the records entering the loop
// (DataStream::iterate), to be closed once with the stream fed back.
template <typename T>
class IterativeStream : public DataStream<T> {
 public:
  // Feeds `feedback` back to the head. Its records go to every head
  // subtask as `feedback` is partitioned (key_by, rebalance, broadcast;
  // rebalance when not said; forward is refused, since the end of the
  // iteration is agreed across all head subtasks). Its operators must be
  // downstream of this stream: the cycle is head -> ... -> feedback -> head.
  void close_with(const DataStream<T>& feedback) const { feedback.ref_.connect_feedback(head_); }
  // Feeds `feedback` back to the head subtask of each record's key.
  template <typename K>
  void close_with(const KeyedStream<K, T>& feedback) const {
    auto key_of = feedback.key_selector();
    feedback.stream()
        .ref_.partitioned(detail::PartitionKind::kHash,
                          detail::erase_key_hash<T>([key_of](const T& r) { return KeyHash<K>{}(key_of(r)); }))
        .connect_feedback(head_);
  }

 private:
  friend class DataStream<T>;
  IterativeStream(DataStream<T> head, int node) : DataStream<T>(std::move(head)), head_(node) {}
  int head_;
};

template <typename T>
IterativeStream<T> DataStream<T>::iterate(std::string name) const {
  const int id = ref_.add_operator(std::move(name), false, [] {
    return std::make_unique<detail::MapOperator<T, T, T (*)(const T&)>>(+[](const T& r) { return r; });
  });
  detail::GraphBuilder::node(*ref_.environment(), id).iteration_head = true;
  return IterativeStream<T>(DataStream<T>(ref_.environment(), id), id);
}

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
    return detail::GraphBuilder::stream_of<Out>(env, id);
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

  // A custom two-input operator (weir/stream_operator.h), one instance per
  // subtask built by `make`; each input partitioned as its stream says.
  template <Serializable Out>
  DataStream<Out> transform(std::string name,
                            std::function<std::unique_ptr<TwoInputStreamOperator<A, B, Out>>()> make) const {
    StreamEnvironment* env = a_.environment();
    detail::StreamNode& n = detail::GraphBuilder::add_node(*env, std::move(name));
    n.make_operator = [make]() { return std::make_unique<detail::TwoInputCustomOperator<A, B, Out>>(make()); };
    int id = n.id;
    detail::GraphBuilder::connect(a_, id, 0);
    detail::GraphBuilder::connect(b_, id, 1);
    return detail::GraphBuilder::stream_of<Out>(env, id);
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
  n.bounded = [factory] { return factory()->bounded(); };
  return DataStream<T>(this, n.id);
}

}  // namespace weir

// A job whose record type T appears in several of its source files can
// compile T's operator plumbing (outputs, partitioning, deserializing) once:
// WEIR_EXTERN_RECORD_TYPE(T) in a header those files include, outside any
// namespace, and WEIR_INSTANTIATE_RECORD_TYPE(T) in one of its source files.
// Name T fully qualified.
#define WEIR_EXTERN_RECORD_TYPE(T) \
  namespace weir::detail {         \
  WEIR_RECORD_TYPE_TEMPLATES(extern, T); \
  }
#define WEIR_INSTANTIATE_RECORD_TYPE(T) \
  namespace weir::detail {              \
  WEIR_RECORD_TYPE_TEMPLATES(, T);      \
  }

#endif  // WEIR_STREAM_H_
