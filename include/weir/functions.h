// User function interfaces: collectors, sources, sinks and keyed process
// functions. One instance of each runs per parallel subtask, built by a
// factory the job supplies, and is confined to that subtask's thread: user
// code never needs locks.
#ifndef WEIR_FUNCTIONS_H_
#define WEIR_FUNCTIONS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "weir/context.h"
#include "weir/detail/keyed_backend.h"
#include "weir/state.h"

namespace weir {

using detail::PollStatus;

// Thrown by a source, an operator or a sink for a failure no restart can
// fix (a record no attempt can read, an expression that fails on a record):
// the job fails at once with its message, whatever the restart strategy
// allows (as Flink's SuppressRestartsException). Any other exception fails
// the task, and the restart strategy decides.
class UnrecoverableError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Where a source emits. Records given to the source output directly belong
// to one implicit split; a source reading several splits emits each split's
// records through split(id), so watermarks are tracked per split and the
// source's watermark is the minimum over them.
template <typename T>
class SourceOutput : public Collector<T> {
 public:
  virtual Collector<T>& split(int64_t split_id) = 0;
  // A finished split no longer holds the watermark back.
  virtual void release_split(int64_t split_id) = 0;
};

// A replayable source. open() restores read positions from operator state
// (ctx.is_restored()); snapshot_state() writes the current positions into it.
// Both run on the task thread, between poll() calls, so a snapshot sees the
// position exactly after the last emitted record.
template <typename T>
class Source {
 public:
  virtual ~Source() = default;
  virtual absl::Status open(OperatorContext& ctx) = 0;
  // Emits at most `max_records` records; kEndOfInput once there are no more,
  // kIdle when none are available now.
  virtual PollStatus poll(SourceOutput<T>& out, int max_records) = 0;
  virtual absl::Status snapshot_state(int64_t /*checkpoint_id*/) { return absl::OkStatus(); }
  virtual void notify_checkpoint_complete(int64_t /*checkpoint_id*/) {}
  virtual void close() {}
  // Whether the input ends by itself (a file, a fixed count of records, a
  // topic read up to fixed offsets). Batch execution needs every source
  // bounded; it asks an instance built for the question, never opened.
  virtual bool bounded() const { return false; }
};

// A sink subtask. For exactly-once output, snapshot_state() pre-commits what
// was written since the last checkpoint and notify_checkpoint_complete()
// publishes it (two-phase commit); open() finishes or discards the
// transactions of the restored checkpoint.
template <typename T>
class Sink {
 public:
  virtual ~Sink() = default;
  virtual absl::Status open(OperatorContext& ctx) = 0;
  virtual absl::Status write(const T& record) = 0;
  // End of input: everything written so far must be covered by the final
  // checkpoint that follows.
  virtual absl::Status finish() { return absl::OkStatus(); }
  virtual absl::Status snapshot_state(int64_t /*checkpoint_id*/) { return absl::OkStatus(); }
  virtual void notify_checkpoint_complete(int64_t /*checkpoint_id*/) {}
  virtual void close() {}
};

// What a job hands the graph: one source or sink per subtask, built on the
// subtask's thread.
template <typename T>
using SourceFactory = std::function<std::unique_ptr<Source<T>>()>;
template <typename T>
using SinkFactory = std::function<std::unique_ptr<Sink<T>>()>;

// Gives a keyed function its state handles. Handles are owned by the context
// and live as long as the function.
template <typename K>
class KeyedRuntimeContext {
 public:
  KeyedRuntimeContext(OperatorContext* op, detail::KeyedBackend<K>* backend)
      : op_(op), backend_(backend) {}

  OperatorContext& operator_context() { return *op_; }

