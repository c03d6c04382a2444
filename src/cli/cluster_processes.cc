// `weir jobmanager` and `weir taskmanager`: the cluster's processes, with
// or without high availability, until SIGINT or SIGTERM.
#include <cstdio>
#include <string>
#include <thread>

#include <unistd.h>

#include "cli/cluster_flags.h"
#include "cli/jobs.h"

namespace weir::cli {

int run_jobmanager(ClusterFlags& f, const std::string& secret, const network::TlsFiles& tls) {
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
  o.secret = secret;
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

int run_taskmanager(ClusterFlags& f, const std::string& secret, const network::TlsFiles& tls) {
  f.tm.jobmanager = f.session_address;
  if (f.ha == "zookeeper") {
    if (f.ha_options.quorum.empty()) return fail(kBadArguments, "taskmanager: --ha zookeeper needs --ha-quorum");
    f.tm.ha_quorum = f.ha_options.quorum;
    f.tm.ha_cluster_id = f.ha_options.cluster_id;
  } else if (!f.ha_options.quorum.empty()) {
    return fail(kBadArguments, "taskmanager: --ha-quorum needs --ha zookeeper");
  }
  f.tm.secret = secret;
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
  if (!result.ok()) return fail(cluster_exit_code(result), std::string(result.message()));
  return kOk;
}

}  // namespace weir::cli
