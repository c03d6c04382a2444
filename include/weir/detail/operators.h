// Operator templates behind the DataStream API (with KeyedOperatorCore, the
// keyed half every keyed operator shares), and the typed outputs that connect
// them: chained (a direct call), fan-out (several downstream), and
// partitioned (serialize into a network channel chosen by a partitioner);
// kRecordOps<T> is the table of them by which the runtime wires a record
// type. Confined to the task thread.
#ifndef WEIR_DETAIL_OPERATORS_H_
#define WEIR_DETAIL_OPERATORS_H_

#include <functional>
#include <stdexcept>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "weir/context.h"
#include "weir/detail/graph.h"
#include "weir/detail/keyed_backend.h"
#include "weir/detail/operator.h"
#include "weir/detail/timers.h"
#include "weir/functions.h"
#include "weir/key_group.h"
#include "weir/watermark.h"

namespace weir::detail {

// ---- Outputs ---------------------------------------------------------------

template <typename T>
class ChainedOutput final : public Output<T> {
 public:
  explicit ChainedOutput(OperatorBase* next)
      : next_(static_cast<Input<T>*>(next->input_at(0))), op_(next) {}
  void collect(const T& r) override { next_->process(r); }
  void emit_watermark(int64_t wm) override { op_->process_watermark(wm); }
  void emit_idle(bool idle) override { op_->process_idle(idle); }

 private:
  Input<T>* next_;
  OperatorBase* op_;
};

template <typename T>
class FanOutput final : public Output<T> {
 public:
  explicit FanOutput(std::vector<std::unique_ptr<OutputBase>> outs) : owned_(std::move(outs)) {
    for (auto& o : owned_) outs_.push_back(static_cast<Output<T>*>(o.get()));
  }
  void collect(const T& r) override {
    for (Output<T>* o : outs_) o->collect(r);
  }
  void emit_watermark(int64_t wm) override {
    for (Output<T>* o : outs_) o->emit_watermark(wm);
  }
  void emit_idle(bool idle) override {
    for (Output<T>* o : outs_) o->emit_idle(idle);
  }

 private:
  std::vector<std::unique_ptr<OutputBase>> owned_;
  std::vector<Output<T>*> outs_;
};

// Drops records; the output of an operator nobody consumes.
template <typename T>
class DiscardingOutput final : public Output<T> {
 public:
  void collect(const T&) override {}
  void emit_watermark(int64_t) override {}
  void emit_idle(bool) override {}
};

// Serializes records into a network partition. The channel of a record:
// by the key group of its key hash (kHash), every channel (kBroadcast), or
// round robin (the rest; a forward edge has one channel).
template <typename T>
class PartitionOutput final : public Output<T> {
 public:
  PartitionOutput(PartitionWriter* writer, int max_parallelism, PartitionKind kind,
                  std::function<uint64_t(const T&)> key_hash)
      : writer_(writer),
        max_parallelism_(max_parallelism),
        kind_(kind),
        key_hash_(std::move(key_hash)),
        channels_(writer->num_channels()) {}
  // Frame body: i64 timestamp | record.
  void collect(const T& r) override {
    scratch_.clear();
    ByteWriter w(&scratch_);
    w.put_fixed<int64_t>(current_timestamp());
    Serializer<T>::write(w, r);
    int ch = channels_ == 1 ? 0 : channel_of(r);
    if (ch >= 0) {
      writer_->emit(ch, scratch_);
    } else {
      for (int c = 0; c < channels_; ++c) writer_->emit(c, scratch_);
    }
  }
  void emit_watermark(int64_t wm) override { writer_->broadcast_watermark(wm); }
  void emit_idle(bool idle) override { writer_->broadcast_idle(idle); }

 private:
  // -1: every channel.
  int channel_of(const T& r) {
    switch (kind_) {
      case PartitionKind::kHash:
        return operator_index_for_key_group(max_parallelism_, channels_,
                                            key_group_for_hash(key_hash_(r), max_parallelism_));
      case PartitionKind::kBroadcast:
        return -1;
      default: {
        int c = next_;
        next_ = next_ + 1 == channels_ ? 0 : next_ + 1;
        return c;
      }
    }
  }

