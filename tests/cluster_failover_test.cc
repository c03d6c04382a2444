// Recovery on the multi-process cluster: TaskManagers SIGKILLed, frozen or
// cut off, a JobManager killed and restarted, region failover, at-most-once
// across a lost TaskManager, and stop-with-savepoint and resume; each with
// the output checked.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <set>

#include "examples/components/components.h"
#include "examples/running_sum/running_sum.h"
#include "weir/connectors.h"
#include "tests/cluster.h"
#include "tests/cluster_checks.h"
#include "tests/netns_hosts.h"
#include "tests/prometheus.h"
#include "tests/s3_server.h"
#include "common/clock.h"
#include "testing/seed.h"

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace weir {
namespace {

using testing::Child;
using testing::Cluster;
using testing::completed_checkpoints;
using testing::eventually;
using testing::expect_exactly_once;
using testing::Hosts;
using testing::running_after_restarts;
using testing::slurp;
using testing::TempDir;

// 1 JobManager + 3 TaskManagers, running-sum at parallelism 6; a random
// TaskManager is SIGKILLed (and a new one started) several times while the
// job runs: the committed output is exactly-once.
TEST(ClusterTest, KilledTaskManagersAreReplacedAndOutputIsExactlyOnce) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  Cluster c("cluster-kill");
  const std::string input = c.dir().path("in.txt");
  ASSERT_TRUE(examples::generate_running_sum_input(input, 300000, 2000, 997, seed).ok());
  c.start_jobmanager();
  ASSERT_TRUE(c.ok()) << c.jm_log();
  std::vector<std::string> live;
  int next_tm = 0;
  for (; next_tm < 3; ++next_tm) {
    live.push_back("tm" + std::to_string(next_tm));
    c.start_taskmanager(live.back(), 2);
    ASSERT_TRUE(c.ok()) << "a TaskManager did not register\n" << c.jm_log();
  }
  // 6 sources at 5000 lines/s: about 10 s of input.
  auto job = c.client().submit("running-sum", {"--input", input, "--output", c.dir().path("out"), "-p", "6",
                                               "--checkpoint-dir", c.dir().path("chk"), "--checkpoint-interval",
                                               "100ms", "--rate", "5000"});
  ASSERT_TRUE(job.ok()) << job.status();

  int kills = 0;
  for (int round = 0; round < 3; ++round) {
    // Let the job make progress: a few more checkpoints.
    int64_t before = completed_checkpoints(c, *job);
    int64_t more = 1 + static_cast<int64_t>(rng() % 4);
    bool progressed = eventually([&] { return completed_checkpoints(c, *job) >= before + more; }, 60s);
    auto info = c.client().job(*job);
    ASSERT_TRUE(info.ok()) << info.status();
    if ((*info)["status"] == "FINISHED") break;
    ASSERT_TRUE(progressed) << c.jm_log();
    size_t victim = rng() % live.size();
    c.taskmanager(live[victim])->kill9();
    ++kills;
    live.erase(live.begin() + static_cast<long>(victim));
    live.push_back("tm" + std::to_string(next_tm++));
    c.start_taskmanager(live.back(), 2);
    ASSERT_TRUE(c.ok()) << "a TaskManager did not register\n" << c.jm_log();
  }
  auto done = c.client().wait(*job, 120000);
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_EQ((*done)["status"], "FINISHED") << *done << "\n" << c.jm_log();
  EXPECT_GE(kills, 1);
  EXPECT_GE((*done)["restarts"].get<int>(), kills);
  expect_exactly_once({input}, c.dir().path("out"));
}

// Unaligned checkpoints across TaskManagers: the running sum at parallelism
// 4 on two TaskManagers of 2 slots, its sink 4x slower than its sources, so
// priority barriers cross the data plane carrying the data they overtook
// at the sender (and debloated buffer sizes cross it the other way). A TaskManager is SIGKILLed once checkpoints completed and a
// new one takes its place: the restored tasks replay their channel state
// and the output is exactly-once.
// On a cluster of TaskManagers tm-a and tm-b (two slots each) running
// `job`: after 3-6 completed checkpoints, kills one of them (by `seed`) and
// starts tm-c; the job must finish after a restart. The records of channel
// state the restored tasks replayed; -1 when the job did not finish.
int64_t kill_a_taskmanager_and_finish(Cluster& c, const std::string& job, uint64_t seed) {
  if (!eventually([&] { return completed_checkpoints(c, job) >= 3 + static_cast<int64_t>(seed % 4); }, 60s)) {
    ADD_FAILURE() << "no checkpoints\n" << c.jm_log();
    return -1;
  }
  c.taskmanager(seed % 2 == 0 ? "tm-a" : "tm-b")->kill9();
  c.start_taskmanager("tm-c", 2);
  if (!c.ok()) {
    ADD_FAILURE() << "a TaskManager did not register\n" << c.jm_log();
    return -1;
  }
  auto done = c.client().wait(job, 120000);
  if (!done.ok() || (*done)["status"] != "FINISHED") {
    ADD_FAILURE() << (done.ok() ? done->dump() : done.status().ToString()) << "\n" << c.jm_log();
    return -1;
  }
  EXPECT_GE((*done)["restarts"].get<int>(), 1);
  int64_t replayed = 0;
  for (const char* tm : {"tm-a", "tm-b", "tm-c"}) {
    replayed += testing::replayed_records(slurp(c.dir().path(std::string(tm) + ".err")));
  }
  return replayed;
}

TEST(ClusterTest, UnalignedCheckpointsSurviveAKilledTaskManagerExactlyOnce) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Cluster c("cluster-unaligned");
  const std::string input = c.dir().path("in.txt");
  ASSERT_TRUE(examples::generate_running_sum_input(input, 80000, 500, 0, seed).ok());
  ASSERT_TRUE(c.start({{"tm-a", 2}, {"tm-b", 2}})) << "the cluster did not come up\n" << c.jm_log();
  auto job = c.client().submit("running-sum", {"--input", input, "--output", c.dir().path("out"), "-p", "4",
                                               "--checkpoint-dir", c.dir().path("chk"), "--checkpoint-interval",
                                               "100ms", "--rate", "5000", "--sink-rate", "1250", "--checkpointing",
                                               "unaligned", "--buffer-debloat"});
  ASSERT_TRUE(job.ok()) << job.status();
  const int64_t replayed = kill_a_taskmanager_and_finish(c, *job, seed);
  EXPECT_GT(replayed, 0) << "no restored task replayed channel state";
  expect_exactly_once({input}, c.dir().path("out"));
}

