// `weir`'s client commands against a JobManager's REST API: run (submit,
// then attach: restarts, slots awaited, a progress line; or --embedded, in
// this process), list, job, cancel, savepoint, stop, checkpoints, overview.
// A job may be named by a prefix of its id, as git names commits.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "absl/strings/str_join.h"
#include "cli/cluster_flags.h"
#include "cli/embedded.h"
#include "cli/jobs.h"
#include "cli/progress.h"
#include "cluster/client.h"
#include "cluster/job_library.h"
#include "graph/job_graph.h"

namespace weir::cli {
namespace {

// `weir run` takes a job library by path (anything with a slash or ending in
// .so), a built-in job by name otherwise.
bool is_library_path(const std::string& job) {
  return job.find('/') != std::string::npos || (job.size() > 3 && job.compare(job.size() - 3, 3, ".so") == 0);
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

// A vertex's sink counts from its REST metrics' gauges ("" for none).
std::string sink_summary_of(const nlohmann::json& metrics) {
  const nlohmann::json gauges = metrics.value("gauges", nlohmann::json::object());
  return sink_summary([&](std::string_view name) -> std::optional<int64_t> {
    auto it = gauges.find(std::string(name));
    if (it == gauges.end() || !it->is_number()) return std::nullopt;
    return it->get<int64_t>();
  });
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
    const std::string sink = sink_summary_of(m);
    if (!sink.empty()) std::printf("  %s", sink.c_str());
  }
  std::printf("\n");
}

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
        return fail(cluster_exit_code(canceled.status()), "cancel " + id + ": " + std::string(canceled.status().message()));
      }
      std::printf("job %s %s\n", id.c_str(), canceled->value("status", std::string("?")).c_str());
      return kInterrupted;
    }
    auto info = client.wait(id, 1000);
    if (!info.ok()) {
      line.clear();
      return fail(cluster_exit_code(info.status()), std::string(info.status().message()));
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
    // What each sink wrote, as the JobManager last heard it.
    if (auto detail = client.job(id); detail.ok()) {
      for (const auto& v : (*detail)["vertices"]) {
        const std::string sink = sink_summary_of(v.value("metrics", nlohmann::json::object()));
        if (sink.empty()) continue;
        std::printf("vertex %s %s%s\n", v.value("name", "").c_str(), sink.c_str(),
                    info->value("restarts", 0) > 0 ? " (since its last restart)" : "");
      }
    }
    const std::string savepoint = info->value("stopped_with_savepoint", "");
    if (!savepoint.empty()) std::printf("stopped with savepoint %s\n", savepoint.c_str());
    if (status == "FINISHED") return kOk;
    const std::string failure = info->value("failure", "");  // why it failed
    return fail(kJobFailed, "job " + status + (failure.empty() ? "" : ": " + failure));
  }
}

}  // namespace

int cluster_exit_code(const absl::Status& s) {
  if (absl::IsUnavailable(s)) return kClusterUnreachable;
  if (absl::IsUnauthenticated(s) || absl::IsPermissionDenied(s)) return kClusterRefused;
  if (absl::IsInvalidArgument(s) || absl::IsNotFound(s)) return kBadArguments;
  return kBadInput;
}

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

int run_job_command(ClusterFlags& f, const CLI::App* parsed, const std::string& secret, const network::TlsFiles& tls,
                    const std::string& job_name, const std::vector<std::string>& job_args) {
  cluster::ClusterClient client(f.address, secret, tls.ca);
  if (parsed == f.run) {
    std::string name = job_name;
    const std::vector<std::string>& rest = job_args;
    std::string library;
    if (is_library_path(name)) {
      // Checked here first, so that an error names the user's file rather
      // than the JobManager's copy of it.
      auto local = cluster::JobLibrary::load(name);
      if (!local.ok()) return fail(cluster_exit_code(local.status()), "run: " + std::string(local.status().message()));
      auto digest = client.upload_library(name);
      if (!digest.ok()) return fail(cluster_exit_code(digest.status()), "run: " + std::string(digest.status().message()));
      library = *digest;
    }
    auto id = client.submit(name, rest, library);
    if (!id.ok()) return fail(cluster_exit_code(id.status()), "run: " + std::string(id.status().message()));
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
    if (!jobs.ok()) return fail(cluster_exit_code(jobs.status()), std::string(jobs.status().message()));
    if ((*jobs)["jobs"].empty()) std::printf("no jobs\n");
    for (const auto& j : (*jobs)["jobs"]) print_job(j);
    return kOk;
  }
  // A job named by a prefix of its id (weir job ca1a), as git names commits.
  if (parsed == f.cancel || parsed == f.savepoint || parsed == f.stop || parsed == f.job || parsed == f.checkpoints) {
    auto id = resolve_job_id(client, f.job_id);
    if (!id.ok()) return fail(cluster_exit_code(id.status()), std::string(id.status().message()));
    f.job_id = *id;
  }
  if (parsed == f.cancel) {
    auto info = client.cancel(f.job_id);
    if (!info.ok()) return fail(cluster_exit_code(info.status()), std::string(info.status().message()));
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
    if (!r.ok()) return fail(cluster_exit_code(r.status()), std::string(r.status().message()));
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
    if (!r.ok()) return fail(cluster_exit_code(r.status()), std::string(r.status().message()));
    print_job(*r);
    for (const auto& v : (*r)["vertices"]) print_vertex(v);
    return kOk;
  }
  if (parsed == f.checkpoints) {
    auto r = client.checkpoints(f.job_id);
    if (!r.ok()) return fail(cluster_exit_code(r.status()), std::string(r.status().message()));
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
  if (!r.ok()) return fail(cluster_exit_code(r.status()), std::string(r.status().message()));
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