  PartitionWriter* writer_;
  const int max_parallelism_;
  const PartitionKind kind_;
  const std::function<uint64_t(const T&)> key_hash_;
  const int channels_;
  int next_ = 0;
  std::string scratch_;
};

template <typename T>
class TypedInputAdapter final : public InputAdapter {
 public:
  explicit TypedInputAdapter(Input<T>* target) : target_(target) {}
  bool process_serialized(std::string_view bytes) override {
    ByteReader r(bytes);
    int64_t ts = r.get_fixed<int64_t>();
    T v = Serializer<T>::read(r);
    if (!r.ok() || !r.at_end()) return false;
    current_timestamp() = ts;
    target_->process(v);
    return true;
  }

 private:
  Input<T>* target_;
};

// ---- The record ops of a type ----------------------------------------------

template <typename T>
std::unique_ptr<OutputBase> make_partition_output(PartitionWriter* writer, int max_parallelism,
                                                  PartitionKind kind, const void* key_hash) {
  using KeyHash = std::function<uint64_t(const T&)>;
  return std::make_unique<PartitionOutput<T>>(
      writer, max_parallelism, kind, key_hash != nullptr ? *static_cast<const KeyHash*>(key_hash) : KeyHash());
}
template <typename T>
std::unique_ptr<InputAdapter> read_input(OperatorBase* target, int input) {
  return std::make_unique<TypedInputAdapter<T>>(static_cast<Input<T>*>(target->input_at(input)));
}
template <typename T>
std::unique_ptr<OutputBase> chain_to(OperatorBase* target) {
  return std::make_unique<ChainedOutput<T>>(target);
}
template <typename T>
std::unique_ptr<OutputBase> fan_out(std::vector<std::unique_ptr<OutputBase>> outs) {
  return std::make_unique<FanOutput<T>>(std::move(outs));
}

// The runtime's table for records of type T (see RecordOps).
template <typename T>
inline constexpr RecordOps kRecordOps{&make_partition_output<T>, &read_input<T>, &chain_to<T>, &fan_out<T>};

// ---- Operators --------------------------------------------------------------

// Base for operators with one typed output.
template <typename Out>
class OneOutputOperator : public OperatorBase {
 public:
  void set_output(std::unique_ptr<OutputBase> out) override {
    owned_out_ = std::move(out);
    out_ = owned_out_ ? static_cast<Output<Out>*>(owned_out_.get()) : &discard_;
  }
  absl::Status open(OperatorContext&, const OperatorRestore*) override {
    return absl::OkStatus();
  }
  absl::StatusOr<OperatorSnapshot> snapshot(const SnapshotOptions&) override { return OperatorSnapshot{}; }
  void process_watermark(int64_t wm) override {
    out_->emit_watermark(wm);
    this->side_outputs_watermark(wm);
  }
  void process_idle(bool idle) override {
    out_->emit_idle(idle);
    this->side_outputs_idle(idle);
  }

 protected:
  Output<Out>* out_ = &discard_;

 private:
  std::unique_ptr<OutputBase> owned_out_;
  DiscardingOutput<Out> discard_;
};

template <typename In, typename Out, typename F>
class MapOperator final : public OneOutputOperator<Out>, public Input<In> {
 public:
  explicit MapOperator(F f) : f_(std::move(f)) {}
  void* input() override { return static_cast<Input<In>*>(this); }
  void process(const In& r) override { this->out_->collect(f_(r)); }

 private:
  F f_;
};

template <typename T, typename F>
class FilterOperator final : public OneOutputOperator<T>, public Input<T> {
 public:
  explicit FilterOperator(F f) : f_(std::move(f)) {}
  void* input() override { return static_cast<Input<T>*>(this); }
  void process(const T& r) override {
    if (f_(r)) this->out_->collect(r);
  }

 private:
  F f_;
};

template <typename In, typename Out, typename F>
class FlatMapOperator final : public OneOutputOperator<Out>, public Input<In> {
 public:
  explicit FlatMapOperator(F f) : f_(std::move(f)) {}
  void* input() override { return static_cast<Input<In>*>(this); }
  void process(const In& r) override { f_(r, *this->out_); }

