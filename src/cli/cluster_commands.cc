// `weir`'s cluster commands: the flag table of jobmanager, taskmanager and
// the client commands, the config file and -D settings applied, logging
// configured, and each command handed to what runs it (cluster_flags.h).
#include "cli/cluster_commands.h"

#include <algorithm>
#include <string>
#include <vector>

#include "cli/cluster_flags.h"
#include "cli/config_file.h"
#include "cli/job_settings.h"
#include "cli/jobs.h"
#include "cli/logging.h"
#include "cli/s3_options.h"
#include "cluster/protocol.h"

namespace weir::cli {

namespace {

// The options of every cluster command: the secret, the config file, TLS,
// logging; a client's also where the JobManager is.
void add_common_options(CLI::App* c, ClusterFlags& f, bool client) {
  c->add_option("--secret-file", f.secret_file, "File holding the cluster secret (else $WEIR_SECRET)");
  c->add_option("--config", f.config,
                "Config file with defaults for these options (else $WEIR_CONFIG); see docs/cli.md");
  if (client) {
    c->add_option("--jobmanager", f.address,
                  "HOST:PORT of the JobManager's REST API, or several (HOST:PORT,HOST:PORT: tried in turn, for "
                  "JobManagers under --ha) (else $WEIR_JOBMANAGER, else 127.0.0.1:8081)");
  } else {
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
}

// High availability: how a process finds the leading JobManager, and how a
// JobManager competes to lead.
void add_ha_options(CLI::App* c, ClusterFlags& f, bool jobmanager) {
  c->add_option("--ha", f.ha, "High availability: none, or zookeeper (several JobManagers, one leads)")
      ->capture_default_str()
      ->check(CLI::IsMember({"none", "zookeeper"}));
  c->add_option("--ha-quorum", f.ha_options.quorum, "ZooKeeper HOST:PORT,... (with --ha zookeeper)");
  c->add_option("--ha-cluster-id", f.ha_options.cluster_id, "The cluster's name in ZooKeeper (its nodes under /weir/ID)")
      ->capture_default_str();
  if (!jobmanager) return;
  c->add_option("--ha-storage", f.ha_options.storage,
                "DIR or s3://BUCKET/PREFIX every JobManager reaches: submitted jobs and their libraries");
  c->add_option("--ha-session-timeout", f.ha_session_timeout,
                "ZooKeeper session timeout: a leader silent this long is replaced")
      ->capture_default_str();
}

void add_jobmanager(CLI::App& app, ClusterFlags& f) {
  CLI::App* c = f.jobmanager = app.add_subcommand("jobmanager", "Run a JobManager: schedules jobs, coordinates checkpoints");
  add_common_options(c, f, /*client=*/false);
  add_s3_options(c, &f.s3);
  c->add_option("--bind", f.bind, "HOST:PORT for TaskManager sessions (port 0: any)")->capture_default_str();
  c->add_option("--rest-port", f.rest_port, "REST API port on the same host (0: any)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  c->add_flag("--metrics-public", f.metrics_public,
              "GET /metrics on the REST port answers without the secret (the rest still needs it)");
  c->add_option("--heartbeat-interval", f.heartbeat_interval, "e.g. 500ms")->capture_default_str();
  c->add_option("--keep-ended-jobs", f.keep_ended_jobs, "Ended jobs still listed (older ones are forgotten)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  c->add_option("--jobstore-expiration-time", f.job_expiration,
                "How long an ended job stays listed, with its result (under --ha zookeeper across leader changes; "
                "0s: until --keep-ended-jobs forgets it)")
      ->capture_default_str();
  c->add_option("--library-dir", f.library_dir, "Uploaded job libraries (default: <temp>/weir-libraries-<uid>)");
  c->add_option("--heartbeat-timeout", f.heartbeat_timeout, "A TaskManager silent this long is lost")
      ->capture_default_str();
  add_ha_options(c, f, /*jobmanager=*/true);
}

void add_taskmanager(CLI::App& app, ClusterFlags& f) {
  CLI::App* c = f.taskmanager = app.add_subcommand("taskmanager", "Run a TaskManager: offers slots, runs tasks");
  add_common_options(c, f, /*client=*/false);
  add_s3_options(c, &f.s3);
  c->add_option("--jobmanager", f.session_address,
                "HOST:PORT of the JobManager's session port (else $WEIR_JOBMANAGER_RPC, else " +
                    cluster::TaskManagerOptions{}.jobmanager + ")");
  c->add_option("--slots", f.tm.slots, "Slots offered")->capture_default_str()->check(CLI::Range(1, 1024));
  c->add_option("--bind", f.tm.bind_host, "IPv4 address of the data port")->capture_default_str();
  c->add_option("--data-port", f.tm.data_port, "Data port (0: any free one)")->check(CLI::Range(0, 65535));
  c->add_option_function<std::string>(
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
  c->add_flag("--metrics-public", f.tm.metrics_public, "GET /metrics answers without the secret");
  c->add_option("--id", f.tm.id, "Name (default tm-<host>-<pid>)");
  c->add_option("--network-buffers", f.tm.network_buffers, "32 KiB network buffers in the pool")
      ->capture_default_str()
      ->check(CLI::Range(16, 1 << 20));
  c->add_option("--state-dir", f.tm.state_dir, "RocksDB working copies (default: system temp)");
  c->add_option("--tmp-dir", f.tm.tmp_dir,
                "Blocking results and sort spills, kept here and served to other TaskManagers "
                "(default: the job's --result-dir, else system temp)");
  c->add_option("--library-dir", f.tm.library_dir,
                "Job libraries fetched from the JobManager (default: <temp>/weir-libraries-<uid>)");
  add_ha_options(c, f, /*jobmanager=*/false);
}

void add_run(CLI::App& app, ClusterFlags& f) {
  CLI::App* c = f.run = app.add_subcommand(
      "run", "Submit a job to the cluster: weir run [options] JOB|LIBRARY.so JOB-ARGS...\n"
             "Built-in JOBs: " + builtin_job_names() + ". weir run JOB --help lists a job's options.");
  add_common_options(c, f, /*client=*/true);
  c->add_flag("--detached", f.detached, "Return once submitted; do not wait for the end");
  c->add_flag("--quiet,-q", f.quiet,
              "No progress line while attached or embedded (there is none unless stdout is a terminal)");
  c->add_flag("--cancel-on-exit", f.cancel_on_exit,
              "Cancel the job when this client is interrupted while attached (else the job keeps running)");
  c->add_flag("--embedded", f.embedded, "Run the job in this process instead (no cluster)");
  c->add_flag("--dry-run", f.dry_run, "Build the job's graph in this process and stop there");
  c->add_option("-D", f.settings,
                "KEY=VALUE: a job setting by Flink's key (parallelism.default, execution.checkpointing.interval, "
                "state.backend.type, restart-strategy.type, ...; docs/cli.md); repeatable")
      ->allow_extra_args(false);
  add_s3_options(c, &f.s3);
  c->prefix_command();
}

void add_savepoint_options(CLI::App* c, ClusterFlags& f) {
  c->add_option("--dir", f.directory,
                "Directory to write the savepoint under (default: the job's --savepoint-dir, else "
                "<checkpoint-dir>/savepoints)");
}

void add_stop_options(CLI::App* c, ClusterFlags& f) {
  c->add_option("--savepoint", f.directory,
                "Directory to write the savepoint under (default: the job's --savepoint-dir, else "
                "<checkpoint-dir>/savepoints)");
  c->add_flag("--drain", f.drain, "End the input first: all event time passes, all timers fire");
}

// The client commands but run: each asks the JobManager about the cluster
// or about one job (its id, or a prefix of it, as the argument).
struct ClientCommand {
  const char* name;
  const char* description;
  CLI::App* ClusterFlags::*slot;
  bool takes_job;
  void (*add_options)(CLI::App*, ClusterFlags&);
};

constexpr ClientCommand kClientCommands[] = {
    {"list", "List the cluster's jobs", &ClusterFlags::list, false, nullptr},
    {"cancel", "Cancel a job", &ClusterFlags::cancel, true, nullptr},
    {"savepoint", "Take a savepoint of a running job", &ClusterFlags::savepoint, true, add_savepoint_options},
    {"stop", "Stop a job with a savepoint", &ClusterFlags::stop, true, add_stop_options},
    {"checkpoints", "A job's completed checkpoints", &ClusterFlags::checkpoints, true, nullptr},
    {"overview", "The cluster's TaskManagers and slots", &ClusterFlags::overview, false, nullptr},
    {"job", "A job's vertices: state, records, backpressure", &ClusterFlags::job, true, nullptr},
};

}  // namespace

ClusterCommands::ClusterCommands(CLI::App& app) : f_(std::make_unique<ClusterFlags>()) {
  ClusterFlags& f = *f_;
  add_jobmanager(app, f);
  add_taskmanager(app, f);
  add_run(app, f);
  for (const ClientCommand& command : kClientCommands) {
    CLI::App* c = f.*command.slot = app.add_subcommand(command.name, command.description);
    add_common_options(c, f, /*client=*/true);
    if (command.takes_job) c->add_option("job", f.job_id, "Job id")->required();
    if (command.add_options != nullptr) command.add_options(c, f);
  }
}

ClusterCommands::~ClusterCommands() = default;

std::optional<int> ClusterCommands::run() {
  ClusterFlags& f = *f_;
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
  s3::set_s3_options(f.s3);
  if (parsed == f.run && (f.embedded || f.dry_run)) return run_embedded(job_name, job_args, f.dry_run, f.quiet);
  auto secret = cluster::load_secret(f.secret_file);
  if (!secret.ok()) return fail(kBadArguments, std::string(secret.status().message()));
  const network::TlsFiles tls = network::tls_files_or_env(f.tls);
  if (parsed == f.jobmanager) return run_jobmanager(f, *secret, tls);
  if (parsed == f.taskmanager) return run_taskmanager(f, *secret, tls);
  return run_job_command(f, parsed, *secret, tls, job_name, job_args);
}


}  // namespace weir::cli