  template <typename T>
  ValueState<T>& get_state(const ValueStateDescriptor<T>& d) {
    auto* t = table<T>(d.name, detail::StateKind::kValue);
    return own(std::make_unique<detail::TableValueState<K, T>>(backend_, t));
  }
  template <typename T>
  ListState<T>& get_list_state(const ListStateDescriptor<T>& d) {
    auto* t = table<std::vector<T>>(d.name, detail::StateKind::kList);
    return own(std::make_unique<detail::TableListState<K, T>>(backend_, t));
  }
  template <typename UK, typename UV>
  MapState<UK, UV>& get_map_state(const MapStateDescriptor<UK, UV>& d) {
    auto* t = table<absl::flat_hash_map<UK, UV>>(d.name, detail::StateKind::kMap);
    return own(std::make_unique<detail::TableMapState<K, UK, UV>>(backend_, t));
  }
  template <typename T>
  ReducingState<T>& get_reducing_state(const ReducingStateDescriptor<T>& d) {
    auto* t = table<T>(d.name, detail::StateKind::kReducing);
    return own(std::make_unique<detail::TableReducingState<K, T>>(backend_, t, d.reduce));
  }

  // The same with a time-to-live (a zero TTL: the state without one).
  template <typename T>
  ValueState<T>& get_state(const WithTtl<ValueStateDescriptor<T>>& d) {
    if (!d.ttl.enabled()) return get_state(d.state);
    return own(std::make_unique<detail::TtlValueState<K, T>>(
        ttl_access<T>(d.state.name, detail::StateKind::kValue, d.ttl)));
  }
  template <typename T>
  ListState<T>& get_list_state(const WithTtl<ListStateDescriptor<T>>& d) {
    if (!d.ttl.enabled()) return get_list_state(d.state);
    const detail::ProcessingTimeService* clock = &op_->processing_time();
    auto* t = table<typename detail::TtlListState<K, T>::Entry>(d.state.name, detail::StateKind::kList,
                                                                detail::TableTtl{d.ttl.ttl.count(), clock});
    return own(std::make_unique<detail::TtlListState<K, T>>(backend_, t, d.ttl, clock));
  }
  template <typename UK, typename UV>
  MapState<UK, UV>& get_map_state(const WithTtl<MapStateDescriptor<UK, UV>>& d) {
    if (!d.ttl.enabled()) return get_map_state(d.state);
    const detail::ProcessingTimeService* clock = &op_->processing_time();
    auto* t = table<typename detail::TtlMapState<K, UK, UV>::Entry>(d.state.name, detail::StateKind::kMap,
                                                                    detail::TableTtl{d.ttl.ttl.count(), clock});
    return own(std::make_unique<detail::TtlMapState<K, UK, UV>>(backend_, t, d.ttl, clock));
  }
  template <typename T>
  ReducingState<T>& get_reducing_state(const WithTtl<ReducingStateDescriptor<T>>& d) {
    if (!d.ttl.enabled()) return get_reducing_state(d.state);
    return own(std::make_unique<detail::TtlReducingState<K, T>>(
        ttl_access<T>(d.state.name, detail::StateKind::kReducing, d.ttl), d.state.reduce));
  }

  // The first error from a get_*_state call (for example the same name
  // registered with two kinds); the operator fails open() with it.
  const absl::Status& status() const { return status_; }

 private:
  template <typename V>
  detail::StateTable<K, V>* table(const std::string& name, detail::StateKind kind, detail::TableTtl ttl = {}) {
    auto t = backend_->core().template table<K, V>(name, kind, ttl);
    if (t.ok()) return *t;
    if (status_.ok()) status_ = t.status();
    // Hand out a detached table so the caller's code keeps working until the
    // operator reports the error.
    detached_.push_back(std::make_unique<detail::HeapTable<K, V>>(
        name, kind, backend_->core().range()));
    return static_cast<detail::HeapTable<K, V>*>(detached_.back().get());
  }
  template <typename T>
  detail::TtlAccess<K, T> ttl_access(const std::string& name, detail::StateKind kind, const StateTtlConfig& cfg) {
    const detail::ProcessingTimeService* clock = &op_->processing_time();
    auto* t = table<detail::TtlValue<T>>(name, kind, detail::TableTtl{cfg.ttl.count(), clock});
    return detail::TtlAccess<K, T>(backend_, t, cfg, clock);
  }
  template <typename H>
  H& own(std::unique_ptr<H> h) {
    H& ref = *h;
    handles_.push_back(std::shared_ptr<void>(std::move(h)));
    return ref;
  }

