// A Task runs one subtask of a JobVertex: its chain of operators, on one
// thread, as a mailbox loop. Between records it runs mail (checkpoint
// triggers for sources, checkpoint notifications, cancel, finish), so
// operator code is single-threaded and never needs locks.
//
// Lifecycle: start() -> initialize (build the chain, restore state, open) ->
// RUNNING -> end of input (finish operators, send end-of-data, report) ->
// final checkpoint -> finish mail -> FINISHED. (A staged job takes no final
// checkpoint: the finish mail comes once its region's input ended, and the
// task first lets its operators commit, commit_at_end.) Any exception or error status
// from operator code fails the task (FAILED, reported with its message);
// cancel() ends it as CANCELED.
//
// In batch execution a keyed head operator reads its input sorted by key
// (OperatorChain::sorted_input): the task takes in every input first
// (batch::SortedInput, spilling past the sort budget), then replays it one
// key block at a time, ending each with OperatorBase::end_key_block.
//
// A blocking or persisted input is read from its result file: here, or,
// when another TaskManager wrote it, served by that one over the data plane
// (open_result; a server that goes away fails the read).
//
// In an iteration's loop (DataStream::iterate), every task passes round
// markers on (task_iteration.cc): once the head's input other than its
// feedback ended, it sends round 1 into the loop; a task passes round n on
// once it came on each of its loop inputs, marked dirty when any came dirty
// or a record moved through the task since it passed round n - 1. A head
// that has round n from every feedback channel (each feedback subtask
// reaches every head) ends the iteration when none was dirty and its own
// backlog is empty: by then no record is in flight anywhere in the loop
// (every record sent before round n - 1 passed was received before round n
// passed, and none moved since), so all heads agree on the same round. Else
// it sends round n + 1. The head drains its feedback channels into a
// spilling backlog (runtime/feedback_queue.h) even while its outputs are
// full, and nothing is chained to it, so it never waits in a push and the
// cycle of bounded channels cannot deadlock.
//
// Its channels close when it ends, except under --failover task: then they
// outlive the attempt (its inputs are detached, its next attempt announces
// itself with kReset), and it counts the records dropped with it. A remote
// input closed under it (the connection broke) fails it instead.
//
// Its parts: the chain (operators and their outputs, built from the job
// graph by runtime/operator_chain.h), the mailbox loop (task.cc), its
// inputs (task_inputs.cc), its part of checkpoints (task_checkpoint.cc),
// its part in an iteration (task_iteration.cc), the
// checkpoint part of a subtask (SubtaskCheckpointer: synchronous snapshot,
// asynchronous upload) and the restore assignment
// (checkpoint/state_assignment.h, task_restore.cc).
//
// Public methods are thread-safe; everything else is confined to the task
// thread, except the asynchronous snapshot parts, which run on the snapshot
// executor with immutable data only.
#ifndef WEIR_RUNTIME_TASK_H_
#define WEIR_RUNTIME_TASK_H_

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <optional>
#include <memory>
#include <queue>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "batch/sorted_input.h"
#include "checkpoint/barrier_handler.h"
#include "checkpoint/storage.h"
#include "common/clock.h"
#include "graph/job_graph.h"
#include "network/buffer_pool.h"
#include "network/channel_registry.h"
#include "network/data_plane.h"
#include "network/partition_writer.h"
#include "runtime/executor.h"
#include "runtime/feedback_queue.h"
#include "runtime/gateways.h"
#include "runtime/input_gate.h"
#include "runtime/operator_chain.h"
#include "runtime/operator_context.h"
#include "runtime/subtask_checkpointer.h"
#include "runtime/watermark_valve.h"
#include "common/task_metrics.h"
#include "common/wakeup.h"
#include "state/local_state.h"
#include "weir/config.h"
#include "weir/detail/operator.h"

namespace weir::runtime {

// A task's life, on its own thread:
//   kCreated -> kInitializing -> kRunning -> kInputEnded -> kFinishing -> kClosed
// and from any phase to kClosed when it fails or is cancelled. kInputEnded:
// its operators finished and end-of-data went downstream; it still takes
// part in the final checkpoint and waits for the finish mail (which may also
// come while kRunning). Cancellation is a flag any thread may set; the loop
// sees it between records.
enum class TaskPhase { kCreated, kInitializing, kRunning, kInputEnded, kFinishing, kClosed };
std::string_view to_string(TaskPhase phase);
// Whether a task in `from` may enter `to` (every transition is checked).
bool task_phase_may_follow(TaskPhase from, TaskPhase to);

// What a task uses but does not own; all outlive the task.
struct TaskServices {
  network::NetworkBufferPool* pool = nullptr;
  network::ChannelRegistry* channels = nullptr;
  // Channels to tasks in other processes; null in the embedded cluster.
  network::DataPlane* data_plane = nullptr;
  checkpoint::CheckpointStorage* storage = nullptr;
  ThreadPool* snapshot_executor = nullptr;
  JobMasterGateway* job_master = nullptr;
  const JobConfig* config = nullptr;
  // Local copies of the job's native snapshots; null without local recovery.
  std::shared_ptr<state::LocalStateStore> local_state;
  // Processing time (its wall_ms()): what operators see as now and when
  // their processing-time timers fire.
  const Clock* clock = SystemClock::instance();
};

class Task {
 public:
  Task(TaskDeploymentDescriptor tdd, std::shared_ptr<const graph::JobGraph> graph,
       TaskServices services);
  ~Task();
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;

