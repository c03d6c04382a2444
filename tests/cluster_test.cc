// The multi-process cluster: a JobManager and TaskManagers as real processes
// on loopback, jobs submitted through the client: slots, ended jobs, the
// attached client, requests without the cluster secret or hostile ones on
// every port, silent connections, the configuration file. Recovery is in
// cluster_failover_test.cc.
#include <gtest/gtest.h>
#include <openssl/ssl.h>
#include <httplib.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "examples/running_sum/running_sum.h"
#include "cluster/protocol.h"
#include "network/data_plane.h"
#include "tests/cluster.h"
#include "tests/hostile_grpc.h"
#include "tests/cluster_checks.h"
#include "weir/connectors.h"

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace weir {
namespace {

using testing::Child;
using testing::Cluster;
using testing::eventually;
using testing::expect_exactly_once;
using testing::RunResult;
using testing::slurp;
using testing::TempDir;

// A job that needs more slots than the cluster has waits, then fails
// naming what it needed.
TEST(ClusterTest, JobWithoutEnoughSlotsFailsAfterTheSlotTimeout) {
  Cluster c("cluster-slots");
  const std::string input = c.dir().path("in.txt");
  ASSERT_TRUE(examples::generate_running_sum_input(input, 1000, 10, 0, 3).ok());
  ASSERT_TRUE(c.start({{"tm-a", 1}})) << "the cluster did not come up\n" << c.jm_log();
  auto job = c.client().submit("running-sum", {"--input", input, "--output", c.dir().path("out"), "-p", "2",
                                               "--checkpoint-dir", c.dir().path("chk"), "--slot-timeout", "1s"});
  ASSERT_TRUE(job.ok()) << job.status();
  auto done = c.client().wait(*job, 60000);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ((*done)["status"], "FAILED");
  EXPECT_NE((*done)["failure"].get<std::string>().find("no slots for the job after 1000 ms: needs 2 slots, 1 free"),
            std::string::npos)
      << *done;
}

// The JobManager forgets the oldest ended jobs beyond --keep-ended-jobs, so
// its memory does not grow with every job it ever ran.
TEST(ClusterTest, OnlyTheNewestEndedJobsAreKept) {
  Cluster c("cluster-keep");
  c.add_jobmanager_args({"--keep-ended-jobs", "1"});
  const std::string input = c.dir().path("in.txt");
  ASSERT_TRUE(examples::generate_running_sum_input(input, 100, 10, 0, 1).ok());
  ASSERT_TRUE(c.start({{"tm-a", 1}})) << "the cluster did not come up\n" << c.jm_log();
  auto none = testing::run_weir({"list", "--jobmanager", c.rest(), "--secret-file", c.secret_file()}, c.dir().path("l0"));
  ASSERT_EQ(none.code, 0) << none.err;
  EXPECT_EQ(none.out, "no jobs\n");
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    auto job = c.client().submit("running-sum", {"--input", input, "--output", c.dir().path("out" + std::to_string(i)),
                                                 "--checkpoint-dir", c.dir().path("chk")});
    ASSERT_TRUE(job.ok()) << job.status();
    auto done = c.client().wait(*job, 60000);
    ASSERT_TRUE(done.ok()) << done.status();
    ASSERT_EQ((*done)["status"], "FINISHED") << *done;
    ids.push_back(*job);
  }
  ASSERT_TRUE(eventually(
      [&] {
        auto jobs = c.client().list();
        return jobs.ok() && (*jobs)["jobs"].size() == 1 && (*jobs)["jobs"][0]["job_id"] == ids.back();
      },
      10s))
      << c.jm_log();
  auto first = c.client().job(ids.front());
  EXPECT_TRUE(absl::IsNotFound(first.status())) << first.status();
  // A prefix of the kept job's id names it; one of no job is "no job".
  auto kept = testing::run_weir({"checkpoints", ids.back().substr(0, 5), "--jobmanager", c.rest(), "--secret-file",
                                 c.secret_file()},
                                c.dir().path("prefix"));
  EXPECT_EQ(kept.code, 0) << kept.err;
  EXPECT_NE(kept.out.find("(final)"), std::string::npos) << kept.out;
  auto gone = testing::run_weir({"job", ids.front(), "--jobmanager", c.rest(), "--secret-file", c.secret_file()},
                                c.dir().path("gone"));
  EXPECT_NE(gone.code, 0);
  EXPECT_NE(gone.err.find("no job " + ids.front()), std::string::npos) << gone.err;
}

// A prefix that starts the ids of several jobs names none of them: the
// client refuses it and lists the jobs it matches. Ids are random hex, so
// of 17 jobs two share their first digit; the loop stops at the first pair.
TEST(ClusterTest, AJobIdPrefixOfSeveralJobsIsRefusedNamingThem) {
  Cluster c("cluster-prefix");
  const std::string input = c.dir().path("in.txt");
  ASSERT_TRUE(examples::generate_running_sum_input(input, 20, 5, 0, 1).ok());
  ASSERT_TRUE(c.start({{"tm-a", 1}})) << "the cluster did not come up\n" << c.jm_log();
  std::map<char, std::string> by_first_digit;
  std::string first, second;
  for (int i = 0; i < 17 && second.empty(); ++i) {
    auto job = c.client().submit("running-sum", {"--input", input, "--output", c.dir().path("out" + std::to_string(i)),
                                                 "--checkpoint-dir", c.dir().path("chk")});
    ASSERT_TRUE(job.ok()) << job.status();
    auto done = c.client().wait(*job, 60000);
    ASSERT_TRUE(done.ok()) << done.status();
    auto [it, fresh] = by_first_digit.emplace(job->front(), *job);
    if (!fresh) first = it->second, second = *job;
  }
  ASSERT_FALSE(second.empty()) << "17 job ids with 16 distinct first digits";
  auto both = testing::run_weir(
      {"job", first.substr(0, 1), "--jobmanager", c.rest(), "--secret-file", c.secret_file()}, c.dir().path("both"));
  EXPECT_EQ(both.code, 2) << both.err;
  EXPECT_NE(both.err.find("job id prefix " + first.substr(0, 1) + " matches"), std::string::npos) << both.err;
  EXPECT_NE(both.err.find(first), std::string::npos) << both.err;
  EXPECT_NE(both.err.find(second), std::string::npos) << both.err;
  EXPECT_EQ(std::count(both.err.begin(), both.err.end(), '\n'), 1) << both.err;
  // A longer prefix that tells them apart names one.
  size_t common = 0;
  while (first[common] == second[common]) ++common;
  auto one = testing::run_weir({"job", second.substr(0, common + 1), "--jobmanager", c.rest(), "--secret-file",
                                c.secret_file()},
                               c.dir().path("one"));
  EXPECT_EQ(one.code, 0) << one.err;
  EXPECT_EQ(one.out.rfind(second, 0), 0u) << one.out;
}

// A job whose input file does not exist fails at once, naming the file,
// however many restarts its strategy allows.
TEST(ClusterTest, AMissingInputFileFailsTheJobWithoutRestarts) {
  Cluster c("cluster-missing-input");
  ASSERT_TRUE(c.start({{"tm-a", 1}})) << "the cluster did not come up\n" << c.jm_log();
  const std::string missing = c.dir().path("no-such-input.txt");
  auto job = c.client().submit("running-sum", {"--input", missing, "--output", c.dir().path("out"), "--checkpoint-dir",
                                               c.dir().path("chk"), "--restart-delay", "10ms"});
  ASSERT_TRUE(job.ok()) << job.status();
  auto done = c.client().wait(*job, 60000);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ((*done)["status"], "FAILED") << *done;
  EXPECT_EQ((*done)["restarts"], 0) << *done;
  EXPECT_NE(done->dump().find("file source " + missing + ": no such file"), std::string::npos) << *done;
}

// Without the secret nothing runs: the client port, the TaskManager session
// and the data port all refuse.
TEST(ClusterTest, RequestsWithoutTheSecretAreRefusedOnEveryPort) {
  Cluster c("cluster-auth");
  ASSERT_TRUE(c.start({{"tm-ok", 1}})) << "the cluster did not come up\n" << c.jm_log();
  TempDir scratch("cluster-auth-wrong");
  const std::string wrong = scratch.path("wrong");
  std::ofstream(wrong) << "not-the-cluster-secret\n";

  // REST port: without the secret, or with a wrong one, the request is
  // refused (401); the client exits with code 6.
  auto rest_client = testing::http_client(c.rest());
  httplib::Client& http = *rest_client;
  auto bare = http.Get("/v1/jobs");
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->status, 401);
  EXPECT_NE(bare->body.find("no cluster secret given"), std::string::npos) << bare->body;
  auto r = testing::run_weir({"list", "--jobmanager", c.rest(), "--secret-file", wrong}, scratch.path("list"));
  EXPECT_EQ(r.code, 6) << r.err;
  EXPECT_NE(r.err.find("wrong cluster secret"), std::string::npos) << r.err;
  // A submission with the wrong secret runs nothing.
  cluster::ClusterClient intruder(c.rest(), "not-the-cluster-secret", testing::test_tls_ca());
  auto sub = intruder.submit("running-sum", {"--input", wrong, "--output", scratch.path("o"), "--checkpoint-dir",
                                             scratch.path("chk")});
  EXPECT_TRUE(absl::IsUnauthenticated(sub.status())) << sub.status();
  auto jobs = c.client().list();
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ((*jobs)["jobs"].size(), 0u);
  EXPECT_FALSE(fs::exists(scratch.path("o")));

  // Session port: a TaskManager with the wrong secret is refused and exits.
  auto tm = testing::run_weir({"taskmanager", "--jobmanager", c.address(), "--secret-file", wrong, "--id", "tm-bad"},
                              scratch.path("tm-bad"));
  EXPECT_EQ(tm.code, 6) << tm.err;
  EXPECT_NE(tm.err.find("refused this TaskManager"), std::string::npos) << tm.err;
  auto o = c.client().overview();
  ASSERT_TRUE(o.ok());
  ASSERT_EQ((*o)["taskmanagers"].size(), 1u);
  EXPECT_EQ((*o)["taskmanagers"][0]["id"], "tm-ok");

  // Data port: a handshake with the wrong secret gets a refusal frame and
  // the connection closes. With TLS: through TLS, by a data plane of
  // another process that has the cluster's certificates but not its secret;
  // and one without TLS is not let in at all.
  const std::string data_address = (*o)["taskmanagers"][0]["data_address"].get<std::string>();
  if (testing::tls_mode()) {
    network::NetworkBufferPool pool(8, 1024);
    network::DataPlane plain("not-the-cluster-secret", &pool, 4), intruder_plane("not-the-cluster-secret", &pool, 4);
    auto refused = plain.outbound(data_address, network::ChannelKey{"job", 0, 0, 0, 0});
    EXPECT_FALSE(refused.ok());
    const testing::TestCerts& certs = testing::test_certs();
    auto server = network::TlsContext::create(certs.files(), network::TlsContext::Role::kServer, true);
    auto client = network::TlsContext::create(certs.files(), network::TlsContext::Role::kClient, false);
    ASSERT_TRUE(server.ok() && client.ok());
    intruder_plane.set_tls(*server, *client);
    auto wrong_secret = intruder_plane.outbound(data_address, network::ChannelKey{"job", 0, 0, 0, 0});
    ASSERT_FALSE(wrong_secret.ok());
    EXPECT_TRUE(absl::IsPermissionDenied(wrong_secret.status())) << wrong_secret.status();
    EXPECT_NE(wrong_secret.status().message().find("wrong cluster secret"), std::string_view::npos)
        << wrong_secret.status();
    // The first refusal is logged (the next within the interval are counted).
    EXPECT_TRUE(eventually(
        [&] {
          return slurp(c.dir().path("tm-ok.err")).find("refused a connection to the data port from 127.0.0.1") !=
                 std::string::npos;
        },
        10s))
        << slurp(c.dir().path("tm-ok.err"));
    EXPECT_NE(slurp(c.dir().path("tm-ok.err")).find("not TLS (plain text on a TLS port)"), std::string::npos);
    return;
  }
  auto fd = network::connect_tcp(data_address, 5000);
  ASSERT_TRUE(fd.ok()) << fd.status();
  std::string hello;
  uint32_t len = 15;
  hello.append(reinterpret_cast<const char*>(&len), 4);
  hello.push_back(static_cast<char>(network::FrameType::kHello));
  hello.append(4, '\0');
  hello.push_back(static_cast<char>(network::kDataPlaneVersion));
  hello += "not-the-secret";
  ASSERT_EQ(::send(*fd, hello.data(), hello.size(), MSG_NOSIGNAL), static_cast<ssize_t>(hello.size()));
  char header[9];
  ASSERT_EQ(::recv(*fd, header, sizeof(header), MSG_WAITALL), 9);
  EXPECT_EQ(header[4], static_cast<char>(network::FrameType::kRefused));
  uint32_t n;
  std::memcpy(&n, header, 4);
  std::string why(n, '\0');
  ASSERT_EQ(::recv(*fd, why.data(), n, MSG_WAITALL), static_cast<ssize_t>(n));
  EXPECT_EQ(why, "wrong cluster secret");
  char more;
  EXPECT_EQ(::recv(*fd, &more, 1, 0), 0);  // closed
  ::close(*fd);
  EXPECT_NE(slurp(c.dir().path("tm-ok.err")).find("wrong cluster secret"), std::string::npos);
}

