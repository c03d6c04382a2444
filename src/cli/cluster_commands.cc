#include "cli/cluster_commands.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include <fstream>
#include <set>
#include <thread>

#include "absl/strings/str_join.h"
#include "cli/embedded.h"
#include "cli/config_file.h"
#include "cli/job_settings.h"
#include "cli/jobs.h"
#include "cli/logging.h"
#include "cli/progress.h"
#include "cli/s3_options.h"
#include "cluster/client.h"
#include "cluster/job_library.h"
#include "graph/job_graph.h"
#include "cluster/ha_jobmanager.h"
#include "cluster/jobmanager.h"
#include "cluster/protocol.h"
#include "cluster/taskmanager.h"
#include "weir/config.h"

namespace weir::cli {
namespace {

int exit_code(const absl::Status& s) {
  if (absl::IsUnavailable(s)) return kClusterUnreachable;
  if (absl::IsUnauthenticated(s) || absl::IsPermissionDenied(s)) return kClusterRefused;
  if (absl::IsInvalidArgument(s) || absl::IsNotFound(s)) return kBadArguments;
  return kBadInput;
}

// The environment variable's value, or `fallback` when it is unset or empty.
std::string env_or(const char* env_name, const char* fallback) {
  const char* env = std::getenv(env_name);
  return env != nullptr && *env != '\0' ? env : fallback;
}

// Blocks SIGINT and SIGTERM in every thread started later; wait() takes one.
class StopSignals {
 public:
  StopSignals() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set_, nullptr);
  }
  int wait() {
    int sig = 0;
    while (sigwait(&set_, &sig) != 0) {
    }
    return sig;
  }
  // A signal that arrived since, taken; 0 if none.
  int pending() {
    timespec now{0, 0};
    const int sig = sigtimedwait(&set_, nullptr, &now);
    return sig > 0 ? sig : 0;
  }

 private:
  sigset_t set_;
};

// `weir run` takes a job library by path (anything with a slash or ending in
// .so), a built-in job by name otherwise.
bool is_library_path(const std::string& job) {
  return job.find('/') != std::string::npos || (job.size() > 3 && job.compare(job.size() - 3, 3, ".so") == 0);
}

// `weir run JOB --help`: the options of the job (built-in or a library's)
// and the job flags, on stdout.
int print_job_help(const std::string& job) {
  const cluster::JobLibrary* library = nullptr;
  if (is_library_path(job)) {
    auto l = cluster::JobLibrary::load(job);
    if (!l.ok()) return fail(kBadArguments, std::string(l.status().message()));
    library = *l;
  }
  auto help = job_help(job, library);
  if (!help.ok()) return fail(kBadArguments, "run: " + std::string(help.status().message()));
  std::fputs(help->c_str(), stdout);
  return kOk;
}

// `weir run --embedded JOB ARGS`: the job in this process, as `weir example`
// runs the built-in ones. `dry_run`: build its graph, say so, run nothing.
// `quiet` (weir run -q), or the job's own --quiet: no progress line.
int run_embedded(const std::string& job, const std::vector<std::string>& args, bool dry_run, bool quiet) {
  const cluster::JobLibrary* library = nullptr;
  std::string name = job;
  if (is_library_path(job)) {
    auto l = cluster::JobLibrary::load(job);
    if (!l.ok()) return fail(kBadArguments, std::string(l.status().message()));
    library = *l;
    name = library->name();
  }
  JobFlags flags;
  auto env = build_job(name, args, library, &flags);
  if (!env.ok()) return fail(kBadArguments, std::string(env.status().message()));
  if (dry_run) {
    auto graph = graph::build_job_graph((*env)->graph(), (*env)->config());
    if (!graph.ok()) return fail(kBadArguments, std::string(graph.status().message()));
    std::printf("job %s: %zu vertices, %d subtasks\n", name.c_str(), (*graph)->vertices.size(),
                (*graph)->total_subtasks());
    const JobConfig& c = (*env)->config();
    std::printf("settings: parallelism %d, max parallelism %d, %s checkpoints every %s to %s, state %s, "
                "restart %s, failover %s, runtime mode %s\n",
                c.default_parallelism, c.max_parallelism, std::string(to_string(c.checkpoint.mode)).c_str(),
                format_duration(c.checkpoint.interval).c_str(),
                c.checkpoint.directory.empty() ? "memory" : c.checkpoint.directory.c_str(),
                std::string(to_string(c.state.kind)).c_str(), std::string(to_string(c.restart.kind)).c_str(),
                std::string(to_string(c.failover)).c_str(), std::string(to_string(c.runtime_mode)).c_str());
    return kOk;
  }
  if (flags.verbose) spdlog::set_level(spdlog::level::info);
  JobConsole console(quiet || flags.quiet, flags.default_savepoint_dir(), flags.drain);
  return finish_run(console.run(**env, name));
}

