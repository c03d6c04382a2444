#include "runtime/task.h"

#include <algorithm>
#include <exception>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "checkpoint/format.h"
#include "checkpoint/storage.h"
#include "common/test_points.h"
#include "weir/functions.h"

namespace weir::runtime {
namespace {

using SteadyClock = std::chrono::steady_clock;

// Records a source emits between two looks at the mailbox.
constexpr int kSourceBatch = 512;
// At-most-once: records a source reads ahead into one batch, and batches
// reported but not yet confirmed. Two, so one is read while the other's
// confirmation travels.
constexpr int kReadAheadRecords = 1024;
constexpr int kReadAheadBatches = 2;
// Batch execution: sorted records fed to the head operator between two
// looks at the mailbox.
constexpr int kReplayBatch = 512;

}  // namespace

void Task::TimeService::schedule(int64_t at_ms, std::function<void()> fn) {
  queue_.push(Entry{at_ms, seq_++, std::move(fn)});
}

int64_t Task::TimeService::run_due() {
  if (queue_.empty()) return INT64_MAX;
  int64_t now = now_ms();
  while (!queue_.empty() && queue_.top().at <= now) {
    std::function<void()> fn = std::move(const_cast<Entry&>(queue_.top()).fn);
    queue_.pop();
    fn();  // may schedule more
  }
  return next();
}

void Task::wait(SteadyClock::time_point deadline) {
  int64_t next_timer = time_.next();
  if (next_timer != INT64_MAX) {
    auto until_timer = std::chrono::milliseconds(std::max<int64_t>(0, next_timer - time_.now_ms()));
    deadline = std::min(deadline, SteadyClock::now() + until_timer);
  }
  // An alignment, or a barrier sent aligned, that may time out.
  if (const int64_t align = std::min(gate_.alignment_deadline(), aligned_barrier_deadline_); align != INT64_MAX) {
    auto until = std::chrono::milliseconds(std::max<int64_t>(0, align - services_.clock->wall_ms()));
    deadline = std::min(deadline, SteadyClock::now() + until);
  }
  WaitTimer idle(&metrics_.idle_ns);
  wakeup_.wait_until(deadline);
}

Task::Task(TaskDeploymentDescriptor tdd, std::shared_ptr<const graph::JobGraph> graph,
           TaskServices services)
    : tdd_(std::move(tdd)),
      graph_(std::move(graph)),
      services_(services),
      vertex_(graph_->vertices[tdd_.execution.vertex]),
      checkpointer_(tdd_.execution, vertex_.parallelism, graph_->max_parallelism,
                    SubtaskCheckpointer::Services{services_.storage, services_.snapshot_executor,
                                                  services_.job_master, services_.local_state,
                                                  services_.config->checkpoint.incremental,
                                                  services_.config->checkpoint.changelog,
                                                  services_.config->checkpoint.changelog_materialize_interval.count()}),
      time_(services_.clock) {}

Task::~Task() {
  cancel();
  join();
}

void Task::start() { thread_ = std::thread([this] { run(); }); }

void Task::join() {
  if (thread_.joinable()) thread_.join();
}

void Task::post(std::function<void()> mail) {
  {
    absl::MutexLock lock(&mail_mu_);
    mail_.push_back(std::move(mail));
    has_mail_.store(true, std::memory_order_release);
  }
  wakeup_.notify();
}

void Task::drain_mailbox() {
  if (!has_mail_.load(std::memory_order_acquire)) return;
  std::deque<std::function<void()>> batch;
  {
    absl::MutexLock lock(&mail_mu_);
    batch.swap(mail_);
    has_mail_.store(false, std::memory_order_release);
  }
  for (auto& m : batch) m();
}

void Task::trigger_checkpoint(int64_t id, int64_t ts, bool savepoint, bool final) {
  post([this, id, ts, savepoint, final] {
    // A source's barriers start unaligned unless checkpoints start aligned
    // (an aligned-checkpoint timeout).
    if (chain_.source != nullptr) perform_checkpoint(id, ts, 0, savepoint, false, unaligned_from_start(), final);
  });
}

void Task::notify_checkpoint_complete(int64_t id) {
  post([this, id] {
    for (auto& op : chain_.operators) op->notify_checkpoint_complete(id);
  });
}

void Task::notify_checkpoint_aborted(int64_t id) {
  checkpointer_.aborted(id);  // before the mail: a queued asynchronous part is dropped at once
  post([this, id] {
    gate_.on_abort(id);
    if (unaligned_pending_.id >= 0 && unaligned_pending_.id <= id) unaligned_pending_ = PendingCheckpoint{};
    for (auto& op : chain_.operators) op->notify_checkpoint_aborted(id);
  });
}

void Task::finish() {
  post([this] {
    if (graph_->staged() && phase_ == TaskPhase::kInputEnded) commit_at_end();
    enter(TaskPhase::kFinishing);
  });
}

void Task::stop_source() {
  post([this] { stop_requested_ = true; });
}

void Task::confirm_source_positions(int64_t seq) {
  post([this, seq] { release_batches(seq); });
}

void Task::cancel() {
  if (cancelled_.exchange(true)) return;
  checkpointer_.cancel();
  // Wake the thread wherever it waits: mailbox, input, full output, pool.
  wakeup_.notify();
  {
    absl::MutexLock lock(&channels_mu_);
    for (auto& c : all_channels_) {
      // A channel kept for the next attempt only wakes this task's push
      // (the cancel flag ends it).
      if (task_failover()) {
        c->wake_producer();
      } else {
        c->close();
      }
    }
  }
  if (services_.pool) services_.pool->wake_all();
  post([] {});
}

std::string_view to_string(TaskPhase phase) {
  switch (phase) {
    case TaskPhase::kCreated: return "created";
    case TaskPhase::kInitializing: return "initializing";
    case TaskPhase::kRunning: return "running";
    case TaskPhase::kInputEnded: return "input ended";
    case TaskPhase::kFinishing: return "finishing";
    case TaskPhase::kClosed: return "closed";
  }
  return "?";
}

bool task_phase_may_follow(TaskPhase from, TaskPhase to) {
  switch (to) {
    case TaskPhase::kCreated: return false;
    case TaskPhase::kInitializing: return from == TaskPhase::kCreated;
    case TaskPhase::kRunning: return from == TaskPhase::kInitializing;
    case TaskPhase::kInputEnded: return from == TaskPhase::kRunning;
    case TaskPhase::kFinishing: return from == TaskPhase::kRunning || from == TaskPhase::kInputEnded;
    case TaskPhase::kClosed: return from != TaskPhase::kClosed;
  }
  return false;
}

void Task::enter(TaskPhase next) {
  if (!task_phase_may_follow(phase_, next)) {
    throw std::logic_error("task phase " + std::string(to_string(phase_)) + " cannot be followed by " +
                           std::string(to_string(next)));
  }
  phase_ = next;
}

void Task::run() {
  ExecutionState final_state = ExecutionState::kFinished;
  std::string error;
  bool unrecoverable = false;
  try {
    enter(TaskPhase::kInitializing);
    absl::Status s = initialize();
    if (!s.ok()) throw std::runtime_error(std::string(s.message()));
    enter(TaskPhase::kRunning);
    services_.job_master->update_task_state(id(), ExecutionState::kRunning, "", false);
    replay_channel_state();
    loop();
    if (cancelled_) final_state = ExecutionState::kCanceled;
  } catch (const network::TaskCancelled&) {
    final_state = cancelled_ ? ExecutionState::kCanceled : ExecutionState::kFailed;
    error = "output channel closed by its consumer";
  } catch (const weir::UnrecoverableError& e) {
    final_state = cancelled_ ? ExecutionState::kCanceled : ExecutionState::kFailed;
    error = e.what();
    unrecoverable = true;
  } catch (const std::exception& e) {
    final_state = cancelled_ ? ExecutionState::kCanceled : ExecutionState::kFailed;
    error = e.what();
  } catch (...) {
    final_state = cancelled_ ? ExecutionState::kCanceled : ExecutionState::kFailed;
    error = "unknown exception";
  }
  try {
    for (size_t i = 0; i < chain_.operators.size(); ++i) {
      if (opened_[i]) chain_.operators[i]->close();
    }
  } catch (const std::exception& e) {
    if (final_state == ExecutionState::kFinished) {
      final_state = ExecutionState::kFailed;
      error = std::string("close: ") + e.what();
    }
  }
  release_sorted_input();
  enter(TaskPhase::kClosed);  // allowed from any phase but itself
  if (final_state != ExecutionState::kFailed) error.clear();
  if (ahead_.on && final_state != ExecutionState::kFinished) {
    // What of the confirmed batches left: the rest is lost.
    SourcePositions last;
    last.released_records = chain_.source->released_records();
    services_.job_master->report_source_positions(id(), std::move(last));
  }
  // A finished task's last checkpoints acknowledge before it says so, or
  // their files could land after the job is over.
  if (final_state == ExecutionState::kFinished) {
    WEIR_SYNC_POINT("Task::waiting_for_checkpoints");
    checkpointer_.wait_for_pending();
  }
  if (task_failover()) {
    // Nothing closes: the neighbours keep running and this task's next
    // attempt takes over its channels.
    const int64_t dropped = leave_channels();
    if (dropped > 0) services_.job_master->report_dropped_records(id(), dropped);
    services_.job_master->update_task_state(
        id(), final_state, error.empty() ? "" : vertex_.name + " (" + id().to_string() + "): " + error, unrecoverable);
    return;
  }
  // Report before closing the channels: a neighbour that sees them close
  // fails too, and the root cause must reach the JobManager first.
  services_.job_master->update_task_state(
      id(), final_state, error.empty() ? "" : vertex_.name + " (" + id().to_string() + "): " + error, unrecoverable);
  close_channels();
}

absl::Status Task::initialize() {
  absl::Status s = build_chain();
  if (!s.ok()) return s;
  s = build_inputs();
  if (!s.ok()) return s;
  if (task_failover() && tdd_.execution.attempt > 0) {
    // The consumers drop what they hold of a record the last attempt began.
    for (auto& p : chain_.partitions) p->broadcast_event(network::EventKind::kReset);
  }
  // Restore, then open downstream operators first so they are ready before
  // upstream ones emit.
  std::vector<std::shared_ptr<const checkpoint::StateFileBytes>> files;
  const auto restore_began = SteadyClock::now();
  ahead_.on = chain_.source != nullptr && services_.config->checkpoint.mode == CheckpointingMode::kAtMostOnce;
  for (int i = static_cast<int>(vertex_.nodes.size()) - 1; i >= 0; --i) {
    int node = vertex_.nodes[i];
    std::optional<detail::OperatorRestore> restore;
    if (tdd_.restore) {
      auto r = restore_for(node, &files);
      if (!r.ok()) return r.status();
      restore = std::move(*r);
    }
    if (i == 0 && restore) {
      // Channel state of an unaligned checkpoint: replayed once running.
      auto it = restore->operator_state.find(std::string(checkpoint::kChannelStateList));
      if (it != restore->operator_state.end()) {
        const checkpoint::OperatorStateHandles* h = tdd_.restore->find(graph_->uids[node]);
        s = assign_channel_state(it->second, h != nullptr ? h->parallelism : vertex_.parallelism);
        if (!s.ok()) return s;
        restore->operator_state.erase(it);
      }
    }
    if (i == 0 && ahead_.on && tdd_.source_positions != nullptr) {
      // At-most-once: the source continues after what it emitted before.
      if (!restore) restore.emplace();
      restore->operator_state = *tdd_.source_positions;
    }
    s = chain_.operators[i]->open(*chain_.contexts[i], restore ? &*restore : nullptr);
    opened_[i] = s.ok();
    if (!s.ok()) {
      return absl::Status(s.code(), "open " + graph_->uids[node] + ": " + std::string(s.message()));
    }
  }
  last_flush_ = SteadyClock::now();
  if (tdd_.restore) {
    size_t bytes = 0;
    for (const auto& f : files) bytes += f->bytes().size();
    spdlog::info("job {}: {} ({}) restored checkpoint {} in {} ms ({} bytes of state files read, {} from local copies)",
                 tdd_.job_id, vertex_.name, id().to_string(), tdd_.restore->checkpoint_id,
                 std::chrono::duration_cast<std::chrono::milliseconds>(last_flush_ - restore_began).count(), bytes,
                 local_bytes_read_);
  }
  return absl::OkStatus();
}

absl::Status Task::build_chain() {
  opened_.assign(vertex_.nodes.size(), false);
  ChainSetting setting;
  setting.graph = graph_.get();
  setting.vertex = &vertex_;
  setting.tdd = &tdd_;
  setting.pool = services_.pool;
  setting.channels = services_.channels;
  setting.data_plane = services_.data_plane;
  setting.state_backend = &services_.config->state;
  setting.job_config = services_.config;
  setting.processing_time = &time_;
  setting.cancelled = &cancelled_;
  setting.metrics = &metrics_;
  setting.register_channel = [this](const std::shared_ptr<network::LocalChannel>& c) {
    register_channel(c, /*input=*/false);
  };
  metrics_.set_chain_head(graph_->uids[vertex_.nodes[0]]);
  return build_operator_chain(setting, &chain_);
}

void Task::loop() {
  const auto idle_wait = std::chrono::milliseconds(200);  // a safety net; wakeups do the work
  while (true) {
    drain_mailbox();
    if (cancelled_ || phase_ == TaskPhase::kFinishing) return;
    time_.run_due();
    promote_late_barrier();
    debloat(SteadyClock::now());
    if (ahead_.on && phase_ == TaskPhase::kRunning) {
      read_ahead();
      continue;
    }
    if (chain_.source != nullptr && phase_ == TaskPhase::kRunning) {
      if (stop_requested_) {
        chain_.source->end_input_now();
        end_of_input();
        continue;
      }
      if (unaligned() && !outputs_available()) {
        // Its next batch would wait in a push, deaf to checkpoint triggers:
        // it waits here until a consumer takes a buffer.
        flush_outputs();
        wait(SteadyClock::now() + idle_wait);
        continue;
      }
      detail::PollStatus st = chain_.source->poll(kSourceBatch);
      if (st == detail::PollStatus::kEndOfInput) {
        end_of_input();
      } else if (st == detail::PollStatus::kIdle) {
        // A source cannot wake the task when data arrives, so it is polled
        // again after kSourceIdlePoll: what it emits next waits at most that
        // long to be read. Output still goes out when a buffer fills or the
        // buffer timeout passes, not at every idle poll (each flush wakes
        // the consumers).
        constexpr auto kSourceIdlePoll = std::chrono::milliseconds(1);
        const auto now = SteadyClock::now();
        maybe_flush(now);
        wait(std::min(now + kSourceIdlePoll, last_flush_ + services_.config->network.buffer_timeout));
      } else {
        maybe_flush(SteadyClock::now());
      }
      continue;
    }
    if (replaying_) {
      replay_sorted();
      continue;
    }
    if (!gate_.empty() && poll_inputs()) {
      maybe_flush(SteadyClock::now());
      continue;
    }
    flush_outputs();
    wait(SteadyClock::now() + idle_wait);
  }
}

void Task::read_ahead() {
  const int64_t sealed = ahead_.next_seq - 1 - ahead_.released;
  const auto now = SteadyClock::now();
  if (ahead_.end_seq >= 0 || sealed >= kReadAheadBatches) {
    // Waiting for a confirmation (mail wakes the task).
    maybe_flush(now);
    wait(last_flush_ + services_.config->network.buffer_timeout);
    return;
  }
  if (stop_requested_) return seal_batch(/*ends_input=*/true);
  detail::PollStatus st;
  ahead_.held += chain_.source->read_ahead(kSourceBatch, &st);
  if (st == detail::PollStatus::kEndOfInput) return seal_batch(true);
  if (ahead_.held >= kReadAheadRecords || (st == detail::PollStatus::kIdle && ahead_.held > 0)) {
    return seal_batch(false);
  }
  if (st == detail::PollStatus::kIdle) {
    constexpr auto kSourceIdlePoll = std::chrono::milliseconds(1);  // as in loop()
    maybe_flush(now);
    wait(std::min(now + kSourceIdlePoll, last_flush_ + services_.config->network.buffer_timeout));
  }
}

void Task::seal_batch(bool ends_input) {
  auto positions = chain_.source->seal_batch();
  if (!positions.ok()) {
    throw std::runtime_error("positions of source " + graph_->uids[vertex_.nodes[0]] + ": " +
                             std::string(positions.status().message()));
  }
  SourcePositions report;
  report.seq = ahead_.next_seq++;
  report.positions = std::move(*positions);
  report.records = ahead_.held;
  report.released_records = chain_.source->released_records();
  ahead_.held = 0;
  if (ends_input) ahead_.end_seq = report.seq;
  services_.job_master->report_source_positions(id(), std::move(report));
}

void Task::release_batches(int64_t up_to_seq) {
  if (phase_ != TaskPhase::kRunning) return;
  while (ahead_.released < up_to_seq && ahead_.released < ahead_.next_seq - 1) {
    chain_.source->release_batch();
    ++ahead_.released;
    if (ahead_.released == ahead_.end_seq) {
      chain_.source->end_input_now();
      end_of_input();
      return;
    }
  }
}

void Task::end_of_input() {
  enter(TaskPhase::kInputEnded);
  for (size_t i = 0; i < chain_.operators.size(); ++i) {
    absl::Status s = chain_.operators[i]->finish();
    if (!s.ok()) {
      throw std::runtime_error("finish " + graph_->uids[vertex_.nodes[i]] + ": " +
                               std::string(s.message()));
    }
  }
  for (auto& p : chain_.partitions) p->broadcast_event(network::EventKind::kEndOfData);
  services_.job_master->end_of_data(id());
}

std::string Task::sort_directory() const {
  return (std::filesystem::path(network::result_directory(*services_.config, tdd_.job_id, ExchangeMode::kBlocking)) /
          ("sort-v" + std::to_string(vertex_.id) + "-s" + std::to_string(tdd_.execution.subtask) + "-a" +
           std::to_string(tdd_.execution.attempt)))
      .string();
}

void Task::sort_input() {
  absl::Status s = sorted_->finish();
  if (!s.ok()) throw std::runtime_error("sorting the input: " + std::string(s.message()));
  const batch::ExternalSorter::Stats& stats = sorted_->stats();
  chain_.contexts[0]->set_gauge("sort.records", stats.records);
  chain_.contexts[0]->set_gauge("sort.spilled_bytes", stats.spilled_bytes);
  chain_.contexts[0]->set_gauge("sort.spilled_runs", stats.spilled_runs);
  replaying_ = true;
}

void Task::replay_sorted() {
  detail::OperatorBase* head = chain_.operators[0].get();
  for (int i = 0; i < kReplayBatch && sorted_->valid(); ++i) {
    if (!sorted_->same_key_as_previous() && block_key_group_ >= 0) head->end_key_block(block_key_group_);
    block_key_group_ = sorted_->key_group();
    if (!adapter_of_input_[sorted_->input()]->process_serialized(sorted_->frame())) {
      throw std::runtime_error("corrupt record in the sorted input");
    }
    sorted_->next();
  }
  maybe_flush(SteadyClock::now());
  if (sorted_->valid()) return;
  absl::Status s = sorted_->status();
  if (!s.ok()) throw std::runtime_error("reading the sorted input: " + std::string(s.message()));
  if (block_key_group_ >= 0) head->end_key_block(block_key_group_);
  replaying_ = false;
  release_sorted_input();
  // Every key ended; the watermark that ends all input goes downstream.
  detail::current_timestamp() = kNoTimestamp;
  head->process_watermark(kMaxWatermark);
  end_of_input();
}

void Task::release_sorted_input() {
  if (sorted_ == nullptr) return;
  sorted_.reset();
  std::error_code ec;
  const std::filesystem::path dir = sort_directory();
  std::filesystem::remove_all(dir, ec);
  // The job's result directory, unless other files are in it (a
  // TaskManager of a cluster has no one else to remove it).
  std::filesystem::remove(dir.parent_path(), ec);
}

void Task::commit_at_end() {
  // After every checkpoint id a job can have taken.
  constexpr int64_t kCommitId = INT64_MAX - 1;
  detail::SnapshotOptions options;
  options.checkpoint_id = kCommitId;
  for (size_t i = 0; i < chain_.operators.size(); ++i) {
    auto snapshot = chain_.operators[i]->snapshot(options);
    if (!snapshot.ok()) {
      throw std::runtime_error("commit " + graph_->uids[vertex_.nodes[i]] + " at the end of its stage: " +
                               std::string(snapshot.status().message()));
    }
  }
  for (auto& op : chain_.operators) op->notify_checkpoint_complete(kCommitId);
}

void Task::flush_outputs() {
  for (auto& p : chain_.partitions) p->flush_all();
  last_flush_ = SteadyClock::now();
}

void Task::maybe_flush(SteadyClock::time_point now) {
  if (now - last_flush_ >= services_.config->network.buffer_timeout) flush_outputs();
}

void Task::forget_producer_wakeups() {
  absl::MutexLock lock(&channels_mu_);
  for (auto& c : all_channels_) c->set_producer(nullptr);
}

int64_t Task::leave_channels() {
  forget_producer_wakeups();
  int64_t dropped = dropped_on_failure_;
  for (auto& p : chain_.partitions) dropped += p->unsent_records();
  return dropped + gate_.leave();
}

void Task::close_channels() {
  forget_producer_wakeups();
  for (auto& p : chain_.partitions) p->close_channels();
  gate_.close();
  // Channels taken before building the chain failed belong to no partition
  // or input yet; their other ends must see them close too.
  absl::MutexLock lock(&channels_mu_);
  for (auto& c : all_channels_) c->close();
}

}  // namespace weir::runtime