// Changelog checkpoints across TaskManagers: each TaskManager writes its
// subtasks' deltas (and bases) to the shared checkpoint directory; one is
// killed, and the restored subtasks read the chains back exactly-once.
TEST(ClusterTest, ChangelogCheckpointsSurviveAKilledTaskManagerExactlyOnce) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Cluster c("cluster-changelog");
  const std::string input = c.dir().path("in.txt");
  ASSERT_TRUE(examples::generate_running_sum_input(input, 80000, 5000, 0, seed).ok());
  ASSERT_TRUE(c.start({{"tm-a", 2}, {"tm-b", 2}})) << "the cluster did not come up\n" << c.jm_log();
  auto job = c.client().submit("running-sum", {"--input", input, "--output", c.dir().path("out"), "-p", "4",
                                               "--checkpoint-dir", c.dir().path("chk"), "--checkpoint-interval",
                                               "100ms", "--rate", "5000", "--changelog"});
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_GE(kill_a_taskmanager_and_finish(c, *job, seed), 0);
  expect_exactly_once({input}, c.dir().path("out"));
  int deltas = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(c.dir().path("chk"), ec); it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    deltas += it->path().filename().string().find("~delta.state") != std::string::npos ? 1 : 0;
  }
  EXPECT_GT(deltas, 0) << "no checkpoint wrote a delta";
}

// An iteration across TaskManagers: the connected-components loop (head,
// components operator, feedback edge) with its subtasks spread over two
// TaskManagers, one of them killed. The restarted job replays the back
// edge's channel state and the committed labels are exactly-once.
TEST(ClusterTest, AnIterationSurvivesAKilledTaskManagerExactlyOnce) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Cluster c("cluster-iteration");
  const std::string input = c.dir().path("edges.txt");
  ASSERT_TRUE(examples::write_graph(input, 60000, 45000, 0, seed).ok());
  ASSERT_TRUE(c.start({{"tm-a", 2}, {"tm-b", 2}})) << "the cluster did not come up\n" << c.jm_log();
  auto job = c.client().submit("connected-components",
                               {"--input", input, "--output", c.dir().path("out"), "-p", "4", "--checkpoint-dir",
                                c.dir().path("chk"), "--checkpoint-interval", "100ms", "--rate", "4000"});
  ASSERT_TRUE(job.ok()) << job.status();
  // The REST API marks the back edge: components (vertex 2) -> head (vertex 1).
  auto detail = c.client().job(*job);
  ASSERT_TRUE(detail.ok()) << detail.status();
  int feedback = 0;
  for (const auto& e : (*detail)["edges"]) {
    if (!e.value("feedback", false)) continue;
    ++feedback;
    EXPECT_EQ(e["source"], 2) << e;
    EXPECT_EQ(e["target"], 1) << e;
    EXPECT_EQ(e["partitioning"], "REBALANCE") << e;
  }
  EXPECT_EQ(feedback, 1) << *detail;
  const int64_t replayed = kill_a_taskmanager_and_finish(c, *job, seed);
  EXPECT_GT(replayed, 0) << "no restored head replayed its feedback";
  auto check = examples::check_components(input, c.dir().path("out"));
  ASSERT_TRUE(check.ok()) << check.status();
  for (const auto& p : check->problems) ADD_FAILURE() << p;
  EXPECT_TRUE(check->exactly_once);
}

// A frozen TaskManager (SIGSTOP) keeps its connections open; only missing
// heartbeats reveal it. The JobManager declares it lost, the job moves to a
// new TaskManager, and the output stays exactly-once.
TEST(ClusterTest, FrozenTaskManagerIsDetectedByHeartbeatTimeout) {
  Cluster c("cluster-freeze", "1s");
  const std::string input = c.dir().path("in.txt");
  ASSERT_TRUE(examples::generate_running_sum_input(input, 100000, 500, 0, 7).ok());
  ASSERT_TRUE(c.start({{"tm-a", 1}, {"tm-b", 1}})) << "the cluster did not come up\n" << c.jm_log();
  auto job = c.client().submit("running-sum", {"--input", input, "--output", c.dir().path("out"), "-p", "2",
                                               "--checkpoint-dir", c.dir().path("chk"), "--checkpoint-interval",
                                               "100ms", "--rate", "5000"});
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE(eventually([&] { return completed_checkpoints(c, *job) >= 2; }, 60s)) << c.jm_log();
  c.taskmanager("tm-b")->signal(SIGSTOP);
  auto frozen_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(eventually([&] { return c.jm_log().find("TaskManager tm-b") != std::string::npos &&
                                      c.jm_log().find("lost: no heartbeat") != std::string::npos; },
                         20s))
      << c.jm_log();
  auto detected = std::chrono::steady_clock::now() - frozen_at;
  EXPECT_GE(detected, 900ms);  // not before the timeout
  c.start_taskmanager("tm-c", 1);
  ASSERT_TRUE(c.ok()) << "a TaskManager did not register\n" << c.jm_log();
  c.taskmanager("tm-b")->signal(SIGCONT);  // it finds its session gone and drops its tasks
  auto done = c.client().wait(*job, 120000);
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_EQ((*done)["status"], "FINISHED") << *done << "\n" << c.jm_log();
  EXPECT_GE((*done)["restarts"].get<int>(), 1);
  expect_exactly_once({input}, c.dir().path("out"));
}

