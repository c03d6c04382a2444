// Job configuration: checkpointing, restart strategy, network and runtime
// knobs. Plain structs; every field documents its default and unit.
#ifndef WEIR_CONFIG_H_
#define WEIR_CONFIG_H_

#include <chrono>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace weir {

using Duration = std::chrono::milliseconds;

// A duration as Flink writes it: a number (a fraction allowed) and a unit,
// ms|milli|millis|millisecond(s), s|sec|secs|second(s), m|min|mins|
// minute(s), h|hour(s), d|day(s), any case, a space allowed before the
// unit; several in a row add up ("1h30m", "1 min 30 s"); a plain number is
// milliseconds. "1.5s", "1 min", "250ms". Refused: negative, finer than a
// millisecond, or more than 100 years.
absl::StatusOr<Duration> parse_duration(std::string_view text);
// A memory size as Flink writes it: a whole number of bytes with an
// optional unit, b, k|kb|kib, m|mb|mib, g|gb|gib (powers of 1024, any case,
// a space allowed before the unit): "64mb", "1 gib", "512k", "1048576".
absl::StatusOr<int64_t> parse_memory_size(std::string_view text);
// The same in its largest whole unit, as parse_duration reads it: "100ms",
// "1s", "10min".
std::string format_duration(Duration d);

// What a failure does to the effect of each input record.
enum class CheckpointingMode : uint8_t {
  kExactlyOnce = 0,   // barriers are aligned: each record affects state once
  kAtLeastOnce = 1,   // barriers are tracked, not aligned: replays may double
  // No periodic checkpoints; a restart begins from the restore point (or
  // the start of input) again, so records after it are processed twice.
  kNone = 2,
  // No periodic checkpoints and no rewind: a restarted source continues
  // after the last record it emitted, with the state of the restore point
  // (or empty). Sources read a batch ahead and emit it only once the
  // JobManager holds the positions after it; what a failure loses is
  // counted (JobResult::lost_records).
  kAtMostOnce = 3,
};

absl::StatusOr<CheckpointingMode> parse_checkpointing_mode(std::string_view text);
std::string_view to_string(CheckpointingMode mode);

struct CheckpointConfig {
  CheckpointingMode mode = CheckpointingMode::kExactlyOnce;
  // Exactly-once with unaligned checkpoints (Flink's FLIP-76): a barrier
  // overtakes the data in flight, which is stored with the checkpoint as
  // channel state and replayed on restore, so a checkpoint does not wait for
  // backpressured data. Savepoints stay aligned. Default: false (aligned).
  bool unaligned = false;
  // With `unaligned`: a checkpoint starts aligned and switches to unaligned
  // at a task whose alignment is still under way this long after the
  // checkpoint was triggered (Flink's aligned-checkpoint-timeout); barriers
  // still queued in that task's input channels then overtake the data in
  // front of them. Zero: unaligned from the start. Default: 0.
  Duration aligned_timeout{0};
  // Time between the start of two periodic checkpoints. Default: 1 s.
  Duration interval{1000};
  // A checkpoint not complete after this long is aborted. Default: 10 min.
  Duration timeout{10 * 60 * 1000};
  // Least time between the end of one checkpoint and the start of the next.
  // Default: 0.
  Duration min_pause{0};
  // Checkpoints in flight at once. Default: 1.
  int max_concurrent = 1;
  // Consecutive failed checkpoints tolerated before the job attempt fails.
  // Default: 0.
  int tolerable_failed_checkpoints = 0;
  // Completed checkpoints kept; older ones are deleted when subsumed.
  // Checkpoints in memory (no directory) keep only the newest whatever
  // this says: they serve failover inside the process, which restores the
  // newest, and each is a full copy of the state. Default: 3.
  int retained = 3;
  // Where checkpoints are written. Empty: in memory (lost with the process).
  // Default: empty.
  std::string directory;
  // RocksDB backend with a checkpoint directory: upload only the SST files
  // no retained checkpoint holds yet (shared files are reference-counted
  // and deleted with the last checkpoint that refers to them). Savepoints
  // stay full and canonical. Default: false (full checkpoints).
  bool incremental = false;
  // Heap backend: each checkpoint writes the entries changed since the last
  // completed one (a changelog of key groups, shared between checkpoints),
  // and now and then a full snapshot of the state (a new base) that bounds
  // the chain a restore reads: when the base is older than
  // changelog_materialize_interval, or the changes since it outweigh it.
  // Savepoints stay full and canonical. RocksDB state is unaffected (it has
  // incremental checkpoints). Default: false.
  bool changelog = false;
  // Default: 10 min.
  Duration changelog_materialize_interval{10 * 60 * 1000};
};

