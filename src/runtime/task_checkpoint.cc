// Task: its part of a checkpoint. The snapshot of its chain and the
// barrier it sends on (aligned, or a priority barrier overtaking its
// outputs' queued data), the wait for an unaligned checkpoint's channel
// state before the asynchronous part, and an aligned barrier promoted once
// its aligned-checkpoint timeout passed. The input side of barriers is in
// task_inputs.cc and input_gate.h; the snapshot itself in
// subtask_checkpointer.h.
#include "checkpoint/format.h"
#include "runtime/task.h"

namespace weir::runtime {

void Task::perform_checkpoint(int64_t checkpoint_id, int64_t timestamp_ms, int64_t alignment_ms,
                              bool savepoint, bool records_channels, bool unaligned, bool final) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<SubtaskCheckpointer::ChainedOperator> chain;
  for (size_t i = 0; i < chain_.operators.size(); ++i) chain.push_back({graph_->uids[vertex_.nodes[i]], chain_.operators[i].get()});
  auto captured = checkpointer_.snapshot(chain, checkpoint_id, savepoint);
  // The barrier goes downstream whatever happened here: records after it
  // belong to the next checkpoint. An unaligned one overtakes the data
  // queued in front of it.
  for (auto& p : chain_.partitions) {
    if (unaligned && !savepoint) {
      p->broadcast_priority_barrier(checkpoint_id, timestamp_ms, final);
    } else {
      p->broadcast_event(network::EventKind::kBarrier, checkpoint_id, timestamp_ms, savepoint, final);
    }
  }
  // Aligned first: a barrier still queued when the timeout passed overtakes
  // the data in front of it (as Flink's output side does). The final
  // checkpoint and savepoints stay aligned.
  aligned_barrier_ = -1;
  aligned_barrier_deadline_ = INT64_MAX;
  if (this->unaligned() && !unaligned && !savepoint && !final && !chain_.partitions.empty()) {
    aligned_barrier_ = checkpoint_id;
    aligned_barrier_deadline_ =
        timestamp_ms + std::chrono::duration_cast<std::chrono::milliseconds>(
                           services_.config->checkpoint.aligned_timeout).count();
  }
  last_flush_ = std::chrono::steady_clock::now();
  if (!captured.ok()) {
    services_.job_master->decline_checkpoint(id(), checkpoint_id, std::string(captured.status().message()));
    return;
  }
  if (records_channels) {
    unaligned_pending_ = PendingCheckpoint{checkpoint_id, std::move(*captured), ms_since(start), alignment_ms, start};
    return;
  }
  checkpointer_.finish_async(std::move(*captured), checkpoint_id, ms_since(start), alignment_ms,
                             ahead_.on ? chain_.source->released_records() : 0);
}

void Task::promote_late_barrier() {
  if (aligned_barrier_ < 0 || services_.clock->wall_ms() < aligned_barrier_deadline_) return;
  for (auto& p : chain_.partitions) p->promote_barrier(aligned_barrier_);
  aligned_barrier_ = -1;
  aligned_barrier_deadline_ = INT64_MAX;
}

void Task::complete_channel_state(int64_t checkpoint_id) {
  std::vector<std::string> state = gate_.take_channel_state();
  if (unaligned_pending_.id != checkpoint_id) return;  // declined when its snapshot failed
  PendingCheckpoint pending = std::move(unaligned_pending_);
  unaligned_pending_ = PendingCheckpoint{};
  detail::OperatorListStateData list;
  list.mode = detail::Redistribution::kUnion;
  int64_t bytes = 0;
  for (size_t c = 0; c < state.size(); ++c) {
    if (state[c].empty()) continue;
    bytes += static_cast<int64_t>(state[c].size());
    const InputGate::Channel& in = gate_.channel(static_cast<int>(c));
    list.entries.push_back(checkpoint::encode_channel_state(
        {in.job_edge, in.producer_subtask, tdd_.execution.subtask, std::move(state[c])}));
  }
  if (!list.entries.empty()) {
    SubtaskCheckpointer::add_operator_list(pending.captured.get(), graph_->uids[vertex_.nodes[0]],
                                           std::string(checkpoint::kChannelStateList), std::move(list));
  }
  // The alignment of an unaligned checkpoint: from its snapshot until the
  // last barrier came (the time its channels were recorded).
  checkpointer_.finish_async(std::move(pending.captured), checkpoint_id, pending.sync_ms,
                             pending.alignment_ms + ms_since(pending.started), 0, bytes);
}

}  // namespace weir::runtime
