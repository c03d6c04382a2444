// The job flags every job takes, and the jobs weir builds by name: shared
// by the embedded commands (`weir run --embedded`, `weir example`) and the
// cluster, where every process builds the same job graph from the same
// arguments.
#ifndef WEIR_CLI_JOBS_H_
#define WEIR_CLI_JOBS_H_

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "cluster/job_catalog.h"
#include "cluster/job_library.h"
#include "sql/job_builder.h"
#include "sql/planner.h"
#include "weir/weir.h"

namespace weir::cli {

// Flags every job takes: parallelism, checkpointing, restarts, state. Their
// defaults are JobConfig's (weir/config.h), stated there once.
struct JobFlags {
  inline static const JobConfig kDefaults{};

  int parallelism = kDefaults.default_parallelism;
  int max_parallelism = kDefaults.max_parallelism;
  std::string checkpoint_dir = kDefaults.checkpoint.directory;
  std::string checkpoint_interval = format_duration(kDefaults.checkpoint.interval);
  std::string mode = std::string(to_string(kDefaults.checkpoint.mode));
  std::string checkpointing = kDefaults.checkpoint.unaligned ? "unaligned" : "aligned";
  std::string aligned_timeout = format_duration(kDefaults.checkpoint.aligned_timeout);
  bool buffer_debloat = kDefaults.network.debloat;
  std::string debloat_target = format_duration(kDefaults.network.debloat_target);
  std::string restore = kDefaults.restore;
  bool allow_non_restored = kDefaults.allow_non_restored_state;
  std::string restart_strategy = std::string(to_string(kDefaults.restart.kind));
  std::string failover = std::string(to_string(kDefaults.failover));
  std::string exchange = std::string(to_string(kDefaults.exchange));
  std::string runtime_mode = std::string(to_string(kDefaults.runtime_mode));
  std::string result_dir = kDefaults.result_directory;
  std::string sort_memory = std::to_string(kDefaults.sort_memory_bytes >> 20) + "mb";
  bool no_sorted_inputs = !kDefaults.sorted_inputs;
  std::string iteration_memory = std::to_string(kDefaults.iteration_memory_bytes >> 20) + "mb";
  std::string slot_timeout = format_duration(kDefaults.slot_timeout);
  int restart_attempts = kDefaults.restart.max_attempts;
  std::string restart_delay = format_duration(kDefaults.restart.delay);
  int max_failures_without_progress = kDefaults.restart.max_failures_without_progress;
  int failure_rate_max = kDefaults.restart.max_failures_per_interval;
  std::string failure_rate_interval = format_duration(kDefaults.restart.failure_rate_interval);
  int tolerable_checkpoint_failures = kDefaults.checkpoint.tolerable_failed_checkpoints;
  int retained = kDefaults.checkpoint.retained;
  std::string state = std::string(to_string(kDefaults.state.kind));
  std::string state_dir = kDefaults.state.local_directory;
  std::string savepoint_dir;
  bool incremental = kDefaults.checkpoint.incremental;
  bool changelog = kDefaults.checkpoint.changelog;
  std::string changelog_interval = format_duration(kDefaults.checkpoint.changelog_materialize_interval);
  bool no_local_recovery = !kDefaults.state.local_recovery;
  bool drain = false;
  bool claim = false;
  bool verbose = false;
  bool quiet = false;

