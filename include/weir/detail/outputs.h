// The typed outputs that connect operators: chained (a direct call to the
// next operator in the chain), fan-out (several downstream), discarding (no
// consumer), and partitioned (serialize into the network channel chosen by
// the edge's partitioning); and the input adapter that deserializes a frame
// for the operator it feeds. kRecordOps<T> is the table of them by which the
// runtime wires an edge of record type T (see RecordOps in graph.h).
// Confined to the task thread.
#ifndef WEIR_DETAIL_OUTPUTS_H_
#define WEIR_DETAIL_OUTPUTS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "weir/detail/graph.h"
#include "weir/detail/operator.h"
#include "weir/key_group.h"
#include "weir/serializer.h"

namespace weir::detail {


// ---- Outputs ---------------------------------------------------------------

// `records_in` counts what reaches `next` (its numRecordsIn).
template <typename T>
class ChainedOutput final : public Output<T> {
 public:
  ChainedOutput(OperatorBase* next, Counter* records_in)
      : next_(static_cast<Input<T>*>(next->input_at(0))), op_(next), records_in_(records_in) {}
  void collect(const T& r) override {
    this->count();
    records_in_->inc();
    next_->process(r);
  }
  void emit_watermark(int64_t wm) override { op_->process_watermark(wm); }
  void emit_idle(bool idle) override { op_->process_idle(idle); }

 private:
  Input<T>* next_;
  OperatorBase* op_;
  Counter* records_in_;
};

template <typename T>
class FanOutput final : public Output<T> {
 public:
  explicit FanOutput(std::vector<std::unique_ptr<OutputBase>> outs) : owned_(std::move(outs)) {
    for (auto& o : owned_) outs_.push_back(static_cast<Output<T>*>(o.get()));
  }
  void collect(const T& r) override {
    this->count();
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
  // The per-record path of every exchange, compiled in the job's translation
  // unit. Flattened so the serializer's appends are inlined whatever the
  // compiler's inlining budget for that unit (which scales with the unit's
  // size): left to the budget, a small job's unit calls std::string::append
  // out of line for each field, ~5 % of a keyed pipeline's CPU
  // (docs/benchmarks.md, "Refactoring without regressions").
  [[gnu::flatten]] void collect(const T& r) override {
    this->count();
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

// `records_in` counts what reaches `target` (its numRecordsIn).
template <typename T>
class TypedInputAdapter final : public InputAdapter {
 public:
  TypedInputAdapter(Input<T>* target, Counter* records_in) : target_(target), records_in_(records_in) {}
  bool process_serialized(std::string_view bytes) override {
    ByteReader r(bytes);
    int64_t ts = r.get_fixed<int64_t>();
    T v = Serializer<T>::read(r);
    if (!r.ok() || !r.at_end()) return false;
    current_timestamp() = ts;
    records_in_->inc();
    target_->process(v);
    return true;
  }

 private:
  Input<T>* target_;
  Counter* records_in_;
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
std::unique_ptr<InputAdapter> read_input(OperatorBase* target, int input, Counter* records_in) {
  return std::make_unique<TypedInputAdapter<T>>(static_cast<Input<T>*>(target->input_at(input)), records_in);
}
template <typename T>
std::unique_ptr<OutputBase> chain_to(OperatorBase* target, Counter* records_in) {
  return std::make_unique<ChainedOutput<T>>(target, records_in);
}
template <typename T>
std::unique_ptr<OutputBase> fan_out(std::vector<std::unique_ptr<OutputBase>> outs) {
  return std::make_unique<FanOutput<T>>(std::move(outs));
}

template <typename T>
bool read_key_hash(const void* key_hash, std::string_view frame, uint64_t* hash) {
  ByteReader r(frame);
  r.get_fixed<int64_t>();  // the timestamp
  T v = Serializer<T>::read(r);
  if (!r.ok() || !r.at_end()) return false;
  *hash = (*static_cast<const std::function<uint64_t(const T&)>*>(key_hash))(v);
  return true;
}

// The runtime's table for records of type T (see RecordOps).
template <typename T>
inline constexpr RecordOps kRecordOps{&make_partition_output<T>, &read_input<T>, &chain_to<T>, &fan_out<T>,
                                      &read_key_hash<T>};

}  // namespace weir::detail

#endif  // WEIR_DETAIL_OUTPUTS_H_