// Persisted results on a cluster: the sources of two inputs write their
// output under the checkpoint directory, and the sums run after both ended.
// The small input's sources finish first; then the TaskManager running
// source subtask 1 of both inputs is SIGKILLed. Only the big input's
// subtask 1 runs again (attempt 1): the small input's finished results are
// on shared storage, so its sources keep attempt 0, and the sums (attempt 0,
// deployed once) read every file. The output is exactly once, and so is a
// batch job's after it (its sums reading sorted input).
// With `s3`, the checkpoint directory (and so the results) is in S3: each
// TaskManager keeps its own local copy, a result another one wrote is
// downloaded, and the objects go with the job.
void persisted_results_survive_a_lost_taskmanager(const std::string& name, bool s3) {
  Cluster c(name, "1s");
  std::unique_ptr<testing::S3Server> server;
  std::string chk = c.dir().path("chk");
  if (s3) {
    server = std::make_unique<testing::S3Server>(c.dir(), "weir");
    ASSERT_TRUE(server->start()) << "s3rver did not start (scripts/install-deps.sh installs it)";
    server->set_env();  // the JobManager and TaskManagers inherit it
    chk = server->url("chk");
  }
  const std::string small = c.dir().path("small.txt"), big = c.dir().path("big.txt");
  ASSERT_TRUE(examples::generate_running_sum_input(small, 2000, 100, 0, 3).ok());
  ASSERT_TRUE(examples::generate_running_sum_input(big, 60000, 100, 0, 4).ok());
  ASSERT_TRUE(c.start({{"tm-a", 1}, {"tm-b", 1}})) << "the cluster did not come up\n" << c.jm_log();
  // 2 subtasks per input at 2500 lines/s: the small one ends within a
  // second, the big one after about 12 s.
  auto job = c.client().submit("running-sum", {"--input", small, "--input", big, "--output", c.dir().path("out"),
                                               "-p", "2", "--checkpoint-dir", chk, "--mode", "none",
                                               "--exchange", "persisted", "--rate", "2500"});
  ASSERT_TRUE(job.ok()) << job.status();
  // The vertex (of three) whose subtasks all finished: the small input's.
  int finished_vertex = -1;
  ASSERT_TRUE(eventually(
      [&] {
        auto d = c.client().job(*job);
        if (!d.ok() || !d->contains("vertices")) return false;
        for (size_t v = 0; v < (*d)["vertices"].size(); ++v) {
          bool all = true;
          for (const auto& s : (*d)["vertices"][v]["subtasks"]) all = all && s["state"] == "FINISHED";
          if (all) finished_vertex = static_cast<int>(v);
        }
        return finished_vertex >= 0;
      },
      60s))
      << c.jm_log();
  std::unique_ptr<s3::S3Client> client;
  if (s3) {
    client = std::make_unique<s3::S3Client>(server->settings());
    auto results = client->list({"weir", "chk/results/" + *job + "/"});
    ASSERT_TRUE(results.ok()) << results.status();
    EXPECT_GE(results->size(), 2u) << "the finished sources' results are not in S3";
  }
  c.taskmanager("tm-b")->kill9();
  c.start_taskmanager("tm-c", 1);
  ASSERT_TRUE(c.ok()) << "a TaskManager did not register\n" << c.jm_log();
  // The big input's subtask 1 runs again for seconds: seen in attempt 1,
  // while the small input's subtasks are still finished in attempt 0.
  nlohmann::json detail;
  ASSERT_TRUE(eventually(
      [&] {
        auto d = c.client().job(*job);
        if (!d.ok() || !d->contains("vertices")) return false;
        for (const auto& v : (*d)["vertices"]) {
          for (const auto& s : v["subtasks"]) {
            if (s["attempt"] == 1 && s["state"] == "RUNNING") {
              detail = *d;
              return true;
            }
          }
        }
        return false;
      },
      60s))
      << c.jm_log();
  for (const auto& s : detail["vertices"][finished_vertex]["subtasks"]) {
    EXPECT_EQ(s["attempt"], 0) << "a finished producer ran again: " << detail;
    EXPECT_EQ(s["state"], "FINISHED") << detail;
  }
  auto done = c.client().wait(*job, 120000);
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_EQ((*done)["status"], "FINISHED") << *done << "\n" << c.jm_log();
  EXPECT_EQ((*done)["restarts"].get<int>(), 1);
  EXPECT_EQ((*done)["completed_checkpoints"], 0);
  expect_exactly_once({small, big}, c.dir().path("out"));
  if (s3) {
    auto left = client->list({"weir", "chk/results/" + *job + "/"});
    ASSERT_TRUE(left.ok()) << left.status();
    EXPECT_TRUE(left->empty()) << left->size() << " result objects outlived the job";
  }
  // Batch execution on the cluster: the sums read their input sorted by
  // key, spilling past a 1 MB budget, with the same exactly-once output.
  auto batch = c.client().submit("running-sum", {"--input", small, "--input", big, "--output",
                                                 c.dir().path("out-batch"), "-p", "2", "--checkpoint-dir",
                                                 chk, "--runtime-mode", "batch", "--exchange",
                                                 "persisted", "--sort-memory", "1mb"});
  ASSERT_TRUE(batch.ok()) << batch.status();
  auto batch_done = c.client().wait(*batch, 120000);
  ASSERT_TRUE(batch_done.ok()) << batch_done.status();
  ASSERT_EQ((*batch_done)["status"], "FINISHED") << *batch_done << "\n" << c.jm_log();
  expect_exactly_once({small, big}, c.dir().path("out-batch"));
}

TEST(ClusterTest, PersistedResultsSurviveALostTaskManager) {
  persisted_results_survive_a_lost_taskmanager("cluster-persisted", false);
}

TEST(ClusterTest, PersistedResultsInS3SurviveALostTaskManager) {
  persisted_results_survive_a_lost_taskmanager("cluster-persisted-s3", true);
}

// The subtasks of the vertex named `name` (its first operator's) in a job's
// detail.
const nlohmann::json& subtasks_of(const nlohmann::json& detail, const std::string& name) {
  for (const auto& v : detail["vertices"]) {
    if (v["name"].get<std::string>().rfind(name, 0) == 0) return v["subtasks"];
  }
  static const nlohmann::json none = nlohmann::json::array();
  ADD_FAILURE() << "no vertex " << name << " in " << detail;
  return none;
}

// Waits for `job` to end; false (the failure reported) unless it finished.
// `done` gets the ended job, `detail` its vertices.
bool finishes(Cluster& c, const std::string& job, nlohmann::json* done, nlohmann::json* detail) {
  auto ended = c.client().wait(job, 120000);
  if (!ended.ok() || (*ended)["status"] != "FINISHED") {
    ADD_FAILURE() << (ended.ok() ? ended->dump() : ended.status().ToString()) << "\n" << c.jm_log();
    return false;
  }
  auto d = c.client().job(job);
  if (!d.ok()) {
    ADD_FAILURE() << d.status();
    return false;
  }
  *done = *ended;
  *detail = *d;
  return true;
}

// Runs running-sum with `args` to its end, as finishes().
bool runs_to_the_end(Cluster& c, const std::vector<std::string>& args, nlohmann::json* done, nlohmann::json* detail) {
  auto job = c.client().submit("running-sum", args);
  if (!job.ok()) {
    ADD_FAILURE() << job.status();
    return false;
  }
  return finishes(c, *job, done, detail);
}

// Every subtask's attempt in a job's detail is `expected(vertex name, subtask)`.
void expect_attempts(const nlohmann::json& detail, const std::function<int(const std::string&, int)>& expected) {
  for (const auto& v : detail["vertices"]) {
    for (const auto& s : v["subtasks"]) {
      EXPECT_EQ(s["attempt"], expected(v["name"], s["subtask"])) << v["name"] << " " << s;
    }
  }
}

