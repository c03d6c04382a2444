// The JobManager side of one job: the lifecycle of its subtasks. It deploys
// them (a pipelined job's all at once; a staged job's, with blocking or
// persisted edges, region by region as its StageSchedule allows), runs the
// checkpoint coordinator (pipelined jobs), and restarts what failed as the
// restart strategy allows: the failed subtask's region (pipelined region,
// every task with --failover full, or under --failover task the subtask
// alone, with its upstream sources at-least-once), from the latest completed
// checkpoint, or in a staged job from its input files, after any producer
// whose files are gone. It also keeps the at-most-once source positions and
// the counts of records lost and dropped.
//
// Failure handling, restarts and the records failures lose or drop are in
// job_master_failover.cc, the rest in job_master.cc. All state is confined to the JobMaster's event loop thread; the
// JobMasterGateway methods only post to it, so TaskManagers may call them
// from any thread.
#ifndef WEIR_RUNTIME_JOB_MASTER_H_
#define WEIR_RUNTIME_JOB_MASTER_H_

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "checkpoint/coordinator.h"
#include "checkpoint/storage.h"
#include "common/clock.h"
#include "graph/job_graph.h"
#include "runtime/event_loop.h"
#include "runtime/gateways.h"
#include "runtime/restart_strategy.h"
#include "runtime/stage_schedule.h"
#include "weir/job_control.h"
#include "weir/job_result.h"

namespace weir::runtime {

class JobMaster final : public JobMasterGateway, private checkpoint::CoordinatorActions {
 public:
  JobMaster(std::string job_id, std::shared_ptr<const graph::JobGraph> graph, JobConfig config,
            TaskExecutorGateway* task_manager,
            std::shared_ptr<checkpoint::CheckpointStorage> storage, const Clock* clock,
            JobControl* control = nullptr);
  ~JobMaster() override;

  // Checkpoint ids come from `counter` (outlives the JobMaster). Before
  // start().
  void set_checkpoint_id_counter(checkpoint::CheckpointIdCounter* counter);
  // Deploys the first attempt, restoring `restored` when given. With
  // `claim` the job owns the checkpoint it restores (deletes it once
  // subsumed), as when a new leader resumes the job's own checkpoints;
  // `older` are the job's other retained ones (oldest first), to fall back
  // to and to delete in turn.
  void start(std::optional<checkpoint::RestoredCheckpoint> restored, bool claim = false,
             std::vector<checkpoint::CompletedCheckpointStore::Entry> older = {});
  // The job was running under another JobManager that is gone (a leader
  // change under high availability) and resumes here: `history` (what
  // history() gave that JobManager, "" if nothing) carries its restarts,
  // checkpoint counts and failures over; the failover counts as a restart
  // and is kept among the failures as `cause` and the checkpoint it
  // resumed from (scope "JobManager"). After start().
  void record_failover(std::string cause, const std::string& history);
  // The job's restarts, checkpoint counts (this checkpoint's included) and
  // last failures as JSON, small (under 4 KiB), for the next JobManager.
  // On the event loop only: the checkpoint storage calls it as a
  // checkpoint completes.
  std::string history() const;
  // Blocks until the job is FINISHED, FAILED or CANCELED.
  JobResult wait();
  void cancel();
  // A savepoint or stop request (from JobControl, on any thread).
  void handle_request(JobControl::Request r);

  // What the job is doing now, for clients. Blocks until the event loop
  // answers; not to be called on it.
  struct Status {
    JobStatus status = JobStatus::kCreated;
    int attempt = 0;
    int restarts = 0;
    int64_t lost_records = 0;     // JobResult::lost_records so far
    int64_t dropped_records = 0;  // JobResult::dropped_records so far
    std::string failure;
    std::string waiting_for_slots;  // while a deployment waits for slots: what is missing
    std::vector<CompletedCheckpointStats> checkpoints;  // the last kCheckpointHistory
    CheckpointCounts checkpoint_counts;
    int64_t failed_checkpoints = 0;
    // Flink's downtime: while tasks of the job are failed and not all
    // running again, ms since the failure that began it (0 otherwise).
    // restartingTime: how long that outage lasted, or the last one did.
    int64_t downtime_ms = 0;
    int64_t restarting_time_ms = 0;
    // The last kMaxFailuresKept failures, oldest first: when (wall clock),
    // what failed ("attempt N", "region R", "vertex V subtask S", "job")
    // and why; `failures_total` counts every one.
    struct Failure {
      int64_t time_ms = 0;
      std::string scope;
      std::string cause;
    };
    std::vector<Failure> failures;
    int64_t failures_total = 0;
    // The last time tasks were deployed from a checkpoint or savepoint (the
    // job's start from --restore, or a restart): when (wall clock, -1:
    // never), which, from where. Flink's lastCheckpointRestoreTimestamp.
    int64_t last_restore_ms = -1;
    int64_t last_restored_id = -1;
    std::string last_restored_from;
    struct Execution {
      ExecutionId id;
      ExecutionState state;
      bool terminal;
    };
    std::vector<Execution> executions;  // of the current attempt
  };
  Status status();

