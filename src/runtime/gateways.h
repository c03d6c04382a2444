// The narrow interface between the JobManager and TaskManagers. Every
// message is a plain value, so the embedded cluster can pass them in memory
// and a multi-process cluster over the network. Implementations must not
// block the caller: they enqueue.
#ifndef WEIR_RUNTIME_GATEWAYS_H_
#define WEIR_RUNTIME_GATEWAYS_H_

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "checkpoint/coordinator.h"
#include "checkpoint/format.h"
#include "weir/key_group.h"

namespace weir::runtime {

// One execution of one subtask: attempt n of subtask s of vertex v.
struct ExecutionId {
  int vertex = 0;
  int subtask = 0;
  int attempt = 0;
  friend bool operator==(const ExecutionId&, const ExecutionId&) = default;
  std::string to_string() const {
    return "vertex " + std::to_string(vertex) + " subtask " + std::to_string(subtask) +
           " attempt " + std::to_string(attempt);
  }
};

// DO NOT CHANGE values: sent between processes.
// kCreated is the JobManager's only: not deployed (yet), as a stage that
// waits for the stages it reads.
// kDeploying: sent to its TaskManager, not yet reported running.
enum class ExecutionState : uint8_t {
  kRunning = 0,
  kFinished = 1,
  kCanceled = 2,
  kFailed = 3,
  kCreated = 4,
  kDeploying = 5
};
inline std::string_view to_string(ExecutionState s) {
  switch (s) {
    case ExecutionState::kRunning: return "RUNNING";
    case ExecutionState::kFinished: return "FINISHED";
    case ExecutionState::kCanceled: return "CANCELED";
    case ExecutionState::kFailed: return "FAILED";
    case ExecutionState::kCreated: return "CREATED";
    case ExecutionState::kDeploying: return "DEPLOYING";
  }
  return "?";
}

struct TaskDeploymentDescriptor {
  std::string job_id;
  ExecutionId execution;
  int task_index = 0;  // the coordinator's index of this subtask
  KeyGroupRange key_groups;
  // The checkpoint to restore from; null on a fresh start.
  std::string restore_location;
  std::shared_ptr<const checkpoint::CheckpointMetadata> restore;
  // At-most-once: the positions a source subtask last reported (its source
  // operator's state), which its restart continues from whatever `restore`
  // holds for that operator. Null when it reported none.
  std::shared_ptr<const detail::OperatorStateMap> source_positions;
  // Multi-process cluster: the data address (host:port) of the process
  // running each task of the attempt, by task index, and of this one. Empty
  // in the embedded cluster: every channel is local.
  std::shared_ptr<const std::vector<std::string>> task_locations;
  std::string location;
  // --failover task: channels are named by this instead of the attempt
  // (runtime::channel_attempt), so they outlive the attempts of either end;
  // it grows when the whole job restarts (a lost TaskManager takes its
  // channels with it), so no attempt meets a channel of an earlier one.
  int channel_generation = 0;
  // The coordinator's next checkpoint id when the attempt was deployed:
  // every earlier checkpoint had ended by then, so a barrier of one that
  // reaches this attempt (left in a channel that outlived the attempt
  // before it) is stale and ignored.
  int64_t first_checkpoint_id = 1;
};

// At-most-once: a source subtask read a batch ahead. The JobManager keeps
// `positions` as where the subtask restarts and confirms `seq`; only then
// does the source emit the batch.
struct SourcePositions {
  // 1, 2, ... per execution; 0: no batch, only `released_records` (sent as
  // the task ends, so the JobManager knows how much of what it confirmed
  // was never emitted).
  int64_t seq = 0;
  detail::OperatorStateMap positions;  // the source operator's state after the batch
  int64_t records = 0;                 // records in the batch
  int64_t released_records = 0;        // records this execution emitted so far
};

// JobManager -> TaskManager.
class TaskExecutorGateway {
 public:
  virtual ~TaskExecutorGateway() = default;
  // Places the tasks of a new attempt before any is submitted (fills their
  // locations). Unavailable while there are not enough free slots. The
  // embedded cluster runs everything in its one TaskManager.
  virtual absl::Status place(std::vector<TaskDeploymentDescriptor>& tdds) { return absl::OkStatus(); }
  // Checkpoint `checkpoint_id` is a savepoint written to `directory`; sent
  // before its trigger. Only other processes need to hear it.
  virtual void prepare_savepoint(int64_t checkpoint_id, const std::string& directory) {}
  virtual void submit_task(TaskDeploymentDescriptor tdd) = 0;
  virtual void cancel_task(const ExecutionId& id) = 0;
  // `final`: the checkpoint taken once every source ended.
  virtual void trigger_checkpoint(const ExecutionId& id, int64_t checkpoint_id,
                                  int64_t timestamp_ms, bool savepoint, bool final) = 0;
  virtual void notify_checkpoint_complete(const ExecutionId& id, int64_t checkpoint_id) = 0;
  virtual void notify_checkpoint_aborted(const ExecutionId& id, int64_t checkpoint_id) = 0;
  // After the final checkpoint: the task may end.
  virtual void finish_task(const ExecutionId& id) = 0;
  // Stop with drain: a source task ends its input now.
  virtual void stop_source(const ExecutionId& id) = 0;
  // At-most-once: the positions after batch `seq` are kept; the source may
  // emit every batch up to it.
  virtual void confirm_source_positions(const ExecutionId& id, int64_t seq) = 0;
  // Whether the blocking result file `path` that subtask `subtask` of
  // `vertex` wrote (in its latest attempt) can still be read. The embedded
  // cluster's files are in this process's file system; a cluster's stay
  // with the TaskManager that wrote them, and go with it.
  virtual bool holds_result(int vertex, int subtask, const std::string& path) {
    std::error_code ec;
    return std::filesystem::exists(path, ec);
  }
};

// TaskManager -> JobManager.
class JobMasterGateway {
 public:
  virtual ~JobMasterGateway() = default;
  // `unrecoverable`: the task failed with an UnrecoverableError (the job
  // fails, no restart).
  virtual void update_task_state(const ExecutionId& id, ExecutionState state,
                                 const std::string& error, bool unrecoverable) = 0;
  virtual void acknowledge_checkpoint(const ExecutionId& id, int64_t checkpoint_id,
                                      checkpoint::TaskAck ack) = 0;
  virtual void decline_checkpoint(const ExecutionId& id, int64_t checkpoint_id,
                                  const std::string& reason) = 0;
  // The task consumed all its input and finished its operators.
  virtual void end_of_data(const ExecutionId& id) = 0;
  // At-most-once: a source subtask's read-ahead positions.
  virtual void report_source_positions(const ExecutionId& id, SourcePositions report) = 0;
  // --failover task: the task dropped `records` in flight to or from a
  // restarted neighbour (or its own, as it ends).
  virtual void report_dropped_records(const ExecutionId& id, int64_t records) = 0;
};

}  // namespace weir::runtime

#endif  // WEIR_RUNTIME_GATEWAYS_H_