void print_job(const nlohmann::json& j) {
  std::string failure = j.value("failure", "");
  std::printf("%s  %-10s  %-12s  restarts %d  checkpoints %lld%s%s\n", j.value("job_id", "").c_str(),
              j.value("status", "").c_str(), j.value("name", "").c_str(), j.value("restarts", 0),
              static_cast<long long>(j.value("completed_checkpoints", int64_t{0})), failure.empty() ? "" : "  failure: ",
              failure.c_str());
}

// The job whose id is `id`, or the one job whose id starts with it; an
// unknown id is left to the JobManager to name ("no job ...").
absl::StatusOr<std::string> resolve_job_id(cluster::ClusterClient& client, const std::string& id) {
  auto jobs = client.list();
  if (!jobs.ok()) return jobs.status();
  std::vector<std::string> matches;
  for (const auto& j : (*jobs)["jobs"]) {
    const std::string job = j.value("job_id", "");
    if (job == id) return id;
    if (!id.empty() && job.rfind(id, 0) == 0) matches.push_back(job);
  }
  if (matches.size() == 1) return matches[0];
  if (matches.size() > 1) {
    return absl::InvalidArgumentError("job id prefix " + id + " matches " + std::to_string(matches.size()) +
                                      " jobs: " + absl::StrJoin(matches, ", "));
  }
  return id;
}

// One line a vertex: "name  p=N  STATE  in R/s  out R/s  busy B ms/s  backpressure LEVEL".
void print_vertex(const nlohmann::json& v) {
  std::printf("  %-40s p=%-3d %-9s", v.value("name", "").c_str(), v.value("parallelism", 0),
              v.value("state", "").c_str());
  const nlohmann::json& m = v.contains("metrics") ? v["metrics"] : nlohmann::json();
  if (m.is_object()) {
    std::printf("  records in %lld out %lld", static_cast<long long>(m.value("records_in", int64_t{0})),
                static_cast<long long>(m.value("records_out", int64_t{0})));
    if (m.contains("all_attempts")) {
      const nlohmann::json& all = m["all_attempts"];
      std::printf(" (all %d attempts: in %lld out %lld)", all.value("attempts", 0),
                  static_cast<long long>(all.value("records_in", int64_t{0})),
                  static_cast<long long>(all.value("records_out", int64_t{0})));
    }
    if (m.contains("backpressure")) {
      std::printf("  (%lld/s in, %lld/s out)  busy %lld ms/s  backpressure %s (%lld ms/s)",
                  static_cast<long long>(m.value("records_in_per_s", int64_t{0})),
                  static_cast<long long>(m.value("records_out_per_s", int64_t{0})),
                  static_cast<long long>(m.value("busy_ms_per_s", int64_t{0})),
                  m.value("backpressure", "").c_str(),
                  static_cast<long long>(m.value("backpressured_ms_per_s", int64_t{0})));
    }
  }
  std::printf("\n");
}

}  // namespace

struct ClusterCommands::Flags {
  CLI::App* jobmanager = nullptr;
  CLI::App* taskmanager = nullptr;
  CLI::App* run = nullptr;
  CLI::App* list = nullptr;
  CLI::App* cancel = nullptr;
  CLI::App* savepoint = nullptr;
  CLI::App* stop = nullptr;
  CLI::App* checkpoints = nullptr;
  CLI::App* overview = nullptr;
  CLI::App* job = nullptr;

  std::string secret_file;
  network::TlsFiles tls;  // --tls-cert, --tls-key, --tls-ca
  std::string config = env_or("WEIR_CONFIG", "");
  std::string address = env_or("WEIR_JOBMANAGER", "127.0.0.1:8081");
  std::string session_address = env_or("WEIR_JOBMANAGER_RPC", cluster::TaskManagerOptions{}.jobmanager.c_str());
  LogOptions log;