  // The process running these executions is gone (a TaskManager lost):
  // they failed. Under --failover task their channels went with it, so
  // every subtask restarts, on a new channel generation.
  void executions_lost(std::vector<ExecutionId> ids, const std::string& reason);

  // JobMasterGateway.
  void update_task_state(const ExecutionId& id, ExecutionState state,
                         const std::string& error, bool unrecoverable) override;
  void acknowledge_checkpoint(const ExecutionId& id, int64_t checkpoint_id,
                              checkpoint::TaskAck ack) override;
  void decline_checkpoint(const ExecutionId& id, int64_t checkpoint_id,
                          const std::string& reason) override;
  void end_of_data(const ExecutionId& id) override;
  void report_source_positions(const ExecutionId& id, SourcePositions report) override;
  void report_dropped_records(const ExecutionId& id, int64_t records) override;

 private:
  struct Execution {
    ExecutionId id;
    bool is_source = false;
    bool terminal = true;
    ExecutionState state = ExecutionState::kCreated;
    bool end_of_data = false;
  };

  // CoordinatorActions.
  void trigger_sources(int64_t checkpoint_id, int64_t timestamp_ms, bool savepoint, bool final) override;
  void notify_complete(int64_t checkpoint_id) override;
  void notify_aborted(int64_t checkpoint_id) override;
  void final_checkpoint_complete(int64_t checkpoint_id) override;
  void fail_job(const absl::Status& why) override;
  void savepoint_done(int64_t checkpoint_id, const std::string& location,
                      const absl::Status& status) override;
  void stop_tasks();

  void deploy_all();
  // Staged jobs (blocking or persisted edges): deploys the waiting regions
  // whose input regions have finished.
  void schedule_ready();
  bool region_finished(int region) const;
  // --failover task, at-least-once: the source subtasks upstream of `task`
  // restart with it.
  void restart_upstream_sources(int task);
  // Deploys the next attempt of the tasks of `regions`, restoring the latest
  // completed checkpoint.
  void deploy(const std::set<int>& regions);
  // Slots for the tasks; false (and a retry, or the job failed) when there
  // are not enough.
  bool place_attempt(std::vector<TaskDeploymentDescriptor>& tdds, const std::set<int>& regions);
  void on_task_state(const ExecutionId& id, ExecutionState state, const std::string& error,
                     bool unrecoverable = false);
  // A task of `region` failed: restarts it (or, with full failover or
  // region -1, all).
  // `unrecoverable`: the job fails once the region's tasks have ended.
  void handle_failure(int region, const std::string& error, bool unrecoverable = false);
  void maybe_restart();
  // Before restoring again after a restore that made no progress: verifies
  // every file of the latest checkpoint, dropping broken ones (named in the
  // log) until an intact one is latest. False when none is left: the job
  // has failed.
  bool ensure_latest_is_intact();
  // Fails the job: cancels every task still running, then finishes.
  void fail_now(const std::string& why);
  // Logs the failure before a restart; the same again within 10 s counts.
  void log_restart();
  void finish_job(JobStatus status, const std::string& failure);
  // At-most-once, --failover task: a source execution ended without
  // finishing; what it was confirmed but never emitted is lost.
  void count_lost_records(int index);
  // At-most-once, --failover region or full: source `index` restarts and its
  // region restores `latest` (or starts afresh): every record the source was
  // confirmed after that checkpoint's snapshot is lost, counted once.
  void count_rolled_back(int index, const checkpoint::CompletedCheckpointStore::Entry* latest);
  int task_index(const ExecutionId& id) const;  // -1 when not of the current attempt

  // Constant after construction.
  // "NAME (SUBTASK/PARALLELISM) attempt A", for the log.
  std::string describe(const ExecutionId& id) const;

  const std::string job_id_;
  const std::shared_ptr<const graph::JobGraph> graph_;
  const JobConfig config_;
  TaskExecutorGateway* const tm_;
  const std::shared_ptr<checkpoint::CheckpointStorage> storage_;
  const Clock* const clock_;
  JobControl* const control_;