// Batch execution on a cluster of three TaskManagers (one slot each; the
// job uses two, subtask i of every vertex in slot i). The running sum in
// batch is four stages: the two sources, parse, the sums, and the sink
// behind a rebalance. Blocking results stay on the TaskManager that wrote
// them and are served from there to consumers on the others.
// 1. A sink subtask fails: only it runs again; every earlier stage keeps
//    attempt 0.
// 2. The TaskManager of slot 1 is SIGKILLed while the sums run: with
//    blocking results, the source and parse subtasks whose files it held
//    (subtask 1) run again on the spare TaskManager, and only those; with
//    persisted results nothing before the sums runs again.
// The output is exactly once every time.
TEST(ClusterTest, BatchStagesRerunOnlyWhatWasLost) {
  Cluster c("cluster-batch");
  const std::string small = c.dir().path("small.txt"), medium = c.dir().path("medium.txt"),
                    big = c.dir().path("big.txt");
  ASSERT_TRUE(examples::generate_running_sum_input(small, 20000, 100, 0, 3).ok());
  ASSERT_TRUE(examples::generate_running_sum_input(medium, 200000, 1000, 0, 5).ok());
  // The sums of 3 M lines sorted within 1 MB take a second or more: the
  // window for the SIGKILL.
  ASSERT_TRUE(examples::generate_running_sum_input(big, 3000000, 100000, 0, 4).ok());
  ASSERT_TRUE(c.start({{"tm-a", 1}, {"tm-b", 1}, {"tm-c", 1}})) << "the cluster did not come up\n" << c.jm_log();
  auto batch_args = [&](const std::string& out, const std::string& input) {
    return std::vector<std::string>{"--input", small, "--input", input, "--output", out, "-p", "2",
                                    "--runtime-mode", "batch", "--sink-parallelism", "2", "--sort-memory", "1mb"};
  };
  {
    SCOPED_TRACE("a failing sink subtask");
    auto args = batch_args(c.dir().path("out-sink"), medium);
    args.insert(args.end(), {"--fail-sink-subtask", "1", "--fail-sink-after", "1000"});
    nlohmann::json done, detail;
    ASSERT_TRUE(runs_to_the_end(c, args, &done, &detail));
    EXPECT_EQ(done["restarts"], 1);
    ASSERT_EQ(detail["vertices"].size(), 5u) << detail;
    expect_attempts(detail, [](const std::string& v, int s) { return v == "output-sink" && s == 1 ? 1 : 0; });
    expect_exactly_once({small, medium}, c.dir().path("out-sink"));
  }
  int spare = 0;
  std::set<std::string> killed;
  for (const std::string exchange : {"blocking", "persisted"}) {
    SCOPED_TRACE("--exchange " + exchange);
    const std::string out = c.dir().path("out-" + exchange);
    auto args = batch_args(out, big);
    const std::string chk = c.dir().path("chk");
    args.insert(args.end(), {"--exchange", exchange, "--checkpoint-dir", chk});
    auto job = c.client().submit("running-sum", args);
    ASSERT_TRUE(job.ok()) << job.status();
    // The TaskManager of the sums' subtask 1, once it runs.
    std::string victim;
    ASSERT_TRUE(eventually(
        [&] {
          auto d = c.client().job(*job);
          if (!d.ok() || !d->contains("vertices")) return false;
          for (const auto& s : subtasks_of(*d, "running-sum")) {
            if (s["subtask"] == 1 && s["state"] == "RUNNING") victim = s["taskmanager"];
          }
          return !victim.empty();
        },
        60s))
        << c.jm_log();
    c.taskmanager(victim)->kill9();
    killed.insert(victim);
    c.start_taskmanager("tm-spare-" + std::to_string(spare++), 1);  // the next round's spare
    ASSERT_TRUE(c.ok()) << "a TaskManager did not register\n" << c.jm_log();
    nlohmann::json done, detail;
    ASSERT_TRUE(finishes(c, *job, &done, &detail));
    EXPECT_GE(done["restarts"].get<int>(), 1);
    for (const std::string before : {"source-0", "source-1", "parse"}) {
      for (const auto& s : subtasks_of(detail, before)) {
        const int expected = exchange == "blocking" && s["subtask"] == 1 ? 1 : 0;
        EXPECT_EQ(s["attempt"], expected) << before << " " << s << "\n" << c.jm_log();
      }
    }
    for (const auto& s : subtasks_of(detail, "running-sum")) {
      if (s["subtask"] == 1) {
        EXPECT_EQ(s["attempt"], 1) << s;
      }
    }
    expect_exactly_once({small, big}, out);
  }
  // Each TaskManager still running removed the results it kept.
  for (const auto& tm : fs::directory_iterator(c.dir().path("tmp"))) {
    if (killed.count(tm.path().filename().string()) != 0) continue;
    for (const auto& entry : fs::recursive_directory_iterator(tm.path())) {
      EXPECT_TRUE(entry.is_directory()) << "left behind: " << entry.path();
    }
  }
}

