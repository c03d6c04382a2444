// JobManager high availability with real processes: two `weir jobmanager
// --ha zookeeper` on a real ZooKeeper, TaskManagers that find the leader
// through it, and a running-sum job whose output must stay exactly-once
// while the leader is killed and frozen. Also the fencing of a deposed
// leader's writes in the HA store.
#include <gtest/gtest.h>
#include <httplib.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zookeeper/zookeeper.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cluster/client.h"
#include "cluster/job_library.h"
#include "cluster/ha_store.h"
#include "cluster/jobmanager.h"
#include "cluster/taskmanager.h"
#include "cli/jobs.h"
#include "examples/commands.h"
#include "cluster/leader_election.h"
#include "examples/running_sum/running_sum.h"
#include "tests/cluster.h"
#include "tests/ha_cluster.h"
#include "tests/cluster_checks.h"
#include "tests/process.h"
#include "tests/s3_server.h"
#include "tests/tcp_proxy.h"
#include "tests/zk_server.h"

namespace weir::testing {
namespace {

using namespace std::chrono_literals;

// A job runs on while its leader is SIGKILLed, then frozen past its
// ZooKeeper session (and thawed: it steps down), then killed again: each
// time the other JobManager takes over within seconds and resumes the job
// (same id) from its newest committed checkpoint, the TaskManagers
// register with it, and the committed output is exactly-once.
TEST(HaClusterTest, JobSurvivesThreeLeaderChangesExactlyOnce) {
  HaCluster c("ha-three-changes");
  ASSERT_TRUE(c.start_zookeeper()) << "ZooKeeper did not start (scripts/install-deps.sh installs it)\n"
                                   << c.zookeeper().log();
  ASSERT_TRUE(c.start_jobmanager("jm-a")) << c.log("jm-a");
  ASSERT_EQ(c.wait_for_leader(), "jm-a") << c.logs();
  ASSERT_TRUE(c.start_jobmanager("jm-b")) << c.log("jm-b");
  ASSERT_TRUE(c.start_taskmanager("tm-1", 2)) << c.logs();
  ASSERT_TRUE(c.start_taskmanager("tm-2", 2)) << c.logs();

  const std::string input = c.dir().path("in.txt");
  ASSERT_TRUE(examples::generate_running_sum_input(input, 80000, 500, 0, 29).ok());
  auto id = c.client().submit("running-sum", {"--input", input, "--output", c.dir().path("out"), "-p", "4",
                                              "--checkpoint-dir", c.dir().path("chk"), "--checkpoint-interval",
                                              "200ms", "--retained-checkpoints", "3", "--rate", "500"});
  ASSERT_TRUE(id.ok()) << id.status();

  std::string leader = "jm-a";
  int64_t last_restored = -1;
  for (int change = 0; change < 3; ++change) {
    SCOPED_TRACE("leader change " + std::to_string(change + 1) + " from " + leader);
    // A few checkpoints under this leader first.
    const int64_t before = newest_checkpoint(c.client(), *id);
    ASSERT_TRUE(eventually([&] { return newest_checkpoint(c.client(), *id) >= before + 3; }, 60s)) << c.logs();
    const std::string standby = leader == "jm-a" ? "jm-b" : "jm-a";
    const int64_t committed = newest_checkpoint(c.client(), *id);
    if (change == 1) {
      // Frozen: its session expires, the standby leads; thawed, it steps
      // down and commits nothing.
      const size_t frozen_at = c.log(leader).size();
      c.jobmanager(leader)->signal(SIGSTOP);
      ASSERT_EQ(c.wait_for_leader(leader), standby) << c.logs();
      c.jobmanager(leader)->signal(SIGCONT);
      ASSERT_TRUE(eventually(
          [&] { return c.log(leader).find("leadership of epoch") != std::string::npos; }, 20s))
          << c.log(leader);
      EXPECT_TRUE(c.jobmanager(leader)->running()) << "a deposed leader stands by again";
      // Whatever it was doing when frozen, it completed no checkpoint after.
      const std::string thawed = c.log(leader).substr(frozen_at);
      EXPECT_EQ(thawed.find("completed in"), std::string::npos) << thawed;
    } else {
      c.jobmanager(leader)->kill9();
      c.jobmanager(leader)->wait();
      ASSERT_EQ(c.wait_for_leader(leader), standby) << c.logs();
      ASSERT_TRUE(c.start_jobmanager(leader)) << c.log(leader);  // the next standby
    }
    leader = standby;
    // The same job, resumed from a checkpoint newer than the last restore.
    int64_t restored = -1;
    ASSERT_TRUE(eventually(
        [&] {
          restored = restored_id(c.client(), *id);
          return restored > last_restored;
        },
        30s))
        << c.logs();
    // Nothing committed is lost, and the job goes on checkpointing.
    EXPECT_GE(restored, committed);
    last_restored = restored;
    EXPECT_TRUE(eventually([&] { return c.taskmanagers() == 2; }, 20s)) << c.logs();
  }
  auto done = c.client().wait(*id, 180000);
  ASSERT_TRUE(done.ok()) << done.status() << "\n" << c.logs();
  ASSERT_EQ((*done)["status"], "FINISHED") << *done << "\n" << c.logs();
  expect_exactly_once({input}, c.dir().path("out"));
  // Ended for good: the leader forgot it (the record goes once its node in
  // ZooKeeper went), so no later leader runs it again.
  EXPECT_TRUE(eventually([&] { return !std::filesystem::exists(c.dir().path("ha/jobs/" + *id)); }, 10s));
  // Each leader took over the checkpoints the one before retained and
  // deleted them in turn: three are left, not three per leader.
  std::vector<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(c.dir().path("chk/" + *id))) {
    if (e.path().filename().string().rfind("chk-", 0) == 0) left.push_back(e.path().filename().string());
  }
  std::sort(left.begin(), left.end());
  EXPECT_LE(left.size(), 3u) << ::testing::PrintToString(left);
}

// What clients see of high availability. A standby's REST port redirects
// to the leader (a client given only the standby follows it); a client
// that reaches no JobManager names every address it tried. A job that
// finished stays listed with its result and checkpoint counts after two
// leader changes (the job result store), and a job running through them
// carries each failover in its history, its restart count and its
// checkpoint count from leader to leader.
TEST(HaClusterTest, StandbysRedirectAndEndedJobsOutliveLeaderChanges) {
  HaCluster c("ha-clients");
  ASSERT_TRUE(c.start_zookeeper()) << c.zookeeper().log();
  ASSERT_TRUE(c.start_jobmanager("jm-a")) << c.log("jm-a");
  ASSERT_EQ(c.wait_for_leader(), "jm-a") << c.logs();
  ASSERT_TRUE(c.start_jobmanager("jm-b")) << c.log("jm-b");
  ASSERT_TRUE(c.start_taskmanager("tm-1", 4)) << c.logs();
  const std::string secret = [&] {
    std::string s = slurp(c.dir().path("secret"));
    return s.substr(0, s.find('\n'));
  }();

  // The standby answers with a redirect to the leader's REST API.
  const std::string leader_rest = "127.0.0.1:" + std::to_string(c.rest_port("jm-a"));
  const std::string standby_rest = "127.0.0.1:" + std::to_string(c.rest_port("jm-b"));
  int status = 0;
  std::string location, body;
  ASSERT_TRUE(eventually(
      [&] {
        httplib::Client raw("127.0.0.1", c.rest_port("jm-b"));
        auto r = raw.Get("/v1/jobs?x=1");
        if (!r) return false;
        status = r->status;
        location = r->get_header_value("Location");
        body = r->body;
        return status == 307;
      },
      20s))
      << status << " " << body << "\n" << c.log("jm-b");
  EXPECT_EQ(location, "http://" + leader_rest + "/v1/jobs?x=1");
  cluster::ClusterClient via_standby(standby_rest, secret);
  auto overview = via_standby.overview();
  ASSERT_TRUE(overview.ok()) << overview.status();
  EXPECT_EQ((*overview)["taskmanagers"].size(), 1u) << *overview;
  // Nobody home: the error names each address tried.
  const std::string nobody1 = "127.0.0.1:" + std::to_string(free_loopback_port());
  const std::string nobody2 = "127.0.0.1:" + std::to_string(free_loopback_port());
  auto none = cluster::ClusterClient(nobody1 + "," + nobody2, secret).overview();
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find(nobody1), std::string::npos) << none.status();
  EXPECT_NE(none.status().message().find(nobody2), std::string::npos) << none.status();

