// Task: its inputs. The input channels a task reads (local or network
// channels of pipelined edges, result files of blocking ones, fetched first
// from a remote result directory when they are not here), what arrives on
// them (records, barriers, watermarks, end of partition, resets), the
// input watermark, and how full the task's channels are (Task::metrics).
// The rest of the task is in task.cc.
#include "runtime/task.h"

#include "common/clock.h"
#include "runtime/remote_results.h"

namespace weir::runtime {

using Clock = std::chrono::steady_clock;

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
      InputChannel in;
      if (je.blocking()) {
        auto reader = open_result(je, e, p);
        if (!reader.ok()) return reader.status();
        in.channel = std::move(*reader);
      } else {
        std::shared_ptr<network::LocalChannel> local =
            services_.channels->get(
            {tdd_.job_id, channel_attempt(tdd_, *services_.config), e, p, tdd_.execution.subtask});
        register_channel(local, /*input=*/true);
        if (task_failover() && tdd_.task_locations != nullptr &&
            tdd_.task_locations->at(graph_->task_index(je.source_vertex, p)) != tdd_.location) {
          in.remote = local;
        }
        in.channel = std::move(local);
      }
      in.adapter = adapters_.back().get();
      in.edge = &se;
      in.producer_vertex = je.source_vertex;
      in.producer = p;
      inputs_.push_back(std::move(in));
    }
  }
  for (auto& in : inputs_) in.channel->set_consumer(&wakeup_);
  if (chain_.sorted_input) {
    batch::ExternalSorter::Options o;
    o.spill_directory = sort_directory();
    o.memory_bytes = services_.config->sort_memory_bytes;
    sorted_ = std::make_unique<batch::SortedInput>(std::move(o), graph_->max_parallelism);
  }
  if (!inputs_.empty()) {
    barriers_ = checkpoint::make_barrier_handler(services_.config->checkpoint.mode,
                                                 static_cast<int>(inputs_.size()));
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
  if (cancelled_ && !task_failover()) c->close();
}

bool Task::poll_inputs() {
  const size_t n = inputs_.size();
  for (size_t i = 0; i < n; ++i) {
    size_t idx = (next_input_ + i) % n;
    if (barriers_->is_blocked(static_cast<int>(idx))) continue;
    auto ev = inputs_[idx].channel->poll();
    if (!ev) {
      const InputChannel& in = inputs_[idx];
      if (in.remote != nullptr && !in.end_of_data && in.remote->closed()) {
        throw std::runtime_error(
            "the channel from vertex " + std::to_string(in.producer_vertex) + " subtask " +
            std::to_string(in.producer) + " closed: the connection to its TaskManager (" +
            tdd_.task_locations->at(graph_->task_index(in.producer_vertex, in.producer)) + ") broke");
      }
      continue;
    }
    next_input_ = idx + 1;
    process_event(static_cast<int>(idx), std::move(*ev));
    return true;
  }
  return false;
}

void Task::process_event(int ch, network::ChannelEvent ev) {
  InputChannel& in = inputs_[ch];
  switch (ev.kind) {
    case network::EventKind::kBuffer: {
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
    case network::EventKind::kBarrier: {
      if (ev.checkpoint_id != align_id_) {
        align_id_ = ev.checkpoint_id;
        align_start_ = Clock::now();
      }
      checkpoint::BarrierDecision d = barriers_->on_barrier(ch, ev.checkpoint_id);
      if (d.abandoned) {
        services_.job_master->decline_checkpoint(id(), d.abandoned_id,
                                                 "subsumed by a newer barrier during alignment");
      }
      if (d.trigger) perform_checkpoint(d.checkpoint_id, ev.timestamp_ms, ms_since(align_start_), ev.savepoint);
      break;
    }
    case network::EventKind::kWatermark:
      // Sorted input: event time starts over at every key; the watermark
      // that ends the input comes after the last key.
      if (sorted_ != nullptr) break;
      if (ev.timestamp_ms > in.watermark) {
        in.watermark = ev.timestamp_ms;
        update_input_watermark();
      }
      break;
    case network::EventKind::kIdle:
      if (sorted_ != nullptr) break;
      if (in.idle != ev.idle) {
        in.idle = ev.idle;
        update_input_watermark();
      }
      break;
    case network::EventKind::kReset:
      // The producer restarted (--failover task).
      if (in.deserializer.has_partial()) services_.job_master->report_dropped_records(id(), 1);
      in.deserializer.clear();
      if (in.end_of_data) {
        if (phase_ != TaskPhase::kRunning) {
          throw std::runtime_error("input channel " + std::to_string(ch) +
                                   " started again after this task's input had ended");
        }
        in.end_of_data = false;
        --inputs_ended_;
      }
      in.idle = false;
      update_input_watermark();
      break;
    case network::EventKind::kEndOfData:
      if (!in.end_of_data) {
        in.end_of_data = true;
        ++inputs_ended_;
        if (sorted_ == nullptr) update_input_watermark();
        if (inputs_ended_ == static_cast<int>(inputs_.size())) {
          if (sorted_ != nullptr) {
            sort_input();
          } else {
            end_of_input();
          }
        }
      }
      break;
  }
}

void Task::update_input_watermark() {
  // Ended channels no longer hold event time back; idle ones neither, unless
  // every live channel is idle, which makes the task idle.
  int64_t min = kMaxWatermark;
  bool any_active = false, any_live = false;
  for (const InputChannel& in : inputs_) {
    if (in.end_of_data) continue;
    any_live = true;
    if (in.idle) continue;
    any_active = true;
    min = std::min(min, in.watermark);
  }
  detail::OperatorBase* head = chain_.operators[0].get();
  if (any_live && !any_active) {
    if (!input_idle_) {
      input_idle_ = true;
      head->process_idle(true);
    }
    return;
  }
  if (input_idle_) {
    input_idle_ = false;
    head->process_idle(false);
  }
  if (min > input_watermark_) {
    input_watermark_ = min;
    metrics_.input_watermark.store(min, std::memory_order_relaxed);
    detail::current_timestamp() = kNoTimestamp;
    head->process_watermark(min);
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