// --failover task on a cluster of two TaskManagers (two slots each), the
// running sum at parallelism 4 with its sink behind a rebalance, so every
// exchange crosses processes; at-least-once.
// 1. Sink subtask 2 fails once: it restarts (attempt 1), and so do the
//    sources (they rewind to the checkpoint), while the parse and sum
//    subtasks and the other sinks never stop (attempt 0). Records in flight
//    to the failed sink are dropped and counted; nothing is lost.
// 2. The same under at-most-once: only the sink restarts (the sources do
//    not rewind); the records in flight to it are lost and counted, none
//    repeats.
// 3. A TaskManager is SIGKILLed: its channels are gone with it, so every
//    subtask restarts (attempt 1 or more) on a fresh set of channels, and
//    nothing is lost.
TEST(ClusterTest, TaskFailoverRestartsOnlyTheFailedSubtask) {
  Cluster c("cluster-task-failover");
  const std::string input = c.dir().path("in.txt");
  ASSERT_TRUE(examples::generate_running_sum_input(input, 200000, 1000, 0, 7).ok());
  ASSERT_TRUE(c.start({{"tm-a", 2}, {"tm-b", 2}})) << "the cluster did not come up\n" << c.jm_log();
  auto args = [&](const std::string& out) {
    return std::vector<std::string>{"--input", input, "--output", out, "-p", "4", "--sink-parallelism", "4",
                                    "--mode", "at-least-once", "--checkpoint-dir", c.dir().path("chk"),
                                    "--checkpoint-interval", "100ms", "--failover", "task", "--rate", "10000"};
  };
  {
    SCOPED_TRACE("a failing sink subtask");
    auto a = args(c.dir().path("out-sink"));
    a.insert(a.end(), {"--fail-sink-subtask", "2", "--fail-sink-after", "3000"});
    nlohmann::json done, detail;
    ASSERT_TRUE(runs_to_the_end(c, a, &done, &detail));
    EXPECT_EQ(done["restarts"], 1);
    // At least the record that failed.
    EXPECT_GE(done["dropped_records"].get<int64_t>(), 1);
    expect_attempts(detail, [](const std::string& v, int s) {
      return v.rfind("source-", 0) == 0 || (v == "output-sink" && s == 2) ? 1 : 0;
    });
    auto check = examples::check_running_sum({input}, c.dir().path("out-sink"));
    ASSERT_TRUE(check.ok()) << check.status();
    EXPECT_TRUE(check->nothing_lost);
  }
  {
    // At-most-once: the sources do not rewind, so only the sink restarts;
    // what was in flight to it is lost and counted, and nothing repeats.
    SCOPED_TRACE("at-most-once");
    auto a = args(c.dir().path("out-at-most-once"));
    std::replace(a.begin(), a.end(), std::string("at-least-once"), std::string("at-most-once"));
    a.insert(a.end(), {"--fail-sink-subtask", "2", "--fail-sink-after", "3000"});
    nlohmann::json done, detail;
    ASSERT_TRUE(runs_to_the_end(c, a, &done, &detail));
    EXPECT_EQ(done["restarts"], 1);
    EXPECT_GE(done["lost_records"].get<int64_t>(), 1);
    expect_attempts(detail, [](const std::string& v, int s) { return v == "output-sink" && s == 2 ? 1 : 0; });
    // Each (key, count) at most once: no sum was emitted twice.
    auto lines = read_published_lines(c.dir().path("out-at-most-once"), examples::kOutputPrefix);
    ASSERT_TRUE(lines.ok()) << lines.status();
    std::set<std::string> seen;
    for (const auto& l : *lines) EXPECT_TRUE(seen.insert(l).second) << "twice: " << l;
    EXPECT_FALSE(lines->empty());
  }
  {
    SCOPED_TRACE("a lost TaskManager");
    auto job = c.client().submit("running-sum", args(c.dir().path("out-kill")));
    ASSERT_TRUE(job.ok()) << job.status();
    ASSERT_TRUE(eventually([&] { return completed_checkpoints(c, *job) >= 3; }, 60s)) << c.jm_log();
    c.taskmanager("tm-b")->kill9();
    c.start_taskmanager("tm-c", 2);
    ASSERT_TRUE(c.ok()) << "a TaskManager did not register\n" << c.jm_log();
    nlohmann::json done, detail;
    ASSERT_TRUE(finishes(c, *job, &done, &detail));
    // Once, unless a neighbour's failure (its channel to the lost process
    // broke) restarted it alone before the loss was known.
    EXPECT_GE(done["restarts"].get<int>(), 1);
    for (const auto& v : detail["vertices"]) {
      for (const auto& s : v["subtasks"]) EXPECT_GE(s["attempt"].get<int>(), 1) << v["name"] << " " << s;
    }
    auto check = examples::check_running_sum({input}, c.dir().path("out-kill"));
    ASSERT_TRUE(check.ok()) << check.status();
    EXPECT_TRUE(check->nothing_lost);
  }
}

// Region failover: line-copy's subtasks are independent pipelines (one
// region each). Subtask 2 fails once; only its region restarts: its attempt
// becomes 1 while every other subtask stays in attempt 0 and keeps running,
// and the output is exactly-once. With --failover full every subtask
// restarts.
TEST(ClusterTest, RegionFailoverRestartsOnlyTheFailedRegion) {
  Cluster c("cluster-region");
  const std::string input = c.dir().path("in.txt");
  ASSERT_TRUE(examples::generate_running_sum_input(input, 60000, 100, 0, 5).ok());
  ASSERT_TRUE(c.start({{"tm-a", 2}, {"tm-b", 2}})) << "the cluster did not come up\n" << c.jm_log();
  for (const std::string failover : {"region", "full"}) {
    SCOPED_TRACE("--failover " + failover);
    const std::string out = c.dir().path("out-" + failover);
    // 4 subtasks at 2500 lines/s: about 6 s of input.
    auto job = c.client().submit("line-copy", {"--input", input, "--output", out, "-p", "4", "--checkpoint-dir",
                                               c.dir().path("chk"), "--checkpoint-interval", "100ms", "--rate",
                                               "2500", "--fail-subtask", "2", "--fail-after", "2000",
                                               "--failover", failover});
    ASSERT_TRUE(job.ok()) << job.status();
    nlohmann::json detail;
    ASSERT_TRUE(running_after_restarts(c, *job, 1, &detail)) << c.jm_log();
    ASSERT_EQ(detail["vertices"].size(), 1u) << detail;  // source -> number -> sink, chained
    for (const auto& s : detail["vertices"][0]["subtasks"]) {
      int expected = failover == "full" || s["subtask"] == 2 ? 1 : 0;
      EXPECT_EQ(s["attempt"], expected) << s;
    }
    auto done = c.client().wait(*job, 120000);
    ASSERT_TRUE(done.ok()) << done.status();
    ASSERT_EQ((*done)["status"], "FINISHED") << *done << "\n" << c.jm_log();
    EXPECT_EQ((*done)["restarts"], 1);
    std::vector<std::string> problems;
    auto exact = examples::check_line_copy(input, out, &problems);
    ASSERT_TRUE(exact.ok()) << exact.status();
    for (const auto& p : problems) ADD_FAILURE() << p;
    EXPECT_TRUE(*exact);
  }
}