  // One job that finishes now, one that runs through the leader changes.
  const std::string small = c.dir().path("small.txt"), big = c.dir().path("big.txt");
  ASSERT_TRUE(examples::generate_running_sum_input(small, 2000, 50, 0, 7).ok());
  ASSERT_TRUE(examples::generate_running_sum_input(big, 200000, 500, 0, 8).ok());
  auto finished = c.client().submit("running-sum", {"--input", small, "--output", c.dir().path("out-small"), "-p",
                                                    "2", "--checkpoint-dir", c.dir().path("chk")});
  ASSERT_TRUE(finished.ok()) << finished.status();
  auto done = c.client().wait(*finished, 60000);
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_EQ((*done)["status"], "FINISHED") << *done << "\n" << c.logs();
  const int64_t checkpoints = (*done)["completed_checkpoints"].get<int64_t>();
  EXPECT_GE(checkpoints, 1) << *done;  // the final one at least
  auto finished_detail = c.client().job(*finished);
  ASSERT_TRUE(finished_detail.ok()) << finished_detail.status();
  ASSERT_EQ((*finished_detail)["vertices"].size(), 2u) << *finished_detail;
  auto running = c.client().submit("running-sum", {"--input", big, "--output", c.dir().path("out-big"), "-p", "2",
                                                   "--checkpoint-dir", c.dir().path("chk"), "--checkpoint-interval",
                                                   "200ms", "--rate", "500"});
  ASSERT_TRUE(running.ok()) << running.status();
  ASSERT_TRUE(eventually([&] { return newest_checkpoint(c.client(), *running) >= 1; }, 30s)) << c.logs();