  // The JobManager's defaults are JobManagerOptions'.
  inline static const cluster::JobManagerOptions kJobManagerDefaults{};
  std::string bind = kJobManagerDefaults.bind;
  int rest_port = kJobManagerDefaults.rest_port;
  bool metrics_public = false;
  std::string heartbeat_interval = format_duration(kJobManagerDefaults.heartbeat_interval);
  std::string heartbeat_timeout = format_duration(kJobManagerDefaults.heartbeat_timeout);
  std::string job_expiration = format_duration(kJobManagerDefaults.job_expiration);
  int keep_ended_jobs = kJobManagerDefaults.keep_ended_jobs;
  std::string library_dir = kJobManagerDefaults.library_dir;

  cluster::TaskManagerOptions tm;
  std::string ha = "none";  // --ha: none or zookeeper
  cluster::HaOptions ha_options;
  std::string ha_session_timeout = format_duration(cluster::HaOptions{}.session_timeout);
  checkpoint::S3Options s3;  // --s3-*, [s3]: this process's S3 connection

  bool detached = false;
  bool quiet = false;
  bool cancel_on_exit = false;
  bool embedded = false;
  bool dry_run = false;
  std::vector<std::string> settings;  // -D KEY=VALUE
  std::string job_id;
  std::string directory;
  bool drain = false;
};

// The records a job's sources emitted, from its REST detail.
int64_t source_records(const nlohmann::json& job) {
  int64_t records = 0;
  for (const auto& v : job.value("vertices", nlohmann::json::array())) {
    if (!v.value("source", false) || !v["metrics"].is_object()) continue;
    records += v["metrics"].value("gauges", nlohmann::json::object()).value(std::string(detail::kRecordsOutMetric), int64_t{0});
  }
  return records;
}

// Waits for the job to end, printing restarts as they happen (within a
// second) and, while it waits for slots, what is missing; on a terminal
// (and without `quiet`) a progress line. SIGINT/SIGTERM leave the job
// running, or with `cancel_on_exit` cancel it, and exit kInterrupted.
int attach(cluster::ClusterClient& client, const std::string& id, bool quiet, bool cancel_on_exit) {
  StopSignals signals;
  ProgressLine line(quiet);
  RatePerSecond rate;
  int restarts_seen = 0;
  std::string waiting_said;
  while (true) {
    if (const int sig = signals.pending()) {
      line.clear();
      const std::string why = std::string(sig == SIGINT ? "SIGINT" : "SIGTERM");
      if (!cancel_on_exit) {
        return fail(kInterrupted, "interrupted (" + why + "): job " + id + " keeps running on the cluster; weir cancel " +
                                      id + " stops it (--cancel-on-exit cancels it with the client)");
      }
      std::fprintf(stderr, "weir: interrupted (%s): cancelling job %s (--cancel-on-exit)\n", why.c_str(), id.c_str());
      auto canceled = client.cancel(id);
      if (!canceled.ok()) {
        return fail(exit_code(canceled.status()), "cancel " + id + ": " + std::string(canceled.status().message()));
      }
      std::printf("job %s %s\n", id.c_str(), canceled->value("status", std::string("?")).c_str());
      return kInterrupted;
    }
    auto info = client.wait(id, 1000);
    if (!info.ok()) {
      line.clear();
      return fail(exit_code(info.status()), std::string(info.status().message()));
    }
    const std::string status = info->value("status", "");
    const int restarts = info->value("restarts", 0);
    if (restarts > restarts_seen) {
      line.clear();
      std::fprintf(stderr, "job %s restarted (%d restart%s so far) after: %s\n", id.c_str(), restarts,
                   restarts == 1 ? "" : "s", info->value("failure", std::string("?")).c_str());
      restarts_seen = restarts;
    }
    const std::string waiting = info->value("waiting_for_slots", "");
    if (waiting != waiting_said) {
      if (!waiting.empty()) {
        line.clear();
        std::fprintf(stderr, "job %s is waiting for slots: %s\n", id.c_str(), waiting.c_str());
      }
      waiting_said = waiting;
    }
    if (status == "RUNNING" || status == "RESTARTING" || status == "CREATED") {
      if (!line.enabled()) continue;
      auto detail = client.job(id);
      if (!detail.ok()) continue;
      const int64_t records = source_records(*detail);
      const auto elapsed = line.elapsed();
      line.show(job_progress_text(detail->value("status", "?"), records, rate.update(records, elapsed),
                                  detail->value("completed_checkpoints", 0), elapsed));
      continue;
    }
    line.clear();
    print_job(*info);
    const std::string savepoint = info->value("stopped_with_savepoint", "");
    if (!savepoint.empty()) std::printf("stopped with savepoint %s\n", savepoint.c_str());
    if (status == "FINISHED") return kOk;
    const std::string failure = info->value("failure", "");  // why it failed
    return fail(kJobFailed, "job " + status + (failure.empty() ? "" : ": " + failure));
  }
}