  OperatorContext* op_;
  detail::KeyedBackend<K>* backend_;
  std::vector<std::shared_ptr<void>> handles_;
  std::vector<std::unique_ptr<detail::StateTableBase>> detached_;
  absl::Status status_;
};

// Timers of the current key. Registering the same (key, time) twice keeps
// one timer. Event-time timers fire when the watermark reaches them;
// processing-time timers when the wall clock does (at once after a restore
// if they are overdue). Timers are checkpointed with the key's state.
class TimerService {
 public:
  virtual ~TimerService() = default;
  virtual int64_t current_processing_time() const = 0;
  virtual int64_t current_watermark() const = 0;
  virtual void register_event_time_timer(int64_t timestamp) = 0;
  virtual void register_processing_time_timer(int64_t timestamp) = 0;
  virtual void delete_event_time_timer(int64_t timestamp) = 0;
  virtual void delete_processing_time_timer(int64_t timestamp) = 0;
};

// What a keyed function sees while it handles a record or a timer.
template <typename K>
class KeyedContext {
 public:
  virtual ~KeyedContext() = default;
  virtual const K& current_key() const = 0;
  // Event time of the record or timer being processed; kNoTimestamp if none.
  virtual int64_t timestamp() const = 0;
  virtual TimerService& timer_service() = 0;
  // Emits `value` to the side output `tag` (dropped when nothing reads it).
  template <typename X>
  void output(const OutputTag<X>& tag, const X& value) {
    if (detail::OutputBase* o = side_output_base(tag.id)) {
      static_cast<detail::Output<X>*>(o)->collect(value);
    }
  }
  virtual detail::OutputBase* side_output_base(const std::string& tag) = 0;
};

template <typename K>
class KeyedTimerContext : public KeyedContext<K> {
 public:
  virtual TimeDomain time_domain() const = 0;
};

// Processes each record of a keyed stream with the state of its key.
template <typename K, typename In, typename Out>
class KeyedProcessFunction {
 public:
  using Context = KeyedContext<K>;
  using OnTimerContext = KeyedTimerContext<K>;

  virtual ~KeyedProcessFunction() = default;
  virtual absl::Status open(KeyedRuntimeContext<K>& /*ctx*/) { return absl::OkStatus(); }
  virtual void process_element(const In& value, Context& ctx, Collector<Out>& out) = 0;
  // A timer of `ctx.current_key()` fired.
  virtual void on_timer(int64_t /*timestamp*/, OnTimerContext& /*ctx*/, Collector<Out>& /*out*/) {}
  virtual void notify_checkpoint_complete(int64_t /*checkpoint_id*/) {}
  virtual void close() {}
};

// Processes two keyed streams (keyed alike) with shared keyed state: records
// of either input with the same key see the same state and timers.
template <typename K, typename In1, typename In2, typename Out>
class KeyedCoProcessFunction {
 public:
  using Context = KeyedContext<K>;
  using OnTimerContext = KeyedTimerContext<K>;

  virtual ~KeyedCoProcessFunction() = default;
  virtual absl::Status open(KeyedRuntimeContext<K>& /*ctx*/) { return absl::OkStatus(); }
  virtual void process_element1(const In1& value, Context& ctx, Collector<Out>& out) = 0;
  virtual void process_element2(const In2& value, Context& ctx, Collector<Out>& out) = 0;
  virtual void on_timer(int64_t /*timestamp*/, OnTimerContext& /*ctx*/, Collector<Out>& /*out*/) {}
  virtual void notify_checkpoint_complete(int64_t /*checkpoint_id*/) {}
  virtual void close() {}
};

}  // namespace weir

#endif  // WEIR_FUNCTIONS_H_