  std::string leader = "jm-a";
  for (int change = 1; change <= 2; ++change) {
    SCOPED_TRACE("leader change " + std::to_string(change));
    const std::string standby = leader == "jm-a" ? "jm-b" : "jm-a";
    // Checkpoints under this leader (each carries the job's history).
    const int64_t before = newest_checkpoint(c.client(), *running);
    ASSERT_TRUE(eventually([&] { return newest_checkpoint(c.client(), *running) >= before + 2; }, 30s)) << c.logs();
    auto counted = c.client().job(*running);
    ASSERT_TRUE(counted.ok()) << counted.status();
    const int64_t completed_before = (*counted)["completed_checkpoints"].get<int64_t>();
    c.jobmanager(leader)->kill9();
    c.jobmanager(leader)->wait();
    ASSERT_EQ(c.wait_for_leader(leader), standby) << c.logs();
    ASSERT_TRUE(c.start_jobmanager(leader)) << c.log(leader);
    leader = standby;
    // The finished job, still listed with its result.
    auto listed = c.client().list();
    ASSERT_TRUE(listed.ok()) << listed.status();
    bool found = false;
    for (const auto& j : (*listed)["jobs"]) {
      if (j["job_id"] != *finished) continue;
      found = true;
      EXPECT_EQ(j["status"], "FINISHED") << j;
      EXPECT_EQ(j["completed_checkpoints"], checkpoints) << j;
    }
    EXPECT_TRUE(found) << *listed;
    auto detail = c.client().job(*finished);
    ASSERT_TRUE(detail.ok()) << detail.status();
    EXPECT_EQ((*detail)["status"], "FINISHED");
    EXPECT_EQ((*detail)["vertices"], (*finished_detail)["vertices"]) << *detail;
    EXPECT_EQ((*detail)["duration_ms"], (*finished_detail)["duration_ms"]) << *detail;
    auto cps = c.client().checkpoints(*finished);
    ASSERT_TRUE(cps.ok()) << cps.status();
    EXPECT_EQ((*cps)["counts"]["completed"], checkpoints) << *cps;
    // The running job: resumed, each failover in its history.
    nlohmann::json job;
    ASSERT_TRUE(eventually(
        [&] {
          auto d = c.client().job(*running);
          if (!d.ok()) return false;
          job = *d;
          return job["status"] == "RUNNING" && job["restarts"].get<int>() >= change;
        },
        30s))
        << job << "\n" << c.logs();
    // Every failover so far, the earlier ones carried over from the leader
    // before, and the checkpoints counted across leaders.
    int failovers = 0;
    for (const auto& f : job["failures"]) {
      if (f["scope"] != "JobManager") continue;
      ++failovers;
      EXPECT_NE(f["cause"].get<std::string>().find("resumed it from checkpoint"), std::string::npos) << f;
    }
    EXPECT_EQ(failovers, change) << job;
    EXPECT_EQ(job["restarts"].get<int>(), change) << job;
    EXPECT_GE(job["completed_checkpoints"].get<int64_t>(), completed_before) << job;
  }
  auto canceled = c.client().cancel(*running);
  ASSERT_TRUE(canceled.ok()) << canceled.status();
}

