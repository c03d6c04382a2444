// Custom operators: what DataStream::transform and ConnectedStreams::
// transform run, for logic the built-in transformations do not express (as
// Flink's OneInputStreamOperator and TwoInputStreamOperator).
//
//   class Dedup final : public weir::OneInputStreamOperator<Rec, Rec> {
//     absl::Status open(weir::OperatorContext& ctx) override { ... }
//     void process_element(const Rec& r, int64_t timestamp) override {
//       if (seen_.insert(r.id).second) output().collect(r);
//     }
//   };
//   stream.transform<Rec>("dedup", [] { return std::make_unique<Dedup>(); });
//
// One instance runs per parallel subtask, built by the factory on the
// subtask's thread, and every call below comes on that thread. An operator
// keeps what must survive a failure in OperatorListState (weir/context.h):
// open() reads it back when ctx.is_restored(), snapshot_state() brings it up
// to date; processing-time callbacks come from ctx.processing_time(). The
// operator is not keyed: keyed state and timers belong to KeyedProcessFunction
// and KeyedCoProcessFunction (weir/functions.h).
#ifndef WEIR_STREAM_OPERATOR_H_
#define WEIR_STREAM_OPERATOR_H_

#include <cstdint>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "weir/context.h"
#include "weir/detail/operators.h"
#include "weir/serializer.h"

namespace weir {

namespace detail {
template <typename Out>
class CustomOperatorBase;
}  // namespace detail

// Where a custom operator emits: records, records of its side outputs,
// watermarks.
template <typename Out>
class OperatorOutput {
 public:
  // A record with the timestamp of the record being processed (none while
  // handling a watermark or a processing-time callback).
  void collect(const Out& record) { owner_->main().collect(record); }
  // A record with its own event-time timestamp (kNoTimestamp: none).
  void collect(const Out& record, int64_t timestamp) {
    int64_t& current = detail::current_timestamp();
    const int64_t before = current;
    current = timestamp;
    owner_->main().collect(record);
    current = before;
  }
  // A record of side output `tag` (DataStream::get_side_output reads it);
  // dropped when nothing consumes the tag.
  template <Serializable U>
  void collect(const OutputTag<U>& tag, const U& record) {
    if (detail::OutputBase* side = owner_->side_output(tag.id)) static_cast<detail::Output<U>*>(side)->collect(record);
  }
  // Event time has reached `watermark` on the main output and every side
  // output: nothing emitted later carries an earlier timestamp.
  void emit_watermark(int64_t watermark) { owner_->forward_watermark(watermark); }

 private:
  friend class detail::CustomOperatorBase<Out>;
  explicit OperatorOutput(detail::CustomOperatorBase<Out>* owner) : owner_(owner) {}

  detail::CustomOperatorBase<Out>* owner_;
};

// What a custom operator's lifecycle calls, and in this order: open (after a
// failure, with the state of the checkpoint it restarts from), records and
// watermarks as they come, snapshot_state at each checkpoint (between two
// records), notify_checkpoint_complete once the checkpoint holds everywhere,
// finish at the end of a bounded input, close. An exception from any of
// them fails the task, and the job's restart strategy decides
// (UnrecoverableError fails the job).
template <typename Out>
class StreamOperator {
 public:
  virtual ~StreamOperator() = default;

  virtual absl::Status open(OperatorContext& /*ctx*/) { return absl::OkStatus(); }
  // Event time advanced to `watermark` (the minimum over every input
  // channel). The default passes it on; an operator that holds records back
  // until event time passes them emits those first, then the watermark.
  virtual void process_watermark(int64_t watermark) { output().emit_watermark(watermark); }
  // Brings the operator's list states up to date for checkpoint
  // `checkpoint_id`; what they hold afterwards is what a restore reads.
  virtual absl::Status snapshot_state(int64_t /*checkpoint_id*/) { return absl::OkStatus(); }
  virtual void notify_checkpoint_complete(int64_t /*checkpoint_id*/) {}
  virtual void notify_checkpoint_aborted(int64_t /*checkpoint_id*/) {}
  // End of a bounded input: emit whatever is held back. The final
  // checkpoint follows.
  virtual absl::Status finish() { return absl::OkStatus(); }
  virtual void close() {}

 protected:
  OperatorOutput<Out>& output() { return *output_; }