  void add_to(CLI::App* app) {
    app->add_option("--parallelism,-p", parallelism, "Subtasks per operator")
        ->check(CLI::Range(1, 1024));
    app->add_option("--max-parallelism", max_parallelism, "Key groups; fixed for the job's life")
        ->capture_default_str()
        ->check(CLI::Range(1, 32768));
    app->add_option("--checkpoint-dir", checkpoint_dir,
                    "Directory for retained checkpoints (default: in memory)");
    app->add_option("--checkpoint-interval", checkpoint_interval, "e.g. 500ms, 1s, 1min")->capture_default_str();
    app->add_option("--mode", mode, "exactly-once | at-least-once | at-most-once | none")->capture_default_str();
    app->add_option("--checkpointing", checkpointing,
                    "exactly-once: aligned (barriers wait for each other) | unaligned (barriers overtake the data "
                    "in flight, which the checkpoint stores; fast under backpressure; savepoints stay aligned)")
        ->capture_default_str();
    app->add_option("--aligned-checkpoint-timeout", aligned_timeout,
                    "unaligned: checkpoints start aligned and switch to unaligned at a task still aligning this "
                    "long after the checkpoint began (0: unaligned from the start)")
        ->capture_default_str();
    app->add_flag("--buffer-debloat", buffer_debloat,
                  "Each task has its producers send buffers only as large as keeps --buffer-debloat-target of "
                  "data in flight to it (the network pool stays as it is)");
    app->add_option("--buffer-debloat-target", debloat_target, "with --buffer-debloat: the time of data in flight")
        ->capture_default_str();
    app->add_option("--restore", restore, "latest | PATH of a chk-<n> directory");
    app->add_flag("--allow-non-restored-state", allow_non_restored,
                  "Skip state of operators the job lacks");
    app->add_option("--failover", failover,
                    "region (restart only the failed task's pipelined region) | full | task (only the failed subtask; "
                    "records in flight to and from it are dropped; at-least-once or at-most-once)")
        ->capture_default_str();
    app->add_option("--exchange", exchange,
                    "How network edges exchange records: pipelined (in memory, stages run together) | "
                    "blocking (local files, each stage runs after the ones it reads; bounded sources) | "
                    "persisted (as blocking, files under --checkpoint-dir)")
        ->capture_default_str();
    app->add_option("--runtime-mode", runtime_mode,
                    "streaming | batch (bounded sources only: every exchange blocking, stages run one after "
                    "another, no checkpoints; a failure re-runs only the failed stage's region)")
        ->capture_default_str();
    app->add_option("--result-dir", result_dir,
                    "blocking: where result files go (default: <system temp>/weir-results)");
    app->add_option("--sort-memory", sort_memory,
                    "Batch: memory of each keyed subtask's sort of its input; the rest spills to --result-dir "
                    "(e.g. 64mb, 1gb)")
        ->capture_default_str();
    app->add_option("--iteration-memory", iteration_memory,
                    "Iterations: memory of each head subtask's backlog of feedback not yet processed; the rest "
                    "spills to --result-dir (e.g. 64mb, 1gb)")
        ->capture_default_str();
    app->add_flag("--no-sorted-inputs", no_sorted_inputs,
                  "Batch: keyed operators keep every key's state in the --state backend instead of reading "
                  "their input sorted by key");
    app->add_option("--slot-timeout", slot_timeout, "Cluster: how long a deployment waits for free slots")
        ->capture_default_str();
    app->add_option("--restart-strategy", restart_strategy,
                    "fixed-delay | exponential-delay | failure-rate | none")
        ->capture_default_str();
    app->add_option("--restart-attempts", restart_attempts, "fixed-delay: -1 for unlimited")->capture_default_str();
    app->add_option("--restart-delay", restart_delay, "Wait before a restart")->capture_default_str();
    app->add_option("--max-failures-without-progress", max_failures_without_progress,
                    "Fail the job after this many failures in a row with no checkpoint completed (or a "
                    "minute without failure) in between; 0: never")
        ->capture_default_str()
        ->check(CLI::Range(0, 1000000));
    app->add_option("--failure-rate-max", failure_rate_max,
                    "failure-rate: failures allowed within --failure-rate-interval")
        ->capture_default_str()
        ->check(CLI::Range(0, 1000000));
    app->add_option("--failure-rate-interval", failure_rate_interval, "failure-rate: the window")
        ->capture_default_str();
    app->add_option("--tolerable-checkpoint-failures", tolerable_checkpoint_failures,
                    "Checkpoints that may fail in a row before the job fails")
        ->capture_default_str()
        ->check(CLI::Range(0, 1000000));
    app->add_option("--retained-checkpoints", retained, "Completed checkpoints kept")
        ->capture_default_str()
        ->check(CLI::Range(1, 1000));
    app->add_option("--state", state, "State backend: heap | rocksdb")->capture_default_str();
    app->add_option("--state-dir", state_dir,
                    "rocksdb: directory for the working copies (default: system temp)");
    app->add_flag("--incremental", incremental,
                  "rocksdb: checkpoints upload only new SST files (needs --checkpoint-dir)");
    app->add_flag("--changelog", changelog,
                  "heap: checkpoints write the entries changed since the last one, and now and then a full base");
    app->add_option("--changelog-materialize-interval", changelog_interval,
                    "changelog: the longest time between two full bases, e.g. 10min")
        ->capture_default_str();
    app->add_flag("--no-local-recovery", no_local_recovery,
                  "incremental: restore from the checkpoint, not from the local copy, after a failure");
    app->add_option("--savepoint-dir", savepoint_dir,
                    "Where savepoints go unless a request names a directory (SIGUSR1, SIGUSR2, weir savepoint, "
                    "weir stop; default: <checkpoint-dir>/savepoints)");
    app->add_flag("--drain", drain, "SIGUSR2 drains: end the input and fire all timers first");
    app->add_flag("--claim", claim,
                  "Own the restored checkpoint: delete it once newer ones replace it");
    app->add_flag("--verbose,-v", verbose, "Log restarts and checkpoints");
    app->add_flag("--quiet,-q", quiet, "No progress line (there is none unless stdout is a terminal)");
  }