// A memory figure of process `pid` from /proc/PID/status ("VmRSS:",
// "VmHWM:" for the peak), in KiB; -1 when absent.
int64_t status_kb(pid_t pid, const std::string& field) {
  std::string status = slurp("/proc/" + std::to_string(pid) + "/status");
  const size_t at = status.find(field);
  return at == std::string::npos ? -1 : std::atoll(status.c_str() + at + field.size());
}
int64_t peak_rss(pid_t pid) { return status_kb(pid, "VmHWM:") * 1024; }

// Peers without the secret pushing large result batches to the
// JobManager's gRPC port are refused before their messages are read: eight
// at once, each offering 200 MB, leave the JobManager's memory where it was
// and the cluster serving. A message past the limit is refused even from a
// peer with the secret.
TEST(ClusterTest, UnauthenticatedGrpcCallsAreRefusedBeforeTheirMessagesAreRead) {
  Cluster c("cluster-grpc-hostile");
  ASSERT_TRUE(c.start({{"tm-1", 1}})) << c.jm_log();
  auto credentials = cluster::channel_credentials(testing::tls_mode() ? testing::test_certs().files()
                                                                      : network::TlsFiles{});
  ASSERT_TRUE(credentials.ok()) << credentials.status();
  const int64_t before = peak_rss(c.jobmanager()->pid());
  ASSERT_GT(before, 0);
  EXPECT_EQ(testing::push_without_the_secret(c.address(), *credentials, 8, 20, 10 << 20), 8);
  const int64_t after = peak_rss(c.jobmanager()->pid());
  std::printf("JobManager peak RSS %lld MiB before the hostile peers, %lld MiB after\n",
              static_cast<long long>(before >> 20), static_cast<long long>(after >> 20));
  EXPECT_LT(after - before, int64_t{150} << 20) << "peak RSS " << before << " -> " << after;

  // With the secret, a batch over the limit is refused by its size.
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_MAX_SEND_MESSAGE_LENGTH, -1);
  auto stub = cluster::proto::JobManagerService::NewStub(grpc::CreateCustomChannel(c.address(), *credentials, args));
  grpc::ClientContext ctx;
  cluster::add_secret(&ctx, c.secret());
  cluster::proto::ResultReply reply;
  auto writer = stub->PushResults(&ctx, &reply);
  cluster::proto::ResultBatch big;
  big.set_result_id(std::string(32, 'a'));
  big.set_rows(std::string(cluster::kMaxJobManagerMessage + 1, 'x'));
  writer->Write(big);
  writer->WritesDone();
  EXPECT_EQ(writer->Finish().error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);

  // The cluster still serves.
  auto o = c.client().overview();
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ((*o)["taskmanagers"].size(), 1u);
  EXPECT_TRUE(c.jobmanager()->running());
}