  void start();
  // `final`: the checkpoint taken once every source ended.
  void trigger_checkpoint(int64_t checkpoint_id, int64_t timestamp_ms, bool savepoint, bool final = false);
  void notify_checkpoint_complete(int64_t checkpoint_id);
  void notify_checkpoint_aborted(int64_t checkpoint_id);
  void finish();
  // Stop with drain: a source ends its input at the next poll.
  void stop_source();
  // At-most-once: the JobManager holds the positions after batch `seq`.
  void confirm_source_positions(int64_t seq);
  void cancel();
  // Waits for the task thread to end.
  void join();

  const ExecutionId& id() const { return tdd_.execution; }
  // Its counters so far; any thread.
  // The name of its vertex (its chained operators' names).
  const std::string& name() const { return vertex_.name; }
  // With how full its channels are (queued buffers, pool usage, whether an
  // output is full: backpressured).
  TaskMetricsSnapshot metrics(bool with_operators = false) const;

 private:
  // Processing-time callbacks, run by the task loop. Task thread only.
  class TimeService final : public detail::ProcessingTimeService {
   public:
    explicit TimeService(const Clock* clock) : clock_(clock) {}
    int64_t now_ms() const override { return clock_->wall_ms(); }
    void schedule(int64_t at_ms, std::function<void()> fn) override;
    // Runs the callbacks that are due; returns the time of the next one or
    // INT64_MAX.
    int64_t run_due();
    int64_t next() const { return queue_.empty() ? INT64_MAX : queue_.top().at; }

   private:
    struct Entry {
      int64_t at;
      uint64_t seq;
      std::function<void()> fn;
      bool operator>(const Entry& o) const { return at != o.at ? at > o.at : seq > o.seq; }
    };
    const Clock* const clock_;
    std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue_;
    uint64_t seq_ = 0;
  };

