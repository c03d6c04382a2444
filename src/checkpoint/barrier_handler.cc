#include "checkpoint/barrier_handler.h"

#include <algorithm>

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

BarrierDecision BarrierAligner::on_barrier(int channel, int64_t id, bool /*savepoint*/, bool /*priority*/) {
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

BarrierDecision BarrierTracker::on_barrier(int /*channel*/, int64_t id, bool /*savepoint*/, bool /*priority*/) {
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

void BarrierTracker::start_at(int64_t first) {
  latest_triggered_ = std::max(latest_triggered_, first - 1);
  pending_.erase(pending_.begin(), pending_.upper_bound(latest_triggered_));
}

void BarrierTracker::on_abort(int64_t id) {
  if (id <= latest_triggered_) return;
  pending_[id] = -1;
}

BarrierUnaligner::BarrierUnaligner(int num_channels, bool aligned_first)
    : num_channels_(num_channels),
      aligned_first_(aligned_first),
      savepoints_(num_channels),
      ordinary_(num_channels),
      seen_(num_channels, false),
      ended_(num_channels, false),
      feedback_(num_channels, false) {}

void BarrierUnaligner::set_feedback(std::vector<bool> feedback) {
  feedback_ = std::move(feedback);
  feedback_.resize(num_channels_, false);
  ordinary_ = static_cast<int>(std::count(feedback_.begin(), feedback_.end(), false));
  has_feedback_ = ordinary_ < num_channels_;
}

void BarrierUnaligner::trigger(BarrierDecision* d) {
  triggered_ = true;
  d->trigger = true;
  d->checkpoint_id = current_id_;
  d->records_channels = true;
  d->unaligned = true;
}

BarrierDecision BarrierUnaligner::on_timeout() {
  BarrierDecision d;
  if (aligning() >= 0) trigger(&d);
  return d;
}

BarrierDecision BarrierUnaligner::on_barrier(int channel, int64_t id, bool savepoint, bool priority) {
  BarrierDecision d;
  if (id < current_id_) return d;  // of a checkpoint already taken or given up
  if (id > current_id_) {
    // A newer barrier gives up the checkpoint still under way, or the
    // savepoint still aligning.
    if (active_) {
      d.abandoned = true;
      d.abandoned_id = current_id_;
    } else if (savepoints_.is_aligning() && !savepoint) {
      d.abandoned = true;
      d.abandoned_id = savepoints_.current_checkpoint();
      savepoints_.on_abort(savepoints_.current_checkpoint());
    }
    current_id_ = id;
    // An iteration head records its feedback for savepoints too: aligned,
    // it would wait for barriers that come back only after it sent them.
    active_ = !savepoint || has_feedback_;
    triggered_ = false;
    received_ = 0;
    received_ordinary_ = 0;
    seen_.assign(num_channels_, false);
  }
  if (savepoint && !has_feedback_) {
    BarrierDecision a = savepoints_.on_barrier(channel, id);
    if (d.abandoned) {
      a.abandoned = true;
      a.abandoned_id = d.abandoned_id;
    }
    return a;
  }
  if (!active_ || seen_[channel]) return d;  // a second barrier n on one channel: protocol bug upstream
  seen_[channel] = true;
  ++received_;
  if (!feedback_[channel]) ++received_ordinary_;
  if (!triggered_) {
    if (aligned_first_ && !priority && !has_feedback_) {
      // Aligning: the checkpoint is taken aligned once every barrier came.
      if (received_ == num_channels_) {
        triggered_ = true;
        d.trigger = true;
        d.checkpoint_id = id;
      }
    } else if ((!ended_[channel] && !feedback_[channel]) || received_ordinary_ == ordinary_) {
      trigger(&d);
    }
  }
  if (received_ == num_channels_) {
    active_ = false;
    d.completed = true;
    d.completed_id = id;
  }
  return d;
}

void BarrierUnaligner::on_abort(int64_t id) {
  savepoints_.on_abort(id);
  if (id < current_id_) return;
  // The checkpoint under way, or one whose barriers are yet to come: they
  // start nothing.
  active_ = false;
  current_id_ = id;
}

std::unique_ptr<BarrierHandler> make_barrier_handler(CheckpointingMode mode, int num_channels, bool unaligned,
                                                     bool aligned_first) {
  if (mode == CheckpointingMode::kAtLeastOnce) {
    return std::make_unique<BarrierTracker>(num_channels);
  }
  if (unaligned && mode == CheckpointingMode::kExactlyOnce) {
    return std::make_unique<BarrierUnaligner>(num_channels, aligned_first);
  }
  return std::make_unique<BarrierAligner>(num_channels);
}

}  // namespace weir::checkpoint