// The leader is cut off from ZooKeeper (through a proxy) while it still
// reaches the TaskManagers: it steps down at once and stops its job, the
// standby leads once the old session expired and resumes the job; the cut
// off JobManager commits nothing and, reconnected, stands by again.
TEST(HaClusterTest, LeaderCutOffFromZooKeeperStepsDown) {
  HaCluster c("ha-partition");
  ASSERT_TRUE(c.start_zookeeper()) << c.zookeeper().log();
  TcpProxy link(c.zookeeper().port());
  ASSERT_TRUE(c.start_jobmanager("jm-a", "127.0.0.1:" + std::to_string(link.port()))) << c.log("jm-a");
  ASSERT_EQ(c.wait_for_leader(), "jm-a") << c.logs();
  ASSERT_TRUE(c.start_jobmanager("jm-b")) << c.log("jm-b");
  ASSERT_TRUE(c.start_taskmanager("tm-1", 2)) << c.logs();
  ASSERT_TRUE(c.start_taskmanager("tm-2", 2)) << c.logs();
  const std::string input = c.dir().path("in.txt");
  ASSERT_TRUE(examples::generate_running_sum_input(input, 30000, 300, 0, 37).ok());
  auto id = c.client().submit("running-sum", {"--input", input, "--output", c.dir().path("out"), "-p", "4",
                                              "--checkpoint-dir", c.dir().path("chk"), "--checkpoint-interval",
                                              "200ms", "--rate", "500"});
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(eventually([&] { return newest_checkpoint(c.client(), *id) >= 3; }, 60s)) << c.logs();
  const int64_t committed = newest_checkpoint(c.client(), *id);

  const size_t cut_at = c.log("jm-a").size();
  link.cut();
  ASSERT_TRUE(eventually([&] { return c.log("jm-a").find("leadership of epoch", cut_at) != std::string::npos; }, 10s))
      << c.log("jm-a");
  ASSERT_EQ(c.wait_for_leader("jm-a"), "jm-b") << c.logs();
  int64_t restored = -1;
  ASSERT_TRUE(eventually(
      [&] {
        restored = restored_id(c.client(), *id);
        return restored >= 0;
      },
      30s))
      << c.logs();
  EXPECT_GE(restored, committed);
  const std::string while_cut = c.log("jm-a").substr(cut_at);
  EXPECT_EQ(while_cut.find("completed in"), std::string::npos) << while_cut;

  link.heal();
  ASSERT_TRUE(eventually([&] { return c.log("jm-a").find("joining the election again", cut_at) != std::string::npos; },
                         20s))
      << c.log("jm-a");
  EXPECT_TRUE(c.jobmanager("jm-a")->running());
  auto done = c.client().wait(*id, 120000);
  ASSERT_TRUE(done.ok()) << done.status() << "\n" << c.logs();
  ASSERT_EQ((*done)["status"], "FINISHED") << *done << "\n" << c.logs();
  expect_exactly_once({input}, c.dir().path("out"));
  EXPECT_EQ(c.leader(), "jm-b");
}

// One job's record in HA storage is overwritten with garbage: the next
// leader still leads, serves REST, takes the TaskManagers and resumes the
// other job exactly-once; the broken job is listed FAILED with the cause,
// its record kept until `cancel` forgets it.
TEST(HaClusterTest, ACorruptJobRecordFailsThatJobAloneAndTheOthersResume) {
  HaCluster c("ha-corrupt-record");
  ASSERT_TRUE(c.start_zookeeper()) << c.zookeeper().log();
  ASSERT_TRUE(c.start_jobmanager("jm-a")) << c.log("jm-a");
  ASSERT_EQ(c.wait_for_leader(), "jm-a") << c.logs();
  ASSERT_TRUE(c.start_jobmanager("jm-b")) << c.log("jm-b");
  ASSERT_TRUE(c.start_taskmanager("tm-1", 4)) << c.logs();
  const std::string input = c.dir().path("in.txt");
  ASSERT_TRUE(examples::generate_running_sum_input(input, 20000, 300, 0, 41).ok());
  std::vector<std::string> ids;
  for (const std::string out : {"out-1", "out-2"}) {
    auto id = c.client().submit("running-sum", {"--input", input, "--output", c.dir().path(out), "-p", "2",
                                                "--checkpoint-dir", c.dir().path("chk"), "--checkpoint-interval",
                                                "200ms", "--rate", "1000"});
    ASSERT_TRUE(id.ok()) << id.status();
    ids.push_back(*id);
  }
  ASSERT_TRUE(eventually([&] { return newest_checkpoint(c.client(), ids[1]) >= 2; }, 60s)) << c.logs();
  const std::string record = c.dir().path("ha/jobs/" + ids[0]);
  ASSERT_TRUE(std::filesystem::exists(record));
  std::ofstream(record, std::ios::trunc) << "not a job record";

  c.jobmanager("jm-a")->kill9();
  c.jobmanager("jm-a")->wait();
  ASSERT_EQ(c.wait_for_leader("jm-a"), "jm-b") << c.logs();
  // The healthy job resumes and finishes exactly-once.
  auto done = c.client().wait(ids[1], 120000);
  ASSERT_TRUE(done.ok()) << done.status() << "\n" << c.logs();
  ASSERT_EQ((*done)["status"], "FINISHED") << *done << "\n" << c.logs();
  expect_exactly_once({input}, c.dir().path("out-2"));
  EXPECT_EQ(c.taskmanagers(), 1);
  // The broken one: FAILED, saying why, in the list and on its own.
  auto broken = c.client().job(ids[0]);
  ASSERT_TRUE(broken.ok()) << broken.status() << "\n" << c.logs();
  EXPECT_EQ((*broken)["status"], "FAILED") << *broken;
  EXPECT_NE((*broken)["failure"].get<std::string>().find("is corrupt"), std::string::npos) << *broken;
  auto listed = c.client().list();
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_NE(listed->dump().find(ids[0]), std::string::npos) << *listed;
  EXPECT_NE(c.log("jm-b").find("job " + ids[0]), std::string::npos) << c.log("jm-b");
  EXPECT_TRUE(std::filesystem::exists(record)) << "kept for an operator to look into";
  // Cancelling it forgets its record.
  auto cancelled = c.client().cancel(ids[0]);
  ASSERT_TRUE(cancelled.ok()) << cancelled.status();
  EXPECT_EQ((*cancelled)["status"], "CANCELED") << *cancelled;
  EXPECT_FALSE(std::filesystem::exists(record));
  EXPECT_FALSE(c.client().job(ids[0]).ok());
}

