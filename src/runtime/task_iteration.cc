// Task: its part in an iteration (DataStream::iterate). Round markers
// through the loop, and an iteration head's feedback: drained into its
// backlog, fed to the head operator while the outputs have room, recorded
// as channel state at a snapshot. How the rounds end an iteration, and why
// the head never waits in a push, is in task.h.
#include <filesystem>

#include <spdlog/spdlog.h>

#include "network/partition_writer.h"
#include "network/result_file.h"
#include "runtime/task.h"

namespace weir::runtime {
void Task::setup_iteration() {
  for (int c = 0; c < gate_.size(); ++c) {
    const InputGate::Channel& in = gate_.channel(c);
    if (!vertex_.iteration_head) {
      if (in.in_loop) ++iter_.loop_inputs;
      continue;
    }
    if (!in.feedback) {
      ++iter_.ordinary_open;
      continue;
    }
    ++iter_.loop_inputs;
    if (iter_.first_feedback < 0) {
      iter_.first_feedback = c;
      iter_.feedback_adapter = in.adapter;
    }
    // Event time comes from the iteration's input; the feedback carries
    // none (a record that goes round keeps its timestamp). Nothing was
    // emitted yet, so there is no change to pass on.
    (void)valve_.on_idle(c, true);
  }
  if (vertex_.iteration_head) {
    const std::string dir =
        network::result_directory(*services_.config, tdd_.job_id, ExchangeMode::kBlocking);
    backlog_ = std::make_unique<FeedbackQueue>(
        (std::filesystem::path(dir) / ("feedback-v" + std::to_string(vertex_.id) + "-s" +
                                       std::to_string(tdd_.execution.subtask) + "-a" +
                                       std::to_string(tdd_.execution.attempt)))
            .string(),
        static_cast<size_t>(services_.config->iteration_memory_bytes));
  }
}

int64_t Task::record_activity() const {
  return metrics_.records_in.load(std::memory_order_relaxed) + metrics_.records_out.load(std::memory_order_relaxed);
}

void Task::pass_round(int64_t round, bool dirty) {
  for (size_t i = 0; i < chain_.partitions.size(); ++i) {
    if (graph_->edges[vertex_.outputs[i]].in_loop) {
      chain_.partitions[i]->broadcast_event(network::EventKind::kRound, round, 0, dirty);
    }
  }
  iter_.round = round;
  iter_.seen = 0;
  iter_.dirty = false;
  iter_.activity = record_activity();
  last_flush_ = std::chrono::steady_clock::now();
}

void Task::start_rounds() {
  iter_.rounds = true;
  // Round 1 carries everything the input brought.
  pass_round(1, true);
}

void Task::on_round(int ch, const network::ChannelEvent& ev) {
  const InputGate::Channel& in = gate_.channel(ch);
  if (!(vertex_.iteration_head ? in.feedback : in.in_loop)) {
    throw std::runtime_error("an iteration round marker came on input channel " + std::to_string(ch) +
                             ", which is not in the loop");
  }
  if (ev.checkpoint_id != iter_.round + (vertex_.iteration_head ? 0 : 1) || iter_.seen >= iter_.loop_inputs) {
    throw std::runtime_error("iteration round " + std::to_string(ev.checkpoint_id) + " came on input channel " +
                             std::to_string(ch) + " out of turn (round " + std::to_string(iter_.round) + ")");
  }
  iter_.dirty |= ev.dirty;
  if (++iter_.seen < iter_.loop_inputs) return;
  if (!vertex_.iteration_head) {
    pass_round(ev.checkpoint_id, iter_.dirty || record_activity() != iter_.activity);
    return;
  }
  // Round n came back from every feedback subtask.
  if (!iter_.dirty && backlog_->empty() && iter_.chunk_at >= iter_.chunk.size()) {
    spdlog::info("job {}: {} ({}) ends its iteration after {} rounds ({} bytes of feedback spilled)", tdd_.job_id,
                 vertex_.name, id().to_string(), ev.checkpoint_id, backlog_->spilled_bytes());
    iter_.ended = true;
    chain_.contexts[0]->set_gauge("iteration.rounds", ev.checkpoint_id);
    chain_.contexts[0]->set_gauge("iteration.spilled_bytes", backlog_->spilled_bytes());
    end_of_input();
    return;
  }
  pass_round(ev.checkpoint_id + 1, record_activity() != iter_.activity || !backlog_->empty());
}

void Task::queue_feedback(int ch, const network::Buffer& buffer) {
  InputGate::Channel& in = gate_.channel(ch);
  if (iter_.ended) {
    throw std::runtime_error("a record came back on the feedback of " + vertex_.name +
                             " after its iteration had ended");
  }
  absl::Status pushed;
  const bool ok = in.deserializer.feed(buffer, [&](std::string_view rec) {
    pushed = backlog_->push(rec);
    return pushed.ok();
  });
  if (!pushed.ok()) throw std::runtime_error(std::string(pushed.message()));
  if (!ok) throw std::runtime_error("corrupt record on feedback channel " + std::to_string(ch));
}

bool Task::process_backlog() {
  if (iter_.chunk_at >= iter_.chunk.size()) {
    if (backlog_ == nullptr || backlog_->empty()) return false;
    iter_.chunk_at = 0;
    if (absl::Status s = backlog_->pop_chunk(&iter_.chunk); !s.ok()) throw std::runtime_error(std::string(s.message()));
  }
  int64_t records = 0;
  while (iter_.chunk_at < iter_.chunk.size()) {
    uint64_t len = 0;
    size_t header = 0;
    const char* p = iter_.chunk.data() + iter_.chunk_at;
    const size_t left = iter_.chunk.size() - iter_.chunk_at;
    if (!network::parse_record_header(p, left, &len, &header) || header + len > left) {
      throw std::runtime_error("the feedback backlog of " + vertex_.name + " is corrupt");
    }
    iter_.chunk_at += header + len;
    ++records;
    if (!iter_.feedback_adapter->process_serialized(std::string_view(p + header, len))) {
      throw std::runtime_error("corrupt record in the feedback backlog of " + vertex_.name);
    }
    if (gate_.priority_waiting() || !outputs_available()) break;
  }
  TaskMetrics::add(metrics_.records_in, records);
  if (iter_.chunk_at >= iter_.chunk.size()) {
    iter_.chunk.clear();
    iter_.chunk_at = 0;
  }
  return true;
}

void Task::record_backlog() {
  std::string unprocessed(iter_.chunk, std::min(iter_.chunk_at, iter_.chunk.size()));
  std::string queued;
  if (absl::Status s = backlog_->contents(&queued); !s.ok()) throw std::runtime_error(std::string(s.message()));
  unprocessed += queued;
  if (!unprocessed.empty()) gate_.add_unprocessed(iter_.first_feedback, unprocessed);
}

}  // namespace weir::runtime