// At-most-once with a TaskManager SIGKILLed: the subtasks it ran restart
// (attempt 1) from the latest checkpoint while the others keep attempt 0,
// and their sources continue after the lines they had read instead of going
// back to the checkpoint. What the restarted subtasks wrote after that
// checkpoint is discarded with them, so each of them misses one run of
// its split's lines (the lines read after the checkpoint), the subtasks
// that did not restart miss none, nothing is published twice, and the
// JobManager counts exactly the lines missing.
TEST(ClusterTest, AtMostOnceContinuesAfterAKilledTaskManagerWithoutRepeating) {
  Cluster c("cluster-at-most-once");
  const std::string input = c.dir().path("in.txt");
  constexpr int64_t kLines = 60000;
  ASSERT_TRUE(examples::generate_running_sum_input(input, kLines, 100, 0, 11).ok());
  ASSERT_TRUE(c.start({{"tm-a", 2}, {"tm-b", 2}})) << "the cluster did not come up\n" << c.jm_log();
  const std::string out = c.dir().path("out");
  // 4 subtasks at 2500 lines/s: about 6 s of input.
  auto job = c.client().submit("line-copy", {"--input", input, "--output", out, "-p", "4", "--checkpoint-dir",
                                             c.dir().path("chk"), "--mode", "at-most-once", "--rate", "2500"});
  ASSERT_TRUE(job.ok()) << job.status();
  // Every subtask placed and running, and some output flushed (64 KiB).
  std::set<int> on_b;
  ASSERT_TRUE(eventually(
      [&] {
        auto d = c.client().job(*job);
        if (!d.ok() || !d->contains("vertices")) return false;
        on_b.clear();
        for (const auto& s : (*d)["vertices"][0]["subtasks"]) {
          if (s["state"] != "RUNNING") return false;
          if (s["taskmanager"] == "tm-b") on_b.insert(s["subtask"].get<int>());
        }
        std::error_code ec;
        uintmax_t bytes = 0;
        for (const auto& e : fs::directory_iterator(out, ec)) {
          if (e.path().filename().string().rfind(".part-", 0) == 0) bytes += fs::file_size(e.path(), ec);
        }
        return bytes >= 64 * 1024;
      },
      60s))
      << c.jm_log();
  ASSERT_FALSE(on_b.empty());
  c.taskmanager("tm-b")->kill9();
  c.start_taskmanager("tm-c", 2);
  ASSERT_TRUE(c.ok()) << "a TaskManager did not register\n" << c.jm_log();
  nlohmann::json detail;
  ASSERT_TRUE(running_after_restarts(c, *job, 1, &detail)) << c.jm_log();
  for (const auto& s : detail["vertices"][0]["subtasks"]) {
    EXPECT_EQ(s["attempt"], on_b.count(s["subtask"].get<int>()) ? 1 : 0) << s;
  }
  auto done = c.client().wait(*job, 120000);
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_EQ((*done)["status"], "FINISHED") << *done << "\n" << c.jm_log();
  EXPECT_EQ((*done)["restarts"], 1);
  ASSERT_TRUE(done->contains("lost_records")) << *done;
  const int64_t lost = (*done)["lost_records"].get<int64_t>();

  // Published line numbers by subtask (files part-<subtask>-<seq>).
  std::map<int, std::vector<int64_t>> by_subtask;
  std::set<int64_t> published;
  for (const auto& e : fs::directory_iterator(out)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("part-", 0) != 0) continue;
    const int subtask = std::atoi(name.c_str() + 5);
    std::ifstream in(e.path());
    for (std::string line; std::getline(in, line);) {
      const int64_t n = std::atoll(line.c_str());
      ASSERT_TRUE(published.insert(n).second) << "line " << n << " published twice";
      by_subtask[subtask].push_back(n);
    }
  }
  ASSERT_EQ(by_subtask.size(), 4u);
  // Each subtask's lines in runs of consecutive numbers: one for a subtask
  // that did not restart, at most two for one that did.
  std::map<int64_t, std::pair<int64_t, int>> runs;  // first line -> (lines, subtask)
  for (auto& [subtask, lines] : by_subtask) {
    std::sort(lines.begin(), lines.end());
    int pieces = 0;
    std::pair<int64_t, int>* run = nullptr;
    for (size_t i = 0; i < lines.size(); ++i) {
      if (i == 0 || lines[i] != lines[i - 1] + 1) {
        ++pieces;
        run = &runs[lines[i]];
        *run = {0, subtask};
      }
      ++run->first;
    }
    EXPECT_LE(pieces, on_b.count(subtask) != 0 ? 2 : 1) << "subtask " << subtask << " has gaps inside its output";
  }
  // Line numbers start at 1; each gap before a run is what a restarted
  // subtask read after the checkpoint it restored, and the run after the
  // gap is where its source continued.
  int64_t next = 1, missing = 0;
  for (const auto& [first, run] : runs) {
    if (first > next) {
      EXPECT_EQ(on_b.count(run.second), 1u) << "lines " << next << ".." << first - 1 << " are missing before subtask "
                                            << run.second << ", which never restarted";
      missing += first - next;
    }
    next = first + run.first;
  }
  EXPECT_EQ(next, kLines + 1) << "the end of the input is missing";
  EXPECT_GT(missing, 0) << "the restarted sources went back";
  EXPECT_EQ(missing, lost) << "the JobManager counted " << lost << " lost lines";
}

// The job's last restore as the REST API (`restored` of its checkpoints)
// and the JobManager's /metrics (Flink's lastCheckpointRestoreTimestamp)
// show it (-1: there was none).
struct Restore {
  int64_t id = -1, time_ms = -1, metric_ms = -2;
  std::string path;
};
Restore last_restore(Cluster& c, const std::string& job) {
  Restore r;
  auto cps = c.client().checkpoints(job);
  EXPECT_TRUE(cps.ok()) << cps.status();
  if (cps.ok() && (*cps)["restored"].is_object()) {
    r.id = (*cps)["restored"]["id"];
    r.time_ms = (*cps)["restored"]["time_ms"];
    r.path = (*cps)["restored"]["path"];
  }
  auto page = testing::scrape(c.rest(), c.secret());
  EXPECT_TRUE(page && page->status == 200);
  if (page && page->status == 200) {
    const testing::Total t = testing::total(testing::parse_prometheus(page->body),
                                            "weir_jobmanager_job_lastCheckpointRestoreTimestamp", {{"job_id", job}});
    if (t.samples == 1) r.metric_ms = static_cast<int64_t>(t.sum);
  }
  return r;
}

