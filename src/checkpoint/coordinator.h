// The checkpoint coordinator (JobManager side): decides when to trigger,
// tracks pending checkpoints until every task acknowledged, completes them
// durably, retains the newest N, and aborts on decline or timeout.
//
// It talks to the rest of the JobManager only through CoordinatorActions
// (trigger sources, notify tasks, fail the job), so it knows nothing of
// threads, processes or networks; time comes from an injected Clock and
// progress from tick(). Confined to the JobManager thread.
#ifndef WEIR_CHECKPOINT_COORDINATOR_H_
#define WEIR_CHECKPOINT_COORDINATOR_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "checkpoint/format.h"
#include "checkpoint/storage.h"
#include "common/clock.h"
#include "weir/config.h"
#include "weir/job_result.h"

namespace weir::checkpoint {

// One operator's state in a task's acknowledgement.
struct AckedOperatorState {
  std::string uid;
  int parallelism = 0;
  int max_parallelism = 0;
  OperatorSubtaskState handle;
};

struct TaskAck {
  std::vector<AckedOperatorState> states;
  int64_t sync_ms = 0;
  int64_t async_ms = 0;
  int64_t alignment_ms = 0;
  // At-most-once sources: the records this execution had emitted when it
  // took the snapshot (what a restore to this checkpoint keeps).
  int64_t source_records = 0;
  // Unaligned checkpoints: bytes of channel state in its state files.
  int64_t persisted_data = 0;
};

// Why a pending checkpoint was aborted (after Flink's CheckpointFailureReason).
enum class CheckpointFailureReason {
  kAttemptEnded,    // the job attempt ended before it completed
  kExpired,         // not acknowledged by every task within the timeout
  kDeclined,        // a task could not take its snapshot
  kFinalizeFailed,  // its metadata could not be written
  // A task gave it up for a newer checkpoint or savepoint whose barrier
  // overtook it (an iteration head still recording its feedback, a
  // savepoint triggered during a checkpoint): the newer one goes on.
  kSubsumed,
};
std::string_view to_string(CheckpointFailureReason r);
// Whether an abort for `r` counts against tolerable_failed_checkpoints (an
// attempt that ended is the job's failure, not the checkpoint's; a
// subsumed one is replaced by a newer one, as Flink ignores its
// CHECKPOINT_DECLINED_SUBSUMED).
bool counts_as_failure(CheckpointFailureReason r);

class CoordinatorActions {
 public:
  virtual ~CoordinatorActions() = default;
  // `final`: the checkpoint taken once every source ended.
  virtual void trigger_sources(int64_t checkpoint_id, int64_t timestamp_ms, bool savepoint, bool final) = 0;
  virtual void notify_complete(int64_t checkpoint_id) = 0;
  virtual void notify_aborted(int64_t checkpoint_id) = 0;
  // The final checkpoint (after end of input) completed.
  virtual void final_checkpoint_complete(int64_t checkpoint_id) = 0;
  // A savepoint completed (`location` is its directory) or failed.
  virtual void savepoint_done(int64_t checkpoint_id, const std::string& location,
                              const absl::Status& status) = 0;
  // Too many checkpoints failed in a row.
  virtual void fail_job(const absl::Status& why) = 0;
};

// Where checkpoint ids come from when they must be unique beyond one
// JobManager: under high availability a counter in ZooKeeper, so that a
// new leader never reuses an id a deposed one handed out. Without one the
// coordinator counts in memory.
class CheckpointIdCounter {
 public:
  virtual ~CheckpointIdCounter() = default;
  // Reserves and returns the next id, at least `at_least`.
  virtual absl::StatusOr<int64_t> next(int64_t at_least) = 0;
};

// Retained completed checkpoints, oldest first. Confined to the JobManager
// thread.
class CompletedCheckpointStore {
 public:
  struct Entry {
    int64_t id;
    std::string location;
    std::shared_ptr<const CheckpointMetadata> metadata;
    bool owned;  // false for a checkpoint restored from, which the job must not delete
    bool savepoint = false;
  };

  CompletedCheckpointStore(int retained, CheckpointStorage* storage)
      : retained_(retained < 1 ? 1 : retained), storage_(storage) {}

  // Adds `e` and discards owned checkpoints beyond the retained number.
  // Shared files (incremental checkpoints) of owned checkpoints are
  // reference-counted: one is deleted with the last checkpoint referring to it.
  // Savepoints do not count against the retained number (they never subsume
  // a checkpoint, whose shared files a task may still refer to again); one
  // stays listed only while it is the latest.
  void add(Entry e);
  const Entry* latest() const { return entries_.empty() ? nullptr : &entries_.back(); }
  // Forgets the latest entry, found broken; nothing it shares is deleted,
  // and its own files go with the next sweep of orphans (the error that
  // found it broken was logged).
  void drop_latest() {
    if (entries_.empty()) return;
    forget(entries_.back());
    entries_.pop_back();
  }
  const std::deque<Entry>& entries() const { return entries_; }
  // Shared files referred to by retained owned checkpoints (absolute paths).
  size_t num_shared_files() const { return shared_refs_.size(); }

