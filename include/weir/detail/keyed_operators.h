// The keyed operators: KeyedOperatorCore, the keyed half every keyed
// operator shares (backend, timers, the contexts handed to user functions,
// the check that a record reached the subtask owning its key group), and the
// operators behind KeyedStream::process and ConnectedStreams::process.
// Confined to the task thread.
#ifndef WEIR_DETAIL_KEYED_OPERATORS_H_
#define WEIR_DETAIL_KEYED_OPERATORS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "weir/context.h"
#include "weir/detail/keyed_backend.h"
#include "weir/detail/operator.h"
#include "weir/detail/operators.h"
#include "weir/detail/timers.h"
#include "weir/functions.h"
#include "weir/key_group.h"

namespace weir::detail {

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
  // Batch execution: the keys of `key_group` being processed ended (see
  // OperatorBase::end_key_block).
  void end_keys(int key_group);
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
void KeyedOperatorCore<K>::end_keys(int key_group) {
  timers_->end_key_block();
  backend_->core().clear_key_group(key_group);
}

template <typename K>
absl::StatusOr<OperatorSnapshot> KeyedOperatorCore<K>::snapshot_keyed(const SnapshotOptions& options) {
  return backend_->core().operator_snapshot(options);
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
  bool supports_key_blocks() const override { return true; }
  void end_key_block(int key_group) override { this->end_keys(key_group); }
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

// Compiled once in the engine (src/runtime/instantiations.cc).
extern template class KeyedOperatorCore<int64_t>;
extern template class KeyedOperatorCore<std::string>;

}  // namespace weir::detail

#endif  // WEIR_DETAIL_KEYED_OPERATORS_H_