// A client command aimed where no JobManager listens says so in words.
TEST(ClusterTest, UnreachableJobManagerIsNamedWithTheCause) {
  TempDir dir("cluster-unreachable");
  const std::string secret = dir.path("secret");
  std::ofstream(secret) << "a-secret-of-24-bytes-abc\n";
  auto r = testing::run_weir({"list", "--jobmanager", "127.0.0.1:1", "--secret-file", secret}, dir.path("list"));
  EXPECT_EQ(r.code, 5) << r.err;
  EXPECT_EQ(r.err, "weir: JobManager 127.0.0.1:1 unreachable: cannot connect (nothing listening there, or the host "
                   "cannot be reached)\n");
}

// A client given several JobManagers, the first of them frozen (its port
// takes connections, nothing answers): it asks the next after a short
// probe instead of waiting out the request's whole limit.
TEST(ClusterTest, AClientSkipsAFrozenJobManagerQuickly) {
  Cluster c("cluster-frozen-first");
  c.start_jobmanager();
  ASSERT_TRUE(c.ok()) << c.jm_log();
  // A listening socket nobody accepts on: connections complete in the
  // kernel and then hear nothing.
  const int frozen = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(frozen, 0);
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(frozen, reinterpret_cast<sockaddr*>(&at), sizeof(at)), 0);
  ASSERT_EQ(::listen(frozen, 16), 0);
  socklen_t len = sizeof(at);
  ASSERT_EQ(::getsockname(frozen, reinterpret_cast<sockaddr*>(&at), &len), 0);
  const std::string frozen_address = "127.0.0.1:" + std::to_string(ntohs(at.sin_port));
  cluster::ClusterClient client(frozen_address + "," + c.rest(), c.secret(), testing::test_tls_ca());
  const auto started = std::chrono::steady_clock::now();
  auto jobs = client.list();
  const auto took = std::chrono::steady_clock::now() - started;
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_LT(took, 15s) << "the request's own limit is 30 s";
  // Once one answered, it is asked first.
  EXPECT_TRUE(client.overview().ok());
  ::close(frozen);
}

