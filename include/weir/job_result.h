// What execute() reports when a job ends.
#ifndef WEIR_JOB_RESULT_H_
#define WEIR_JOB_RESULT_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "weir/config.h"

namespace weir {

enum class JobStatus : uint8_t { kCreated, kRunning, kRestarting, kFinished, kFailed, kCanceled };
std::string_view to_string(JobStatus s);

// One subtask's part of a checkpoint, as it acknowledged it.
struct SubtaskCheckpointStats {
  int task = 0;               // index over all subtasks, vertex by vertex
  int64_t sync_ms = 0;        // the synchronous part on the task thread
  int64_t async_ms = 0;       // writing the state files
  int64_t alignment_ms = 0;   // first to last barrier
  uint64_t state_bytes = 0;   // of the state it acknowledged (files and referenced shared files)
  // Unaligned checkpoints: bytes of the records in flight it stored as
  // channel state (Flink's persisted_data).
  uint64_t persisted_data = 0;
};

struct CompletedCheckpointStats {
  int64_t id = 0;
  int64_t trigger_time_ms = 0;  // wall clock
  Duration duration{0};         // trigger to last acknowledgement
  uint64_t state_bytes = 0;
  bool is_final = false;        // the checkpoint taken at end of input
  bool is_savepoint = false;
  uint64_t new_bytes = 0;       // written by this checkpoint (less than state_bytes when incremental)
  uint64_t persisted_data = 0;  // channel state over all subtasks (unaligned checkpoints)
  std::vector<SubtaskCheckpointStats> subtasks;  // by task
};

// How many completed checkpoints (and savepoints) a job keeps in detail:
// the REST API's history, as Flink's web.checkpoints.history. Older ones
// only count.
inline constexpr size_t kCheckpointHistory = 100;

// Counts over all of a job's checkpoints and savepoints so far.
struct CheckpointCounts {
  int64_t completed = 0;
  int64_t failed = 0;       // declined, expired or aborted
  int64_t in_progress = 0;  // triggered, not yet complete
  int64_t duration_sum_ms = 0;  // of the completed ones
  int64_t duration_max_ms = 0;
  int64_t total() const { return completed + failed + in_progress; }
};

struct SavepointResult {
  int64_t id = 0;
  std::string path;   // its directory
  std::string error;  // empty when it completed
};

// What one vertex (a chain of operators) did in the last attempt of each of
// its subtasks, summed over them: records and buffer bytes through its
// network channels (records passed within the chain are not counted; a
// record on a broadcast edge counts once per channel), and the time its
// subtasks waited for output space (backpressured) or for input (idle).
struct VertexStats {
  std::string name;
  int parallelism = 0;
  int64_t records_in = 0;
  int64_t records_out = 0;
  int64_t bytes_in = 0;
  int64_t bytes_out = 0;
  int64_t backpressured_ms = 0;
  int64_t idle_ms = 0;
  // Operator gauges, summed over the subtasks (OperatorContext::set_gauge);
  // batch execution's sorts report "sort.records", "sort.spilled_bytes" and
  // "sort.spilled_runs"; an iteration's head, once the iteration ended,
  // "iteration.rounds" (summed over its subtasks, which all took the same
  // number) and "iteration.spilled_bytes" (feedback its backlog spilled).
  std::map<std::string, int64_t> gauges;
  // Over every attempt of every subtask (what failed attempts did before
  // their restart included, so replayed records count again): the most
  // attempts one subtask had, and records in and out.
  int attempts = 1;
  int64_t records_in_all_attempts = 0;
  int64_t records_out_all_attempts = 0;
};

struct JobResult {
  std::string job_id;
  JobStatus status = JobStatus::kCreated;
  std::string failure;  // why the job failed, when it did
  int restarts = 0;
  // The cause of the last failure the job restarted after (or failed with),
  // even when it then finished; empty when nothing failed.
  std::string last_failure;
  // At-most-once: records whose effects failures undid. A restarted region
  // restores its latest checkpoint and its sources continue after what
  // they had read, so every record they read after that checkpoint's
  // snapshot (emitted or still read ahead) affects neither state nor the
  // output of transactional sinks: each is counted once, exactly, also
  // when a TaskManager was killed (docs/cli.md, "Delivery guarantees").
  // Under --failover task: the records a failed source task read ahead and
  // never emitted, and dropped_records unless the mode is at-least-once.
  int64_t lost_records = 0;
  // --failover task: records in flight to or from a restarted subtask that
  // were dropped (in its input channels, half-received by a neighbour, or
  // not yet sent), each counted once. At-least-once sends them again from
  // the rewound sources.
  int64_t dropped_records = 0;
  // The last kCheckpointHistory completed checkpoints in detail, oldest
  // first; the counts below cover every one.
  std::vector<CompletedCheckpointStats> checkpoints;
  CheckpointCounts checkpoint_counts;
  int64_t failed_checkpoints = 0;
  int64_t restored_checkpoint_id = -1;  // -1: started fresh
  std::string restored_from;            // path of the restored checkpoint
  std::vector<SavepointResult> savepoints;
  // The job was stopped with a savepoint: its path.
  std::string stopped_with_savepoint;
  Duration wall_time{0};
  // By vertex id; filled by the embedded cluster (a cluster's JobManager
  // reports them through its REST API instead).
  std::vector<VertexStats> vertices;
};

}  // namespace weir

#endif  // WEIR_JOB_RESULT_H_