// A leader that cannot serve (its session port taken) steps down, and the
// next JobManager in line leads.
TEST(HaClusterTest, ALeaderThatCannotLeadStepsDown) {
  HaCluster c("ha-cannot-lead");
  ASSERT_TRUE(c.start_zookeeper()) << c.zookeeper().log();
  ASSERT_TRUE(c.start_jobmanager("jm-a")) << c.log("jm-a");
  ASSERT_EQ(c.wait_for_leader(), "jm-a") << c.logs();
  ASSERT_TRUE(c.start_jobmanager("jm-b")) << c.log("jm-b");
  // jm-b's session port, taken before it leads (a standby holds its REST
  // port itself, to redirect).
  const int blocker = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(blocker, 0);
  sockaddr_in at{};
  at.sin_family = AF_INET;
  const std::string session = c.session_address("jm-b");
  at.sin_port = htons(static_cast<uint16_t>(std::stoi(session.substr(session.rfind(':') + 1))));
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(blocker, reinterpret_cast<sockaddr*>(&at), sizeof(at)), 0) << std::strerror(errno);
  ASSERT_EQ(::listen(blocker, 1), 0);
  c.jobmanager("jm-a")->kill9();
  c.jobmanager("jm-a")->wait();
  ASSERT_TRUE(eventually([&] { return c.log("jm-b").find("cannot lead under epoch") != std::string::npos; }, 30s))
      << c.logs();
  ASSERT_TRUE(c.start_jobmanager("jm-a")) << c.log("jm-a");
  EXPECT_EQ(c.wait_for_leader("jm-b"), "jm-a") << c.logs();
  EXPECT_NE(c.log("jm-b").find("stepped down"), std::string::npos) << c.log("jm-b");
  ::close(blocker);
}

// Nothing shared but ZooKeeper and S3: job records in S3 (--ha-storage
// s3://), checkpoints in S3, reached by the config file's [s3] settings. The leader is killed; the standby reads the
// job's record from S3, resumes it from its checkpoint there, and the output
// is exactly-once.
TEST(HaClusterTest, LeaderLossWithJobRecordsAndCheckpointsInS3) {
  HaCluster c("ha-s3");
  S3Server s3(c.dir(), "weir");
  ASSERT_TRUE(s3.start()) << "s3rver did not start (scripts/install-deps.sh installs it)";
  // The JobManagers and TaskManagers find S3 in their config file
  // ($WEIR_CONFIG, inherited), not in the environment.
  ScopedEnv env;
  for (const char* name : {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"}) {
    env.set(name, std::nullopt);
  }
  s3.write_config(c.dir().path("weir.toml"));
  env.set("WEIR_CONFIG", c.dir().path("weir.toml"));
  c.set_ha_storage(s3.url("ha"));
  ASSERT_TRUE(c.start_zookeeper()) << c.zookeeper().log();
  ASSERT_TRUE(c.start_jobmanager("jm-a")) << c.log("jm-a");
  ASSERT_EQ(c.wait_for_leader(), "jm-a") << c.logs();
  ASSERT_TRUE(c.start_jobmanager("jm-b")) << c.log("jm-b");
  ASSERT_TRUE(c.start_taskmanager("tm-1", 2)) << c.logs();
  ASSERT_TRUE(c.start_taskmanager("tm-2", 2)) << c.logs();
  const std::string input = c.dir().path("in.txt");
  ASSERT_TRUE(examples::generate_running_sum_input(input, 30000, 300, 0, 31).ok());
  auto id = c.client().submit("running-sum", {"--input", input, "--output", c.dir().path("out"), "-p", "4",
                                              "--checkpoint-dir", s3.url("chk"), "--checkpoint-interval", "200ms",
                                              "--rate", "500"});
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_TRUE(eventually([&] { return newest_checkpoint(c.client(), *id) >= 3; }, 60s)) << c.logs();
  s3::S3Client client(s3.settings());
  auto records = client.list({"weir", "ha/jobs/"});
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->size(), 1u);
  const int64_t committed = newest_checkpoint(c.client(), *id);
  c.jobmanager("jm-a")->kill9();
  c.jobmanager("jm-a")->wait();
  ASSERT_EQ(c.wait_for_leader("jm-a"), "jm-b") << c.logs();
  int64_t restored = -1;
  ASSERT_TRUE(eventually(
      [&] {
        restored = restored_id(c.client(), *id);
        return restored >= 0;
      },
      30s))
      << c.logs();
  EXPECT_GE(restored, committed);
  auto restored_from = c.client().checkpoints(*id);
  ASSERT_TRUE(restored_from.ok());
  EXPECT_EQ((*restored_from)["restored"]["path"].get<std::string>().rfind("s3://weir/chk/", 0), 0u)
      << *restored_from;
  auto done = c.client().wait(*id, 120000);
  ASSERT_TRUE(done.ok()) << done.status() << "\n" << c.logs();
  ASSERT_EQ((*done)["status"], "FINISHED") << *done << "\n" << c.logs();
  expect_exactly_once({input}, c.dir().path("out"));
  // Its record is gone from S3 with the job.
  EXPECT_TRUE(eventually(
      [&] {
        auto left = client.list({"weir", "ha/jobs/"});
        return left.ok() && left->empty();
      },
      10s));
}