 private:
  F f_;
};

// Copies the operator state the runtime restored into the context's store;
// shared by every operator that has operator state.
absl::Status restore_operator_state(OperatorContext& ctx, const OperatorRestore* restore);
OperatorStateMap capture_operator_state(OperatorContext& ctx);

// Runs a Source: assigns timestamps, tracks per-split watermarks and
// idleness, and emits the source's watermark (the minimum over its active
// splits) every strategy interval. Without a strategy, records carry no
// timestamp and only the final watermark is emitted.
template <typename T>
class SourceOperator final : public SourceOperatorBase, public SourceOutput<T> {
 public:
  SourceOperator(std::unique_ptr<Source<T>> source, std::optional<WatermarkStrategy<T>> strategy)
      : source_(std::move(source)), strategy_(std::move(strategy)) {}
  void set_output(std::unique_ptr<OutputBase> out) override {
    owned_out_ = std::move(out);
    out_ = owned_out_ ? static_cast<Output<T>*>(owned_out_.get()) : &discard_;
  }
  absl::Status open(OperatorContext& ctx, const OperatorRestore* restore) override {
    ctx_ = &ctx;
    absl::Status s = restore_operator_state(ctx, restore);
    if (!s.ok()) return s;
    clock_ = &ctx.processing_time();
    next_check_ms_ = clock_->now_ms();
    main_.last_record_ms = next_check_ms_;
    return source_->open(ctx);
  }
  void end_input_now() override { emit_watermark(kMaxWatermark); }
  PollStatus poll(int max_records) override {
    PollStatus st = source_->poll(*this, max_records);
    if (st == PollStatus::kEndOfInput) {
      // Bounded input is over: all event time has passed.
      emit_watermark(kMaxWatermark);
    } else if (strategy_) {
      int64_t now = clock_->now_ms();
      if (now >= next_check_ms_) {
        next_check_ms_ = now + strategy_->interval.count();
        update_watermark(now);
      }
    }
    return st;
  }

  // SourceOutput<T>
  void collect(const T& r) override { emit(r, main_); }
  // A split holds the watermark back from its first use: until its first
  // record, or for the idleness timeout from then without records.
  Collector<T>& split(int64_t id) override {
    auto [it, inserted] = splits_.try_emplace(id, this);
    if (inserted) it->second.last_record_ms = clock_->now_ms();
    return it->second;
  }
  void release_split(int64_t id) override { splits_.erase(id); }

  absl::StatusOr<OperatorSnapshot> snapshot(const SnapshotOptions& options) override {
    absl::Status s = source_->snapshot_state(options.checkpoint_id);
    if (!s.ok()) return s;
    return OperatorSnapshot{capture_operator_state(*ctx_), nullptr};
  }
  void notify_checkpoint_complete(int64_t id) override { source_->notify_checkpoint_complete(id); }
  void process_watermark(int64_t wm) override { emit_watermark(wm); }
  void process_idle(bool idle) override { out_->emit_idle(idle); }
  void close() override { source_->close(); }

 private:
  struct SplitState : Collector<T> {
    explicit SplitState(SourceOperator* op) : op(op) {}
    void collect(const T& r) override { op->emit(r, *this); }
    SourceOperator* op;
    int64_t max_ts = kMinWatermark;
    int64_t last_record_ms = 0;
    bool seen = false;
  };

  void emit(const T& r, SplitState& split) {
    if (strategy_) {
      int64_t ts = strategy_->timestamp_of(r);
      if (ts < 0 || ts > WatermarkStrategy<T>::kMaxValidTimestamp) return reject(r, ts);
      current_timestamp() = ts;
      if (ts > split.max_ts) split.max_ts = ts;
      split.seen = true;
      split.last_record_ms = clock_->now_ms();
      if (idle_) {
        idle_ = false;
        out_->emit_idle(false);
      }
    } else {
      current_timestamp() = kNoTimestamp;
    }
    out_->collect(r);
  }

  void reject(const T& r, int64_t ts) {
    ++invalid_timestamps_;
    OutputBase* o = strategy_->invalid_timestamps ? this->side_output(strategy_->invalid_timestamps->id)
                                                  : nullptr;
    if (o == nullptr) {
      throw std::runtime_error("record with out-of-range timestamp " + std::to_string(ts) + " in source " +
                               ctx_->operator_uid() +
                               "; route such records with WatermarkStrategy::with_invalid_timestamps");
    }
    current_timestamp() = kNoTimestamp;
    static_cast<Output<T>*>(o)->collect(r);
  }