enum class RestartStrategyKind : uint8_t {
  kNone = 0,
  kFixedDelay = 1,
  kExponentialDelay = 2,
  kFailureRate = 3,
};

absl::StatusOr<RestartStrategyKind> parse_restart_strategy(std::string_view text);
std::string_view to_string(RestartStrategyKind kind);

struct RestartStrategyConfig {
  RestartStrategyKind kind = RestartStrategyKind::kFixedDelay;
  // fixed-delay: restarts before the job fails. Default: unlimited (-1).
  int max_attempts = -1;
  // fixed-delay and failure-rate: wait before a restart. Default: 100 ms.
  Duration delay{100};
  // exponential-delay: first backoff, its cap, growth factor, the quiet time
  // after which the backoff resets, and the jitter as a fraction of the
  // backoff. Defaults: 100 ms, 30 s, 2.0, 60 s, 0.1.
  Duration initial_backoff{100};
  Duration max_backoff{30000};
  double backoff_multiplier = 2.0;
  Duration reset_backoff_threshold{60000};
  double jitter_factor = 0.1;
  // failure-rate: more than max_failures_per_interval failures within
  // failure_rate_interval fail the job. Defaults: 1 per 60 s.
  int max_failures_per_interval = 1;
  Duration failure_rate_interval{60000};
  // Any strategy: the job fails, with the last cause, after this many
  // failures in a row without progress in between, once they span at least
  // 10 s. Progress is a completed checkpoint, or a minute without failure
  // (for jobs whose checkpoints never complete, or that take none). So a
  // job that can only fail again (a corrupted checkpoint, an unwritable
  // directory, a full disk) ends instead of restarting forever, and one
  // that meets a passing condition rides it out. 0: unlimited. Default: 10.
  int max_failures_without_progress = 10;
};

struct NetworkConfig {
  // Size of one network buffer in bytes. Default: 32 KiB.
  int buffer_size = 32 * 1024;
  // Buffers in the process-wide pool; bounds network memory. Default: 2048
  // (64 MiB with the default buffer size).
  int total_buffers = 2048;
  // Full buffers a channel holds before its producer blocks. Default: 4.
  int buffers_per_channel = 4;
  // A partly filled buffer is sent after at most this long. Default: 5 ms.
  Duration buffer_timeout{5};
  // Buffer debloating (Flink's FLIP-183): each task measures how fast it
  // consumes its input and has its producers send buffers only as large as
  // makes the data in flight to it last about `debloat_target`; buffers
  // still come from the fixed pool, partly filled. Default: off.
  bool debloat = false;
  // Default: 1 s (Flink's taskmanager.network.memory.buffer-debloat.target).
  Duration debloat_target{1000};
};

enum class StateBackendKind : uint8_t {
  kHeap = 0,     // objects in memory, copy-on-write snapshots
  kRocksDb = 1,  // serialized in an embedded RocksDB per keyed operator subtask
};

absl::StatusOr<StateBackendKind> parse_state_backend(std::string_view text);
std::string_view to_string(StateBackendKind kind);

struct StateBackendConfig {
  StateBackendKind kind = StateBackendKind::kHeap;
  // RocksDB: where the working copies live, one directory per operator
  // subtask, removed when it closes. Default: empty, meaning
  // <system temp directory>/weir-rocksdb.
  std::string local_directory;
  // RocksDB: memory of all instances of the process together: one block
  // cache of this size, with the memtables charged against it. Default:
  // 256 MiB, whatever the state size.
  int64_t rocksdb_memory_bytes = int64_t{256} << 20;
  // RocksDB: each state's write-back cache of decoded entries, in estimated
  // bytes (entries plus their encoded size), on top of rocksdb_memory_bytes.
  // Hits cost what they cost on the heap backend; changed entries are
  // written when they leave the cache or at a checkpoint (8 MiB: a keyed
  // running sum on 100 000 keys 30x faster than 0). 0: the entry of the
  // current key only.
  int64_t rocksdb_cache_bytes_per_state = int64_t{8} << 20;
  // RocksDB with incremental checkpoints: keep each subtask's latest
  // snapshot locally (hard links) and restore from it after a failure in the
  // same process, instead of copying the checkpoint's files back. Falls back
  // to the checkpoint when the local copy is missing or not intact.
  bool local_recovery = true;
};

