// The operators behind the stateless DataStream calls (map, filter,
// flat_map), sources (with their watermark generation and idleness) and
// sinks, and OneOutputOperator, the base of every operator with one typed
// output. The outputs they write to are in outputs.h, the keyed operators in
// keyed_operators.h. Confined to the task thread.
#ifndef WEIR_DETAIL_OPERATORS_H_
#define WEIR_DETAIL_OPERATORS_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "weir/context.h"
#include "weir/detail/operator.h"
#include "weir/detail/outputs.h"
#include "weir/functions.h"
#include "weir/watermark.h"

namespace weir::detail {

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
    records_out_ = &ctx.metrics().counter(kRecordsOutMetric);
    absl::Status s = restore_operator_state(ctx, restore);
    if (!s.ok()) return s;
    clock_ = &ctx.processing_time();
    next_check_ms_ = clock_->now_ms();
    main_.last_record_ms = next_check_ms_;
    // What a snapshot records while reading ahead, until a batch is released.
    released_positions_ = capture_operator_state(ctx);
    return source_->open(ctx);
  }
  void end_input_now() override { emit_watermark(kMaxWatermark); }
  PollStatus poll(int max_records) override {
    PollStatus st = source_->poll(*this, max_records);
    if (st == PollStatus::kEndOfInput) {
      // Bounded input is over: all event time has passed.
      emit_watermark(kMaxWatermark);
    } else {
      maybe_update_watermark();
    }
    return st;
  }

  int read_ahead(int max_records, PollStatus* status) override {
    reading_ahead_ = true;
    const size_t before = open_.count;
    *status = source_->poll(*this, max_records);
    maybe_update_watermark();
    return static_cast<int>(open_.count - before);
  }
  absl::StatusOr<OperatorStateMap> seal_batch() override {
    absl::Status s = source_->snapshot_state(kReadAheadCheckpointId);
    if (!s.ok()) return s;
    OperatorStateMap positions = capture_operator_state(*ctx_);
    open_.positions = positions;
    sealed_.push_back(std::move(open_));
    if (spare_.empty()) {
      open_ = Batch{};
    } else {
      open_ = std::move(spare_.back());
      spare_.pop_back();
    }
    return positions;
  }
  void release_batch() override {
    if (sealed_.empty()) return;
    Batch& b = sealed_.front();
    size_t next_release = 0;
    for (size_t i = 0; i < b.count; ++i) {
      for (; next_release < b.releases.size() && b.releases[next_release].first <= i; ++next_release) {
        splits_.erase(b.releases[next_release].second);
      }
      ++released_records_;
      emit(b.records[i], b.splits[i] == kMainSplit ? main_ : split_state(b.splits[i]));
    }
    for (; next_release < b.releases.size(); ++next_release) splits_.erase(b.releases[next_release].second);
    released_positions_ = std::move(b.positions);
    // Kept for a later batch: its records are assigned over, reusing what
    // they hold (string capacity), instead of allocated anew.
    b.count = 0;
    b.releases.clear();
    b.positions.clear();
    spare_.push_back(std::move(b));
    sealed_.pop_front();
    maybe_update_watermark();
  }
  int64_t released_records() const override { return released_records_; }

  // SourceOutput<T>
  void collect(const T& r) override {
    if (reading_ahead_) return hold(r, kMainSplit);
    emit(r, main_);
  }
  Collector<T>& split(int64_t id) override {
    SplitState& state = split_state(id);  // its first use holds the watermark back, also while reading ahead
    if (reading_ahead_) return ahead_splits_.try_emplace(id, this, id).first->second;
    return state;
  }
  void release_split(int64_t id) override {
    if (reading_ahead_) {
      open_.releases.emplace_back(open_.count, id);
      ahead_splits_.erase(id);
      return;
    }
    splits_.erase(id);
  }

  absl::StatusOr<OperatorSnapshot> snapshot(const SnapshotOptions& options) override {
    // Reading ahead, the source's own positions are past records still
    // held; the snapshot takes those after the last record handed on.
    if (reading_ahead_) return OperatorSnapshot{released_positions_, nullptr};
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
    // When a watermark check last found records since the one before (as
    // Flink's idleness counts records between periodic checks): a record
    // only sets `recent`, so no record reads the clock.
    int64_t last_record_ms = 0;
    bool recent = false;
    bool seen = false;
  };

  // Reading ahead: the records of a split are held with its id.
  static constexpr int64_t kMainSplit = INT64_MIN;
  // The checkpoint id a source's snapshot_state() sees when it is asked for
  // the positions of a batch read ahead (no checkpoint is taken).
  static constexpr int64_t kReadAheadCheckpointId = -1;
  struct AheadSplit : Collector<T> {
    AheadSplit(SourceOperator* op, int64_t id) : op(op), id(id) {}
    void collect(const T& r) override { op->hold(r, id); }
    SourceOperator* op;
    int64_t id;
  };
  struct Batch {
    // records[0, count) are held; those beyond are left from an earlier use.
    std::vector<T> records;
    size_t count = 0;
    std::vector<int64_t> splits;  // per record
    // (records before it, split id): split releases, in order.
    std::vector<std::pair<size_t, int64_t>> releases;
    OperatorStateMap positions;
  };

  void hold(const T& r, int64_t split) {
    if constexpr (!std::is_copy_constructible_v<T>) {
      throw std::runtime_error("source " + ctx_->operator_uid() +
                               " emits records that cannot be copied; at-most-once holds copies of them");
    } else {
      if (open_.count < open_.records.size()) {
        if constexpr (std::is_copy_assignable_v<T>) {
          open_.records[open_.count] = r;
        } else {
          open_.records[open_.count].~T();
          new (&open_.records[open_.count]) T(r);
        }
        open_.splits[open_.count] = split;
      } else {
        open_.records.push_back(r);
        open_.splits.push_back(split);
      }
    }
    ++open_.count;
  }

  // A split holds the watermark back from its first use: until its first
  // record, or for the idleness timeout from then without records.
  SplitState& split_state(int64_t id) {
    auto [it, inserted] = splits_.try_emplace(id, this);
    if (inserted) it->second.last_record_ms = clock_->now_ms();
    return it->second;
  }

  void maybe_update_watermark() {
    if (!strategy_) return;
    int64_t now = clock_->now_ms();
    if (now >= next_check_ms_) {
      next_check_ms_ = now + strategy_->interval.count();
      update_watermark(now);
    }
  }

  void emit(const T& r, SplitState& split) {
    if (strategy_) {
      int64_t ts = strategy_->timestamp_of(r);
      if (ts < 0 || ts > WatermarkStrategy<T>::kMaxValidTimestamp) return reject(r, ts);
      current_timestamp() = ts;
      if (ts > split.max_ts) split.max_ts = ts;
      split.seen = true;
      split.recent = true;
      if (idle_) {
        idle_ = false;
        out_->emit_idle(false);
      }
    } else {
      current_timestamp() = kNoTimestamp;
    }
    out_->collect(r);
    records_out_->inc();
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
    auto consider = [&](SplitState& s) {
      if (s.recent) {
        s.recent = false;
        s.last_record_ms = now;
      }
      bool idle = strategy_->idleness && now - s.last_record_ms >= strategy_->idleness->count();
      if (idle) return;
      any_active = true;
      int64_t w = s.max_ts == kMinWatermark ? kMinWatermark : s.max_ts - bound - 1;
      wm = std::min(wm, w);
    };
    // The implicit split counts once it was used, or when there is no other.
    if (main_.seen || splits_.empty()) consider(main_);
    for (auto& [id, s] : splits_) consider(s);
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
  // Reading ahead (at-most-once).
  bool reading_ahead_ = false;
  Batch open_;
  std::deque<Batch> sealed_;
  std::vector<Batch> spare_;  // released batches, for reuse
  std::map<int64_t, AheadSplit> ahead_splits_;
  OperatorStateMap released_positions_;
  int64_t released_records_ = 0;
  Counter* records_out_ = nullptr;  // kRecordsOutMetric
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
  EXTERN template std::unique_ptr<InputAdapter> read_input<T>(OperatorBase*, int, Counter*);                 \
  EXTERN template bool read_key_hash<T>(const void*, std::string_view, uint64_t*);                           \
  EXTERN template std::unique_ptr<OutputBase> chain_to<T>(OperatorBase*, Counter*);                          \
  EXTERN template std::unique_ptr<OutputBase> fan_out<T>(std::vector<std::unique_ptr<OutputBase>>)
WEIR_RECORD_TYPE_TEMPLATES(extern, std::string);
WEIR_RECORD_TYPE_TEMPLATES(extern, int64_t);
extern template class SinkOperator<std::string>;

}  // namespace weir::detail

#endif  // WEIR_DETAIL_OPERATORS_H_