  // Where a savepoint goes when its request names no directory: the
  // --savepoint-dir, else <checkpoint-dir>/savepoints, else nowhere ("").
  std::string default_savepoint_dir() const {
    if (!savepoint_dir.empty()) return savepoint_dir;
    return checkpoint_dir.empty() ? "" : checkpoint_dir + "/savepoints";
  }

  absl::StatusOr<JobConfig> to_config() const {
    JobConfig c;
    c.default_parallelism = parallelism;
    c.max_parallelism = max_parallelism;
    if (parallelism > max_parallelism) {
      return absl::InvalidArgumentError("--parallelism " + std::to_string(parallelism) +
                                        " exceeds --max-parallelism " +
                                        std::to_string(max_parallelism));
    }
    auto interval = parse_duration(checkpoint_interval);
    if (!interval.ok()) return interval.status();
    if (interval->count() < 1) return absl::InvalidArgumentError("--checkpoint-interval must be > 0");
    c.checkpoint.interval = *interval;
    auto m = parse_checkpointing_mode(mode);
    if (!m.ok()) return m.status();
    c.checkpoint.mode = *m;
    if (checkpointing != "aligned" && checkpointing != "unaligned") {
      return absl::InvalidArgumentError("--checkpointing " + checkpointing + ": expected aligned or unaligned");
    }
    c.checkpoint.unaligned = checkpointing == "unaligned";
    auto timeout = parse_duration(aligned_timeout);
    if (!timeout.ok()) {
      return absl::InvalidArgumentError("--aligned-checkpoint-timeout: " + std::string(timeout.status().message()));
    }
    c.checkpoint.aligned_timeout = *timeout;
    c.network.debloat = buffer_debloat;
    auto target = parse_duration(debloat_target);
    if (!target.ok()) return absl::InvalidArgumentError("--buffer-debloat-target: " + std::string(target.status().message()));
    if (target->count() < 1) return absl::InvalidArgumentError("--buffer-debloat-target must be > 0");
    c.network.debloat_target = *target;
    auto backend = parse_state_backend(state);
    if (!backend.ok()) return backend.status();
    c.state.kind = *backend;
    c.state.local_directory = state_dir;
    c.checkpoint.directory = checkpoint_dir;
    c.checkpoint.incremental = incremental;
    c.checkpoint.changelog = changelog;
    auto materialize = parse_duration(changelog_interval);
    if (!materialize.ok()) {
      return absl::InvalidArgumentError("--changelog-materialize-interval: " +
                                        std::string(materialize.status().message()));
    }
    if (materialize->count() < 1) return absl::InvalidArgumentError("--changelog-materialize-interval must be > 0");
    c.checkpoint.changelog_materialize_interval = *materialize;
    c.state.local_recovery = !no_local_recovery;
    c.checkpoint.retained = retained;
    c.restore = restore;
    c.restore_claim = claim;
    c.allow_non_restored_state = allow_non_restored;
    if (!restore.empty() && restore == "latest" && checkpoint_dir.empty()) {
      return absl::InvalidArgumentError("--restore latest needs --checkpoint-dir");
    }
    auto failover_strategy = parse_failover_strategy(failover);
    if (!failover_strategy.ok()) return failover_strategy.status();
    c.failover = *failover_strategy;
    auto exchange_mode = parse_exchange_mode(exchange);
    if (!exchange_mode.ok()) return exchange_mode.status();
    c.exchange = *exchange_mode;
    auto runtime = parse_runtime_mode(runtime_mode);
    if (!runtime.ok()) return runtime.status();
    c.runtime_mode = *runtime;
    c.result_directory = result_dir;
    auto sort_bytes = parse_memory_size(sort_memory);
    if (!sort_bytes.ok()) return absl::InvalidArgumentError("--sort-memory: " + std::string(sort_bytes.status().message()));
    if (*sort_bytes < (int64_t{1} << 20)) return absl::InvalidArgumentError("--sort-memory must be at least 1mb");
    c.sort_memory_bytes = *sort_bytes;
    c.sorted_inputs = !no_sorted_inputs;
    auto iteration_bytes = parse_memory_size(iteration_memory);
    if (!iteration_bytes.ok()) {
      return absl::InvalidArgumentError("--iteration-memory: " + std::string(iteration_bytes.status().message()));
    }
    if (*iteration_bytes < (int64_t{1} << 20)) return absl::InvalidArgumentError("--iteration-memory must be at least 1mb");
    c.iteration_memory_bytes = *iteration_bytes;
    auto slots = parse_duration(slot_timeout);
    if (!slots.ok()) return slots.status();
    c.slot_timeout = *slots;
    auto delay = parse_duration(restart_delay);
    if (!delay.ok()) return delay.status();
    c.restart.delay = *delay;
    c.restart.initial_backoff = *delay;
    c.restart.max_attempts = restart_attempts;
    c.restart.max_failures_without_progress = max_failures_without_progress;
    c.restart.max_failures_per_interval = failure_rate_max;
    auto window = parse_duration(failure_rate_interval);
    if (!window.ok()) return window.status();
    c.restart.failure_rate_interval = *window;
    c.checkpoint.tolerable_failed_checkpoints = tolerable_checkpoint_failures;
    auto kind = parse_restart_strategy(restart_strategy);
    if (!kind.ok()) return kind.status();
    c.restart.kind = *kind;
    return c;
  }
};

// Accepts a whole number from `lo` to `hi`; anything else (a fraction, a
// number out of range, text) is refused naming the range, e.g. "--events:
// 1e400 is not a whole number from 1 to 9223372036854775807".
CLI::Validator whole_number(int64_t lo, int64_t hi = INT64_MAX);

// The job `name` defined by `args`: a built-in job (cli/extensions.h: the
// example jobs; sql, whose --script is the text of a SQL script) or, given
// `library`, the library's job, which gets the arguments that are not job
// flags. InvalidArgument for an unknown job
// or bad arguments. `flags`, when given, receives the parsed job flags.
absl::StatusOr<std::unique_ptr<StreamEnvironment>> build_job(const std::string& name,
                                                             const std::vector<std::string>& args,
                                                             const cluster::JobLibrary* library = nullptr,
                                                             JobFlags* flags = nullptr);

// The names of the built-in jobs, for help and errors: "running-sum, ...,
// sql".
std::string builtin_job_names();

// The job of a SQL script's text (`weir sql`, and the built-in job sql,
// whose --script is the text: every process of a cluster plans the same
// script): planned, then built into `env` with the table connectors weir
// has. An error names `name` (the script's file) and the cause; a SQL error
// also its line and column. With a `collect` id, the script ends with a bare
// SELECT whose rows go to that query result at the JobManager
// (cli/sql_collect.h).
absl::Status build_sql_job(const std::string& name, std::string text, StreamEnvironment& env,
                           const std::string& collect = "");

// What `weir sql FILE --explain` prints for the script `text`: each
// INSERT's plan; InvalidArgument with the line and column of what keeps it
// from running. (Also the JobManager's, for the web UI's SQL page.)
absl::StatusOr<std::string> explain_sql(const std::string& text);

// The tables `weir sql` reads and writes: the built-in connectors and the
// sources of cli/extensions.h (the Nexmark generator's).
sql::TableConnectors cli_table_connectors();

// How weir plans a SQL script it runs: a SET of a job setting's key
// ('parallelism.default', 'execution.checkpointing.interval', ...;
// job_settings.h) is checked and kept for the job.
sql::PlanOptions sql_plan_options();

// The job settings `text`'s SET statements give, in order (none when the
// script does not plan: building it says why).
std::vector<std::pair<std::string, std::string>> sql_job_settings(const std::string& text);

// `settings` (a SQL script's, as above) onto `flags`, except the flags
// `given` says the command line gave: those win.
absl::Status apply_job_settings(const std::vector<std::pair<std::string, std::string>>& settings,
                                const std::function<bool(const std::string& flag)>& given, JobFlags* flags);

// The help of the job `name` (or of `library`'s job): its options and the
// job flags, with their defaults.
absl::StatusOr<std::string> job_help(const std::string& name, const cluster::JobLibrary* library = nullptr);

// The built-in jobs and job libraries as the cluster builds them: build_job,
// with the savepoint directory its job flags imply.
cluster::JobCatalog builtin_job_catalog();

}  // namespace weir::cli

#endif  // WEIR_CLI_JOBS_H_