  void run();
  // Moves to `next`; an illegal transition is a bug and fails the task.
  void enter(TaskPhase next);
  absl::Status initialize();
  absl::Status build_chain();
  absl::Status build_inputs();
  // The reader of a blocking or persisted input: the result file of
  // `producer` for this subtask, read here or served by the TaskManager
  // that wrote it.
  absl::StatusOr<std::shared_ptr<network::ChannelReader>> open_result(const graph::JobEdge& je, int edge,
                                                                      int producer);
  // What operator `node` restores from (runtime/task_restore.cc); the state
  // files it read are added to `files`.
  absl::StatusOr<detail::OperatorRestore> restore_for(
      int node, std::vector<std::shared_ptr<const checkpoint::StateFileBytes>>* files);
  // State file `s` of operator `uid` (whole, or its operator-state section
  // alone) from this process's intact local copy, else from the checkpoint.
  absl::StatusOr<std::shared_ptr<const checkpoint::StateFileBytes>> read_state(
      const std::string& uid, const checkpoint::OperatorSubtaskState& s, bool whole);
  // File `f` of the changelog chain of state file `s`, likewise.
  absl::StatusOr<std::shared_ptr<const checkpoint::StateFileBytes>> read_changelog(
      const std::string& uid, const checkpoint::OperatorSubtaskState& s, const detail::ChangelogFile& f);
  // The directory of this process's intact local copy of state file `s`
  // (and its chain), if there is one.
  std::optional<std::string> local_copy_of(const std::string& uid, const checkpoint::OperatorSubtaskState& s);
  // `read` from the local copy of `s`, when intact and readable, else from
  // the checkpoint.
  absl::StatusOr<std::shared_ptr<const checkpoint::StateFileBytes>> read_local_or_checkpoint(
      const std::string& uid, const checkpoint::OperatorSubtaskState& s,
      const std::function<absl::StatusOr<std::shared_ptr<const checkpoint::StateFileBytes>>(
          checkpoint::CheckpointStorage& storage, const std::string& location)>& read);
  void loop();
  // Takes the next event of the input gate, if one came.
  bool poll_inputs();
  void process_event(int channel, network::ChannelEvent ev);
  // `records_channels`: an unaligned checkpoint whose channel state the
  // input gate records from now on; its asynchronous part waits for it.
  // `unaligned`: its barriers overtake the outputs' queued data.
  void perform_checkpoint(int64_t checkpoint_id, int64_t timestamp_ms, int64_t alignment_ms, bool savepoint,
                          bool records_channels = false, bool unaligned = false, bool final = false);
  // What the input gate decided at a barrier (or an alignment's timeout).
  void on_barrier_decision(const InputGate::Barrier& b);
  // Unaligned: the channel state of `checkpoint_id` is complete; it joins
  // the head operator's state and the asynchronous part starts.
  void complete_channel_state(int64_t checkpoint_id);
  bool unaligned() const {
    return services_.config->checkpoint.unaligned && services_.config->checkpoint.mode == CheckpointingMode::kExactlyOnce;
  }
  // Whether the task waits for space in its outputs in its loop rather than
  // in a push: unaligned checkpoints, and an iteration's head.
  bool never_blocks() const { return unaligned() || vertex_.iteration_head; }
  // Unaligned checkpoints that start unaligned (no aligned-checkpoint timeout).
  bool unaligned_from_start() const {
    return unaligned() && services_.config->checkpoint.aligned_timeout.count() == 0;
  }
  // Feeds the buffer held in gate_ to the head operator, until it ends or
  // a priority barrier waits or an output is full.
  void feed_held();
  // Whether every output takes a buffer without waiting (unaligned only).
  bool outputs_available();
  // The restored channel state this subtask takes (runtime/task_restore.cc).
  absl::Status assign_channel_state(const detail::OperatorListStateData& list, int old_parallelism);
  // Feeds the restored channel state to the head operator, before any
  // input is read.
  void replay_channel_state();
  // At-most-once: one step of a source reading ahead (see ReadAhead).
  void read_ahead();
  void seal_batch(bool ends_input);
  void release_batches(int64_t up_to_seq);
  void end_of_input();
  // Batch execution with sorted input: every input ended; sorts.
  void sort_input();
  // Feeds the next sorted records to the head operator, ending key blocks
  // between keys; after the last one, the input ends.
  void replay_sorted();
  // Drops the sorted input and its spill directory.
  void release_sorted_input();
  std::string sort_directory() const;
  // A staged job's task at its finish: its operators commit what they hold
  // for a checkpoint (sinks publish), as a final checkpoint would, but
  // nothing is written.
  void commit_at_end();
  // Hands a change of the input's event time to the head operator.
  void apply(const WatermarkValve::Change& change);
  // Waits for input, mail or the next processing-time timer.
  void wait(std::chrono::steady_clock::time_point deadline);
  void flush_outputs();
  void maybe_flush(std::chrono::steady_clock::time_point now);
  void close_channels();
  // The channels stop waking this task when their consumer takes a buffer.
  void forget_producer_wakeups();
  // --failover task: the channels stay open for the next attempts of this
  // task and its neighbours; leaves the inputs and returns the records lost
  // with them and with the outputs not sent.
  int64_t leave_channels();
  bool task_failover() const { return services_.config->failover == FailoverStrategy::kTask; }
  // `input`: the task reads it (else writes it).
  void register_channel(const std::shared_ptr<network::LocalChannel>& c, bool input);
  void post(std::function<void()> mail);
  void drain_mailbox();

  // Constant after construction.
  const TaskDeploymentDescriptor tdd_;
  const std::shared_ptr<const graph::JobGraph> graph_;
  const TaskServices services_;
  const graph::JobVertex& vertex_;
  SubtaskCheckpointer checkpointer_;

  std::thread thread_;
  std::atomic<bool> cancelled_{false};
  TaskMetrics metrics_;
  Wakeup wakeup_;

  absl::Mutex mail_mu_;
  std::deque<std::function<void()>> mail_ ABSL_GUARDED_BY(mail_mu_);
  std::atomic<bool> has_mail_{false};

  // Every channel this task reads or writes, so cancel() can close them.
  mutable absl::Mutex channels_mu_;
  std::vector<std::shared_ptr<network::LocalChannel>> all_channels_ ABSL_GUARDED_BY(channels_mu_);
  // The same, by side: how full they are is in the task's metrics.
  std::vector<const network::LocalChannel*> input_channels_ ABSL_GUARDED_BY(channels_mu_);
  std::vector<const network::LocalChannel*> output_channels_ ABSL_GUARDED_BY(channels_mu_);