// What restarts when a task fails. kRegion restarts only the failed task's
// pipelined region: the subtasks connected to it through network edges
// (an all-to-all edge joins all its producers and consumers, a forward edge
// joins subtask i to subtask i), restoring them from the latest completed
// checkpoint while the other regions keep running. kFull restarts every task.
// kTask restarts only the failed subtask (approximate local recovery): its
// neighbours keep running, the records in flight to and from it are dropped
// and counted; at-least-once also restarts the sources upstream of it from
// the checkpoint, so they send everything since again. Refused with
// exactly-once, which it would break, and on a multi-process cluster.
enum class FailoverStrategy : uint8_t { kFull = 0, kRegion = 1, kTask = 2 };
absl::StatusOr<FailoverStrategy> parse_failover_strategy(std::string_view text);
std::string_view to_string(FailoverStrategy strategy);

// How records cross a network edge (FLIP-1's intermediate results).
// kPipelined: through bounded in-memory channels while both ends run
// (backpressure). kBlocking: the producer writes its whole output to local
// files, one per consumer subtask, and the consumers are deployed once it
// finished; a consumer that fails re-reads the files, the producer does not
// run again. kPersisted: as kBlocking, but the files are written to the
// checkpoint directory's file system (synced), so losing the process that
// wrote them does not make the producer run again either. A blocking or
// persisted edge ends a pipelined region: the regions are the job's stages,
// each deployed when the stages it reads have finished. Such a job takes no
// checkpoints: a failed stage re-reads its input files instead; its sinks
// commit when their stage finishes. Needs bounded sources.
enum class ExchangeMode : uint8_t { kPipelined = 0, kBlocking = 1, kPersisted = 2 };
absl::StatusOr<ExchangeMode> parse_exchange_mode(std::string_view text);
std::string_view to_string(ExchangeMode mode);

// kStreaming runs every stage at once and checkpoints. kBatch (every source
// bounded, refused otherwise) makes every network edge blocking (or
// persisted, when that is the exchange chosen): the job runs in stages,
// without checkpoints, and a failure re-runs only the failed stage's region
// from its input files.
enum class RuntimeMode : uint8_t { kStreaming = 0, kBatch = 1 };
absl::StatusOr<RuntimeMode> parse_runtime_mode(std::string_view text);
std::string_view to_string(RuntimeMode mode);

struct JobConfig {
  CheckpointConfig checkpoint;
  StateBackendConfig state;
  RestartStrategyConfig restart;
  // Default: kRegion.
  FailoverStrategy failover = FailoverStrategy::kRegion;
  // Default: kStreaming.
  RuntimeMode runtime_mode = RuntimeMode::kStreaming;
  // How every network edge exchanges records; kBatch makes kPipelined
  // blocking. Default: kPipelined.
  ExchangeMode exchange = ExchangeMode::kPipelined;
  // kBlocking: where the result files live, one directory per job, removed
  // when the job ends. Default: empty, meaning <system temp directory>/weir-results.
  std::string result_directory;
  // Batch execution: memory of each keyed subtask's sort of its input; what
  // does not fit is spilled to runs under the result directory, merged at
  // once up to 64 runs (an input of 64 budgets), in passes beyond. Default:
  // 16 MiB (smaller runs sort faster in cache: docs/benchmarks.md).
  int64_t sort_memory_bytes = int64_t{16} << 20;
  // Batch execution: keyed operators read their input sorted by key, one
  // key at a time (false: they keep every key's state in the configured
  // backend, as in streaming). Default: true.
  bool sorted_inputs = true;
  // Iterations: the memory of each head subtask's backlog of feedback read
  // but not yet processed; past it the backlog spills to the result
  // directory. Default: 64 MiB.
  int64_t iteration_memory_bytes = int64_t{64} << 20;
  NetworkConfig network;
  // Parallelism of operators that do not set one. Default: 1.
  int default_parallelism = 1;
  // Upper bound of any operator's parallelism; fixes the key groups. Default: 128.
  int max_parallelism = 128;
  // Restore from "latest" (newest retained checkpoint under
  // checkpoint.directory) or from a checkpoint path. Default: empty (fresh).
  std::string restore;
  // Take ownership of the restored checkpoint: it is deleted once enough
  // newer checkpoints replace it. Default: false (never deleted by the job;
  // savepoints should stay so).
  bool restore_claim = false;
  // Skip state of operator uids the job no longer has. Default: false.
  bool allow_non_restored_state = false;
  // Cluster: how long an attempt waits for enough free slots before the job
  // fails. Default: 60 s.
  Duration slot_timeout{60000};

  // The exchange network edges get: `exchange`, but blocking where batch
  // execution asked for pipelined.
  ExchangeMode effective_exchange() const {
    return runtime_mode == RuntimeMode::kBatch && exchange == ExchangeMode::kPipelined ? ExchangeMode::kBlocking
                                                                                      : exchange;
  }
};

}  // namespace weir

#endif  // WEIR_CONFIG_H_