// An attached `weir run` prints each restart with its cause as it happens,
// and the job's failure stays visible after it finished.
TEST(ClusterTest, AttachedRunPrintsRestartsAsTheyHappen) {
  Cluster c("cluster-attached");
  const std::string input = c.dir().path("in.txt");
  ASSERT_TRUE(examples::generate_running_sum_input(input, 20000, 100, 0, 5).ok());
  ASSERT_TRUE(c.start({{"tm-a", 2}})) << "the cluster did not come up\n" << c.jm_log();
  auto r = testing::run_weir({"run", "--jobmanager", c.rest(), "--secret-file", c.secret_file(), "line-copy",
                              "--input", input, "--output", c.dir().path("out"), "-p", "2", "--checkpoint-dir",
                              c.dir().path("chk"), "--checkpoint-interval", "100ms", "--rate", "5000",
                              "--fail-subtask", "1", "--fail-after", "2000"},
                             c.dir().path("run"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("restarted (1 restart so far) after: "), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("FINISHED"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("failure: "), std::string::npos) << "the last failure is shown: " << r.out;
  EXPECT_EQ(r.out.find("records from sources"), std::string::npos) << "no progress line off a terminal: " << r.out;
}

// An attached run that ends says what each sink committed: the part files'
// lines, counted by the sink as they were published, also when the job
// ends between two heartbeats (each ended task reports its last counts).
TEST(ClusterTest, AttachedRunSaysWhatTheSinksCommitted) {
  Cluster c("cluster-sink-counts");
  const std::string input = c.dir().path("in.txt");
  ASSERT_TRUE(examples::generate_running_sum_input(input, 5000, 100, 0, 5).ok());
  ASSERT_TRUE(c.start({{"tm-a", 2}})) << "the cluster did not come up\n" << c.jm_log();
  auto r = testing::run_weir({"run", "--jobmanager", c.rest(), "--secret-file", c.secret_file(), "running-sum",
                              "--input", input, "--output", c.dir().path("out"), "-p", "2", "--checkpoint-dir",
                              c.dir().path("chk")},
                             c.dir().path("run"));
  ASSERT_EQ(r.code, 0) << r.err;
  auto out = read_published_lines(c.dir().path("out"), examples::kOutputPrefix);
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 5000u);
  EXPECT_NE(r.out.find("wrote 5000 records; 5000 committed in "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("since its last restart"), std::string::npos) << r.out;
}

// The JobManager and TaskManagers log what an operator follows at info:
// registrations, submissions, deployments, task and job states,
// checkpoints with their duration and size, savepoints; into a file that
// rotates by size when asked. Bad logging options are refused by name.
TEST(ClusterTest, LogsFollowTheJobAndRotate) {
  Cluster c("cluster-logs");
  const std::string jm_log = c.dir().path("jm.log"), tm_log = c.dir().path("tm.log");
  c.add_jobmanager_args({"--log-file", jm_log, "--log-max-size", "4kb", "--log-max-files", "2"});
  c.add_taskmanager_args({"--log-file", tm_log, "--log-level", "info"});
  const std::string input = c.dir().path("in.txt");
  ASSERT_TRUE(examples::generate_running_sum_input(input, 2000000, 100, 0, 5).ok());
  ASSERT_TRUE(c.start({{"tm-a", 2}})) << "the cluster did not come up\n" << slurp(jm_log);
  EXPECT_EQ(c.jm_log(), "") << "the log goes to the file, not stderr";
  RunResult submitted = testing::run_weir(
      {"run", "--detached", "--jobmanager", c.rest(), "--secret-file", c.secret_file(), "running-sum", "--input",
       input, "--output", c.dir().path("out"), "-p", "2", "--checkpoint-dir", c.dir().path("chk"),
       "--checkpoint-interval", "50ms", "--rate", "20000"},
      c.dir().path("submit"));
  ASSERT_EQ(submitted.code, 0) << submitted.err;
  const std::string job = submitted.out.substr(submitted.out.find("submitted job ") + 14, 32);
  // Everything the JobManager kept: the file and its rotated predecessors.
  auto jm_text = [&] { return slurp(c.dir().path("jm.2.log")) + slurp(c.dir().path("jm.1.log")) + slurp(jm_log); };
  ASSERT_TRUE(eventually([&] { return jm_text().find("checkpoint 2 completed in ") != std::string::npos; }, 30s))
      << jm_text();
  std::string text = jm_text();
  for (const std::string& line : std::vector<std::string>{
           "TaskManager tm-a registered (data 127.0.0.1:", "job " + job + " (running-sum) submitted",
           "job " + job + ": RUNNING, ", "job " + job + ": deploying ", ") attempt 0 to tm-a (127.0.0.1:",
           "job " + job + ": checkpoint 1 completed in "}) {
    EXPECT_NE(text.find(line), std::string::npos) << "no \"" << line << "\" in\n" << text;
  }
  EXPECT_NE(text.find(" info "), std::string::npos) << text;
  EXPECT_TRUE(eventually([&] { return slurp(tm_log).find("job " + job + ": running vertex") != std::string::npos; }, 10s))
      << slurp(tm_log);
  EXPECT_NE(slurp(tm_log).find("registered at the JobManager " + c.address() + " as tm-a (2 slots, data "),
            std::string::npos)
      << slurp(tm_log);
  // Checkpoints every 50 ms fill 4 KiB in a few seconds: the file rotates,
  // and no more than two old files are kept.
  EXPECT_TRUE(eventually([&] { return fs::exists(c.dir().path("jm.2.log")); }, 60s)) << jm_text();
  EXPECT_FALSE(fs::exists(c.dir().path("jm.3.log")));
  EXPECT_LE(fs::file_size(c.dir().path("jm.1.log")), 4096u);
  RunResult stopped = testing::run_weir({"stop", job, "--jobmanager", c.rest(), "--secret-file", c.secret_file(),
                                         "--savepoint", c.dir().path("sp")},
                                        c.dir().path("stop"));
  ASSERT_EQ(stopped.code, 0) << stopped.err;
  EXPECT_TRUE(eventually(
      [&] {
        const std::string t = jm_text();
        return t.find("job " + job + ": savepoint ") != std::string::npos &&
               t.find("job " + job + ": FINISHED") != std::string::npos;
      },
      10s))
      << jm_text();
  EXPECT_TRUE(eventually([&] { return slurp(tm_log).find("job " + job + ": released") != std::string::npos; }, 10s))
      << slurp(tm_log);

  // Refused with the option and the cause, exit code 2.
  RunResult loud = testing::run_weir({"jobmanager", "--secret-file", c.secret_file(), "--log-level", "loud"},
                                     c.dir().path("loud"));
  EXPECT_EQ(loud.code, 2);
  EXPECT_NE(loud.err.find("--log-level: 'loud' is not a log level (trace, debug, info, warn, error or off)"),
            std::string::npos)
      << loud.err;
  // (Under a file: no directory can be made there.)
  const std::string unwritable = c.secret_file() + "/tm.log";
  RunResult nowhere =
      testing::run_weir({"taskmanager", "--secret-file", c.secret_file(), "--log-file", unwritable},
                        c.dir().path("nowhere"));
  EXPECT_EQ(nowhere.code, 2);
  EXPECT_NE(nowhere.err.find("--log-file " + unwritable + ": "), std::string::npos) << nowhere.err;
  RunResult tiny = testing::run_weir({"jobmanager", "--secret-file", c.secret_file(), "--log-file",
                                      c.dir().path("x.log"), "--log-max-size", "100b"},
                                     c.dir().path("tiny"));
  EXPECT_EQ(tiny.code, 2);
  EXPECT_NE(tiny.err.find("--log-max-size: 100b is below 4kb"), std::string::npos) << tiny.err;
}

// The job id an attached `weir run` printed on stdout (`prefix`.out), once
// it did.
std::string attached_job(const std::string& prefix) {
  std::string job;
  eventually(
      [&] {
        const std::string out = slurp(prefix + ".out");
        const size_t at = out.find("submitted job ");
        if (at == std::string::npos || out.size() < at + 14 + 32) return false;
        job = out.substr(at + 14, 32);
        return true;
      },
      20s);
  return job;
}

// Attached, `weir run` shows a progress line on a terminal (and nothing
// of it otherwise), says what slots it waits for, and when interrupted
// leaves the job running and says so, or with --cancel-on-exit cancels it.
TEST(ClusterTest, AttachedRunShowsProgressWaitsForSlotsAndSurvivesTheClient) {
  Cluster c("cluster-attached-progress");
  const std::string input = c.dir().path("in.txt");
  ASSERT_TRUE(examples::generate_running_sum_input(input, 2000000, 100, 0, 5).ok());
  ASSERT_TRUE(c.start({{"tm-a", 2}})) << "the cluster did not come up\n" << c.jm_log();
  auto run_args = [&](const std::string& out, const std::string& parallelism, const std::string& rate) {
    return std::vector<std::string>{testing::weir_bin(), "run", "--jobmanager", c.rest(), "--secret-file",
                                    c.secret_file(), "running-sum", "--input", input, "--output", c.dir().path(out),
                                    "-p", parallelism, "--checkpoint-dir", c.dir().path("chk-" + out),
                                    "--checkpoint-interval", "200ms", "--rate", rate};
  };

  // On a terminal (script(1) gives it one): the line is rewritten in place
  // with the records, the rate and the checkpoints, then the result.
  {
    const std::string small = c.dir().path("small.txt");
    ASSERT_TRUE(examples::generate_running_sum_input(small, 400000, 100, 0, 5).ok());
    std::vector<std::string> args = run_args("tty", "2", "100000");
    args[8] = small;  // --input
    Child tty(testing::on_a_terminal(args), c.dir().path("tty"));
    EXPECT_EQ(tty.wait(), 0) << slurp(c.dir().path("tty.out")) << slurp(c.dir().path("tty.err"));
    const std::string out = slurp(c.dir().path("tty.out"));
    EXPECT_NE(out.find("\r\033[KRUNNING  "), std::string::npos) << out;
    EXPECT_NE(out.find(" records from sources ("), std::string::npos) << out;
    EXPECT_NE(out.find(" checkpoints  0:00:0"), std::string::npos) << out;
    EXPECT_NE(out.find("FINISHED"), std::string::npos) << out;
  }

  // Not a terminal: no progress line. Four subtasks on two slots wait,
  // and say so, until a second TaskManager comes.
  Child waiting(run_args("waiting", "4", "20000"), c.dir().path("waiting"));
  const std::string waiting_job = attached_job(c.dir().path("waiting"));
  ASSERT_FALSE(waiting_job.empty()) << slurp(c.dir().path("waiting.err"));
  EXPECT_TRUE(eventually(
      [&] {
        return slurp(c.dir().path("waiting.err"))
                   .find("job " + waiting_job + " is waiting for slots: needs 4 slots, 2 free of 2 on 1 TaskManagers") !=
               std::string::npos;
      },
      20s))
      << slurp(c.dir().path("waiting.err"));
  c.start_taskmanager("tm-b", 2);
  EXPECT_TRUE(eventually(
      [&] {
        auto d = c.client().job(waiting_job);
        return d.ok() && (*d)["status"] == "RUNNING" && !d->contains("waiting_for_slots");
      },
      20s));

  // Interrupted: the job goes on, and the client says how to stop it.
  waiting.signal(SIGINT);
  EXPECT_EQ(waiting.wait(), 7);
  const std::string err = slurp(c.dir().path("waiting.err"));
  EXPECT_NE(err.find("interrupted (SIGINT): job " + waiting_job + " keeps running on the cluster; weir cancel " +
                     waiting_job + " stops it"),
            std::string::npos)
      << err;
  EXPECT_EQ(slurp(c.dir().path("waiting.out")).find("records from sources"), std::string::npos);
  auto still = c.client().job(waiting_job);
  ASSERT_TRUE(still.ok());
  EXPECT_EQ((*still)["status"], "RUNNING");
  auto canceled = c.client().cancel(waiting_job);
  ASSERT_TRUE(canceled.ok()) << canceled.status();

  // --cancel-on-exit: the job ends with the client.
  std::vector<std::string> args = run_args("cancel", "2", "20000");
  args.insert(args.begin() + 2, "--cancel-on-exit");
  Child cancelling(args, c.dir().path("cancel"));
  const std::string cancel_job = attached_job(c.dir().path("cancel"));
  ASSERT_FALSE(cancel_job.empty()) << slurp(c.dir().path("cancel.err"));
  ASSERT_TRUE(eventually(
      [&] {
        auto d = c.client().job(cancel_job);
        return d.ok() && (*d)["status"] == "RUNNING";
      },
      20s));
  cancelling.signal(SIGTERM);
  EXPECT_EQ(cancelling.wait(), 7);
  EXPECT_NE(slurp(c.dir().path("cancel.err")).find("interrupted (SIGTERM): cancelling job " + cancel_job),
            std::string::npos)
      << slurp(c.dir().path("cancel.err"));
  EXPECT_NE(slurp(c.dir().path("cancel.out")).find("job " + cancel_job + " CANCELED"), std::string::npos)
      << slurp(c.dir().path("cancel.out"));
  auto ended = c.client().job(cancel_job);
  ASSERT_TRUE(ended.ok());
  EXPECT_EQ((*ended)["status"], "CANCELED");
}

// A connection to `address` from loopback address `source` (another
// peer address to the server than 127.0.0.1).
absl::StatusOr<int> connect_from(const std::string& address, const std::string& source) {
  auto hp = network::parse_address(address);
  if (!hp.ok()) return hp.status();
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in from{}, to{};
  from.sin_family = to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(hp->second));
  if (fd < 0 || ::inet_pton(AF_INET, source.c_str(), &from.sin_addr) != 1 ||
      ::inet_pton(AF_INET, hp->first.c_str(), &to.sin_addr) != 1 ||
      ::bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof(from)) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) {
    const std::string why = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return absl::UnavailableError("connect from " + source + ": " + why);
  }
  return fd;
}