 private:
  friend class detail::CustomOperatorBase<Out>;
  OperatorOutput<Out>* output_ = nullptr;
};

// An operator of one input (DataStream<In>::transform).
template <typename In, typename Out>
class OneInputStreamOperator : public StreamOperator<Out> {
 public:
  // `timestamp` is the record's event time, kNoTimestamp when it has none.
  virtual void process_element(const In& record, int64_t timestamp) = 0;
};

// An operator of two inputs (ConnectedStreams<A, B>::transform); records of
// the two come interleaved in no particular order between them, and the
// watermark is the minimum over both.
template <typename A, typename B, typename Out>
class TwoInputStreamOperator : public StreamOperator<Out> {
 public:
  virtual void process_element1(const A& record, int64_t timestamp) = 0;
  virtual void process_element2(const B& record, int64_t timestamp) = 0;
};

namespace detail {

// Runs a StreamOperator in the engine: its output, its list states restored
// before open and captured at each snapshot.
template <typename Out>
class CustomOperatorBase : public OneOutputOperator<Out> {
 public:
  explicit CustomOperatorBase(StreamOperator<Out>* op) : op_(op), output_(this) { op_->output_ = &output_; }

  absl::Status open(OperatorContext& ctx, const OperatorRestore* restore) override {
    ctx_ = &ctx;
    absl::Status s = restore_operator_state(ctx, restore);
    if (!s.ok()) return s;
    return op_->open(ctx);
  }
  absl::StatusOr<OperatorSnapshot> snapshot(const SnapshotOptions& options) override {
    absl::Status s = op_->snapshot_state(options.checkpoint_id);
    if (!s.ok()) return s;
    return OperatorSnapshot{capture_operator_state(*ctx_), nullptr};
  }
  void notify_checkpoint_complete(int64_t id) override { op_->notify_checkpoint_complete(id); }
  void notify_checkpoint_aborted(int64_t id) override { op_->notify_checkpoint_aborted(id); }
  absl::Status finish() override { return op_->finish(); }
  void close() override { op_->close(); }
  void process_watermark(int64_t watermark) override {
    const int64_t before = current_timestamp();
    current_timestamp() = kNoTimestamp;
    op_->process_watermark(watermark);
    current_timestamp() = before;
  }

 private:
  friend class OperatorOutput<Out>;
  Output<Out>& main() { return *this->out_; }
  void forward_watermark(int64_t watermark) { OneOutputOperator<Out>::process_watermark(watermark); }

  StreamOperator<Out>* op_;
  OperatorOutput<Out> output_;
  OperatorContext* ctx_ = nullptr;
};

template <typename In, typename Out>
class OneInputCustomOperator final : public CustomOperatorBase<Out>, public Input<In> {
 public:
  explicit OneInputCustomOperator(std::unique_ptr<OneInputStreamOperator<In, Out>> op)
      : CustomOperatorBase<Out>(op.get()), op_(std::move(op)) {}
  void* input() override { return static_cast<Input<In>*>(this); }
  void process(const In& record) override { op_->process_element(record, current_timestamp()); }

 private:
  std::unique_ptr<OneInputStreamOperator<In, Out>> op_;
};

template <typename A, typename B, typename Out>
class TwoInputCustomOperator final : public CustomOperatorBase<Out> {
 public:
  explicit TwoInputCustomOperator(std::unique_ptr<TwoInputStreamOperator<A, B, Out>> op)
      : CustomOperatorBase<Out>(op.get()), op_(std::move(op)), first_(op_.get()), second_(op_.get()) {}
  void* input() override { return static_cast<Input<A>*>(&first_); }
  void* input_at(int index) override {
    if (index == 0) return input();
    return index == 1 ? static_cast<Input<B>*>(&second_) : nullptr;
  }

 private:
  struct First final : Input<A> {
    explicit First(TwoInputStreamOperator<A, B, Out>* op) : op(op) {}
    void process(const A& record) override { op->process_element1(record, current_timestamp()); }
    TwoInputStreamOperator<A, B, Out>* op;
  };
  struct Second final : Input<B> {
    explicit Second(TwoInputStreamOperator<A, B, Out>* op) : op(op) {}
    void process(const B& record) override { op->process_element2(record, current_timestamp()); }
    TwoInputStreamOperator<A, B, Out>* op;
  };

  std::unique_ptr<TwoInputStreamOperator<A, B, Out>> op_;
  First first_;
  Second second_;
};

}  // namespace detail
}  // namespace weir

#endif  // WEIR_STREAM_OPERATOR_H_
