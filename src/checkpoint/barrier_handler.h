// What a task with several input channels does when checkpoint barriers
// arrive: explicit state machines, free of threads and I/O, so every
// interleaving can be unit-tested.
//
// BarrierAligner (exactly-once): on the first barrier of checkpoint n it
// enters kAligning and blocks that channel; each further barrier n blocks its
// channel; when n arrived on all channels it tells the task to snapshot and
// unblocks everything. A newer barrier, or an abort of n, ends the alignment
// (n is abandoned) and unblocks.
//
// BarrierTracker (at-least-once): never blocks; counts barriers per
// checkpoint and snapshots when the last one arrives.
//
// Confined to the task thread.
#ifndef WEIR_CHECKPOINT_BARRIER_HANDLER_H_
#define WEIR_CHECKPOINT_BARRIER_HANDLER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "weir/config.h"

namespace weir::checkpoint {

struct BarrierDecision {
  // Take checkpoint `checkpoint_id` now.
  bool trigger = false;
  int64_t checkpoint_id = 0;
  // An alignment for `abandoned_id` was given up (a newer barrier came).
  bool abandoned = false;
  int64_t abandoned_id = 0;
};

class BarrierHandler {
 public:
  virtual ~BarrierHandler() = default;
  virtual BarrierDecision on_barrier(int channel, int64_t checkpoint_id) = 0;
  // The coordinator aborted `checkpoint_id`.
  virtual void on_abort(int64_t checkpoint_id) = 0;
  // Whether the task must not read `channel` now.
  virtual bool is_blocked(int channel) const = 0;
  virtual bool is_aligning() const = 0;
};

class BarrierAligner final : public BarrierHandler {
 public:
  enum class State { kIdle, kAligning };

  explicit BarrierAligner(int num_channels);

  BarrierDecision on_barrier(int channel, int64_t checkpoint_id) override;
  void on_abort(int64_t checkpoint_id) override;
  bool is_blocked(int channel) const override { return blocked_[channel]; }
  bool is_aligning() const override { return state_ == State::kAligning; }
  State state() const { return state_; }
  int64_t current_checkpoint() const { return current_id_; }

 private:
  void start(int64_t id);
  void reset();

  const int num_channels_;
  State state_ = State::kIdle;
  int64_t current_id_ = -1;  // newest checkpoint seen (aligned, aborted or aligning)
  int received_ = 0;
  std::vector<bool> blocked_;
};

class BarrierTracker final : public BarrierHandler {
 public:
  explicit BarrierTracker(int num_channels) : num_channels_(num_channels) {}

  BarrierDecision on_barrier(int channel, int64_t checkpoint_id) override;
  void on_abort(int64_t checkpoint_id) override;
  bool is_blocked(int) const override { return false; }
  bool is_aligning() const override { return false; }

 private:
  const int num_channels_;
  int64_t latest_triggered_ = -1;
  std::map<int64_t, int> pending_;  // checkpoint id -> barriers seen; -1 = aborted
};

std::unique_ptr<BarrierHandler> make_barrier_handler(CheckpointingMode mode, int num_channels);

}  // namespace weir::checkpoint

#endif  // WEIR_CHECKPOINT_BARRIER_HANDLER_H_