// What a leader writes in the HA store is fenced by its epoch: once another
// JobManager leads, the deposed one can neither commit a checkpoint, nor
// reserve checkpoint ids, nor record or forget jobs; what it committed
// before stays for the new leader, and checkpoint ids never repeat.
// In a directory and in S3.
class HaStoreTest : public ::testing::TestWithParam<std::string> {};

TEST_P(HaStoreTest, DeposedLeaderCannotWrite) {
  TempDir dir("ha-store-fencing");
  ZkServer zk(dir);
  ASSERT_TRUE(zk.start()) << zk.log();
  std::unique_ptr<S3Server> s3;
  cluster::HaOptions ha;
  ha.quorum = zk.quorum();
  ha.cluster_id = "fencing";
  ha.storage = dir.path("ha");
  if (GetParam() == "s3") {
    s3 = std::make_unique<S3Server>(dir, "weir");
    ASSERT_TRUE(s3->start()) << "s3rver did not start (scripts/install-deps.sh installs it)";
    s3->set_env();
    ha.storage = s3->url("ha");
  }
  ha.session_timeout = 2000ms;
  std::atomic<int64_t> epoch_a{0}, epoch_b{0};
  auto a = std::make_unique<cluster::LeaderElection>(
      cluster::LeaderElection::Options{ha.quorum, ha.root(), "a", ha.session_timeout},
      cluster::LeaderElection::Callbacks{[&](int64_t e) { epoch_a = e; }, nullptr});
  ASSERT_TRUE(a->start(5000ms).ok());
  ASSERT_TRUE(eventually([&] { return epoch_a > 0; }, 10s));
  auto old_store = cluster::HaStore::open(ha, epoch_a, 5000ms);
  ASSERT_TRUE(old_store.ok()) << old_store.status();
  std::shared_ptr<cluster::HaStore> deposed = *std::move(old_store);

  cluster::proto::JobRecord record;
  record.set_job_id("job-1");
  record.mutable_spec()->set_name("running-sum");
  record.mutable_spec()->add_args("--rate");
  // A job library goes along with the record.
  const std::string library = dir.path("job.so");
  std::ofstream(library) << "not really a library, but bytes to keep";
  const std::string digest = cluster::sha256_hex(slurp(library));
  record.mutable_spec()->set_library(digest);
  ASSERT_TRUE(deposed->add_job(record, library).ok());
  auto first = deposed->next_checkpoint_id("job-1", 1);
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = deposed->next_checkpoint_id("job-1", 1);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*second, *first + 1);
  ASSERT_TRUE(deposed->commit_checkpoint("job-1", *first, "/chk/job-1/chk-1").ok());
  ASSERT_TRUE(deposed->commit_checkpoint("job-1", *second, "/chk/job-1/chk-2").ok());
  ASSERT_TRUE(deposed->commit_checkpoint("job-1", 10, "/savepoints/sp-10", /*savepoint=*/true).ok());
  ASSERT_TRUE(deposed->forget_checkpoint("job-1", 10).ok());
  EXPECT_TRUE(deposed->forget_checkpoint("job-1", 10).ok()) << "forgetting twice is no error";

  // B takes over once A is gone.
  auto b = std::make_unique<cluster::LeaderElection>(
      cluster::LeaderElection::Options{ha.quorum, ha.root(), "b", ha.session_timeout},
      cluster::LeaderElection::Callbacks{[&](int64_t e) { epoch_b = e; }, nullptr});
  ASSERT_TRUE(b->start(5000ms).ok());
  a.reset();
  ASSERT_TRUE(eventually([&] { return epoch_b > 0; }, 10s));
  EXPECT_GT(epoch_b, epoch_a);

  // The deposed leader's store still has a live session, but every write fails.
  absl::Status commit = deposed->commit_checkpoint("job-1", 3, "/chk/job-1/chk-3");
  EXPECT_TRUE(absl::IsFailedPrecondition(commit)) << commit;
  EXPECT_NE(commit.message().find("no longer the leader"), std::string::npos) << commit;
  EXPECT_TRUE(absl::IsFailedPrecondition(deposed->next_checkpoint_id("job-1", 1).status()));
  EXPECT_TRUE(absl::IsFailedPrecondition(deposed->forget_checkpoint("job-1", *first)));
  EXPECT_TRUE(absl::IsFailedPrecondition(deposed->remove_job("job-1")));
  record.set_job_id("job-2");
  EXPECT_TRUE(absl::IsFailedPrecondition(deposed->add_job(record, "")));
  // Nor can it open a store for its old epoch.
  EXPECT_TRUE(absl::IsFailedPrecondition(cluster::HaStore::open(ha, epoch_a, 5000ms).status()));

  auto store = cluster::HaStore::open(ha, epoch_b, 5000ms);
  ASSERT_TRUE(store.ok()) << store.status();
  auto jobs = (*store)->jobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].record.job_id(), "job-1");
  EXPECT_EQ((*jobs)[0].record.spec().args(0), "--rate");
  // Every checkpoint it committed and did not forget, oldest first.
  const auto& retained = (*jobs)[0].checkpoints;
  ASSERT_EQ(retained.size(), 2u);
  EXPECT_EQ(retained[0].id, *first);
  EXPECT_EQ(retained[0].location, "/chk/job-1/chk-1");
  EXPECT_EQ(retained[1].id, *second);
  EXPECT_EQ(retained[1].location, "/chk/job-1/chk-2");
  EXPECT_FALSE(retained[1].savepoint);
  // The new leader commits and forgets in turn (ids sort as numbers).
  ASSERT_TRUE((*store)->commit_checkpoint("job-1", 100, "/sp/sp-100", /*savepoint=*/true).ok());
  ASSERT_TRUE((*store)->forget_checkpoint("job-1", *first).ok());
  jobs = (*store)->jobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  ASSERT_EQ((*jobs)[0].checkpoints.size(), 2u);
  EXPECT_EQ((*jobs)[0].checkpoints[0].id, *second);
  EXPECT_EQ((*jobs)[0].checkpoints[1].id, 100);
  EXPECT_TRUE((*jobs)[0].checkpoints[1].savepoint);
  auto bytes = (*store)->library(digest);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(*bytes, slurp(library));
  EXPECT_FALSE((*store)->library(std::string(64, '0')).ok());
  // Ids go on after the ones the deposed leader reserved, whatever the
  // restored checkpoint says.
  auto next = (*store)->next_checkpoint_id("job-1", *second + 1);
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(*next, *second + 1);
  ASSERT_TRUE((*store)->remove_job("job-1").ok());
  jobs = (*store)->jobs();
  ASSERT_TRUE(jobs.ok());
  EXPECT_TRUE(jobs->empty());
}

