// The multi-process cluster against the embedded one, on loopback:
//   throughput  the keyed running sum at parallelism P, in one process vs
//               on 3 TaskManagers (channels between them over TCP);
//   recovery    SIGKILL of a TaskManager while a rate-limited job runs, to the
//               first checkpoint completed after it (when the exactly-once
//               sink commits new output), with a spare TaskManager standing by;
//   checkpoints duration of the checkpoints of the cluster runs.
// With --batch 1 instead: the running sum in batch execution, in one process
// vs on 3 TaskManagers with blocking results (each kept by the TaskManager
// that wrote it and sent over TCP to consumers on the others) vs persisted
// results (on the shared checkpoint directory).
// Peak RSS of every process is reported. Prints one line per measurement.
//
//   weir_cluster_bench --weir build/weir --dir /tmp/cb [--lines 4000000] [--parallelism 6] [--rounds 3]
//                      [--batch 1]
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "common/clock.h"
#include "examples/running_sum/running_sum.h"
#include "tests/cluster.h"

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using weir::testing::Child;
using weir::testing::Cluster;
using weir::testing::eventually;

namespace {


double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

struct Options {
  std::string dir = "/tmp/weir-cluster-bench";
  int64_t lines = 4'000'000;
  int parallelism = 6;
  int rounds = 3;
  bool batch = false;
};

std::vector<std::string> job_args(const Options& o, const std::string& input, const std::string& out,
                                  const std::string& chk, const std::string& rate) {
  return {"--input", input, "--output", out, "-p", std::to_string(o.parallelism), "--checkpoint-dir", chk,
          "--checkpoint-interval", "1s", "--rate", rate};
}

// Stops the cluster's processes with SIGTERM and reports their peak RSS.
void report_rss(const char* what, const std::vector<Child*>& processes) {
  long max_kb = 0;
  for (Child* c : processes) {
    c->signal(SIGTERM);
    c->wait();
    max_kb = std::max(max_kb, c->peak_rss_kb());
  }
  std::printf("%-28s peak_rss_mb_per_process=%.1f\n", what, max_kb / 1024.0);
}

// The batch rounds: embedded, then blocking and persisted on one cluster,
// alternating.
int run_batch(const Options& o, const std::string& input) {
  std::vector<double> embedded, blocking, persisted;
  for (int round = 0; round < o.rounds; ++round) {
    const std::string r = o.dir + "/b" + std::to_string(round);
    fs::create_directories(r);
    auto args_for = [&](const std::string& name, const std::string& exchange) {
      return std::vector<std::string>{"--input", input, "--output", r + "/out-" + name, "-p",
                                      std::to_string(o.parallelism), "--runtime-mode", "batch", "--exchange",
                                      exchange, "--checkpoint-dir", r + "/chk-" + name};
    };
    {
      std::vector<std::string> args = {weir::testing::weir_bin(), "example", "running-sum"};
      for (auto& a : args_for("embedded", "blocking")) args.push_back(a);
      auto t0 = std::chrono::steady_clock::now();
      Child c(args, r + "/embedded");
      if (c.wait() != 0) {
        std::fprintf(stderr, "embedded batch run failed: %s\n", c.err().c_str());
        return 1;
      }
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      embedded.push_back(o.lines / s);
      std::printf("round %d batch embedded           records_per_s=%.0f wall_s=%.2f peak_rss_mb=%.1f\n", round,
                  o.lines / s, s, c.peak_rss_kb() / 1024.0);
    }
    Cluster c("cluster-bench-batch-" + std::to_string(round));
    c.start_jobmanager();
    for (int i = 0; i < 3; ++i) c.start_taskmanager("tm" + std::to_string(i), (o.parallelism + 2) / 3);
    if (!c.ok()) {
      std::fprintf(stderr, "cluster did not start: %s\n", c.jm_log().c_str());
      return 1;
    }
    for (const std::string exchange : {"blocking", "persisted"}) {
      auto t0 = std::chrono::steady_clock::now();
      auto job = c.client().submit("running-sum", args_for(exchange, exchange));
      if (!job.ok()) return 1;
      auto done = c.client().wait(*job, 600000);
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (!done.ok() || (*done)["status"] != "FINISHED") {
        std::fprintf(stderr, "cluster batch run failed: %s\n", c.jm_log().c_str());
        return 1;
      }
      (exchange == "blocking" ? blocking : persisted).push_back(o.lines / s);
      std::printf("round %d batch cluster-3tm %-9s records_per_s=%.0f wall_s=%.2f (submit to finished)\n", round,
                  exchange.c_str(), o.lines / s, s);
    }
    report_rss("  cluster processes", {c.taskmanager("tm0"), c.taskmanager("tm1"), c.taskmanager("tm2"),
                                        c.jobmanager()});
  }
  std::printf("median batch embedded_records_per_s=%.0f blocking_records_per_s=%.0f persisted_records_per_s=%.0f "
              "blocking/embedded=%.2f blocking/persisted=%.2f\n",
              median(embedded), median(blocking), median(persisted), median(blocking) / median(embedded),
              median(blocking) / median(persisted));
  return 0;
}

int run(const Options& o) {
  fs::remove_all(o.dir);
  fs::create_directories(o.dir);
  const std::string input = o.dir + "/in.txt";
  auto s = weir::examples::generate_running_sum_input(input, o.lines, 100000, 0, 1);
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
    return 1;
  }
  if (o.batch) return run_batch(o, input);
  std::vector<double> embedded, cluster, recovery, detect, checkpoint_ms;
  for (int round = 0; round < o.rounds; ++round) {
    const std::string r = o.dir + "/r" + std::to_string(round);
    fs::create_directories(r);
    // Embedded: one process.
    {
      std::vector<std::string> args = {weir::testing::weir_bin(), "example", "running-sum"};
      for (auto& a : job_args(o, input, r + "/out-e", r + "/chk-e", "0")) args.push_back(a);
      auto t0 = std::chrono::steady_clock::now();
      Child c(args, r + "/embedded");
      if (c.wait() != 0) {
        std::fprintf(stderr, "embedded run failed: %s\n", c.err().c_str());
        return 1;
      }
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      embedded.push_back(o.lines / s);
      std::printf("round %d embedded       records_per_s=%.0f wall_s=%.2f peak_rss_mb=%.1f\n", round, o.lines / s, s,
                  c.peak_rss_kb() / 1024.0);
    }
    // Cluster: 3 TaskManagers with 2 slots each.
    {
      Cluster c("cluster-bench-" + std::to_string(round));
      c.start_jobmanager();
      for (int i = 0; i < 3; ++i) c.start_taskmanager("tm" + std::to_string(i), (o.parallelism + 2) / 3);
      if (!c.ok()) {
        std::fprintf(stderr, "cluster did not start: %s\n", c.jm_log().c_str());
        return 1;
      }
      auto t0 = std::chrono::steady_clock::now();
      auto job = c.client().submit("running-sum", job_args(o, input, r + "/out-c", r + "/chk-c", "0"));
      if (!job.ok()) return 1;
      auto done = c.client().wait(*job, 600000);
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (!done.ok() || (*done)["status"] != "FINISHED") {
        std::fprintf(stderr, "cluster run failed: %s\n", c.jm_log().c_str());
        return 1;
      }
      cluster.push_back(o.lines / s);
      auto cps = c.client().checkpoints(*job);
      if (cps.ok()) {
        for (const auto& cp : (*cps)["completed"]) checkpoint_ms.push_back(cp["duration_ms"].get<double>());
      }
      std::printf("round %d cluster-3tm    records_per_s=%.0f wall_s=%.2f (submit to finished)\n", round, o.lines / s, s);
      report_rss("  cluster processes", {c.taskmanager("tm0"), c.taskmanager("tm1"), c.taskmanager("tm2"),
                                          c.jobmanager()});
    }
    // Recovery: a rate-limited job; kill one of 3 busy TaskManagers, a 4th stands by.
    {
      Cluster c("cluster-bench-recovery-" + std::to_string(round), "5s");
      c.start_jobmanager();
      const int slots = (o.parallelism + 2) / 3;
      for (int i = 0; i < 4; ++i) c.start_taskmanager("tm" + std::to_string(i), slots);
      if (!c.ok()) return 1;
      std::vector<std::string> args = job_args(o, input, r + "/out-r", r + "/chk-r", "5000");
      args[args.size() - 3] = "200ms";  // checkpoint interval
      auto job = c.client().submit("running-sum", args);
      if (!job.ok()) return 1;
      auto completed = [&] {
        auto cps = c.client().checkpoints(*job);
        return cps.ok() ? (*cps)["completed"] : nlohmann::json::array();
      };
      if (!eventually([&] { return completed().size() >= 5; }, 60s)) return 1;
      // The victim: a TaskManager that runs subtasks.
      auto detail = c.client().job(*job);
      std::string victim = (*detail)["vertices"][0]["subtasks"][0]["taskmanager"];
      int64_t killed_at = weir::SystemClock::instance()->wall_ms();
      c.taskmanager(victim)->kill9();
      if (!eventually([&] { return c.jm_log().find("TaskManager " + victim) != std::string::npos; }, 30s)) return 1;
      int64_t detected_at = weir::SystemClock::instance()->wall_ms();
      int64_t committed_at = -1;
      eventually(
          [&] {
            for (const auto& cp : completed()) {
              if (cp["trigger_time_ms"].get<int64_t>() > killed_at) {
                committed_at = cp["trigger_time_ms"].get<int64_t>() + cp["duration_ms"].get<int64_t>();
                return true;
              }
            }
            return false;
          },
          60s);
      if (committed_at < 0) {
        std::fprintf(stderr, "no checkpoint after the kill: %s\n", c.jm_log().c_str());
        return 1;
      }
      detect.push_back(detected_at - killed_at);
      recovery.push_back(committed_at - killed_at);
      std::printf("round %d recovery       kill_to_detected_ms=%lld kill_to_first_commit_ms=%lld\n", round,
                  static_cast<long long>(detected_at - killed_at), static_cast<long long>(committed_at - killed_at));
      (void)c.client().cancel(*job);  // best effort: the run is over either way
    }
  }
  std::printf("median embedded_records_per_s=%.0f cluster_records_per_s=%.0f ratio=%.2f\n", median(embedded),
              median(cluster), median(cluster) / median(embedded));
  std::printf("median kill_to_detected_ms=%.0f kill_to_first_commit_ms=%.0f (goal: under 2000)\n", median(detect),
              median(recovery));
  double max_cp = checkpoint_ms.empty() ? 0 : *std::max_element(checkpoint_ms.begin(), checkpoint_ms.end());
  std::printf("checkpoints on 3 TaskManagers: n=%zu median_ms=%.0f max_ms=%.0f\n", checkpoint_ms.size(),
              median(checkpoint_ms), max_cp);
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::printf("bench process peak_rss_mb=%.1f\n", ru.ru_maxrss / 1024.0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--weir") {
      ::setenv("WEIR_BIN", v.c_str(), 1);
    } else if (k == "--dir") {
      o.dir = v;
    } else if (k == "--lines") {
      o.lines = std::atoll(v.c_str());
    } else if (k == "--parallelism") {
      o.parallelism = std::atoi(v.c_str());
    } else if (k == "--rounds") {
      o.rounds = std::atoi(v.c_str());
    } else if (k == "--batch") {
      o.batch = v == "1";
    } else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }
  return run(o);
}