  void update_watermark(int64_t now) {
    const int64_t bound = strategy_->max_out_of_orderness.count();
    int64_t wm = kMaxWatermark;
    bool any_active = false;
    auto consider = [&](const SplitState& s) {
      bool idle = strategy_->idleness && now - s.last_record_ms >= strategy_->idleness->count();
      if (idle) return;
      any_active = true;
      int64_t w = s.max_ts == kMinWatermark ? kMinWatermark : s.max_ts - bound - 1;
      wm = std::min(wm, w);
    };
    // The implicit split counts once it was used, or when there is no other.
    if (main_.seen || splits_.empty()) consider(main_);
    for (const auto& [id, s] : splits_) consider(s);
    if (!any_active) {
      if (!idle_ && strategy_->idleness) {
        idle_ = true;
        out_->emit_idle(true);
      }
      return;
    }
    if (wm > emitted_) emit_watermark(wm);
  }

  void emit_watermark(int64_t wm) {
    if (wm <= emitted_) return;
    emitted_ = wm;
    current_timestamp() = kNoTimestamp;
    out_->emit_watermark(wm);
  }

  std::unique_ptr<Source<T>> source_;
  const std::optional<WatermarkStrategy<T>> strategy_;
  OperatorContext* ctx_ = nullptr;
  ProcessingTimeService* clock_ = nullptr;
  SplitState main_{this};
  std::map<int64_t, SplitState> splits_;
  int64_t emitted_ = kMinWatermark;
  int64_t next_check_ms_ = 0;
  int64_t invalid_timestamps_ = 0;
  bool idle_ = false;
  std::unique_ptr<OutputBase> owned_out_;
  Output<T>* out_ = &discard_;
  DiscardingOutput<T> discard_;
};

template <typename T>
class SinkOperator final : public OperatorBase, public Input<T> {
 public:
  explicit SinkOperator(std::unique_ptr<Sink<T>> sink) : sink_(std::move(sink)) {}
  void* input() override { return static_cast<Input<T>*>(this); }
  void set_output(std::unique_ptr<OutputBase>) override {}
  void process_watermark(int64_t) override {}
  void process_idle(bool) override {}
  absl::Status open(OperatorContext& ctx, const OperatorRestore* restore) override {
    ctx_ = &ctx;
    absl::Status s = restore_operator_state(ctx, restore);
    if (!s.ok()) return s;
    return sink_->open(ctx);
  }
  void process(const T& r) override {
    absl::Status s = sink_->write(r);
    if (!s.ok()) throw std::runtime_error("sink " + ctx_->operator_uid() + ": " + std::string(s.message()));
  }
  absl::Status finish() override { return sink_->finish(); }
  absl::StatusOr<OperatorSnapshot> snapshot(const SnapshotOptions& options) override {
    absl::Status s = sink_->snapshot_state(options.checkpoint_id);
    if (!s.ok()) return s;
    return OperatorSnapshot{capture_operator_state(*ctx_), nullptr};
  }
  void notify_checkpoint_complete(int64_t id) override { sink_->notify_checkpoint_complete(id); }
  void close() override { sink_->close(); }

 private:
  std::unique_ptr<Sink<T>> sink_;
  OperatorContext* ctx_ = nullptr;
};

// The keyed half of every keyed operator, by key type alone: the backend,
// the timers, the runtime context handed to open(), and the contexts handed
// to process and on_timer. Compiled once in the engine for int64_t and
// std::string keys (src/runtime/instantiations.cc).
template <typename K>
class KeyedOperatorCore : public KeyedTimerContext<K>, public TimerService {
 public:
  // KeyedContext / KeyedTimerContext
  const K& current_key() const override { return backend_->current_key(); }
  int64_t timestamp() const override { return current_timestamp(); }
  TimerService& timer_service() override { return *this; }
  TimeDomain time_domain() const override { return domain_; }
  OutputBase* side_output_base(const std::string& tag) override { return op_->side_output(tag); }

  // TimerService
  int64_t current_processing_time() const override { return timers_->current_processing_time(); }
  int64_t current_watermark() const override { return timers_->current_watermark(); }
  void register_event_time_timer(int64_t ts) override { timers_->register_timer(TimeDomain::kEventTime, ts); }
  void register_processing_time_timer(int64_t ts) override {
    timers_->register_timer(TimeDomain::kProcessingTime, ts);
  }
  void delete_event_time_timer(int64_t ts) override { timers_->delete_timer(TimeDomain::kEventTime, ts); }
  void delete_processing_time_timer(int64_t ts) override {
    timers_->delete_timer(TimeDomain::kProcessingTime, ts);
  }