// The JobManager is SIGKILLed while a job runs: the TaskManagers cancel
// their tasks and register with the restarted JobManager, and the job
// resumes from the shared checkpoint directory with --restore latest. The
// first job never restored; the resumed one says from which checkpoint.
TEST(ClusterTest, JobResumesAfterAJobManagerRestart) {
  Cluster c("cluster-jm-restart");
  const std::string input = c.dir().path("in.txt");
  ASSERT_TRUE(examples::generate_running_sum_input(input, 60000, 500, 0, 13).ok());
  ASSERT_TRUE(c.start({{"tm-a", 2}, {"tm-b", 2}})) << "the cluster did not come up\n" << c.jm_log();
  std::vector<std::string> args = {"--input", input, "--output", c.dir().path("out"), "-p", "4",
                                   "--checkpoint-dir", c.dir().path("chk"), "--checkpoint-interval", "100ms",
                                   "--rate", "2500"};
  auto job = c.client().submit("running-sum", args);
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE(eventually([&] { return completed_checkpoints(c, *job) >= 3; }, 60s)) << c.jm_log();
  const Restore none = last_restore(c, *job);
  EXPECT_EQ(none.id, -1);
  EXPECT_EQ(none.metric_ms, -1);
  c.restart_jobmanager();
  ASSERT_TRUE(c.ok()) << c.jm_log();
  // The TaskManagers register again within seconds, not after gRPC's
  // reconnect backoff.
  ASSERT_TRUE(eventually(
      [&] {
        auto o = c.client().overview();
        return o.ok() && (*o)["taskmanagers"].size() == 2;
      },
      5s))
      << c.jm_log();
  args.push_back("--restore");
  args.push_back("latest");
  const int64_t submitted_ms = SystemClock::instance()->wall_ms();
  auto resumed = c.client().submit("running-sum", args);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  Restore restore;
  EXPECT_TRUE(eventually(
      [&] {
        restore = last_restore(c, *resumed);
        return restore.id >= 0;
      },
      20s));
  EXPECT_GE(restore.id, 3);
  EXPECT_NE(restore.path.find(c.dir().path("chk")), std::string::npos) << restore.path;
  EXPECT_NE(restore.path.find("chk-" + std::to_string(restore.id)), std::string::npos) << restore.path;
  EXPECT_GE(restore.time_ms, submitted_ms);
  EXPECT_LE(restore.time_ms, SystemClock::instance()->wall_ms());
  EXPECT_EQ(restore.metric_ms, restore.time_ms);
  auto done = c.client().wait(*resumed, 120000);
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_EQ((*done)["status"], "FINISHED") << *done << "\n" << c.jm_log();
  expect_exactly_once({input}, c.dir().path("out"));
  // Kept with the ended job.
  auto ended = c.client().checkpoints(*resumed);
  ASSERT_TRUE(ended.ok()) << ended.status();
  EXPECT_EQ((*ended)["restored"]["id"], restore.id) << *ended;
}

// Checkpoints on S3-compatible storage (s3rver) instead of a shared
// directory: a TaskManager is SIGKILLed, the job restores from the newest
// checkpoint in S3 (the REST API says so) and the output is exactly-once.
TEST(ClusterTest, KilledTaskManagerRestoresFromCheckpointsInS3) {
  Cluster c("cluster-s3");
  testing::S3Server s3(c.dir(), "weir");
  ASSERT_TRUE(s3.start()) << "s3rver did not start (scripts/install-deps.sh installs it)";
  s3.set_env();  // the JobManager and TaskManagers inherit it
  const std::string input = c.dir().path("in.txt");
  ASSERT_TRUE(examples::generate_running_sum_input(input, 60000, 500, 0, 21).ok());
  ASSERT_TRUE(c.start({{"tm-a", 2}, {"tm-b", 2}})) << "the cluster did not come up\n" << c.jm_log();
  auto job = c.client().submit("running-sum", {"--input", input, "--output", c.dir().path("out"), "-p", "4",
                                               "--checkpoint-dir", s3.url("checkpoints"), "--checkpoint-interval",
                                               "200ms", "--rate", "2500"});
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE(eventually([&] { return completed_checkpoints(c, *job) >= 3; }, 60s)) << c.jm_log();
  // A savepoint into S3 too, committed by its _metadata.
  auto savepoint = c.client().savepoint(*job, s3.url("savepoints"), /*stop=*/false, /*drain=*/false);
  ASSERT_TRUE(savepoint.ok()) << savepoint.status();
  const std::string savepoint_path = (*savepoint)["path"];
  EXPECT_EQ(savepoint_path.rfind(s3.url("savepoints/savepoint-"), 0), 0u) << *savepoint;
  s3::S3Client client(s3.settings());
  auto metadata = client.get(*s3::parse_s3_url(savepoint_path + "/_metadata"));
  EXPECT_TRUE(metadata.ok()) << metadata.status();
  c.taskmanager("tm-b")->kill9();
  c.start_taskmanager("tm-c", 2);
  ASSERT_TRUE(c.ok()) << "a TaskManager did not register\n" << c.jm_log();
  auto done = c.client().wait(*job, 120000);
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_EQ((*done)["status"], "FINISHED") << *done << "\n" << c.jm_log();
  EXPECT_GE((*done)["restarts"].get<int>(), 1);
  auto cps = c.client().checkpoints(*job);
  ASSERT_TRUE(cps.ok()) << cps.status();
  ASSERT_TRUE((*cps)["restored"].is_object()) << *cps;
  // The newest completed at the loss: a checkpoint, or the savepoint.
  const std::string restored = (*cps)["restored"]["path"];
  EXPECT_TRUE(restored.rfind(s3.url("checkpoints/" + *job + "/chk-"), 0) == 0 || restored == savepoint_path)
      << restored;
  expect_exactly_once({input}, c.dir().path("out"));
}

// The JobManager and two TaskManagers on separate hosts (network
// namespaces). One TaskManager's cable is pulled: its connections stay open
// but silent, so only heartbeats reveal it; its tasks are failed, it drops
// them when the JobManager's heartbeats stop, and registers again once the
// cable is back; the job finishes exactly-once.
TEST(ClusterTest, TaskManagersOnSeparateHostsSurviveAPulledCable) {
  Hosts hosts({"jm", "tm1", "tm2"});
  if (!hosts.ok()) GTEST_SKIP() << hosts.error();
  Cluster c("cluster-netns", "1s");
  const std::string input = c.dir().path("in.txt");
  ASSERT_TRUE(examples::generate_running_sum_input(input, 60000, 500, 0, 17).ok());
  c.start_jobmanager(hosts.ip("jm") + ":6123", "8081", hosts.launcher("jm"));
  ASSERT_TRUE(c.ok()) << c.jm_log();
  ASSERT_EQ(c.address(), hosts.ip("jm") + ":6123");
  c.start_taskmanager("tm1", 2, hosts.ip("tm1"), hosts.launcher("tm1"));
  c.start_taskmanager("tm2", 2, hosts.ip("tm2"), hosts.launcher("tm2"));
  ASSERT_TRUE(c.ok()) << "a TaskManager did not register\n" << c.jm_log();
  auto job = c.client().submit("running-sum", {"--input", input, "--output", c.dir().path("out"), "-p", "4",
                                               "--checkpoint-dir", c.dir().path("chk"), "--checkpoint-interval",
                                               "100ms", "--rate", "2500"});
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_TRUE(eventually([&] { return completed_checkpoints(c, *job) >= 3; }, 60s)) << c.jm_log();
  // Channels between the hosts carry the job: both TaskManagers run subtasks.
  auto detail = c.client().job(*job);
  ASSERT_TRUE(detail.ok());
  std::set<std::string> used;
  for (const auto& v : (*detail)["vertices"]) {
    for (const auto& s : v["subtasks"]) used.insert(s["taskmanager"].get<std::string>());
  }
  EXPECT_EQ(used, (std::set<std::string>{"tm1", "tm2"}));
  ASSERT_TRUE(hosts.set_cable("tm2", false));
  EXPECT_TRUE(eventually([&] { return c.jm_log().find("TaskManager tm2 (" + hosts.ip("tm2")) != std::string::npos &&
                                      c.jm_log().find("lost: no heartbeat") != std::string::npos; },
                         20s))
      << c.jm_log();
  // tm2 notices the silence too and drops its tasks.
  EXPECT_TRUE(eventually([&] { return slurp(c.dir().path("tm2.err")).find("no heartbeat from the JobManager") !=
                                      std::string::npos; },
                         20s));
  ASSERT_TRUE(hosts.set_cable("tm2", true));
  auto done = c.client().wait(*job, 120000);
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_EQ((*done)["status"], "FINISHED") << *done << "\n" << c.jm_log();
  EXPECT_GE((*done)["restarts"].get<int>(), 1);
  expect_exactly_once({input}, c.dir().path("out"));
}

