#include "runtime/input_gate.h"

#include <algorithm>
#include <stdexcept>

#include "common/clock.h"

namespace weir::runtime {

void InputGate::open(CheckpointingMode mode, Wakeup* consumer, bool unaligned,
                     std::chrono::milliseconds aligned_timeout) {
  std::vector<bool> feedback(channels_.size());
  for (size_t c = 0; c < channels_.size(); ++c) feedback[c] = channels_[c].feedback;
  const bool head = std::find(feedback.begin(), feedback.end(), true) != feedback.end();
  // An iteration head reads as unaligned checkpoints do in every mode: it
  // never waits in a push, and records its feedback.
  unaligned_ = (unaligned && mode == CheckpointingMode::kExactlyOnce) || head;
  aligned_timeout_ = head ? std::chrono::milliseconds(0) : aligned_timeout;
  for (Channel& c : channels_) {
    c.reader->set_consumer(consumer);
    if (unaligned_) c.reader->set_priority_counter(&priority_);
  }
  if (head) {
    auto unaligner = std::make_unique<checkpoint::BarrierUnaligner>(size());
    unaligner->set_feedback(std::move(feedback));
    barriers_ = std::move(unaligner);
  } else if (!channels_.empty()) {
    barriers_ = checkpoint::make_barrier_handler(mode, size(), unaligned_, aligned_timeout_.count() > 0);
  }
  channel_state_.assign(channels_.size(), std::string());
}

std::optional<network::ChannelEvent> InputGate::poll_priority(int* ch) {
  for (size_t i = 0; i < channels_.size(); ++i) {
    std::optional<network::ChannelEvent> ev = channels_[i].reader->poll_priority();
    if (ev) {
      *ch = static_cast<int>(i);
      return ev;
    }
  }
  return std::nullopt;
}

std::vector<std::string> InputGate::take_channel_state() {
  std::vector<std::string> out(channels_.size());
  out.swap(channel_state_);
  return out;
}

std::optional<network::ChannelEvent> InputGate::poll(int* ch, bool feedback_only) {
  const size_t n = channels_.size();
  for (size_t i = 0; i < n; ++i) {
    const size_t idx = (next_ + i) % n;
    if (barriers_->is_blocked(static_cast<int>(idx))) continue;
    Channel& c = channels_[idx];
    if (feedback_only && !c.feedback) continue;
    std::optional<network::ChannelEvent> ev = c.reader->poll();
    if (!ev) {
      if (c.remote != nullptr && !c.ended && c.remote->closed()) {
        throw std::runtime_error("the channel from " + c.producer + " closed: the connection to its TaskManager (" +
                                 c.producer_location + ") broke");
      }
      continue;
    }
    next_ = idx + 1;
    *ch = static_cast<int>(idx);
    return ev;
  }
  return std::nullopt;
}

InputGate::Barrier InputGate::on_barrier(int ch, const network::ChannelEvent& barrier, const Held& held) {
  const int64_t checkpoint_id = barrier.checkpoint_id;
  if (checkpoint_id != align_id_) {
    align_id_ = checkpoint_id;
    align_start_ = std::chrono::steady_clock::now();
  }
  // The data a barrier overtook is channel state when its channel was
  // being recorded for its checkpoint, or when it starts one.
  const bool was_recording = recording_id_ == checkpoint_id && barriers_->is_recording(ch);
  Barrier b;
  b.timestamp_ms = barrier.timestamp_ms;
  b.savepoint = barrier.savepoint;
  b.final = barrier.final;
  b.decision = barriers_->on_barrier(ch, checkpoint_id, barrier.savepoint, barrier.priority);
  if (b.decision.trigger) b.alignment_ms = ms_since(align_start_);
  if (b.decision.abandoned && b.decision.abandoned_id == recording_id_) recording_id_ = -1;
  if (b.decision.records_channels) begin_recording(checkpoint_id, held);
  // An alignment that may time out: from the checkpoint's trigger time.
  align_deadline_ = INT64_MAX;
  // The final checkpoint stays aligned: it is taken once the input ended.
  if (aligned_timeout_.count() > 0 && barriers_->is_aligning() && !barrier.savepoint && !barrier.final) {
    align_deadline_ = barrier.timestamp_ms + aligned_timeout_.count();
    align_timestamp_ = barrier.timestamp_ms;
    align_final_ = barrier.final;
  }
  if ((b.decision.records_channels || was_recording) && barrier.overtaken != nullptr) {
    channel_state_[ch].append(*barrier.overtaken);
  }
  if (b.decision.completed) recording_id_ = -1;
  return b;
}

void InputGate::begin_recording(int64_t checkpoint_id, const Held& held) {
  // Each channel's state begins with the head of the record its
  // deserializer holds, and, for the channel of the held buffer, with the
  // rest of that buffer.
  recording_id_ = checkpoint_id;
  for (size_t c = 0; c < channels_.size(); ++c) channel_state_[c].assign(channels_[c].deserializer.partial());
  if (held.ch >= 0) channel_state_[held.ch].append(held.rest());
}

int64_t InputGate::alignment_deadline() const {
  return barriers_ != nullptr && barriers_->is_aligning() ? align_deadline_ : INT64_MAX;
}

InputGate::Barrier InputGate::check_alignment_timeout(int64_t now_ms, const Held& held) {
  Barrier b;
  auto* unaligner = dynamic_cast<checkpoint::BarrierUnaligner*>(barriers_.get());
  if (unaligner == nullptr || now_ms < alignment_deadline()) return b;
  const int64_t id = unaligner->aligning();
  if (id < 0) return b;
  b.decision = unaligner->on_timeout();
  if (!b.decision.trigger) return b;
  b.alignment_ms = ms_since(align_start_);
  b.timestamp_ms = align_timestamp_;
  b.final = align_final_;
  align_deadline_ = INT64_MAX;
  begin_recording(id, held);
  // The barriers still on their way here overtake what is in front of them.
  for (size_t c = 0; c < channels_.size(); ++c) {
    if (barriers_->is_recording(static_cast<int>(c))) channels_[c].reader->promote_barrier(id);
  }
  return b;
}

void InputGate::on_abort(int64_t checkpoint_id) {
  if (barriers_ != nullptr) barriers_->on_abort(checkpoint_id);
  if (checkpoint_id >= recording_id_ && recording_id_ >= 0) {
    recording_id_ = -1;
    channel_state_.assign(channels_.size(), std::string());
  }
}

bool InputGate::end(int ch) {
  Channel& c = channels_[ch];
  if (c.ended) return false;
  c.ended = true;
  ++ended_;
  barriers_->on_end_of_data(ch);
  return all_ended();
}

bool InputGate::reopen(int ch) {
  Channel& c = channels_[ch];
  if (!c.ended) return true;
  c.ended = false;
  --ended_;
  return false;
}

int64_t InputGate::leave() {
  int64_t dropped = 0;
  for (Channel& c : channels_) {
    if (c.deserializer.has_partial()) ++dropped;
    dropped += c.reader->detach();
    c.reader->set_consumer(nullptr);
    c.reader->set_priority_counter(nullptr);  // the counter goes with this task
  }
  return dropped;
}

void InputGate::close() {
  for (Channel& c : channels_) {
    c.reader->close();
    c.reader->set_consumer(nullptr);
    c.reader->set_priority_counter(nullptr);  // the counter goes with this task
  }
}

}  // namespace weir::runtime