 protected:
  // `op`: the operator this is part of (for its side outputs).
  explicit KeyedOperatorCore(OperatorBase* op) : op_(op) {}

  // Restores keyed state and timers; `open_fn` opens the user function.
  absl::Status open_keyed(OperatorContext& ctx, const OperatorRestore* restore,
                          const std::function<absl::Status(KeyedRuntimeContext<K>&)>& open_fn);
  void set_key(const K& key) {
    int kg = key_group_of(key, max_parallelism_);
    if (!range_.contains(kg)) throw_wrong_subtask(kg);
    backend_->set_current_key(&key, kg);
  }
  // Fires the event-time timers up to `wm`.
  void advance_timers(int64_t wm);
  absl::StatusOr<OperatorSnapshot> snapshot_keyed(const SnapshotOptions& options);
  // Checkpoint `id` completed: the backend may reuse its uploads.
  void backend_checkpoint_complete(int64_t id);

  virtual void on_timer(int64_t ts) = 0;

 private:
  [[noreturn]] static void throw_wrong_subtask(int key_group);

  OperatorBase* const op_;
  int max_parallelism_ = kDefaultMaxParallelism;
  KeyGroupRange range_;
  std::unique_ptr<KeyedBackend<K>> backend_;
  std::unique_ptr<InternalTimerService<K>> timers_;
  std::unique_ptr<KeyedRuntimeContext<K>> runtime_;
  TimeDomain domain_ = TimeDomain::kEventTime;
};

template <typename K>
absl::Status KeyedOperatorCore<K>::open_keyed(
    OperatorContext& ctx, const OperatorRestore* restore,
    const std::function<absl::Status(KeyedRuntimeContext<K>&)>& open_fn) {
  max_parallelism_ = ctx.max_parallelism();
  range_ = ctx.key_group_range();
  auto backend = open_keyed_backend<K>(ctx, restore);
  if (!backend.ok()) return backend.status();
  backend_ = std::move(*backend);
  absl::Cleanup restored = [this] { backend_->core().end_restore(); };
  timers_ = std::make_unique<InternalTimerService<K>>(backend_.get(), &ctx.processing_time(), max_parallelism_);
  absl::Status s = timers_->open([this](TimeDomain d, int64_t ts, const K&) {
    domain_ = d;
    on_timer(ts);
  });
  if (!s.ok()) return s;
  runtime_ = std::make_unique<KeyedRuntimeContext<K>>(&ctx, backend_.get());
  s = open_fn(*runtime_);
  if (!s.ok()) return s;
  return runtime_->status();
}

template <typename K>
void KeyedOperatorCore<K>::advance_timers(int64_t wm) {
  timers_->advance_watermark(wm);
}

template <typename K>
absl::StatusOr<OperatorSnapshot> KeyedOperatorCore<K>::snapshot_keyed(const SnapshotOptions& options) {
  return backend_->core().operator_snapshot(options.native_allowed);
}

template <typename K>
void KeyedOperatorCore<K>::backend_checkpoint_complete(int64_t id) {
  backend_->core().checkpoint_complete(id);
}

template <typename K>
void KeyedOperatorCore<K>::throw_wrong_subtask(int key_group) {
  throw std::logic_error("record routed to the wrong subtask: key group " + std::to_string(key_group));
}

// A keyed operator with one typed output.
template <typename K, typename Out>
class KeyedOperatorBase : public OneOutputOperator<Out>, public KeyedOperatorCore<K> {
 public:
  KeyedOperatorBase() : KeyedOperatorCore<K>(this) {}

  void process_watermark(int64_t wm) override {
    this->advance_timers(wm);
    current_timestamp() = kNoTimestamp;
    this->out_->emit_watermark(wm);
    this->side_outputs_watermark(wm);
  }
  absl::StatusOr<OperatorSnapshot> snapshot(const SnapshotOptions& options) override {
    return this->snapshot_keyed(options);
  }
};

template <typename K, typename In, typename Out>
class KeyedProcessOperator final : public KeyedOperatorBase<K, Out>, public Input<In> {
 public:
  using Function = KeyedProcessFunction<K, In, Out>;
  KeyedProcessOperator(std::function<K(const In&)> key_of, std::unique_ptr<Function> fn)
      : key_of_(std::move(key_of)), fn_(std::move(fn)) {}

