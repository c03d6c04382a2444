// What `weir`'s cluster commands (cluster_commands.h) parse, and the pieces
// that run them: the flag table and the dispatch are cluster_commands.cc's,
// the JobManager and TaskManager processes cluster_processes.cc's, the
// client's job commands (run, list, job, cancel, savepoint, stop,
// checkpoints, overview) job_commands.cc's.
#ifndef WEIR_CLI_CLUSTER_FLAGS_H_
#define WEIR_CLI_CLUSTER_FLAGS_H_

#include <CLI/CLI.hpp>
#include <pthread.h>

#include <csignal>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "s3/s3_client.h"
#include "cli/exit_codes.h"
#include "cli/logging.h"
#include "cluster/ha_jobmanager.h"
#include "cluster/jobmanager.h"
#include "cluster/taskmanager.h"
#include "network/tls.h"
#include "weir/config.h"

namespace weir::cli {

// The environment variable's value, or `fallback` when it is unset or empty.
inline std::string env_or(const char* env_name, const char* fallback) {
  const char* env = std::getenv(env_name);
  return env != nullptr && *env != '\0' ? env : fallback;
}

struct ClusterFlags {
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
  s3::S3Options s3;  // --s3-*, [s3]: this process's S3 connection

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

// The exit code of a cluster request's error (docs/cli.md).
int cluster_exit_code(const absl::Status& s);

// `weir jobmanager` and `weir taskmanager` (cluster_processes.cc): run the
// process until SIGINT or SIGTERM; the exit code.
int run_jobmanager(ClusterFlags& f, const std::string& secret, const network::TlsFiles& tls);
int run_taskmanager(ClusterFlags& f, const std::string& secret, const network::TlsFiles& tls);

// `weir run JOB --help`: the options of the job (built-in or a library's)
// and the job flags, on stdout.
int print_job_help(const std::string& job);
// `weir run --embedded JOB ARGS`: the job in this process, as `weir example`
// runs the built-in ones. `dry_run`: build its graph, say so, run nothing.
// `quiet` (weir run -q), or the job's own --quiet: no progress line.
int run_embedded(const std::string& job, const std::vector<std::string>& args, bool dry_run, bool quiet);
// The client command `parsed` against the JobManager (job_commands.cc);
// for run, the job and its arguments with its settings ahead of them.
int run_job_command(ClusterFlags& f, const CLI::App* parsed, const std::string& secret, const network::TlsFiles& tls,
                    const std::string& job_name, const std::vector<std::string>& job_args);

}  // namespace weir::cli

#endif  // WEIR_CLI_CLUSTER_FLAGS_H_
