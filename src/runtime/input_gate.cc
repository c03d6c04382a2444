#include "runtime/input_gate.h"

#include <stdexcept>

#include "common/clock.h"

namespace weir::runtime {

void InputGate::open(CheckpointingMode mode, Wakeup* consumer) {
  for (Channel& c : channels_) c.reader->set_consumer(consumer);
  if (!channels_.empty()) barriers_ = checkpoint::make_barrier_handler(mode, size());
}

std::optional<network::ChannelEvent> InputGate::poll(int* ch) {
  const size_t n = channels_.size();
  for (size_t i = 0; i < n; ++i) {
    const size_t idx = (next_ + i) % n;
    if (barriers_->is_blocked(static_cast<int>(idx))) continue;
    Channel& c = channels_[idx];
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

InputGate::Barrier InputGate::on_barrier(int ch, int64_t checkpoint_id) {
  if (checkpoint_id != align_id_) {
    align_id_ = checkpoint_id;
    align_start_ = std::chrono::steady_clock::now();
  }
  Barrier b;
  b.decision = barriers_->on_barrier(ch, checkpoint_id);
  if (b.decision.trigger) b.alignment_ms = ms_since(align_start_);
  return b;
}

void InputGate::on_abort(int64_t checkpoint_id) {
  if (barriers_ != nullptr) barriers_->on_abort(checkpoint_id);
}

bool InputGate::end(int ch) {
  Channel& c = channels_[ch];
  if (c.ended) return false;
  c.ended = true;
  ++ended_;
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
  }
  return dropped;
}

void InputGate::close() {
  for (Channel& c : channels_) {
    c.reader->close();
    c.reader->set_consumer(nullptr);
  }
}

}  // namespace weir::runtime
