// Task: its inputs. The input gate's channels (local or network channels
// of pipelined edges, result files of blocking ones, fetched first from a
// remote result directory when they are not here), what arrives on them
// (records, barriers, watermarks, end of partition, resets) and what it
// means to the head operator, and how full the task's channels are
// (Task::metrics). The rest of the task is in task.cc; reading the
// channels in turn is input_gate.h's, the input's event time
// watermark_valve.h's.
#include "runtime/task.h"

#include <algorithm>
#include <cstdlib>

#include "common/clock.h"
#include "runtime/remote_results.h"

namespace weir::runtime {

absl::Status Task::build_inputs() {
  detail::OperatorBase* head = chain_.operators[0].get();
  for (int e : vertex_.inputs) {
    const graph::JobEdge& je = graph_->edges[e];
    const detail::StreamEdge& se = graph_->stream.edges[je.stream_edge];
    adapters_.push_back(
        se.ops->make_reader(head, se.input, &chain_.contexts[0]->metrics().counter(detail::kRecordsInMetric)));
    if (adapter_of_input_.size() <= static_cast<size_t>(se.input)) adapter_of_input_.resize(se.input + 1);
    adapter_of_input_[se.input] = adapters_.back().get();
    int producers = graph_->vertices[je.source_vertex].parallelism;
    for (int p = 0; p < producers; ++p) {
      if (je.pointwise && p != tdd_.execution.subtask) continue;
      InputGate::Channel in;
      if (je.blocking()) {
        auto reader = open_result(je, e, p);
        if (!reader.ok()) return reader.status();
        in.reader = std::move(*reader);
      } else {
        std::shared_ptr<network::LocalChannel> local =
            services_.channels->get(
            {tdd_.job_id, channel_attempt(tdd_, *services_.config), e, p, tdd_.execution.subtask});
        register_channel(local, /*input=*/true);
        if (task_failover() && tdd_.task_locations != nullptr &&
            tdd_.task_locations->at(graph_->task_index(je.source_vertex, p)) != tdd_.location) {
          in.remote = local;
          in.producer = "vertex " + std::to_string(je.source_vertex) + " subtask " + std::to_string(p);
          in.producer_location = tdd_.task_locations->at(graph_->task_index(je.source_vertex, p));
        }
        in.reader = std::move(local);
      }
      in.adapter = adapters_.back().get();
      in.edge = &se;
      in.job_edge = e;
      in.producer_subtask = p;
      in.feedback = je.feedback;
      in.in_loop = je.in_loop;
      gate_.add(std::move(in));
    }
  }
  gate_.open(services_.config->checkpoint.mode, &wakeup_, unaligned(),
             std::chrono::duration_cast<std::chrono::milliseconds>(services_.config->checkpoint.aligned_timeout));
  gate_.start_at(tdd_.first_checkpoint_id);
  if (never_blocks()) {
    for (auto& p : chain_.partitions) p->track_space();
  }
  valve_ = WatermarkValve(gate_.size());
  if (graph_->iterates()) setup_iteration();
  if (chain_.sorted_input) {
    batch::ExternalSorter::Options o;
    o.spill_directory = sort_directory();
    o.memory_bytes = services_.config->sort_memory_bytes;
    sorted_ = std::make_unique<batch::SortedInput>(std::move(o), graph_->max_parallelism);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<network::ChannelReader>> Task::open_result(const graph::JobEdge& je, int edge,
                                                                          int producer) {
  const int consumer = tdd_.execution.subtask;
  // A blocking result stays on the TaskManager that wrote it; one written
  // elsewhere is served from there. Persisted results are on shared storage.
  const std::string* where = nullptr;
  if (je.exchange == ExchangeMode::kBlocking && tdd_.task_locations != nullptr && services_.data_plane != nullptr) {
    where = &tdd_.task_locations->at(graph_->task_index(je.source_vertex, producer));
  }
  if (where == nullptr || *where == tdd_.location) {
    const std::string path = network::result_file_path(
        network::result_directory(*services_.config, tdd_.job_id, je.exchange), edge, producer, consumer);
    const std::string remote = network::remote_result_directory(*services_.config, tdd_.job_id, je.exchange);
    if (!remote.empty()) {
      absl::Status fetched = fetch_result(remote, path);
      if (!fetched.ok()) return fetched;
    }
    auto file = network::ResultFileReader::open(path);
    if (!file.ok()) return file.status();
    return std::shared_ptr<network::ChannelReader>(std::move(*file));
  }
  const network::ChannelKey key{tdd_.job_id, channel_attempt(tdd_, *services_.config), edge, producer, consumer};
  std::shared_ptr<network::LocalChannel> local = services_.channels->get(key);
  register_channel(local, /*input=*/true);
  const std::string what = "the result of vertex " + std::to_string(je.source_vertex) + " subtask " +
                           std::to_string(producer) + " (edge " + std::to_string(edge) + ") on " + *where;
  if (absl::Status s = services_.data_plane->request_result(*where, key); !s.ok()) {
    return absl::UnavailableError(what + " cannot be fetched: " + std::string(s.message()));
  }
  return std::make_shared<network::ServedResultReader>(std::move(local), what);
}

void Task::register_channel(const std::shared_ptr<network::LocalChannel>& c, bool input) {
  absl::MutexLock lock(&channels_mu_);
  all_channels_.push_back(c);
  (input ? input_channels_ : output_channels_).push_back(c.get());
  // Unaligned: the task waits for space in its outputs in its loop, not in
  // a push, so it hears of priority barriers meanwhile.
  if (!input && never_blocks()) c->set_producer(&wakeup_);
  if (input && services_.config->network.debloat) debloated_inputs_.push_back(c);
  if (cancelled_ && !task_failover()) c->close();
}

void Task::debloat(std::chrono::steady_clock::time_point now) {
  const NetworkConfig& net = services_.config->network;
  if (!net.debloat || debloated_inputs_.empty()) return;
  constexpr auto kPeriod = std::chrono::milliseconds(200);  // Flink's buffer-debloat.period
  constexpr int kMinBuffer = 512;
  const int64_t bytes = metrics_.bytes_in.load(std::memory_order_relaxed);
  if (debloat_.last == std::chrono::steady_clock::time_point{}) {
    debloat_.last = now;
    debloat_.bytes = bytes;
    return;
  }
  const double seconds = std::chrono::duration<double>(now - debloat_.last).count();
  if (seconds < std::chrono::duration<double>(kPeriod).count()) return;
  const double rate = static_cast<double>(bytes - debloat_.bytes) / seconds;
  debloat_.last = now;
  debloat_.bytes = bytes;
  debloat_.rate = debloat_.rate == 0 ? rate : 0.7 * debloat_.rate + 0.3 * rate;
  if (debloat_.rate <= 0) return;  // nothing read yet: no measure
  const double in_flight = debloat_.rate * std::chrono::duration<double>(net.debloat_target).count();
  const double per_buffer =
      in_flight / static_cast<double>(debloated_inputs_.size() * static_cast<size_t>(net.buffers_per_channel));
  const int size = static_cast<int>(std::clamp(per_buffer, double{kMinBuffer}, double(net.buffer_size)));
  const int current = debloat_.size == 0 ? net.buffer_size : debloat_.size;
  if (std::abs(size - current) * 4 < current) return;  // within a quarter: no change
  debloat_.size = size;
  for (auto& c : debloated_inputs_) c->set_target_buffer_size(size >= net.buffer_size ? 0 : size);
}

bool Task::outputs_available() {
  for (auto& p : chain_.partitions) {
    if (!p->available()) return false;
  }
  return true;
}

bool Task::poll_inputs() {
  int ch = 0;
  if (gate_.unaligned()) {
    // An alignment that took too long goes unaligned.
    if (gate_.alignment_deadline() != INT64_MAX) {
      const InputGate::Barrier b = gate_.check_alignment_timeout(services_.clock->wall_ms(), held_);
      if (b.decision.trigger) {
        on_barrier_decision(b);
        return true;
      }
    }
    // A priority barrier first, even while a buffer is half read or the
    // outputs are full: that is what makes the checkpoint unaligned.
    if (gate_.priority_waiting()) {
      if (std::optional<network::ChannelEvent> ev = gate_.poll_priority(&ch)) {
        process_event(ch, std::move(*ev));
        return true;
      }
    }
    if (backlog_ != nullptr) {
      // An iteration head drains its feedback whatever its outputs do.
      if (std::optional<network::ChannelEvent> ev = gate_.poll(&ch, /*feedback_only=*/true)) {
        process_event(ch, std::move(*ev));
        return true;
      }
    }
    if (!outputs_available()) return false;
    if (held_.ch >= 0) {
      feed_held();
      return true;
    }
    if (process_backlog()) return true;
  }
  std::optional<network::ChannelEvent> ev = gate_.poll(&ch);
  if (!ev) return false;
  process_event(ch, std::move(*ev));
  return true;
}

void Task::process_event(int ch, network::ChannelEvent ev) {
  InputGate::Channel& in = gate_.channel(ch);
  switch (ev.kind) {
    case network::EventKind::kBuffer: {
      if (in.feedback) {
        TaskMetrics::add(metrics_.bytes_in, static_cast<int64_t>(ev.buffer.size()));
        gate_.record(ch, std::string_view(ev.buffer.data(), ev.buffer.size()));
        queue_feedback(ch, ev.buffer);
        break;
      }
      if (gate_.unaligned() && sorted_ == nullptr) {
        TaskMetrics::add(metrics_.bytes_in, static_cast<int64_t>(ev.buffer.size()));
        gate_.record(ch, std::string_view(ev.buffer.data(), ev.buffer.size()));
        held_.ch = ch;
        held_.buffer = std::move(ev.buffer);
        held_.offset = 0;
        feed_held();
        break;
      }
      int64_t records = 0;
      bool ok;
      try {
        if (sorted_ != nullptr) {
          ok = in.deserializer.feed(ev.buffer, [&](std::string_view rec) {
            ++records;
            uint64_t hash;
            if (!in.edge->ops->read_key_hash(in.edge->key_hash.get(), rec, &hash)) return false;
            absl::Status s = sorted_->add(in.edge->input, hash, rec);
            if (!s.ok()) throw std::runtime_error("sorting the input: " + std::string(s.message()));
            return true;
          });
        } else {
          ok = in.deserializer.feed(ev.buffer, [&](std::string_view rec) {
            ++records;
            return in.adapter->process_serialized(rec);
          });
        }
      } catch (...) {
        if (task_failover()) {
          // The record that failed and the rest of its buffer go with this
          // attempt.
          dropped_on_failure_ = 1 + network::count_record_starts(ev.buffer.data(), ev.buffer.size(),
                                                                 in.deserializer.next_record());
          in.deserializer.clear();
        }
        throw;
      }
      TaskMetrics::add(metrics_.records_in, records);
      TaskMetrics::add(metrics_.bytes_in, static_cast<int64_t>(ev.buffer.size()));
      if (!ok) throw std::runtime_error("corrupt record on input channel " + std::to_string(ch));
      break;
    }
    case network::EventKind::kBarrier:
      on_barrier_decision(gate_.on_barrier(ch, ev, held_));
      break;
    case network::EventKind::kWatermark:
      // Sorted input: event time starts over at every key; the watermark
      // that ends the input comes after the last key.
      // (An iteration's feedback carries no event time.)
      if (sorted_ == nullptr && !in.feedback) apply(valve_.on_watermark(ch, ev.timestamp_ms));
      break;
    case network::EventKind::kIdle:
      if (sorted_ == nullptr && !in.feedback) apply(valve_.on_idle(ch, ev.idle));
      break;
    case network::EventKind::kRound:
      on_round(ch, ev);
      break;
    case network::EventKind::kReset:
      // The producer restarted (--failover task).
      if (in.deserializer.has_partial()) services_.job_master->report_dropped_records(id(), 1);
      in.deserializer.clear();
      if (in.ended && phase_ != TaskPhase::kRunning) {
        throw std::runtime_error("input channel " + std::to_string(ch) +
                                 " started again after this task's input had ended");
      }
      gate_.reopen(ch);
      apply(valve_.on_reset(ch));
      break;
    case network::EventKind::kEndOfData:
      if (in.ended) break;
      if (sorted_ == nullptr) apply(valve_.on_end(ch));
      if (backlog_ != nullptr) {
        // An iteration head: its input ended, the rounds start; its
        // feedback ends only after the iteration did.
        if (in.feedback && !iter_.ended) {
          throw std::runtime_error("the feedback of " + vertex_.name + " ended before its iteration did");
        }
        gate_.end(ch);
        if (!in.feedback && --iter_.ordinary_open == 0 && phase_ == TaskPhase::kRunning) start_rounds();
        break;
      }
      if (gate_.end(ch)) {
        if (sorted_ != nullptr) {
          sort_input();
        } else {
          end_of_input();
        }
      }
      break;
  }
}

void Task::on_barrier_decision(const InputGate::Barrier& b) {
  if (b.decision.abandoned) {
    if (unaligned_pending_.id == b.decision.abandoned_id) unaligned_pending_ = PendingCheckpoint{};
    services_.job_master->decline_checkpoint(id(), b.decision.abandoned_id,
                                             "subsumed by a newer barrier during alignment");
  }
  if (b.decision.trigger) {
    // An iteration head records its feedback in any mode, but its barriers
    // overtake nothing unless checkpoints are unaligned.
    perform_checkpoint(b.decision.checkpoint_id, b.timestamp_ms, b.alignment_ms, b.savepoint,
                       b.decision.records_channels, b.decision.unaligned && unaligned(), b.final);
    if (backlog_ != nullptr && b.decision.records_channels) record_backlog();
  }
  if (b.decision.completed) complete_channel_state(b.decision.completed_id);
}

void Task::feed_held() {
  InputGate::Channel& in = gate_.channel(held_.ch);
  const std::string_view rest = held_.rest();
  int64_t records = 0;
  const bool ok = in.deserializer.feed(
      rest.data(), rest.size(),
      [&](std::string_view rec) {
        ++records;
        const bool processed = in.adapter->process_serialized(rec);
        if (gate_.priority_waiting() || !outputs_available()) in.deserializer.yield();
        return processed;
      },
      held_.offset == 0 ? held_.buffer.continued_bytes() : 0);
  TaskMetrics::add(metrics_.records_in, records);
  if (!ok) throw std::runtime_error("corrupt record on input channel " + std::to_string(held_.ch));
  if (in.deserializer.yielded()) {
    held_.offset += in.deserializer.next_record();
    if (held_.offset < held_.buffer.size()) return;
  }
  held_ = InputGate::Held{};  // the buffer returns to the pool
}

void Task::apply(const WatermarkValve::Change& change) {
  detail::OperatorBase* head = chain_.operators[0].get();
  if (change.idle) head->process_idle(*change.idle);
  if (change.watermark) {
    metrics_.input_watermark.store(*change.watermark, std::memory_order_relaxed);
    detail::current_timestamp() = kNoTimestamp;
    head->process_watermark(*change.watermark);
  }
}

TaskMetricsSnapshot Task::metrics(bool with_operators) const {
  TaskMetricsSnapshot m = metrics_.snapshot(with_operators);
  absl::MutexLock lock(&channels_mu_);
  auto fill = [](const std::vector<const network::LocalChannel*>& channels, int64_t* queued, double* usage,
                 bool* some_full) {
    int64_t capacity = 0;
    for (const network::LocalChannel* c : channels) {
      const int n = c->queued_buffers();
      *queued += n;
      capacity += c->capacity();
      if (some_full != nullptr && n >= c->capacity()) *some_full = true;
    }
    *usage = capacity == 0 ? 0.0 : static_cast<double>(*queued) / static_cast<double>(capacity);
  };
  fill(input_channels_, &m.input_queue_length, &m.in_pool_usage, nullptr);
  fill(output_channels_, &m.output_queue_length, &m.out_pool_usage, &m.backpressured);
  return m;
}

}  // namespace weir::runtime
