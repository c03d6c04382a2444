#include "checkpoint/barrier_handler.h"

namespace weir::checkpoint {

BarrierAligner::BarrierAligner(int num_channels)
    : num_channels_(num_channels), blocked_(num_channels, false) {}

void BarrierAligner::start(int64_t id) {
  state_ = State::kAligning;
  current_id_ = id;
  received_ = 0;
}

void BarrierAligner::reset() {
  state_ = State::kIdle;
  received_ = 0;
  blocked_.assign(num_channels_, false);
}

BarrierDecision BarrierAligner::on_barrier(int channel, int64_t id) {
  BarrierDecision d;
  if (id < current_id_ || (id == current_id_ && state_ == State::kIdle)) {
    return d;  // a barrier of a checkpoint already taken or given up
  }
  if (id > current_id_) {
    if (state_ == State::kAligning) {
      d.abandoned = true;
      d.abandoned_id = current_id_;
      reset();
    }
    start(id);
  }
  if (blocked_[channel]) return d;  // a second barrier n on one channel: protocol bug upstream
  blocked_[channel] = true;
  ++received_;
  if (received_ == num_channels_) {
    d.trigger = true;
    d.checkpoint_id = id;
    reset();
  }
  return d;
}

void BarrierAligner::on_abort(int64_t id) {
  if (id < current_id_) return;
  if (id == current_id_ && state_ == State::kIdle) return;
  // Either the alignment in progress, or one whose barriers are yet to come.
  reset();
  current_id_ = id;
}

BarrierDecision BarrierTracker::on_barrier(int /*channel*/, int64_t id) {
  BarrierDecision d;
  if (id <= latest_triggered_) return d;
  int& seen = pending_[id];
  if (seen < 0) return d;  // aborted
  if (++seen < num_channels_) return d;
  d.trigger = true;
  d.checkpoint_id = id;
  latest_triggered_ = id;
  pending_.erase(pending_.begin(), pending_.upper_bound(id));
  return d;
}

void BarrierTracker::on_abort(int64_t id) {
  if (id <= latest_triggered_) return;
  pending_[id] = -1;
}

std::unique_ptr<BarrierHandler> make_barrier_handler(CheckpointingMode mode, int num_channels) {
  if (mode == CheckpointingMode::kAtLeastOnce) {
    return std::make_unique<BarrierTracker>(num_channels);
  }
  return std::make_unique<BarrierAligner>(num_channels);
}

}  // namespace weir::checkpoint