  // Event loop thread only.
  checkpoint::CompletedCheckpointStore store_;
  checkpoint::CheckpointCoordinator coordinator_;
  std::unique_ptr<RestartStrategy> restart_;
  // By task index: what restarts with it (its pipelined region, or itself
  // under --failover task; called regions throughout).
  const std::vector<int> region_of_;
  const int num_regions_;
  std::vector<int> region_attempt_;    // by region; the attempt its tasks run
  // Staged jobs: which regions wait for which (runtime/stage_schedule.h).
  const bool staged_;
  StageSchedule stages_;
  std::vector<Execution> executions_;  // by task index
  // At-most-once, by task index (sources only): the positions a source
  // subtask last reported (kept across attempts: its next one continues
  // there), and the records of the batches confirmed to its current
  // execution and of those that execution emitted. Across executions, a
  // source's records are numbered in the order they were confirmed:
  // `total_confirmed` so far, `base` when the current execution began (its
  // first record is base + 1), `counted` up to where a restart counted the
  // records after the restored checkpoint as lost.
  struct SourceProgress {
    std::shared_ptr<const detail::OperatorStateMap> positions;
    int64_t confirmed_records = 0;
    int64_t released_records = 0;
    int64_t total_confirmed = 0;
    int64_t base = 0;
    int64_t counted = 0;
  };
  std::vector<SourceProgress> source_progress_;
  // At-most-once: by checkpoint id (pending, and completed while retained),
  // where each source task index was in that numbering at its snapshot.
  std::map<int64_t, std::map<int, int64_t>> source_marks_;
  int64_t lost_records_ = 0;
  int64_t dropped_records_ = 0;  // --failover task
  std::set<int> restarting_;           // regions waiting for their tasks to end, then redeployed
  std::set<int> waiting_for_slots_;    // regions whose deployment waits for slots
  int attempt_ = -1;                   // the newest attempt of any region
  int channel_generation_ = 0;         // --failover task: TaskDeploymentDescriptor
  JobStatus status_ = JobStatus::kCreated;
  bool restart_scheduled_ = false;
  bool unrecoverable_ = false;  // a task failed with an UnrecoverableError: no restart
  std::string last_failure_;
  int restarts_ = 0;
  // Failures since the last progress (restart_strategy config), and when
  // the last one happened.
  int failures_without_progress_ = 0;
  std::set<int64_t> verified_checkpoints_;  // ids checked by ensure_latest_is_intact
  int64_t last_failure_ms_ = -1;
  int64_t first_failure_without_progress_ms_ = 0;
  std::string failed_what_;  // "attempt N" or "region R", of the last failure
  static constexpr size_t kMaxFailuresKept = 32;
  std::deque<Status::Failure> failures_;
  int64_t failures_total_ = 0;
  // The outage a failure began: since when (clock_->now_ms(), -1: none),
  // and how long the last one lasted (Status::downtime_ms).
  int64_t outage_start_ms_ = -1;
  int64_t last_outage_ms_ = 0;
  // Ends the outage once every task runs (or finished, or waits for its stage).
  void maybe_end_outage();
  void record_failure(std::string scope, std::string cause);
  // Repeated failure messages are logged once per interval.
  std::string last_logged_failure_;
  int64_t last_logged_failure_ms_ = -1;
  int unlogged_failures_ = 0;
  int64_t start_ms_ = 0;
  int64_t waiting_for_slots_since_ms_ = -1;
  std::string waiting_for_slots_why_;  // while waiting: what is missing
  int64_t restored_id_ = -1;  // what the job started from
  std::string restored_from_;
  int64_t last_restore_ms_ = -1;  // Status::last_restore_*
  int64_t last_restored_id_ = -1;
  std::string last_restored_from_;
  std::vector<SavepointResult> savepoints_;
  int64_t stop_savepoint_id_ = -1;  // stop (no drain) once this savepoint completes
  bool draining_ = false;           // stop with drain requested
  bool stopping_ = false;           // the stop savepoint completed; tasks are ending
  std::string stopped_with_savepoint_;

  // Completion, for wait().
  absl::Mutex done_mu_;
  absl::CondVar done_cv_;
  std::optional<JobResult> result_ ABSL_GUARDED_BY(done_mu_);

  EventLoop loop_;  // last: stopped first
};

}  // namespace weir::runtime

#endif  // WEIR_RUNTIME_JOB_MASTER_H_