  void* input() override { return static_cast<Input<In>*>(this); }
  absl::Status open(OperatorContext& ctx, const OperatorRestore* restore) override {
    return this->open_keyed(ctx, restore, [this](KeyedRuntimeContext<K>& rc) { return fn_->open(rc); });
  }
  void process(const In& r) override {
    K key = key_of_(r);
    this->set_key(key);
    fn_->process_element(r, *this, *this->out_);
  }
  void notify_checkpoint_complete(int64_t id) override {
    this->backend_checkpoint_complete(id);
    fn_->notify_checkpoint_complete(id);
  }
  void close() override { fn_->close(); }

 private:
  void on_timer(int64_t ts) override { fn_->on_timer(ts, *this, *this->out_); }

  std::function<K(const In&)> key_of_;
  std::unique_ptr<Function> fn_;
};

template <typename K, typename In1, typename In2, typename Out>
class KeyedCoProcessOperator final : public KeyedOperatorBase<K, Out> {
 public:
  using Function = KeyedCoProcessFunction<K, In1, In2, Out>;
  KeyedCoProcessOperator(std::function<K(const In1&)> key1, std::function<K(const In2&)> key2,
                         std::unique_ptr<Function> fn)
      : fn_(std::move(fn)), in1_(this, std::move(key1)), in2_(this, std::move(key2)) {}

  void* input_at(int index) override {
    if (index == 0) return static_cast<Input<In1>*>(&in1_);
    if (index == 1) return static_cast<Input<In2>*>(&in2_);
    return nullptr;
  }
  absl::Status open(OperatorContext& ctx, const OperatorRestore* restore) override {
    return this->open_keyed(ctx, restore, [this](KeyedRuntimeContext<K>& rc) { return fn_->open(rc); });
  }
  void notify_checkpoint_complete(int64_t id) override {
    this->backend_checkpoint_complete(id);
    fn_->notify_checkpoint_complete(id);
  }
  void close() override { fn_->close(); }

 private:
  template <typename T, int kSide>
  struct Side final : Input<T> {
    Side(KeyedCoProcessOperator* op, std::function<K(const T&)> key_of)
        : op(op), key_of(std::move(key_of)) {}
    void process(const T& r) override {
      K key = key_of(r);
      op->set_key(key);
      if constexpr (kSide == 1) {
        op->fn_->process_element1(r, *op, *op->out_);
      } else {
        op->fn_->process_element2(r, *op, *op->out_);
      }
    }
    KeyedCoProcessOperator* op;
    std::function<K(const T&)> key_of;
  };

  void on_timer(int64_t ts) override { fn_->on_timer(ts, *this, *this->out_); }

  std::unique_ptr<Function> fn_;
  Side<In1, 1> in1_;
  Side<In2, 2> in2_;
};

// The pieces of the record types nearly every job has, compiled once in the
// engine (src/runtime/instantiations.cc, and TextLine in
// src/connectors/instantiations.cc) instead of in every job.
#define WEIR_RECORD_TYPE_TEMPLATES(EXTERN, T)                                                                \
  EXTERN template class ChainedOutput<T>;                                                                    \
  EXTERN template class FanOutput<T>;                                                                        \
  EXTERN template class DiscardingOutput<T>;                                                                 \
  EXTERN template class PartitionOutput<T>;                                                                  \
  EXTERN template class TypedInputAdapter<T>;                                                                \
  EXTERN template class OneOutputOperator<T>;                                                                \
  EXTERN template std::unique_ptr<OutputBase> make_partition_output<T>(PartitionWriter*, int, PartitionKind, \
                                                                       const void*);                         \
  EXTERN template std::unique_ptr<InputAdapter> read_input<T>(OperatorBase*, int);                           \
  EXTERN template std::unique_ptr<OutputBase> chain_to<T>(OperatorBase*);                                    \
  EXTERN template std::unique_ptr<OutputBase> fan_out<T>(std::vector<std::unique_ptr<OutputBase>>)
WEIR_RECORD_TYPE_TEMPLATES(extern, std::string);
WEIR_RECORD_TYPE_TEMPLATES(extern, int64_t);
extern template class SinkOperator<std::string>;
extern template class KeyedOperatorCore<int64_t>;
extern template class KeyedOperatorCore<std::string>;

}  // namespace weir::detail

#endif  // WEIR_DETAIL_OPERATORS_H_