// The README's flow: submit, stop with a savepoint, resume from it at
// another parallelism; the output of both runs together is exactly-once.
TEST(ClusterTest, StopWithSavepointAndResumeAtAnotherParallelism) {
  Cluster c("cluster-savepoint");
  const std::string input = c.dir().path("in.txt");
  ASSERT_TRUE(examples::generate_running_sum_input(input, 100000, 300, 0, 11).ok());
  ASSERT_TRUE(c.start({{"tm-a", 2}, {"tm-b", 2}})) << "the cluster did not come up\n" << c.jm_log();
  auto args = [&](const std::string& p) {
    return std::vector<std::string>{"--input", input, "--output", c.dir().path("out"), "-p", p,
                                    "--checkpoint-dir", c.dir().path("chk"), "--checkpoint-interval", "100ms",
                                    "--rate", "4000"};
  };
  auto first = c.client().submit("running-sum", args("4"));
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(eventually([&] { return completed_checkpoints(c, *first) >= 2; }, 60s)) << c.jm_log();
  // The REST API shows the job graph with every subtask's attempt, state and
  // TaskManager, and per-subtask checkpoint timings.
  auto detail = c.client().job(*first);
  ASSERT_TRUE(detail.ok()) << detail.status();
  EXPECT_EQ((*detail)["status"], "RUNNING");
  ASSERT_GE((*detail)["vertices"].size(), 2u) << *detail;
  size_t subtasks = 0;
  for (const auto& v : (*detail)["vertices"]) {
    EXPECT_EQ(v["parallelism"], 4) << v;
    EXPECT_EQ(v["state"], "RUNNING") << v;
    ASSERT_EQ(v["subtasks"].size(), 4u) << v;
    for (const auto& s : v["subtasks"]) {
      EXPECT_EQ(s["attempt"], 0) << s;
      EXPECT_EQ(s["state"], "RUNNING") << s;
      EXPECT_TRUE(s["taskmanager"] == "tm-a" || s["taskmanager"] == "tm-b") << s;
      ++subtasks;
    }
  }
  auto cps = c.client().checkpoints(*first);
  ASSERT_TRUE(cps.ok()) << cps.status();
  ASSERT_GE((*cps)["completed"].size(), 2u);
  EXPECT_EQ((*cps)["completed"][0]["subtasks"].size(), subtasks) << (*cps)["completed"][0];
  // A relative directory is the client's: sent as an absolute path, so the
  // savepoint's _metadata and state files land together under it. Sent as
  // it is to the REST API, it is refused.
  Child relative({"/bin/bash", "-c",
                  "cd '" + c.dir().path("") + "' && exec '" + testing::weir_bin() + "' savepoint " + *first +
                      " --dir sp-relative --jobmanager " + c.rest() + " --secret-file '" + c.secret_file() + "'"},
                 c.dir().path("relative"));
  ASSERT_EQ(relative.wait(), 0) << relative.err();
  std::string relative_path = relative.out().substr(relative.out().find("completed: ") + 11);
  relative_path = relative_path.substr(0, relative_path.find('\n'));
  EXPECT_EQ(relative_path.rfind(fs::path(c.dir().path("sp-relative")).lexically_normal().string(), 0), 0u)
      << relative.out();
  EXPECT_TRUE(fs::exists(fs::path(relative_path) / "_metadata")) << relative.out();
  auto refused = c.client().savepoint(*first, "sp-relative", /*stop=*/false, /*drain=*/false);
  EXPECT_TRUE(absl::IsInvalidArgument(refused.status())) << refused.status();
  EXPECT_NE(refused.status().message().find("savepoint directory 'sp-relative' is relative"), std::string_view::npos)
      << refused.status();
  auto r = testing::run_weir({"stop", *first, "--savepoint", c.dir().path("sp"), "--jobmanager", c.rest(),
                              "--secret-file", c.secret_file()},
                             c.dir().path("stop"));
  ASSERT_EQ(r.code, 0) << r.err;
  std::string path = r.out.substr(r.out.find("completed: ") + 11);
  path = path.substr(0, path.find('\n'));
  ASSERT_TRUE(fs::exists(fs::path(path) / "_metadata")) << r.out;
  auto stopped = c.client().wait(*first, 60000);
  ASSERT_TRUE(stopped.ok());
  EXPECT_EQ((*stopped)["status"], "FINISHED");
  EXPECT_EQ((*stopped)["stopped_with_savepoint"], path);

  auto resumed_args = args("3");
  resumed_args.push_back("--restore");
  resumed_args.push_back(path);
  auto run = testing::run_weir({"run", "--jobmanager", c.rest(), "--secret-file", c.secret_file(), "running-sum"},
                               c.dir().path("resume-bad"));
  EXPECT_NE(run.code, 0);  // running-sum without its arguments is refused
  // The embedded command with --jobmanager submits to the cluster.
  std::vector<std::string> cmd = {"example", "running-sum"};
  cmd.insert(cmd.end(), resumed_args.begin(), resumed_args.end());
  for (const std::string& a : {std::string("--jobmanager"), c.rest(), std::string("--secret-file"), c.secret_file()}) {
    cmd.push_back(a);
  }
  auto second = testing::run_weir(cmd, c.dir().path("resume"));
  ASSERT_EQ(second.code, 0) << second.err << second.out;
  EXPECT_NE(second.out.find("FINISHED"), std::string::npos) << second.out;
  expect_exactly_once({input}, c.dir().path("out"));
}

}  // namespace
}  // namespace weir