ClusterCommands::ClusterCommands(CLI::App& app) : f_(std::make_unique<Flags>()) {
  Flags& f = *f_;
  auto common = [&f](CLI::App* c, bool client) {
    c->add_option("--secret-file", f.secret_file, "File holding the cluster secret (else $WEIR_SECRET)");
    c->add_option("--config", f.config,
                  "Config file with defaults for these options (else $WEIR_CONFIG); see docs/cli.md");
    if (client) {
      c->add_option("--jobmanager", f.address,
                    "HOST:PORT of the JobManager's REST API, or several (HOST:PORT,HOST:PORT: tried in turn, for "
                    "JobManagers under --ha) (else $WEIR_JOBMANAGER, else 127.0.0.1:8081)");
    }
    if (!client) {
      c->add_option("--tls-cert", f.tls.cert,
                    "PEM certificate of this process: TLS on every port (with --tls-key, --tls-ca; else "
                    "$WEIR_TLS_CERT)");
      c->add_option("--tls-key", f.tls.key, "PEM private key of --tls-cert (else $WEIR_TLS_KEY)");
    }
    c->add_option("--tls-ca", f.tls.ca,
                  client ? "PEM CA certificate: reach the JobManager over HTTPS and check it (else $WEIR_TLS_CA)"
                         : "PEM CA certificate that signed every cluster process's certificate (else $WEIR_TLS_CA)");
    c->add_flag("--verbose,-v", f.log.verbose, "Log what happens (--log-level info)");
    c->add_option("--log-level", f.log.level,
                  "trace, debug, info, warn, error or off (else $WEIR_LOG_LEVEL, else " +
                      std::string(client ? "warn" : "info") + ")");
    c->add_option("--log-file", f.log.file, "Log to this file instead of stderr, rotating it by size");
    c->add_option("--log-max-size", f.log.max_size, "Size at which the log file rotates")->capture_default_str();
    c->add_option("--log-max-files", f.log.max_files, "Rotated log files kept (FILE.1 .. FILE.N)")
        ->capture_default_str();
  };
  f.jobmanager = app.add_subcommand("jobmanager", "Run a JobManager: schedules jobs, coordinates checkpoints");
  common(f.jobmanager, false);
  add_s3_options(f.jobmanager, &f.s3);
  f.jobmanager->add_option("--bind", f.bind, "HOST:PORT for TaskManager sessions (port 0: any)")
      ->capture_default_str();
  f.jobmanager->add_option("--rest-port", f.rest_port, "REST API port on the same host (0: any)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  f.jobmanager->add_flag("--metrics-public", f.metrics_public,
                         "GET /metrics on the REST port answers without the secret (the rest still needs it)");
  f.jobmanager->add_option("--heartbeat-interval", f.heartbeat_interval, "e.g. 500ms")->capture_default_str();
  f.jobmanager->add_option("--keep-ended-jobs", f.keep_ended_jobs, "Ended jobs still listed (older ones are forgotten)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  f.jobmanager
      ->add_option("--jobstore-expiration-time", f.job_expiration,
                   "How long an ended job stays listed, with its result (under --ha zookeeper across leader changes; "
                   "0s: until --keep-ended-jobs forgets it)")
      ->capture_default_str();
  f.jobmanager->add_option("--library-dir", f.library_dir,
                           "Uploaded job libraries (default: <temp>/weir-libraries-<uid>)");
  f.jobmanager->add_option("--heartbeat-timeout", f.heartbeat_timeout, "A TaskManager silent this long is lost")
      ->capture_default_str();
  auto ha_flags = [&f](CLI::App* c, bool jobmanager) {
    c->add_option("--ha", f.ha, "High availability: none, or zookeeper (several JobManagers, one leads)")
        ->capture_default_str()
        ->check(CLI::IsMember({"none", "zookeeper"}));
    c->add_option("--ha-quorum", f.ha_options.quorum, "ZooKeeper HOST:PORT,... (with --ha zookeeper)");
    c->add_option("--ha-cluster-id", f.ha_options.cluster_id,
                  "The cluster's name in ZooKeeper (its nodes under /weir/ID)")
        ->capture_default_str();
    if (!jobmanager) return;
    c->add_option("--ha-storage", f.ha_options.storage,
                  "DIR or s3://BUCKET/PREFIX every JobManager reaches: submitted jobs and their libraries");
    c->add_option("--ha-session-timeout", f.ha_session_timeout,
                  "ZooKeeper session timeout: a leader silent this long is replaced")
        ->capture_default_str();
  };
  ha_flags(f.jobmanager, true);

  f.taskmanager = app.add_subcommand("taskmanager", "Run a TaskManager: offers slots, runs tasks");
  common(f.taskmanager, false);
  add_s3_options(f.taskmanager, &f.s3);
  f.taskmanager->add_option("--jobmanager", f.session_address,
                            "HOST:PORT of the JobManager's session port (else $WEIR_JOBMANAGER_RPC, "
                            "else " + cluster::TaskManagerOptions{}.jobmanager + ")");
  f.taskmanager->add_option("--slots", f.tm.slots, "Slots offered")->capture_default_str()->check(CLI::Range(1, 1024));
  f.taskmanager->add_option("--bind", f.tm.bind_host, "IPv4 address of the data port")->capture_default_str();
  f.taskmanager->add_option("--data-port", f.tm.data_port, "Data port (0: any free one)")->check(CLI::Range(0, 65535));
  f.taskmanager
      ->add_option_function<std::string>(
          "--metrics-port",
          [&f](const std::string& v) {
            auto range = cluster::parse_port_range(v);
            if (!range.ok()) throw CLI::ValidationError("--metrics-port", std::string(range.status().message()));
            f.tm.metrics_port = range->first;
            f.tm.metrics_port_last = range->second;
          },
          "Port of GET /metrics (Prometheus) on the --bind address, or the first free one of a range as Flink's "
          "reporter takes it (9250-9260); 0: any free one, -1: none (default: 0)")
      ->type_name("PORT|FROM-TO");
  f.taskmanager->add_flag("--metrics-public", f.tm.metrics_public, "GET /metrics answers without the secret");
  f.taskmanager->add_option("--id", f.tm.id, "Name (default tm-<host>-<pid>)");
  f.taskmanager->add_option("--network-buffers", f.tm.network_buffers, "32 KiB network buffers in the pool")
      ->capture_default_str()
      ->check(CLI::Range(16, 1 << 20));
  f.taskmanager->add_option("--state-dir", f.tm.state_dir, "RocksDB working copies (default: system temp)");
  f.taskmanager->add_option("--tmp-dir", f.tm.tmp_dir,
                            "Blocking results and sort spills, kept here and served to other TaskManagers "
                            "(default: the job's --result-dir, else system temp)");
  f.taskmanager->add_option("--library-dir", f.tm.library_dir,
                            "Job libraries fetched from the JobManager (default: <temp>/weir-libraries-<uid>)");
  ha_flags(f.taskmanager, false);

  f.run = app.add_subcommand("run",
                              "Submit a job to the cluster: weir run [options] JOB|LIBRARY.so JOB-ARGS...\n"
                              "Built-in JOBs: " + std::string(kBuiltinJobs) + ". weir run JOB --help lists a job's "
                              "options.");
  common(f.run, true);
  f.run->add_flag("--detached", f.detached, "Return once submitted; do not wait for the end");
  f.run->add_flag("--quiet,-q", f.quiet,
                  "No progress line while attached or embedded (there is none unless stdout is a terminal)");
  f.run->add_flag("--cancel-on-exit", f.cancel_on_exit,
                  "Cancel the job when this client is interrupted while attached (else the job keeps running)");
  f.run->add_flag("--embedded", f.embedded, "Run the job in this process instead (no cluster)");
  f.run->add_flag("--dry-run", f.dry_run, "Build the job's graph in this process and stop there");
  f.run->add_option("-D", f.settings,
                    "KEY=VALUE: a job setting by Flink's key (parallelism.default, execution.checkpointing.interval, "
                    "state.backend.type, restart-strategy.type, ...; docs/cli.md); repeatable")
      ->allow_extra_args(false);
  add_s3_options(f.run, &f.s3);
  f.run->prefix_command();

  f.list = app.add_subcommand("list", "List the cluster's jobs");
  common(f.list, true);

  f.cancel = app.add_subcommand("cancel", "Cancel a job");
  common(f.cancel, true);
  f.cancel->add_option("job", f.job_id, "Job id")->required();

  f.savepoint = app.add_subcommand("savepoint", "Take a savepoint of a running job");
  common(f.savepoint, true);
  f.savepoint->add_option("job", f.job_id, "Job id")->required();
  f.savepoint->add_option("--dir", f.directory,
                          "Directory to write the savepoint under (default: the job's --savepoint-dir, else "
                          "<checkpoint-dir>/savepoints)");

  f.stop = app.add_subcommand("stop", "Stop a job with a savepoint");
  common(f.stop, true);
  f.stop->add_option("job", f.job_id, "Job id")->required();
  f.stop->add_option("--savepoint", f.directory,
                     "Directory to write the savepoint under (default: the job's --savepoint-dir, else "
                     "<checkpoint-dir>/savepoints)");
  f.stop->add_flag("--drain", f.drain, "End the input first: all event time passes, all timers fire");

  f.checkpoints = app.add_subcommand("checkpoints", "A job's completed checkpoints");
  common(f.checkpoints, true);
  f.checkpoints->add_option("job", f.job_id, "Job id")->required();

  f.overview = app.add_subcommand("overview", "The cluster's TaskManagers and slots");
  common(f.overview, true);

  f.job = app.add_subcommand("job", "A job's vertices: state, records, backpressure");
  common(f.job, true);
  f.job->add_option("job", f.job_id, "Job id")->required();
}

ClusterCommands::~ClusterCommands() = default;

std::optional<int> ClusterCommands::run() {
  Flags& f = *f_;
  CLI::App* parsed = nullptr;
  for (CLI::App* c : {f.jobmanager, f.taskmanager, f.run, f.list, f.cancel, f.savepoint, f.stop, f.checkpoints,
                      f.overview, f.job}) {
    if (c->parsed()) parsed = c;
  }
  if (parsed == nullptr) return std::nullopt;
  if (parsed == f.run && !f.embedded && !f.dry_run) {
    for (const std::string& name : s3_option_names()) {
      if (f.run->count(name) > 0) {
        return fail(kBadArguments, "run: " + name + " sets the S3 connection of the process that runs the job: "
                                   "with --embedded, or on weir jobmanager and weir taskmanager");
      }
    }
  }
  if (!f.config.empty()) {
    const std::string role = parsed == f.jobmanager ? "jobmanager" : parsed == f.taskmanager ? "taskmanager" : "client";
    absl::Status s = apply_config(f.config, parsed, role);
    if (!s.ok()) return fail(kBadArguments, std::string(s.message()));
  }
  f.log.default_level = parsed == f.jobmanager || parsed == f.taskmanager ? "info" : "warn";
  absl::Status logging = configure_logging(f.log);
  if (!logging.ok()) return fail(kBadArguments, std::string(logging.message()));
  if (parsed == f.run) {
    const std::vector<std::string> rest = f.run->remaining();
    if (!rest.empty() &&
        std::any_of(rest.begin() + 1, rest.end(), [](const std::string& a) { return a == "--help" || a == "-h"; })) {
      return print_job_help(rest.front());
    }
  }
  // The job's arguments with its settings (-D, the config file's [job]) as
  // flags ahead of them.
  std::vector<std::string> job_args;
  std::string job_name;
  if (parsed == f.run) {
    std::vector<std::string> rest = f.run->remaining();
    if (rest.empty()) return fail(kBadArguments, "run: which job? (weir run [options] JOB|LIBRARY.so JOB-ARGS...)");
    job_name = rest.front();
    std::vector<std::string> given;
    for (const std::string& d : f.settings) given.push_back("-D" + d);
    given.insert(given.end(), rest.begin() + 1, rest.end());
    auto expanded = with_job_settings(given, f.config);
    if (!expanded.ok()) return fail(kBadArguments, "run: " + std::string(expanded.status().message()));
    job_args = *std::move(expanded);
  }
  checkpoint::set_s3_options(f.s3);
  if (parsed == f.run && (f.embedded || f.dry_run)) return run_embedded(job_name, job_args, f.dry_run, f.quiet);
  auto secret = cluster::load_secret(f.secret_file);
  if (!secret.ok()) return fail(kBadArguments, std::string(secret.status().message()));
  const network::TlsFiles tls = network::tls_files_or_env(f.tls);

  if (parsed == f.jobmanager) {
    cluster::JobManagerOptions o;
    o.bind = f.bind;
    o.rest_port = f.rest_port;
    o.metrics_public = f.metrics_public;
    o.keep_ended_jobs = f.keep_ended_jobs;
    auto expiration = parse_duration(f.job_expiration);
    if (!expiration.ok()) {
      return fail(kBadArguments, "--jobstore-expiration-time: " + std::string(expiration.status().message()));
    }
    o.job_expiration = *expiration;
    o.library_dir = f.library_dir;
    o.secret = *secret;
    o.catalog = builtin_job_catalog();
    o.explain_sql = explain_sql;
    o.tls = tls;
    auto interval = parse_duration(f.heartbeat_interval);
    auto timeout = parse_duration(f.heartbeat_timeout);
    if (!interval.ok()) return fail(kBadArguments, "--heartbeat-interval: " + std::string(interval.status().message()));
    if (!timeout.ok()) return fail(kBadArguments, "--heartbeat-timeout: " + std::string(timeout.status().message()));
    if (*timeout <= *interval) return fail(kBadArguments, "--heartbeat-timeout must exceed --heartbeat-interval");
    o.heartbeat_interval = *interval;
    o.heartbeat_timeout = *timeout;
    if (f.ha == "zookeeper") {
      auto session_timeout = parse_duration(f.ha_session_timeout);
      if (!session_timeout.ok()) {
        return fail(kBadArguments, "--ha-session-timeout: " + std::string(session_timeout.status().message()));
      }
      f.ha_options.session_timeout = *session_timeout;
      StopSignals signals;
      cluster::HaJobManager jm(o, f.ha_options);
      absl::Status s = jm.start();
      if (!s.ok()) return fail(kBadArguments, "jobmanager: " + std::string(s.message()));
      std::printf("jobmanager standing by for leadership (ZooKeeper %s), leads as %s\n", f.ha_options.quorum.c_str(),
                  jm.address().c_str());
      std::fflush(stdout);
      signals.wait();
      jm.shutdown();
      return kOk;
    }
    if (!f.ha_options.quorum.empty() || !f.ha_options.storage.empty()) {
      return fail(kBadArguments, "jobmanager: --ha-quorum and --ha-storage need --ha zookeeper");
    }
    StopSignals signals;
    cluster::JobManager jm(o);
    absl::Status s = jm.start();
    if (!s.ok()) return fail(kBadArguments, "jobmanager: " + std::string(s.message()));
    std::string host = f.bind.substr(0, f.bind.rfind(':'));
    std::printf("jobmanager listening on %s:%d, rest %s:%d\n", host.c_str(), jm.port(), host.c_str(),
                jm.rest_port());
    std::fflush(stdout);
    signals.wait();
    jm.shutdown();
    return kOk;
  }
  if (parsed == f.taskmanager) {
    f.tm.jobmanager = f.session_address;
    if (f.ha == "zookeeper") {
      if (f.ha_options.quorum.empty()) return fail(kBadArguments, "taskmanager: --ha zookeeper needs --ha-quorum");
      f.tm.ha_quorum = f.ha_options.quorum;
      f.tm.ha_cluster_id = f.ha_options.cluster_id;
    } else if (!f.ha_options.quorum.empty()) {
      return fail(kBadArguments, "taskmanager: --ha-quorum needs --ha zookeeper");
    }
    f.tm.secret = *secret;
    f.tm.catalog = builtin_job_catalog();
    f.tm.tls = tls;
    StopSignals signals;
    cluster::TaskManagerProcess tm(f.tm);
    absl::Status s = tm.start();
    if (!s.ok()) return fail(kBadArguments, "taskmanager: " + std::string(s.message()));
    absl::Status result;
    std::thread runner([&] {
      result = tm.run();
      if (!result.ok()) ::kill(::getpid(), SIGTERM);  // wake the signal wait
    });
    std::printf("taskmanager started, data port %s", tm.data_address().c_str());
    if (!tm.metrics_address().empty()) {
      std::printf(", metrics %s://%s/metrics", tls.enabled() ? "https" : "http", tm.metrics_address().c_str());
    }
    std::printf("\n");
    std::fflush(stdout);
    signals.wait();
    tm.shutdown();
    runner.join();
    if (!result.ok()) return fail(exit_code(result), std::string(result.message()));
    return kOk;
  }

  cluster::ClusterClient client(f.address, *secret, tls.ca);
  if (parsed == f.run) {
    std::string name = job_name;
    const std::vector<std::string>& rest = job_args;
    std::string library;
    if (is_library_path(name)) {
      // Checked here first, so that an error names the user's file rather
      // than the JobManager's copy of it.
      auto local = cluster::JobLibrary::load(name);
      if (!local.ok()) return fail(exit_code(local.status()), "run: " + std::string(local.status().message()));
      auto digest = client.upload_library(name);
      if (!digest.ok()) return fail(exit_code(digest.status()), "run: " + std::string(digest.status().message()));
      library = *digest;
    }
    auto id = client.submit(name, rest, library);
    if (!id.ok()) return fail(exit_code(id.status()), "run: " + std::string(id.status().message()));
    std::printf("submitted job %s\n", id->c_str());
    std::fflush(stdout);
    if (f.detached) return kOk;
    // --quiet among the job's flags (weir nexmark ... --jobmanager puts it
    // there) counts as well.
    const bool quiet = f.quiet || std::find(rest.begin(), rest.end(), "--quiet") != rest.end() ||
                       std::find(rest.begin(), rest.end(), "-q") != rest.end();
    return attach(client, *id, quiet, f.cancel_on_exit);
  }
  if (parsed == f.list) {
    auto jobs = client.list();
    if (!jobs.ok()) return fail(exit_code(jobs.status()), std::string(jobs.status().message()));
    if ((*jobs)["jobs"].empty()) std::printf("no jobs\n");
    for (const auto& j : (*jobs)["jobs"]) print_job(j);
    return kOk;
  }
  // A job named by a prefix of its id (weir job ca1a), as git names commits.
  if (parsed == f.cancel || parsed == f.savepoint || parsed == f.stop || parsed == f.job || parsed == f.checkpoints) {
    auto id = resolve_job_id(client, f.job_id);
    if (!id.ok()) return fail(exit_code(id.status()), std::string(id.status().message()));
    f.job_id = *id;
  }
  if (parsed == f.cancel) {
    auto info = client.cancel(f.job_id);
    if (!info.ok()) return fail(exit_code(info.status()), std::string(info.status().message()));
    print_job(*info);
    return kOk;
  }
  if (parsed == f.savepoint || parsed == f.stop) {
    // A relative directory means this client's working directory, not the
    // JobManager's or a TaskManager's: sent as an absolute path.
    std::string directory = f.directory;
    if (!directory.empty() && directory.front() != '/' && directory.find("://") == std::string::npos) {
      directory = std::filesystem::absolute(directory).lexically_normal().string();
    }
    auto r = client.savepoint(f.job_id, directory, parsed == f.stop, f.drain);
    if (!r.ok()) return fail(exit_code(r.status()), std::string(r.status().message()));
    std::printf("savepoint %lld completed: %s\n", static_cast<long long>((*r)["checkpoint_id"].get<int64_t>()),
                (*r)["path"].get<std::string>().c_str());
    if (parsed == f.stop) {
      auto info = client.wait(f.job_id, 60000);
      if (info.ok()) print_job(*info);
    }
    return kOk;
  }
  if (parsed == f.job) {
    auto r = client.job(f.job_id);
    if (!r.ok()) return fail(exit_code(r.status()), std::string(r.status().message()));
    print_job(*r);
    for (const auto& v : (*r)["vertices"]) print_vertex(v);
    return kOk;
  }
  if (parsed == f.checkpoints) {
    auto r = client.checkpoints(f.job_id);
    if (!r.ok()) return fail(exit_code(r.status()), std::string(r.status().message()));
    for (const auto& c : (*r)["completed"]) {
      std::printf("checkpoint %lld: %lld ms, %llu bytes (%llu new)%s\n", static_cast<long long>(c["id"].get<int64_t>()),
                  static_cast<long long>(c["duration_ms"].get<int64_t>()),
                  static_cast<unsigned long long>(c["state_bytes"].get<uint64_t>()),
                  static_cast<unsigned long long>(c["new_bytes"].get<uint64_t>()),
                  c["savepoint"].get<bool>() ? " (savepoint)" : c["final"].get<bool>() ? " (final)" : "");
    }
    std::printf("failed checkpoints: %lld\n", static_cast<long long>((*r)["failed"].get<int64_t>()));
    return kOk;
  }
  auto r = client.overview();
  if (!r.ok()) return fail(exit_code(r.status()), std::string(r.status().message()));
  for (const auto& t : (*r)["taskmanagers"]) {
    std::printf("%s  data %s  slots %d/%d used  last heartbeat %lld ms ago", t["id"].get<std::string>().c_str(),
                t["data_address"].get<std::string>().c_str(), t["slots_used"].get<int>(), t["slots"].get<int>(),
                static_cast<long long>(t["last_heartbeat_ms_ago"].get<int64_t>()));
    const std::string metrics = t.value("metrics_address", "");
    if (!metrics.empty()) std::printf("  metrics %s", metrics.c_str());
    std::printf("\n");
  }
  std::printf("running jobs: %d\n", (*r)["jobs_running"].get<int>());
  return kOk;
}

}  // namespace weir::cli