  // Task thread only.
  OperatorChain chain_;
  // Operators whose open() succeeded; only they are closed. A task that
  // failed while building its chain may have none.
  std::vector<bool> opened_;
  std::vector<std::unique_ptr<detail::InputAdapter>> adapters_;
  InputGate gate_;
  WatermarkValve valve_{0};  // over the gate's channels, once it has them
  TimeService time_;
  TaskPhase phase_ = TaskPhase::kCreated;
  bool stop_requested_ = false;  // stop with drain: the source ends its input at the next poll
  // At-most-once source: batches it read ahead, each reported with the
  // positions after it and emitted once the JobManager confirmed it.
  struct ReadAhead {
    bool on = false;
    int held = 0;             // records in the open batch
    int64_t next_seq = 1;     // of the next batch sealed
    int64_t released = 0;     // batches emitted (they are confirmed in order)
    int64_t end_seq = -1;     // the batch the input ends with, once read
  };
  ReadAhead ahead_;
  // Batch execution: the head operator's input sorted by key
  // (OperatorChain::sorted_input); replayed once every input ended.
  std::unique_ptr<batch::SortedInput> sorted_;
  std::vector<detail::InputAdapter*> adapter_of_input_;  // by the operator's input index
  bool replaying_ = false;
  int block_key_group_ = -1;  // of the key block being replayed
  int64_t dropped_on_failure_ = 0;  // --failover task: the records a failing input buffer took along
  size_t local_bytes_read_ = 0;      // of the restore's state files, from local copies
  std::chrono::steady_clock::time_point last_flush_;
  // Unaligned: the buffer the task stopped reading, and the checkpoint
  // whose snapshot waits for its channel state.
  InputGate::Held held_;
  struct PendingCheckpoint {
    int64_t id = -1;
    std::shared_ptr<SubtaskCheckpointer::Captured> captured;
    int64_t sync_ms = 0;
    int64_t alignment_ms = 0;
    std::chrono::steady_clock::time_point started;
  };
  PendingCheckpoint unaligned_pending_;
  // An aligned-checkpoint timeout: the barrier this task sent aligned, and
  // when (wall clock ms) it turns into a priority event where still queued.
  int64_t aligned_barrier_ = -1;
  int64_t aligned_barrier_deadline_ = INT64_MAX;
  // Promotes the aligned barrier sent, once its timeout passed.
  void promote_late_barrier();
  // Buffer debloating: every period, from the bytes the task read since,
  // the buffer size that makes its input channels hold about the target
  // time of data, asked of the producers when it changed by a quarter.
  void debloat(std::chrono::steady_clock::time_point now);
  struct Debloater {
    std::chrono::steady_clock::time_point last;
    int64_t bytes = 0;          // bytes_in at `last`
    double rate = 0;            // bytes/s, smoothed
    int size = 0;               // the size asked for (0: full buffers)
  };
  Debloater debloat_;
  std::vector<std::shared_ptr<network::LocalChannel>> debloated_inputs_;  // task thread only
  // Iterations (task_iteration.cc).
  // Counts the loop inputs; a head's feedback channels start idle to the
  // watermark valve and its backlog is made.
  void setup_iteration();
  // A round marker from loop input `ch`.
  void on_round(int ch, const network::ChannelEvent& ev);
  // Sends round `round` on the loop outputs.
  void pass_round(int64_t round, bool dirty);
  // Records read or written so far: a round is dirty when they changed.
  int64_t record_activity() const;
  // Head: its input other than the feedback ended.
  void start_rounds();
  // Head: a feedback buffer's records go to the backlog.
  void queue_feedback(int ch, const network::Buffer& buffer);
  // Head: feeds backlog records to the head operator while the outputs take
  // them; false when there was none.
  bool process_backlog();
  // Head: the feedback read but not processed joins the channel state of
  // the checkpoint whose snapshot was just taken.
  void record_backlog();
  struct Iteration {
    int loop_inputs = 0;      // input channels on loop edges (a head's: its feedback)
    int ordinary_open = 0;    // head: other input channels not ended
    int first_feedback = -1;  // head: the gate channel its backlog's channel state goes with
    detail::InputAdapter* feedback_adapter = nullptr;
    bool rounds = false;      // head: its input ended, rounds run
    bool ended = false;       // head: the loop went quiet, its end of data sent
    int64_t round = 0;        // the last round passed on (a head: sent)
    int seen = 0;             // markers of round + 1 received
    bool dirty = false;       // ... one of them dirty
    int64_t activity = 0;     // record_activity() when `round` was passed on
    std::string chunk;        // head: backlog records taken out, from `chunk_at`
    size_t chunk_at = 0;
  };
  Iteration iter_;
  std::unique_ptr<FeedbackQueue> backlog_;  // an iteration head's
  // Restored channel state to replay: the input (index into adapters_),
  // its edge, and the records.
  struct Replay {
    size_t adapter = 0;
    const detail::StreamEdge* edge = nullptr;
    std::string records;
    bool by_key_group = false;  // keep only the records of this subtask's key groups
    std::string what;           // "edge 2 from subtask 1", for errors
  };
  std::vector<Replay> replay_;
};

}  // namespace weir::runtime

#endif  // WEIR_RUNTIME_TASK_H_