 private:
  // Adds `delta` to the count of each shared file of `e`; returns the files
  // whose count dropped to zero.
  std::vector<std::string> reference(const Entry& e, int delta);
  // Tells the storage `e` is no longer a restore point; false: it failed
  // to, and `e`'s files must stay.
  bool forget(const Entry& e);

  const int retained_;
  CheckpointStorage* storage_;
  std::deque<Entry> entries_;
  std::map<std::string, int> shared_refs_;
};

class CheckpointCoordinator {
 public:
  // How often leftovers of other checkpoints are looked for (a listing of
  // the job's checkpoint directory, or of its S3 prefix).
  static constexpr int64_t kOrphanSweepMs = 10'000;

  CheckpointCoordinator(CheckpointConfig config, std::string job_id, const Clock* clock,
                        CheckpointStorage* storage, CompletedCheckpointStore* store,
                        CoordinatorActions* actions);

  // A job attempt with `num_tasks` tasks (indices 0..n-1) is running.
  // Periodic checkpoints start one interval later.
  void start(int num_tasks);
  // The attempt is going away: aborts pending checkpoints without counting
  // them as failures.
  void stop();
  // Periodic triggering and timeouts. Call often (every few ms).
  void tick();
  // Every source has reached end of input: take the final checkpoint as
  // soon as no other is pending.
  void request_final_checkpoint();
  // Takes a savepoint into directory `dir` now (besides any pending
  // checkpoint). A savepoint is a full snapshot; once complete it is the
  // newest restore point, but the engine never deletes it. Returns its id.
  absl::StatusOr<int64_t> trigger_savepoint(const std::string& dir);
  // The final checkpoint, when it comes, is a savepoint into `dir`
  // (stop-with-savepoint with drain).
  void make_final_checkpoint_a_savepoint(const std::string& dir) { final_savepoint_dir_ = dir; }

  void on_ack(int task, int64_t checkpoint_id, TaskAck ack);
  void on_decline(int task, int64_t checkpoint_id, const std::string& reason);
  // An acknowledgement or decline that no pending checkpoint waits for
  // (aborted meanwhile, or from an attempt that ended): cleans up its files.
  void on_stale_report(int64_t checkpoint_id);

  // Ids continue after a restored checkpoint.
  void set_next_checkpoint_id(int64_t id) { next_id_ = id; }
  // Ids come from `counter` (outlives the coordinator) from now on.
  void set_id_counter(CheckpointIdCounter* counter) { counter_ = counter; }
  int64_t next_checkpoint_id() const { return next_id_; }
  size_t num_pending() const { return pending_.size(); }
  // The last kCheckpointHistory completed, oldest first.
  const std::vector<CompletedCheckpointStats>& completed_stats() const { return stats_; }
  int64_t failed_checkpoints() const { return failed_total_; }
  CheckpointCounts counts() const;
  // Counts of an earlier JobManager's run of the job, added to this one's.
  void carry_counts(int64_t completed, int64_t failed) {
    completed_total_ += completed;
    failed_total_ += failed;
  }

 private:
  struct Pending {
    int64_t id;
    int64_t trigger_ms;  // clock_->now_ms()
    int64_t wall_ms;
    bool is_final;
    std::string savepoint_dir;  // empty for a checkpoint
    std::set<int> awaiting;
    std::vector<TaskAck> acks;
    std::vector<SubtaskCheckpointStats> timings;  // per acknowledgement
  };

  // At-most-once checkpoints too: its restarts restore the latest (the
  // sources do not rewind), and its sinks commit at each.
  bool periodic() const { return config_.mode != CheckpointingMode::kNone; }
  // Returns the id, or an error when a savepoint directory cannot be made.
  absl::StatusOr<int64_t> trigger(bool is_final, const std::string& savepoint_dir = "");
  void complete(Pending p);
  // Deletes what checkpoints below `completed` left in this job's storage
  // that are neither retained nor pending: aborted ones written to after
  // they were discarded (a late task), completed ones a deposed leader
  // could not record, broken ones. At most once per kOrphanSweepMs.
  void sweep_orphans(int64_t completed);
  // Aborts pending checkpoint `id` for `reason`; `detail` says more (the
  // task's own reason, the storage error).
  void abort(int64_t id, CheckpointFailureReason reason, const std::string& detail = "");

  const CheckpointConfig config_;
  const std::string job_id_;
  const Clock* clock_;
  CheckpointStorage* storage_;
  CompletedCheckpointStore* store_;
  CoordinatorActions* actions_;
  CheckpointIdCounter* counter_ = nullptr;

  bool running_ = false;
  int num_tasks_ = 0;
  int64_t next_id_ = 1;
  int64_t next_trigger_ms_ = 0;
  bool final_requested_ = false;
  bool final_done_ = false;
  std::string final_savepoint_dir_;
  std::map<int64_t, Pending> pending_;
  int64_t last_sweep_ms_ = INT64_MIN;  // clock_->now_ms() of the last sweep of orphans
  int consecutive_failures_ = 0;
  int64_t failed_total_ = 0;
  int64_t completed_total_ = 0;
  int64_t duration_sum_ms_ = 0;
  int64_t duration_max_ms_ = 0;
  std::vector<CompletedCheckpointStats> stats_;  // at most kCheckpointHistory
};

}  // namespace weir::checkpoint

#endif  // WEIR_CHECKPOINT_COORDINATOR_H_
