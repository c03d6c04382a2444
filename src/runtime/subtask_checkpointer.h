// A task's part of a checkpoint (after Flink's SubtaskCheckpointCoordinator):
// the synchronous snapshot of every chained operator, on the task thread
// while its input is held at the barrier, then the asynchronous part on the
// snapshot executor: state files written, native (incremental) snapshots
// uploaded with a checksum per file (files a confirmed checkpoint already
// uploaded are referenced again), local copies kept for local recovery, and
// the acknowledgement, or a decline, sent to the JobMaster.
//
// The task sends the barrier downstream between the two parts, so records
// after it belong to the next checkpoint whatever the snapshot's outcome.
// snapshot() on the task thread only; the asynchronous part touches nothing
// of the task but the captured snapshots.
#ifndef WEIR_RUNTIME_SUBTASK_CHECKPOINTER_H_
#define WEIR_RUNTIME_SUBTASK_CHECKPOINTER_H_

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "checkpoint/storage.h"
#include "runtime/executor.h"
#include "runtime/gateways.h"
#include "state/local_state.h"
#include "weir/detail/operator.h"

namespace weir::runtime {

class SubtaskCheckpointer {
 public:
  struct Services {
    checkpoint::CheckpointStorage* storage = nullptr;
    ThreadPool* executor = nullptr;
    JobMasterGateway* job_master = nullptr;
    std::shared_ptr<state::LocalStateStore> local_state;  // null without local recovery
    bool incremental = false;                             // the job takes incremental checkpoints
    bool changelog = false;                               // heap state checkpoints as a changelog
    int64_t materialize_interval_ms = 10 * 60 * 1000;     // a changelog's longest time between bases
  };
  // One chained operator, by its uid.
  struct ChainedOperator {
    std::string uid;
    detail::OperatorBase* op;
  };
  // The snapshots taken by the synchronous part.
  struct Captured;

  SubtaskCheckpointer(ExecutionId id, int parallelism, int max_parallelism, Services services);

  // The synchronous part: each operator's snapshot, in chain order (native
  // ones only for an incremental checkpoint, never for a savepoint). An
  // error names the operator that failed.
  absl::StatusOr<std::shared_ptr<Captured>> snapshot(const std::vector<ChainedOperator>& chain,
                                                     int64_t checkpoint_id, bool savepoint);
  // Adds list `name` to the operator state of `uid` in `captured` (the
  // channel state of an unaligned checkpoint joins its head operator's).
  static void add_operator_list(Captured* captured, const std::string& uid, std::string name,
                                detail::OperatorListStateData list);
  // The asynchronous part, on the executor; it acknowledges with these
  // timings or declines with the cause.
  // `source_records`, `persisted_data`: TaskAck's.
  void finish_async(std::shared_ptr<Captured> captured, int64_t checkpoint_id, int64_t sync_ms,
                    int64_t alignment_ms, int64_t source_records = 0, int64_t persisted_data = 0);
  // The checkpoint was aborted: its asynchronous part, if still queued, is
  // dropped with what it holds instead of run, so a backlog of expired
  // checkpoints cannot pile up on the executor. Any thread.
  void aborted(int64_t checkpoint_id);
  // Blocks until every asynchronous part this task posted has acknowledged
  // or declined (after Flink's waitForPendingCheckpoints): a task that ends
  // its input reports FINISHED only then, so no state file of its last
  // checkpoint lands after the job is over. cancel() releases the wait.
  void wait_for_pending();
  // The task is cancelled: wait_for_pending() returns at once. The
  // asynchronous parts still run (one may complete a savepoint the job
  // stops with) unless their checkpoint is aborted. Any thread.
  void cancel();

 private:
  // Shared with the asynchronous parts, which may outlive the task.
  struct Aborted {
    absl::Mutex mu;
    std::set<int64_t> ids ABSL_GUARDED_BY(mu);  // the newest few
    int in_flight ABSL_GUARDED_BY(mu) = 0;      // posted, not yet ended
    bool cancelled ABSL_GUARDED_BY(mu) = false;
  };
  const ExecutionId id_;
  const int parallelism_;
  const int max_parallelism_;
  const Services services_;
  const std::shared_ptr<Aborted> aborted_ = std::make_shared<Aborted>();
};

}  // namespace weir::runtime

#endif  // WEIR_RUNTIME_SUBTASK_CHECKPOINTER_H_