INSTANTIATE_TEST_SUITE_P(Storage, HaStoreTest, ::testing::Values("dir", "s3"),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

// A TaskManager refuses a JobManager of an older leader epoch than one it
// registered with (a deposed leader that has not noticed yet, named by a
// stale leader node): it registers with the epoch-5 leader, is then pointed
// at an epoch-3 JobManager and refuses it, and registers with the epoch-6
// leader that follows.
TEST(HaClusterTest, TaskManagerRefusesAJobManagerOfAnOlderEpoch) {
  TempDir dir("ha-older-epoch");
  ZkServer zk(dir);
  ASSERT_TRUE(zk.start()) << zk.log();
  auto session = cluster::ZooKeeperSession::connect(zk.quorum(), 5000ms, 5000ms);
  ASSERT_TRUE(session.ok()) << session.status();
  const std::string latch = "/weir/default/latch";
  ASSERT_EQ(cluster::ensure_zk_path((*session)->handle(), latch), 0);
  const std::string secret = "older-epoch-secret-0123456789";
  examples::register_examples();  // the catalog's built-in jobs
  // Names `jm` as the leader in ZooKeeper, as its latch node would.
  auto lead = [&](const cluster::JobManager& jm) {
    String_vector names{};
    ASSERT_EQ(zoo_get_children((*session)->handle(), latch.c_str(), 0, &names), ZOK);
    for (int i = 0; i < names.count; ++i) {
      zoo_delete((*session)->handle(), (latch + "/" + names.data[i]).c_str(), -1);
    }
    deallocate_String_vector(&names);
    const std::string address = "127.0.0.1:" + std::to_string(jm.port()) + " http://127.0.0.1:" +
                                std::to_string(jm.rest_port());
    ASSERT_EQ(zoo_create((*session)->handle(), (latch + "/n_").c_str(), address.data(),
                         static_cast<int>(address.size()), &ZOO_OPEN_ACL_UNSAFE, ZOO_SEQUENCE, nullptr, 0),
              ZOK);
  };
  auto jobmanager = [&](int64_t epoch) {
    cluster::JobManagerOptions o;
    o.bind = "127.0.0.1:0";
    o.rest_port = 0;
    o.secret = secret;
    o.catalog = cli::builtin_job_catalog();
    o.epoch = epoch;
    o.heartbeat_interval = Duration(100);
    o.heartbeat_timeout = Duration(1000);
    o.library_dir = dir.path("jm-libraries-" + std::to_string(epoch));
    auto jm = std::make_unique<cluster::JobManager>(o);
    EXPECT_TRUE(jm->start().ok());
    return jm;
  };
  auto registered = [&](const cluster::JobManager& jm) {
    auto o = cluster::ClusterClient("127.0.0.1:" + std::to_string(jm.rest_port()), secret).overview();
    return o.ok() ? static_cast<int>((*o)["taskmanagers"].size()) : -1;
  };

  auto five = jobmanager(5);
  lead(*five);
  cluster::TaskManagerOptions t;
  t.ha_quorum = zk.quorum();
  t.secret = secret;
  t.id = "tm-epochs";
  t.metrics_port = -1;
  t.state_dir = dir.path("state");
  t.library_dir = dir.path("tm-libraries");
  t.catalog = cli::builtin_job_catalog();
  cluster::TaskManagerProcess tm(t);
  ASSERT_TRUE(tm.start().ok());
  std::thread running([&] { (void)tm.run(); });
  EXPECT_TRUE(eventually([&] { return registered(*five) == 1; }, 20s));

  auto three = jobmanager(3);
  lead(*three);
  five->shutdown();  // the session ends; the TaskManager looks the leader up again
  auto six = jobmanager(6);
  // The TaskManager tries the epoch-3 JobManager (and refuses it) for a
  // while; it must never be listed there.
  const auto until = std::chrono::steady_clock::now() + 3s;
  bool listed_at_three = false;
  while (std::chrono::steady_clock::now() < until && !listed_at_three) {
    listed_at_three = registered(*three) > 0;
  }
  EXPECT_FALSE(listed_at_three) << "registered with a JobManager of an older epoch";
  lead(*six);
  EXPECT_TRUE(eventually([&] { return registered(*six) == 1; }, 20s));
  EXPECT_EQ(registered(*three), 0);
  tm.shutdown();
  running.join();
}

// Bad HA settings: one line each, exit 2.
TEST(HaClusterTest, BadSettingsAreRefused) {
  TempDir dir("ha-bad-settings");
  const std::string secret = dir.path("secret");
  std::ofstream(secret) << "ha-cluster-secret-0123456789\n";
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{"jobmanager", "--ha", "zookeeper", "--ha-storage", dir.path("ha")}, "--ha-quorum"},
      {{"jobmanager", "--ha", "zookeeper", "--ha-quorum", "127.0.0.1:1"}, "--ha-storage"},
      {{"jobmanager", "--ha-quorum", "127.0.0.1:1"}, "need --ha zookeeper"},
      {{"jobmanager", "--ha", "zookeeper", "--ha-quorum", "127.0.0.1:1", "--ha-storage", dir.path("ha"),
        "--rest-port", "0"},
       "fixed ports"},
      {{"taskmanager", "--ha", "zookeeper"}, "--ha-quorum"},
  };
  for (const Case& k : cases) {
    std::vector<std::string> argv = k.args;
    argv.push_back("--secret-file");
    argv.push_back(secret);
    RunResult r = run_weir(argv, dir.path("bad"));
    EXPECT_EQ(r.code, 2) << k.says;
    const std::string& err = r.err;
    EXPECT_NE(err.find(k.says), std::string::npos) << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  }
}

}  // namespace
}  // namespace weir::testing