// Sends `request` on a new connection to `address` (from `source`, when
// given) and returns all the server answers until it closes (at most
// `deadline`).
std::string raw_http(const std::string& address, const std::string& request,
                     std::chrono::milliseconds deadline = 10s, const std::string& source = "") {
  auto fd = source.empty() ? network::connect_tcp(address, 5000) : connect_from(address, source);
  if (!fd.ok()) return "connect failed: " + std::string(fd.status().message());
  if (testing::tls_mode()) {
    // The same request through TLS.
    auto ctx = network::TlsContext::create({"", "", testing::test_tls_ca()}, network::TlsContext::Role::kClient, false);
    auto hp = network::parse_address(address);
    auto ssl = ctx.ok() && hp.ok() ? network::tls_connect(*fd, **ctx, hp->first, 5s)
                                   : absl::StatusOr<std::shared_ptr<SSL>>(absl::InternalError("no TLS context"));
    if (!ssl.ok()) {
      ::close(*fd);
      return "TLS failed: " + std::string(ssl.status().message());
    }
    for (size_t sent = 0; sent < request.size();) {
      int w = SSL_write(ssl->get(), request.data() + sent, static_cast<int>(request.size() - sent));
      if (w <= 0) break;  // the server may close before it read everything
      sent += static_cast<size_t>(w);
    }
    timeval tv{static_cast<time_t>(deadline.count() / 1000), 0};
    ::setsockopt(*fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    std::string got;
    char buf[4096];
    int n;
    while ((n = SSL_read(ssl->get(), buf, sizeof(buf))) > 0) got.append(buf, static_cast<size_t>(n));
    ::close(*fd);
    return got;
  }
  ::send(*fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string got;
  auto until = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < until) {
    pollfd p{*fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char buf[4096];
    ssize_t n = ::recv(*fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  ::close(*fd);
  return got;
}

int64_t rss_kb(pid_t pid) { return status_kb(pid, "VmRSS:"); }

// Slowloris: peers that send a request head a byte at a time (or nothing)
// hold no worker; an authenticated client is served at once meanwhile, and
// the slow connections are closed after the head deadline (10 s).
TEST(ClusterTest, SlowPeersOnTheRestPortDoNotLockOutClients) {
  Cluster c("cluster-slowloris");
  c.start_jobmanager();
  ASSERT_TRUE(c.ok()) << c.jm_log();
  std::vector<int> slow;
  // With TLS they trickle the first record of a handshake instead (a
  // record of 512 bytes that never completes).
  const std::string start = testing::tls_mode() ? std::string("\x16\x03\x01\x02\x00\x01", 6) : "GET /v1/ov";
  for (int i = 0; i < 40; ++i) {
    auto fd = network::connect_tcp(c.rest(), 5000);
    ASSERT_TRUE(fd.ok()) << fd.status();
    ::send(*fd, start.data(), start.size(), MSG_NOSIGNAL);
    slow.push_back(*fd);
  }
  for (int round = 0; round < 5; ++round) {
    for (int fd : slow) ::send(fd, "e", 1, MSG_NOSIGNAL);  // keep them trickling
    auto started = std::chrono::steady_clock::now();
    auto o = c.client().overview();
    ASSERT_TRUE(o.ok()) << o.status();
    EXPECT_LT(std::chrono::steady_clock::now() - started, 2s);
  }
  for (int fd : slow) {
    pollfd p{fd, POLLIN, 0};
    ASSERT_EQ(::poll(&p, 1, 20000), 1) << "a slow connection was still open after 20 s";
    char b;
    EXPECT_LE(::recv(fd, &b, 1, 0), 0);
    ::close(fd);
  }
}

// Peers that keep sending after their (refused) request, and clients
// waiting in long polls, hold none of the workers that serve everyone
// else: authenticated requests are answered at once meanwhile.
TEST(ClusterTest, LingeringPeersAndLongPollsDoNotHoldTheWorkers) {
  Cluster c("cluster-lingering");
  c.start_jobmanager();
  ASSERT_TRUE(c.ok()) << c.jm_log();
  auto served_quickly = [&](int times) {
    for (int i = 0; i < times; ++i) {
      auto started = std::chrono::steady_clock::now();
      auto o = c.client().overview();
      if (!o.ok()) {
        ADD_FAILURE() << o.status();
        return;
      }
      EXPECT_LT(std::chrono::steady_clock::now() - started, 2s);
    }
  };
  if (!testing::tls_mode()) {
    // 120 peers: a request without the secret, then a byte every 150 ms
    // while the server would linger on their connection.
    std::vector<int> peers;
    const std::string request = "GET /v1/jobs HTTP/1.1\r\nHost: x\r\n\r\n";
    for (int i = 0; i < 120; ++i) {
      auto fd = network::connect_tcp(c.rest(), 5000);
      ASSERT_TRUE(fd.ok()) << fd.status();
      ::send(*fd, request.data(), request.size(), MSG_NOSIGNAL);
      peers.push_back(*fd);
    }
    std::mutex drip_mu;
    std::condition_variable drip_cv;
    bool done = false;
    std::thread drip([&] {
      std::unique_lock lock(drip_mu);
      // A byte from every peer each 150 ms (their pace), until told to stop.
      while (!drip_cv.wait_for(lock, 150ms, [&] { return done; })) {
        for (int fd : peers) ::send(fd, "x", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
      }
    });
    served_quickly(6);
    {
      std::lock_guard lock(drip_mu);
      done = true;
    }
    drip_cv.notify_all();
    drip.join();
    // They were answered meanwhile (a peer that sent on past its second
    // of lingering is reset, and may lose its answer with it).
    int refused = 0;
    for (int fd : peers) {
      std::string got;
      char buf[4096];
      pollfd p{fd, POLLIN, 0};
      while (::poll(&p, 1, 5000) == 1) {
        const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
        if (n <= 0) break;
        got.append(buf, static_cast<size_t>(n));
      }
      refused += got.rfind("HTTP/1.1 401", 0) == 0 ? 1 : 0;
      ::close(fd);
    }
    EXPECT_GE(refused, 16);
  }
  // 100 clients in long polls of a query result (each up to 5 s).
  auto opened = c.client().open_result();
  ASSERT_TRUE(opened.ok()) << opened.status();
  // From addresses of their own: a burst of 100 connections from one
  // address would pass the limit of connections one address may have
  // waiting for their heads (32), and the oldest would be closed.
  std::vector<std::thread> polls;
  std::atomic<int> answered{0}, busy{0};
  std::mutex failures_mu;
  std::vector<std::string> failures;
  const std::string request = "GET /v1/results/" + *opened + "?from=0&wait_ms=5000 HTTP/1.1\r\nHost: x\r\n" +
                              "Authorization: Bearer " + c.secret() + "\r\n\r\n";
  for (int i = 0; i < 100; ++i) {
    polls.emplace_back([&, i] {
      const std::string got = raw_http(c.rest(), request, 30s, "127.0.0." + std::to_string(10 + i));
      if (got.rfind("HTTP/1.1 200", 0) == 0) ++answered;
      if (got.rfind("HTTP/1.1 503", 0) == 0) ++busy;
      if (got.rfind("HTTP/1.1 200", 0) != 0 && got.rfind("HTTP/1.1 503", 0) != 0) {
        std::lock_guard lock(failures_mu);
        failures.push_back(got.substr(0, 200));
      }
    });
  }
  served_quickly(6);
  for (auto& t : polls) t.join();
  EXPECT_EQ(busy.load(), 0);
  EXPECT_EQ(answered.load(), 100) << ::testing::PrintToString(failures);
}

// The web UI's login takes the secret from its form's body only, never
// from the URL, and slows down guessing: past five wrong secrets a minute
// from one address, it answers 429 (even to the right secret) until the
// minute has moved on.
TEST(ClusterTest, WebUiLoginRefusesSecretsInTheUrlAndSlowsGuessing) {
  Cluster c("cluster-login");
  c.start_jobmanager();
  ASSERT_TRUE(c.ok()) << c.jm_log();
  auto http = testing::http_client(c.rest());
  auto in_url = http->Post("/ui/login?secret=" + c.secret(), "", "application/x-www-form-urlencoded");
  ASSERT_TRUE(in_url);
  EXPECT_EQ(in_url->status, 400) << in_url->body;
  EXPECT_FALSE(in_url->has_header("Set-Cookie"));
  EXPECT_NE(in_url->body.find("never in the URL"), std::string::npos) << in_url->body;
  auto good = http->Post("/ui/login", "secret=" + c.secret(), "application/x-www-form-urlencoded");
  ASSERT_TRUE(good);
  EXPECT_EQ(good->status, 303) << good->body;
  EXPECT_TRUE(good->has_header("Set-Cookie"));
  for (int i = 0; i < 5; ++i) {
    auto wrong = http->Post("/ui/login", "secret=guess-" + std::to_string(i), "application/x-www-form-urlencoded");
    ASSERT_TRUE(wrong);
    EXPECT_EQ(wrong->status, 401) << i;
  }
  auto limited = http->Post("/ui/login", "secret=" + c.secret(), "application/x-www-form-urlencoded");
  ASSERT_TRUE(limited);
  EXPECT_EQ(limited->status, 429) << limited->body;
  EXPECT_FALSE(limited->has_header("Set-Cookie"));
  const int retry = std::atoi(limited->get_header_value("Retry-After").c_str());
  EXPECT_GT(retry, 0);
  EXPECT_LE(retry, 60);
  // The REST API with the secret is not affected.
  EXPECT_TRUE(c.client().overview().ok());
}

// Bodies are bounded before they are read: a job submission over 1 MiB is
// refused with 413 (and without the secret, 401) from its head alone; JSON
// nested too deep and oversized job arguments are refused with 400; the
// JobManager's memory does not grow with what was sent; unknown routes and
// bodiless POSTs get JSON errors.
TEST(ClusterTest, OversizedAndHostileRequestsAreRefusedCheaply) {
  Cluster c("cluster-bodies");
  c.start_jobmanager();
  ASSERT_TRUE(c.ok()) << c.jm_log();
  const std::string auth = "Authorization: Bearer " + c.secret() + "\r\n";
  const int64_t rss_before = rss_kb(c.jobmanager()->pid());

  std::string big = raw_http(c.rest(), "POST /v1/jobs HTTP/1.1\r\nHost: x\r\n" + auth +
                                           "Content-Type: application/json\r\nContent-Length: 20000000\r\n\r\n" +
                                           std::string(64 * 1024, '['));
  EXPECT_EQ(big.rfind("HTTP/1.1 413", 0), 0u) << big.substr(0, 200);
  EXPECT_NE(big.find("exceeds the limit of 1048576 bytes"), std::string::npos) << big;
  std::string anonymous = raw_http(c.rest(), "POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 20000000\r\n\r\n");
  EXPECT_EQ(anonymous.rfind("HTTP/1.1 401", 0), 0u) << anonymous.substr(0, 200);
  std::string chunked = raw_http(c.rest(), "POST /v1/jobs HTTP/1.1\r\nHost: x\r\n" + auth +
                                               "Transfer-Encoding: chunked\r\n\r\n");
  EXPECT_EQ(chunked.rfind("HTTP/1.1 411", 0), 0u) << chunked.substr(0, 200);

  auto rest_client = testing::http_client(c.rest());
  httplib::Client& http = *rest_client;
  httplib::Headers headers = {{"Authorization", "Bearer " + c.secret()}};
  auto deep = http.Post("/v1/jobs", headers, std::string(100000, '[') + std::string(100000, ']'), "application/json");
  ASSERT_TRUE(deep);
  EXPECT_EQ(deep->status, 400) << deep->body;
  nlohmann::json many = {{"name", "running-sum"}, {"args", {std::string(70000, 'x')}}};
  auto args = http.Post("/v1/jobs", headers, many.dump(), "application/json");
  ASSERT_TRUE(args);
  EXPECT_EQ(args->status, 400) << args->body;
  EXPECT_NE(args->body.find("job arguments too large"), std::string::npos) << args->body;
  auto nowhere = http.Get("/v1/nowhere", headers);
  ASSERT_TRUE(nowhere);
  EXPECT_EQ(nowhere->status, 404);
  EXPECT_TRUE(nlohmann::json::parse(nowhere->body, nullptr, false).contains("error")) << nowhere->body;
  std::string bodiless = raw_http(c.rest(), "POST /v1/jobs/0123abcd/cancel HTTP/1.1\r\nHost: x\r\n" + auth + "\r\n");
  EXPECT_EQ(bodiless.rfind("HTTP/1.1 411", 0), 0u) << bodiless;
  EXPECT_NE(bodiless.find("{\"error\":\"POST /v1/jobs/0123abcd/cancel needs a Content-Length header"), std::string::npos)
      << bodiless;

  const int64_t rss_after = rss_kb(c.jobmanager()->pid());
  EXPECT_LT(rss_after - rss_before, 64 * 1024) << "JobManager RSS grew from " << rss_before << " kB to " << rss_after
                                               << " kB";
  auto o = c.client().overview();
  EXPECT_TRUE(o.ok()) << o.status();
}

// A TaskManager under a low descriptor limit gets hundreds of silent
// connections on its data port (no hello, never closed): they are dropped
// after the handshake deadline, the port keeps accepting (also through
// EMFILE), and a job spread over it and another TaskManager runs
// exactly-once.
TEST(ClusterTest, SilentConnectionsNeitherKillTheDataPortNorTheNextJob) {
  Cluster c("cluster-silent");
  const std::string input = c.dir().path("in.txt");
  ASSERT_TRUE(examples::generate_running_sum_input(input, 100000, 500, 0, 11).ok());
  c.start_jobmanager();
  ASSERT_TRUE(c.ok()) << c.jm_log();
  c.start_taskmanager("tm-a", 2, "127.0.0.1", {"/bin/bash", "-c", "ulimit -n 64 && exec \"$@\"", "bash"});
  c.start_taskmanager("tm-b", 2);
  ASSERT_TRUE(c.ok()) << "a TaskManager did not register\n" << c.jm_log();
  auto o = c.client().overview();
  ASSERT_TRUE(o.ok()) << o.status();
  std::string data_address;
  for (const auto& t : (*o)["taskmanagers"]) {
    if (t["id"] == "tm-a") data_address = t["data_address"].get<std::string>();
  }
  ASSERT_FALSE(data_address.empty()) << *o;
  EXPECT_NE(slurp(c.dir().path("tm-a.out")).find("data port " + data_address), std::string::npos);
  std::vector<int> silent;
  const auto flood_until = std::chrono::steady_clock::now() + 20s;
  for (int i = 0; i < 300 && std::chrono::steady_clock::now() < flood_until; ++i) {
    auto fd = network::connect_tcp(data_address, 1000);
    if (fd.ok()) silent.push_back(*fd);
  }
  EXPECT_GE(silent.size(), 200u);
  auto job = c.client().submit("running-sum", {"--input", input, "--output", c.dir().path("out"), "-p", "4",
                                               "--checkpoint-dir", c.dir().path("chk"), "--checkpoint-interval",
                                               "100ms", "--rate", "20000"});
  ASSERT_TRUE(job.ok()) << job.status();
  auto done = c.client().wait(*job, 120000);
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_EQ((*done)["status"], "FINISHED") << *done << "\n" << c.jm_log() << slurp(c.dir().path("tm-a.err"));
  expect_exactly_once({input}, c.dir().path("out"));
  EXPECT_EQ(c.taskmanager("tm-a")->running(), true);
  for (int fd : silent) ::close(fd);
}

// A config file gives every command its defaults: the secret at the top,
// the client's JobManager in [client], a TaskManager's in [taskmanager];
// the command line wins; unknown keys, sections and bad values are refused
// naming the file and the key.
TEST(ClusterTest, ConfigFileSuppliesOptionsAndRefusesUnknownKeys) {
  Cluster c("cluster-config");
  c.start_jobmanager();
  ASSERT_TRUE(c.ok()) << c.jm_log();
  const std::string config = c.dir().path("weir.toml");
  std::ofstream(config) << "# the cluster\nsecret-file = \"" << c.secret_file() << "\"\n\n[taskmanager]\njobmanager = \""
                        << c.address() << "\"\nslots = 3\n\n[client]\njobmanager = \"" << c.rest() << "\"\n";
  Child from_file({testing::weir_bin(), "taskmanager", "--config", config, "--id", "tm-file"}, c.dir().path("tm-file"));
  Child overridden({testing::weir_bin(), "taskmanager", "--config", config, "--id", "tm-cli", "--slots", "2"},
                   c.dir().path("tm-cli"));
  std::map<std::string, int> slots;
  ASSERT_TRUE(eventually(
      [&] {
        auto o = c.client().overview();
        if (!o.ok()) return false;
        slots.clear();
        for (const auto& t : (*o)["taskmanagers"]) slots[t["id"].get<std::string>()] = t["slots"].get<int>();
        return slots.size() == 2;
      },
      20s))
      << slurp(c.dir().path("tm-file.err")) << slurp(c.dir().path("tm-cli.err"));
  EXPECT_EQ(slots["tm-file"], 3);
  EXPECT_EQ(slots["tm-cli"], 2);
  // A client with nothing but the file reaches the JobManager.
  auto overview = testing::run_weir({"overview", "--config", config}, c.dir().path("overview"));
  EXPECT_EQ(overview.code, 0) << overview.err;
  EXPECT_NE(overview.out.find("tm-file"), std::string::npos) << overview.out;

  struct Case {
    std::string text, command, message;
  };
  for (const Case& k : {Case{"slots = 3\n", "list", "'slots' belongs in a section"},
                        Case{"[client]\nslots = 3\n", "list", "'client.slots' is not an option of weir list"},
                        Case{"[taskmanager]\nslots = \"many\"\n", "taskmanager", "'taskmanager.slots': --slots"},
                        Case{"[clients]\njobmanager = \"x\"\n", "list", "unknown section of 'clients.jobmanager'"}}) {
    const std::string bad = c.dir().path("bad.toml");
    std::ofstream(bad, std::ios::trunc) << k.text;
    auto r = testing::run_weir({k.command, "--config", bad}, c.dir().path("bad"));
    EXPECT_EQ(r.code, 2) << k.text << r.err;
    EXPECT_NE(r.err.find("config file " + bad + ": " + k.message), std::string::npos) << r.err;
  }
  auto missing = testing::run_weir({"list", "--config", c.dir().path("none.toml")}, c.dir().path("none"));
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("cannot read config file " + c.dir().path("none.toml")), std::string::npos) << missing.err;
}

// Job settings by Flink's keys, from the config file's [job] section and
// -D, reach the job the cluster runs; a flag given explicitly wins.
TEST(ClusterTest, JobSettingsFromTheConfigFileAndDReachTheCluster) {
  Cluster c("cluster-job-settings");
  ASSERT_TRUE(c.start({{"tm-a", 4}})) << c.jm_log();
  const std::string input = c.dir().path("in.txt");
  ASSERT_EQ(testing::run_weir({"generate", "running-sum-input", "--output", input, "--lines", "1000"},
                              c.dir().path("gen"))
                .code,
            0);
  const std::string config = c.dir().path("weir.toml");
  std::ofstream(config) << "secret-file = \"" << c.secret_file() << "\"\n[client]\njobmanager = \"" << c.rest()
                        << "\"\n[job]\nparallelism.default = 3\nexecution.checkpointing.interval = \"1 min\"\n"
                        << "state.backend.type = \"hashmap\"\n";
  const std::vector<std::string> job = {"running-sum", "--input", input, "--output", c.dir().path("out")};
  auto with = [&](std::vector<std::string> args) {
    args.insert(args.end(), job.begin(), job.end());
    return args;
  };
  auto dry = testing::run_weir(with({"run", "--dry-run", "--config", config, "-D", "state.backend.type=rocksdb"}),
                               c.dir().path("dry"));
  ASSERT_EQ(dry.code, 0) << dry.err;
  EXPECT_NE(dry.out.find("settings: parallelism 3, max parallelism 128, exactly-once checkpoints every 1min to memory, "
                         "state rocksdb"),
            std::string::npos)
      << dry.out;

  auto submitted = testing::run_weir(
      with({"run", "--detached", "--config", config, "-D", "jobmanager.execution.failover-strategy=full", "-D",
            "state.checkpoints.dir=file://" + c.dir().path("chk")}),
      c.dir().path("submit"));
  ASSERT_EQ(submitted.code, 0) << submitted.err;
  const std::string id = submitted.out.substr(submitted.out.find("submitted job ") + 14, 32);
  auto done = c.client().wait(id, 60000);
  ASSERT_TRUE(done.ok()) << done.status();
  auto detail = c.client().job(id);
  ASSERT_TRUE(detail.ok()) << detail.status();
  EXPECT_EQ((*detail)["status"], "FINISHED") << *detail;
  for (const auto& v : (*detail)["vertices"]) EXPECT_EQ(v["parallelism"], 3) << *detail;

  // -p on the command line wins over the file.
  std::vector<std::string> p2 = with({"run", "--dry-run", "--config", config});
  p2.insert(p2.end(), {"-p", "2"});
  auto explicit_p = testing::run_weir(p2, c.dir().path("p"));
  ASSERT_EQ(explicit_p.code, 0) << explicit_p.err;
  EXPECT_NE(explicit_p.out.find("settings: parallelism 2,"), std::string::npos) << explicit_p.out;

  // An unknown key or a bad value: exit 2, one line naming it.
  auto bad = testing::run_weir(with({"run", "--config", config, "-D", "state.backend.type=memory"}), c.dir().path("bad"));
  EXPECT_EQ(bad.code, 2) << bad.err;
  EXPECT_NE(bad.err.find("job setting state.backend.type=memory: expected hashmap | heap | rocksdb"), std::string::npos)
      << bad.err;
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1) << bad.err;
}

// TLS on: a client without the CA, or trusting another CA, is refused in
// words; a TaskManager registers and runs a job over TLS; a secret shorter
// than 16 bytes and incomplete TLS flags stop a process at start.
TEST(ClusterTest, TlsRefusesPlainAndUntrustingClientsAndBadSettings) {
  const testing::TestCerts& certs = testing::test_certs();
  ASSERT_EQ(certs.error, "");
  Cluster c("cluster-tls");
  const std::vector<std::string> tls = {"--tls-cert", certs.cert, "--tls-key", certs.key, "--tls-ca", certs.ca};
  c.add_jobmanager_args(tls);
  c.add_taskmanager_args(tls);
  c.set_client_tls_ca(certs.ca);
  c.start_jobmanager();
  ASSERT_TRUE(c.ok()) << c.jm_log();
  c.start_taskmanager("tm-a", 2);
  ASSERT_TRUE(c.ok()) << c.jm_log();
  // Clients in their own environment: no TLS settings but those given.
  auto client = [&](std::vector<std::string> args, const std::string& name) {
    args.insert(args.begin(), testing::weir_bin());
    Child p(args, c.dir().path(name), false, {"WEIR_TLS_CA=", "WEIR_TLS_CERT=", "WEIR_TLS_KEY="});
    int code = p.wait();
    return RunResult{code, p.out(), p.err()};
  };
  const std::vector<std::string> list = {"list", "--jobmanager", c.rest(), "--secret-file", c.secret_file()};
  auto plain = client(list, "plain");
  EXPECT_EQ(plain.code, 2) << plain.err;
  EXPECT_EQ(plain.err, "weir: this port speaks TLS (HTTPS): use https:// and the cluster's CA (--tls-ca)\n");
  testing::TestCerts other = testing::make_test_certs(c.dir().path("other-ca"));
  ASSERT_EQ(other.error, "");
  std::vector<std::string> foreign = list;
  foreign.insert(foreign.end(), {"--tls-ca", other.ca});
  auto untrusted = client(foreign, "foreign");
  EXPECT_EQ(untrusted.code, 5) << untrusted.err;
  EXPECT_EQ(untrusted.err, "weir: JobManager " + c.rest() +
                               " unreachable: its certificate is not signed by --tls-ca or does not name this host\n");
  std::vector<std::string> trusted = list;
  trusted.insert(trusted.end(), {"--tls-ca", certs.ca});
  auto ok = client(trusted, "trusted");
  EXPECT_EQ(ok.code, 0) << ok.err;

  // A job across the TLS cluster.
  const std::string input = c.dir().path("in.txt");
  ASSERT_TRUE(examples::generate_running_sum_input(input, 20000, 100, 0, 5).ok());
  std::vector<std::string> run = {"run", "--jobmanager", c.rest(), "--secret-file", c.secret_file(), "--tls-ca",
                                  certs.ca, "running-sum", "--input", input, "--output", c.dir().path("out"), "-p",
                                  "2", "--checkpoint-dir", c.dir().path("chk")};
  auto ran = client(run, "run");
  EXPECT_EQ(ran.code, 0) << ran.err;
  auto verified = testing::run_weir({"verify", "running-sum", "--input", input, "--output", c.dir().path("out")},
                                    c.dir().path("verify"));
  EXPECT_EQ(verified.code, 0) << verified.out << verified.err;

  // A TaskManager without TLS cannot join.
  Child plain_tm({testing::weir_bin(), "taskmanager", "--jobmanager", c.address(), "--secret-file", c.secret_file(),
                  "--id", "tm-plain"},
                 c.dir().path("tm-plain"), false, {"WEIR_TLS_CA=", "WEIR_TLS_CERT=", "WEIR_TLS_KEY="});
  auto listed = [&] {
    auto o = c.client().overview();
    return o.ok() && o->dump().find("tm-plain") != std::string::npos;
  };
  EXPECT_FALSE(eventually(listed, 3s)) << "a TaskManager without TLS registered";

  // Bad settings stop a process at start: exit 2, one line.
  const std::string short_secret = c.dir().path("short");
  std::ofstream(short_secret) << "too-short\n";
  auto weak = client({"jobmanager", "--secret-file", short_secret, "--rest-port", "0", "--bind", "127.0.0.1:0"},
                     "weak");
  EXPECT_EQ(weak.code, 2);
  EXPECT_EQ(weak.err, "weir: the cluster secret in " + short_secret +
                          " is 9 bytes; it needs at least 16 (e.g. head -c 24 /dev/urandom | base64)\n");
  auto partial = client({"jobmanager", "--secret-file", c.secret_file(), "--rest-port", "0", "--bind",
                         "127.0.0.1:0", "--tls-cert", certs.cert, "--tls-ca", certs.ca},
                        "partial");
  EXPECT_EQ(partial.code, 2);
  EXPECT_NE(partial.err.find("TLS needs --tls-cert, --tls-key and --tls-ca together; missing: --tls-key"),
            std::string::npos)
      << partial.err;
  // A certificate that expired, or that does not name the address the
  // process listens on: refused at start, not on every connection later.
  testing::TestCerts expired = testing::make_expired_cert(c.dir().path("expired"));
  ASSERT_EQ(expired.error, "");
  auto stale = client({"jobmanager", "--secret-file", c.secret_file(), "--rest-port", "0", "--bind", "127.0.0.1:0",
                       "--tls-cert", expired.cert, "--tls-key", expired.key, "--tls-ca", certs.ca},
                      "stale");
  EXPECT_EQ(stale.code, 2) << stale.err;
  EXPECT_NE(stale.err.find("--tls-cert " + expired.cert + ": the certificate expired on "), std::string::npos)
      << stale.err;
  auto stale_tm = client({"taskmanager", "--jobmanager", c.address(), "--secret-file", c.secret_file(), "--tls-cert",
                          expired.cert, "--tls-key", expired.key, "--tls-ca", certs.ca},
                         "stale-tm");
  EXPECT_EQ(stale_tm.code, 2) << stale_tm.err;
  EXPECT_NE(stale_tm.err.find("the certificate expired on "), std::string::npos) << stale_tm.err;
  auto elsewhere = client({"jobmanager", "--secret-file", c.secret_file(), "--rest-port", "0", "--bind",
                           "127.0.0.2:0", "--tls-cert", certs.cert, "--tls-key", certs.key, "--tls-ca", certs.ca},
                          "elsewhere");
  EXPECT_EQ(elsewhere.code, 2) << elsewhere.err;
  EXPECT_NE(elsewhere.err.find("the certificate does not name 127.0.0.2"), std::string::npos) << elsewhere.err;
  auto elsewhere_tm = client({"taskmanager", "--jobmanager", c.address(), "--secret-file", c.secret_file(), "--bind",
                              "127.0.0.2", "--tls-cert", certs.cert, "--tls-key", certs.key, "--tls-ca", certs.ca},
                             "elsewhere-tm");
  EXPECT_EQ(elsewhere_tm.code, 2) << elsewhere_tm.err;
  EXPECT_NE(elsewhere_tm.err.find("the certificate does not name 127.0.0.2"), std::string::npos) << elsewhere_tm.err;
  auto mismatch = client({"taskmanager", "--jobmanager", c.address(), "--secret-file", c.secret_file(), "--tls-cert",
                          certs.cert, "--tls-key", other.key, "--tls-ca", certs.ca},
                         "mismatch");
  EXPECT_EQ(mismatch.code, 2);
  EXPECT_NE(mismatch.err.find("--tls-key " + other.key + " does not match --tls-cert " + certs.cert),
            std::string::npos)
      << mismatch.err;
}

}  // namespace
}  // namespace weir
