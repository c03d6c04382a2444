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
// BarrierUnaligner (exactly-once with unaligned checkpoints, FLIP-76):
// never blocks; snapshots at the first barrier of checkpoint n from a
// channel whose data has not ended. The channels whose barrier n is yet to
// come are recorded from then on (what the task reads from them before it
// belongs to n's channel state), and when n arrived on all of them the
// channel state is complete. A barrier behind the end of its channel's data
// waits for the others (nothing more comes on that channel), so the last
// checkpoint of a finite input, whose barriers all follow the end of data,
// is taken after the task's input ended, as an aligned one would be. A
// newer barrier, or an abort of n, gives n up. A savepoint's barriers
// align, as BarrierAligner's do (savepoints hold no channel state).
// With an aligned-checkpoint timeout (`aligned_first`) it first aligns as
// BarrierAligner does, blocking the channels that delivered barrier n, and
// switches to unaligned (snapshot now, unblock, record the channels still
// to deliver n) when the timeout passed (on_timeout) or a priority barrier
// n came (its producer switched already).
//
// An iteration's head uses a BarrierUnaligner in every checkpointing mode,
// told which channels are its feedback (set_feedback): barrier n comes back
// on them only after the head passed it on, so they never start or hold up
// the snapshot; they are recorded until their barrier n came, and what
// they carried meanwhile is the channel state of the cycle (Chandy-Lamport's
// record of a channel into a process that has recorded its state). Its
// savepoints are taken the same way, with channel state.
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
  // Unaligned: the checkpoint triggered now records channel state until
  // its barrier came on every channel.
  bool records_channels = false;
  // Unaligned: the channel state of `completed_id` is complete.
  bool completed = false;
  int64_t completed_id = 0;
  // The checkpoint triggered now is unaligned: the task's barriers
  // overtake its outputs' queued data (priority events).
  bool unaligned = false;
};

class BarrierHandler {
 public:
  virtual ~BarrierHandler() = default;
  // `savepoint`: the barrier is a savepoint's (aligned in every mode);
  // `priority`: an unaligned checkpoint's.
  virtual BarrierDecision on_barrier(int channel, int64_t checkpoint_id, bool savepoint, bool priority) = 0;
  // The coordinator aborted `checkpoint_id`.
  virtual void on_abort(int64_t checkpoint_id) = 0;
  // The task's checkpoints start at `first`: every earlier one had ended
  // before the task was deployed. Their barriers (left under --failover
  // task in channels that outlive the attempts at either end) start
  // nothing and block no channel.
  virtual void start_at(int64_t first) { on_abort(first - 1); }
  // Whether the task must not read `channel` now.
  virtual bool is_blocked(int channel) const = 0;
  virtual bool is_aligning() const = 0;
  // Whether what the task reads from `channel` now is channel state.
  virtual bool is_recording(int /*channel*/) const { return false; }
  // The end of `channel`'s data came.
  virtual void on_end_of_data(int /*channel*/) {}
};

class BarrierAligner final : public BarrierHandler {
 public:
  enum class State { kIdle, kAligning };

  explicit BarrierAligner(int num_channels);

  BarrierDecision on_barrier(int channel, int64_t checkpoint_id, bool savepoint = false,
                             bool priority = false) override;
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

  BarrierDecision on_barrier(int channel, int64_t checkpoint_id, bool savepoint = false,
                             bool priority = false) override;
  void on_abort(int64_t checkpoint_id) override;
  void start_at(int64_t first) override;
  bool is_blocked(int) const override { return false; }
  bool is_aligning() const override { return false; }

 private:
  const int num_channels_;
  int64_t latest_triggered_ = -1;
  std::map<int64_t, int> pending_;  // checkpoint id -> barriers seen; -1 = aborted
};

class BarrierUnaligner final : public BarrierHandler {
 public:
  explicit BarrierUnaligner(int num_channels, bool aligned_first = false);

  BarrierDecision on_barrier(int channel, int64_t checkpoint_id, bool savepoint = false,
                             bool priority = false) override;
  void on_abort(int64_t checkpoint_id) override;
  bool is_blocked(int channel) const override {
    return savepoints_.is_blocked(channel) || (active_ && !triggered_ && seen_[channel] && aligned_first_);
  }
  bool is_aligning() const override {
    return savepoints_.is_aligning() || (active_ && !triggered_ && received_ > 0 && aligned_first_);
  }
  // The checkpoint aligning now, if one is (else -1).
  int64_t aligning() const { return is_aligning() && !savepoints_.is_aligning() ? current_id_ : -1; }
  // Its aligned-checkpoint timeout passed: switches the alignment under
  // way to unaligned (a trigger that records channels), if there is one.
  BarrierDecision on_timeout();
  bool is_recording(int channel) const override { return active_ && triggered_ && !seen_[channel]; }
  void on_end_of_data(int channel) override { ended_[channel] = true; }
  // An iteration head's: `feedback[c]` when channel c is a feedback channel.
  void set_feedback(std::vector<bool> feedback);

 private:
  // Takes the snapshot now: unaligned from here on.
  void trigger(BarrierDecision* d);

  const int num_channels_;
  const bool aligned_first_;
  BarrierAligner savepoints_;
  int64_t current_id_ = -1;  // newest checkpoint seen
  bool active_ = false;      // current_id_'s barriers are coming
  bool triggered_ = false;   // ... and its snapshot was taken
  int received_ = 0;
  int received_ordinary_ = 0;  // of the channels that are not feedback
  int ordinary_;               // channels that are not feedback
  std::vector<bool> seen_;
  std::vector<bool> ended_;
  std::vector<bool> feedback_;
  bool has_feedback_ = false;
};

// `unaligned` (exactly-once only): BarrierUnaligner instead of
// BarrierAligner, aligning first when `aligned_first` (a timeout is set).
std::unique_ptr<BarrierHandler> make_barrier_handler(CheckpointingMode mode, int num_channels,
                                                     bool unaligned = false, bool aligned_first = false);

}  // namespace weir::checkpoint

#endif  // WEIR_CHECKPOINT_BARRIER_HANDLER_H_
