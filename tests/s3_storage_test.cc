// Checkpoints in S3-compatible storage against a real server (s3rver): the
// client's requests (signed, multipart, listed, retried), and jobs that
// checkpoint to s3://, fail, restore and resume from there.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_join.h"
#include "s3/s3_client.h"
#include "checkpoint/s3_storage.h"
#include "checkpoint/storage.h"
#include "examples/running_sum/running_sum.h"
#include "tests/process.h"
#include "tests/s3_server.h"
#include "tests/tcp_proxy.h"
#include "testing/seed.h"

namespace weir {
namespace {

using s3::S3Client;
using s3::S3Url;
using testing::Child;
using testing::S3Server;
using testing::TempDir;
namespace fs = std::filesystem;

class S3Test : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::make_unique<TempDir>(std::string("s3-") +
                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    server_ = std::make_unique<S3Server>(*dir_, "weir");
    ASSERT_TRUE(server_->start()) << "s3rver did not start (scripts/install-deps.sh installs it): "
                                  << server_->log();
  }
  std::string path(const std::string& p) { return dir_->path(p); }
  // The running-sum job's committed output `out` for input in.txt.
  void expect_exactly_once(const std::string& out) {
    auto check = examples::check_running_sum({path("in.txt")}, out);
    ASSERT_TRUE(check.ok()) << check.status();
    for (const auto& p : check->problems) ADD_FAILURE() << out << ": " << p;
    EXPECT_TRUE(check->exactly_once) << out;
  }

  // See its definition below.
  std::string restores_and_rescales(const std::string& name, const std::vector<std::string>& state);

  std::unique_ptr<TempDir> dir_;
  std::unique_ptr<S3Server> server_;
};

TEST_F(S3Test, ClientPutsGetsListsAndRemovesObjects) {
  S3Client s3(server_->settings());
  const S3Url a{"weir", "dir/a"};
  ASSERT_TRUE(s3.put(a, "alpha").ok());
  ASSERT_TRUE(s3.put({"weir", "dir/b c+d"}, "").ok());  // a key that needs encoding; an empty object
  ASSERT_TRUE(s3.put({"weir", "dirty"}, "x").ok());
  auto got = s3.get(a);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "alpha");

  auto listed = s3.list({"weir", "dir/"});
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_EQ((*listed)[0].key, "dir/a");
  EXPECT_EQ((*listed)[0].size, 5);
  EXPECT_EQ((*listed)[1].key, "dir/b c+d");
  EXPECT_FALSE((*listed)[0].last_modified.empty());
  auto size = s3.size(a);
  ASSERT_TRUE(size.ok()) << size.status();
  EXPECT_EQ(*size, 5);

  auto missing = s3.get({"weir", "dir/none"});
  EXPECT_TRUE(absl::IsNotFound(missing.status())) << missing.status();
  EXPECT_NE(missing.status().message().find("GET s3://weir/dir/none: HTTP 404 NoSuchKey"), std::string::npos)
      << missing.status();
  auto no_bucket = s3.get({"no-such-bucket", "k"});
  EXPECT_FALSE(no_bucket.ok());
  EXPECT_NE(no_bucket.status().message().find("NoSuchBucket"), std::string::npos) << no_bucket.status();

  // "dir/" is a prefix of keys, not of "dirty".
  ASSERT_TRUE(s3.remove_all({"weir", "dir/"}).ok());
  listed = s3.list({"weir", ""});
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].key, "dirty");
  EXPECT_TRUE(s3.remove({"weir", "gone"}).ok()) << "removing what is not there is no error";
}

// Large objects go up in parts, streamed; an upload never finished leaves
// nothing behind.
TEST_F(S3Test, WriterUploadsInPartsAndAnUnfinishedUploadLeavesNothing) {
  s3::S3Settings settings = server_->settings();
  settings.part_bytes = 5 << 20;  // S3's smallest
  S3Client s3(settings);
  std::string bytes(12 << 20, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>((i * 2654435761u) >> 13);
  {
    auto w = s3.writer({"weir", "big"});
    for (size_t at = 0; at < bytes.size(); at += 1 << 20) {
      ASSERT_TRUE(w->append(std::string_view(bytes).substr(at, 1 << 20)).ok());
    }
    auto s = w->finish();
    ASSERT_TRUE(s.ok()) << s;
  }
  auto got = s3.get({"weir", "big"});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->size(), bytes.size());
  EXPECT_TRUE(*got == bytes);
  {
    auto w = s3.writer({"weir", "abandoned"});
    ASSERT_TRUE(w->append(bytes).ok());  // two parts went up
  }
  EXPECT_TRUE(absl::IsNotFound(s3.get({"weir", "abandoned"}).status()));

  // A local file, the same way.
  const std::string file = path("local.bin");
  {
    std::ofstream out(file, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  ASSERT_TRUE(s3.put_file({"weir", "from-file"}, file).ok());
  auto size = s3.size({"weir", "from-file"});
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(*size, static_cast<int64_t>(bytes.size()));
}

// A server that is down: requests are retried with backoff and succeed
// once it is back; while it stays down they fail naming the request and the
// cause.
TEST_F(S3Test, RequestsAreRetriedUntilTheServerIsBackOrTheAttemptsRunOut) {
  s3::S3Settings settings = server_->settings();
  S3Client quick(settings);  // 3 attempts, 20 ms apart at first
  server_->stop();
  absl::Status down = quick.put({"weir", "k"}, "v");
  EXPECT_TRUE(absl::IsUnavailable(down)) << down;
  EXPECT_NE(down.message().find("PUT s3://weir/k: "), std::string::npos) << down;
  EXPECT_NE(down.message().find("(after 3 attempts)"), std::string::npos) << down;

  settings.max_attempts = 10;  // 0.1 + 0.2 + ... capped at 5 s: about 25 s in all
  settings.first_backoff = std::chrono::milliseconds(100);
  S3Client patient(settings);
  absl::Status later = absl::UnknownError("not done");
  std::thread writer([&] { later = patient.put({"weir", "k"}, "v"); });
  ASSERT_TRUE(server_->start());
  writer.join();
  EXPECT_TRUE(later.ok()) << later;
  auto got = patient.get({"weir", "k"});
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "v");
}

// Runs running-sum with its checkpoints in S3; the process's environment
// names the server.
testing::RunResult run_running_sum(const S3Server& server, std::vector<std::string> args,
                                   const std::string& log_prefix) {
  args.insert(args.begin(), {testing::weir_bin(), "example", "running-sum"});
  Child c(args, log_prefix, false, server.env());
  const int code = c.wait();
  return {code, c.out(), c.err()};
}

// The running-sum job checkpoints to s3:// and fails now and then: each
// restart restores from S3 and the output is exactly-once. Then a broken
// newest checkpoint (a state file cut short) and an incomplete one (no
// _metadata) are passed over by --restore latest, which names both, and the
// job resumes from the newest intact one.
TEST_F(S3Test, JobsCheckpointToS3RestoreFromItAndSkipBrokenCheckpoints) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  ASSERT_TRUE(examples::generate_running_sum_input(path("in.txt"), 200000, 300, 0, seed).ok());
  const std::string chk = server_->url("checkpoints");
  auto r = run_running_sum(*server_,
                           {"--input", path("in.txt"), "--output", path("out"), "-p", "2", "--checkpoint-dir", chk,
                            "--checkpoint-interval", "100ms", "--fail-every", "40000", "--seed",
                            std::to_string(seed), "--retained-checkpoints", "3", "--rate", "50000"},
                           path("run"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("restarts: 0"), std::string::npos) << "no failure was injected: " << r.out;
  expect_exactly_once(path("out"));

  // What the job left: its retained checkpoints, each committed by its
  // _metadata.
  S3Client s3(server_->settings());
  auto objects = s3.list({"weir", "checkpoints/"});
  ASSERT_TRUE(objects.ok()) << objects.status();
  std::vector<std::string> metadata;
  for (const auto& o : *objects) {
    if (o.key.size() > 10 && o.key.compare(o.key.size() - 10, 10, "/_metadata") == 0) metadata.push_back(o.key);
  }
  ASSERT_GE(metadata.size(), 2u);
  EXPECT_LE(metadata.size(), 3u) << "subsumed checkpoints are removed from S3";

  server_->set_env();
  std::vector<std::string> skipped;
  auto newest = checkpoint::find_latest_checkpoint(chk, &skipped);
  ASSERT_TRUE(newest.ok()) << newest.status();
  EXPECT_TRUE(skipped.empty()) << absl::StrJoin(skipped, "\n");
  // Break the newest: cut one of its state files short.
  auto newest_url = s3::parse_s3_url(newest->location);
  ASSERT_TRUE(newest_url.ok());
  const std::string state_file = newest->metadata.operators.front().subtasks.front().file;
  const S3Url victim{"weir", newest_url->key + "/" + state_file};
  auto bytes = s3.get(victim);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  ASSERT_TRUE(s3.put(victim, bytes->substr(0, bytes->size() / 2)).ok());
  // And leave an incomplete checkpoint, newer still.
  ASSERT_TRUE(s3.put({"weir", "checkpoints/some-job/chk-999/x.state"}, "partial").ok());
  skipped.clear();
  auto intact = checkpoint::find_latest_checkpoint(chk, &skipped);
  ASSERT_TRUE(intact.ok()) << intact.status();
  EXPECT_NE(intact->location, newest->location);
  ASSERT_EQ(skipped.size(), 2u);
  std::string all;
  for (const auto& s : skipped) all += s + "\n";
  EXPECT_NE(all.find("s3://weir/checkpoints/some-job/chk-999: incomplete checkpoint (no _metadata)"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find(victim.str() + ": size "), std::string::npos) << all;

  // --restore latest takes the intact one, and says what it skipped. (Into
  // the same output: the sink publishes what the checkpoint holds pending,
  // which the first run already did.)
  auto resumed = run_running_sum(*server_,
                                 {"--input", path("in.txt"), "--output", path("out"), "-p", "3",
                                  "--checkpoint-dir", chk, "--restore", "latest"},
                                 path("resume"));
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("restored from checkpoint " + std::to_string(intact->metadata.checkpoint_id) + " (" +
                             intact->location + ")"),
            std::string::npos)
      << resumed.out;
  EXPECT_NE(resumed.err.find("skipping checkpoint s3://weir/checkpoints/some-job/chk-999: incomplete"),
            std::string::npos)
      << resumed.err;
}

// S3 goes away for longer than a request's retries while a job checkpoints
// to it: checkpoints fail (and the job restarts, failing to restore while
// the server is down), and once it is back the job goes on from the last
// checkpoint that completed. The output is exactly-once: nothing half-
// written was used.
TEST_F(S3Test, AJobOutlivesAnS3OutageExactlyOnce) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  ASSERT_TRUE(examples::generate_running_sum_input(path("in.txt"), 100000, 300, 0, seed).ok());
  // About 10 s of input.
  std::vector<std::string> args = {testing::weir_bin(), "example", "running-sum", "--input", path("in.txt"),
                                   "--output", path("out"), "-p", "2", "--checkpoint-dir",
                                   server_->url("checkpoints"), "--checkpoint-interval", "100ms", "--rate", "5000",
                                   "--restart-delay", "200ms"};
  Child job(args, path("job"), false, server_->env());
  S3Client s3(server_->settings());
  auto committed = [&] {
    auto objects = s3.list({"weir", "checkpoints/"});
    int n = 0;
    for (const auto& o : objects.value_or(std::vector<S3Client::Object>{})) {
      n += o.key.size() > 10 && o.key.compare(o.key.size() - 10, 10, "/_metadata") == 0;
    }
    return n;
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (committed() < 2 && std::chrono::steady_clock::now() < deadline && job.running()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // polling S3
  }
  ASSERT_GE(committed(), 2) << job.err();
  server_->stop();
  // The outage lasts until a request of the job gave up (6 attempts,
  // 0.1 + 0.2 + ... + 1.6 s apart), so a checkpoint failed.
  const auto gave_up_by = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (job.err().find("(after 6 attempts)") == std::string::npos &&
         std::chrono::steady_clock::now() < gave_up_by && job.running()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // polling the job's log
  }
  EXPECT_NE(job.err().find("(after 6 attempts)"), std::string::npos) << "no request gave up during the outage: "
                                                                     << job.err();
  ASSERT_TRUE(server_->start());
  ASSERT_EQ(job.wait(), 0) << job.err();
  const std::string out = job.out();
  EXPECT_NE(out.find("FINISHED"), std::string::npos) << out;
  expect_exactly_once(path("out"));
}

// Every connection to S3 breaks part-way (through a proxy, after a random
// number of bytes up to 256 KiB either way): requests and answers are cut
// short, retried on a new connection, and a checkpoint whose request runs
// out of attempts fails while the next one is taken. The job, which also
// fails and restores from S3 now and then, finishes exactly-once: nothing
// half-written was restored or committed.
TEST_F(S3Test, ConnectionsBrokenPartWayFailRequestsNotTheOutput) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  ASSERT_TRUE(examples::generate_running_sum_input(path("in.txt"), 150000, 2000, 0, seed).ok());
  const std::string endpoint = server_->endpoint();
  testing::TcpProxy flaky(std::atoi(endpoint.substr(endpoint.rfind(':') + 1).c_str()));
  flaky.break_connections(1.0, 256 << 10, seed);
  std::vector<std::string> env;
  for (const std::string& kv : server_->env()) {
    env.push_back(kv.rfind("AWS_ENDPOINT_URL_S3=", 0) == 0
                      ? "AWS_ENDPOINT_URL_S3=http://127.0.0.1:" + std::to_string(flaky.port())
                      : kv);
  }
  Child job({testing::weir_bin(), "example", "running-sum", "--input", path("in.txt"), "--output", path("out"), "-p",
             "2", "--checkpoint-dir", server_->url("checkpoints"), "--checkpoint-interval", "100ms", "--fail-every",
             "50000", "--seed", std::to_string(seed), "--rate", "20000", "--restart-delay", "100ms"},
            path("job"), false, env);
  ASSERT_EQ(job.wait(), 0) << job.err();
  EXPECT_GT(flaky.broken(), 0) << "no connection was broken";
  EXPECT_EQ(job.out().find("restarts: 0"), std::string::npos) << "no failure was injected: " << job.out();
  expect_exactly_once(path("out"));
  std::printf("connections broken: %d\n", flaky.broken());
}

// Without credentials a job with an s3:// checkpoint directory does not
// start, and says what to set; --incremental on S3 is refused.
// The S3 connection from flags, from the config file's [s3] section
// ($WEIR_CONFIG), from the environment, in that order: with an environment
// that points nowhere, a job given the flags or the config file checkpoints
// to S3 and restores from it; a flag wins over the file.
TEST_F(S3Test, ConnectionSettingsFromFlagsAndTheConfigFileWinOverTheEnvironment) {
  ASSERT_TRUE(examples::generate_running_sum_input(path("in.txt"), 60000, 50, 0, 7).ok());
  const std::vector<std::string> wrong_env = {"AWS_ACCESS_KEY_ID=WRONG", "AWS_SECRET_ACCESS_KEY=WRONG",
                                              "AWS_ENDPOINT_URL_S3=http://127.0.0.1:1", "WEIR_CONFIG="};
  S3Client s3(server_->settings());
  auto committed = [&](const std::string& prefix) {
    auto objects = s3.list({"weir", prefix + "/"});
    int metadata = 0;
    if (!objects.ok()) return -1;
    for (const auto& o : *objects) metadata += o.key.size() > 10 && o.key.compare(o.key.size() - 10, 10, "/_metadata") == 0;
    return metadata;
  };
  auto run = [&](const std::string& name, std::vector<std::string> extra, std::vector<std::string> env) {
    std::vector<std::string> args = {testing::weir_bin(), "example", "running-sum", "--input", path("in.txt"),
                                     "--output", path("out-" + name), "-p", "2", "--checkpoint-dir",
                                     server_->url(name), "--checkpoint-interval", "50ms", "--fail-every", "8000",
                                     "--rate", "20000"};
    args.insert(args.end(), extra.begin(), extra.end());
    Child c(args, path(name), false, env);
    const int code = c.wait();
    return testing::RunResult{code, c.out(), c.err()};
  };
  auto exactly_once = [&](const std::string& name) { expect_exactly_once(path("out-" + name)); };

  auto flags = run("flags", server_->flags(path("secret")), wrong_env);
  ASSERT_EQ(flags.code, 0) << flags.err;
  EXPECT_EQ(flags.out.find("restarts: 0"), std::string::npos) << "no restore from S3 happened: " << flags.out;
  EXPECT_GE(committed("flags"), 1);
  exactly_once("flags");

  server_->write_config(path("weir.toml"));
  std::vector<std::string> config_env = wrong_env;
  config_env.back() = "WEIR_CONFIG=" + path("weir.toml");
  auto file = run("file", {}, config_env);
  ASSERT_EQ(file.code, 0) << file.err;
  EXPECT_GE(committed("file"), 1) << server_->log();
  exactly_once("file");

  // A config file pointing nowhere, a flag pointing at the server.
  std::ofstream(path("nowhere.toml")) << "[s3]\nendpoint = \"http://127.0.0.1:1\"\naccess-key = \"S3RVER\"\n"
                                      << "secret-key-file = \"" << path("secret") << "\"\n";
  config_env.back() = "WEIR_CONFIG=" + path("nowhere.toml");
  auto flag_wins = run("flag-wins", {"--s3-endpoint", server_->endpoint()}, config_env);
  ASSERT_EQ(flag_wins.code, 0) << flag_wins.err;
  EXPECT_GE(committed("flag-wins"), 1) << server_->log();
  exactly_once("flag-wins");
}

// Bad S3 settings: one line each, exit 2, before the job starts.
TEST_F(S3Test, BadConnectionSettingsAreRefused) {
  ASSERT_TRUE(examples::generate_running_sum_input(path("in.txt"), 100, 10, 0, 1).ok());
  const std::vector<std::string> no_env = {"AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=", "WEIR_CONFIG="};
  auto refused = [&](const std::string& name, std::vector<std::string> args, std::vector<std::string> env,
                     const std::string& message) {
    args.insert(args.begin(), testing::weir_bin());
    Child c(args, path(name), false, env);
    EXPECT_EQ(c.wait(), 2) << name << ": " << c.err();
    const std::string err = c.err();
    EXPECT_NE(err.find(message), std::string::npos) << name << ": " << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << name << ": " << err;
  };
  const std::vector<std::string> job = {"example", "running-sum", "--input", path("in.txt"), "--output",
                                        path("out"), "--checkpoint-dir", server_->url("c")};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = job;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  refused("half", with({"--s3-endpoint", server_->endpoint(), "--s3-access-key", "S3RVER"}), no_env,
          "S3 credentials need both an access key (--s3-access-key) and a secret key file (--s3-secret-key-file)");
  refused("no-secret-file",
          with({"--s3-endpoint", server_->endpoint(), "--s3-access-key", "S3RVER", "--s3-secret-key-file",
                path("absent")}),
          no_env, "cannot read S3 secret key file " + path("absent") + ": No such file or directory");
  refused("bad-endpoint", with({"--s3-endpoint", "127.0.0.1:9", "--s3-access-key", "S3RVER",
                                "--s3-secret-key-file", path("in.txt")}),
          no_env, "S3 endpoint 127.0.0.1:9 must start with http:// or https://");
  std::ofstream(path("bad.toml")) << "[s3]\nsecret-key = \"x\"\n";
  refused("bad-key", job, {"WEIR_CONFIG=" + path("bad.toml")},
          "config file " + path("bad.toml") + ": 's3.secret-key' is not an S3 setting");
  refused("on-a-client",
          {"run", "--jobmanager", "127.0.0.1:1", "--s3-endpoint", server_->endpoint(), "running-sum", "--input",
           path("in.txt"), "--output", path("out")},
          no_env, "run: --s3-endpoint sets the S3 connection of the process that runs the job");
}

TEST_F(S3Test, MissingCredentialsAreAClearError) {
  ASSERT_TRUE(examples::generate_running_sum_input(path("in.txt"), 100, 10, 0, 1).ok());
  Child no_credentials({testing::weir_bin(), "example", "running-sum", "--input", path("in.txt"), "--output",
                        path("out"), "--checkpoint-dir", server_->url("c")},
                       path("nocred"), false, {"AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=", "WEIR_CONFIG="});
  EXPECT_EQ(no_credentials.wait(), 2);
  EXPECT_NE(no_credentials.err().find("s3:// storage needs credentials: --s3-access-key and --s3-secret-key-file "
                                      "(or [s3] access-key and secret-key-file in the config file), or "
                                      "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"),
            std::string::npos)
      << no_credentials.err();
}

// Bytes of state files a job's restores read from local copies, summed over
// the "restored checkpoint N in X ms (B bytes of state files read, L from
// local copies)" lines of its log; -1 when no restore was logged.
int64_t bytes_from_local_copies(const std::string& log) {
  static const std::string kRead = " bytes of state files read, ";
  int64_t sum = -1;
  for (size_t at = log.find(kRead); at != std::string::npos; at = log.find(kRead, at + 1)) {
    sum = std::max<int64_t>(sum, 0) + std::atoll(log.c_str() + at + kRead.size());
  }
  return sum;
}

// The bytes of state files all restores read, by their log lines.
int64_t bytes_restored(const std::string& log) {
  static const std::string kRead = " bytes of state files read, ";
  int64_t sum = 0;
  for (size_t at = log.find(kRead); at != std::string::npos; at = log.find(kRead, at + 1)) {
    const size_t start = log.rfind('(', at);
    sum += std::atoll(log.c_str() + start + 1);
  }
  return sum;
}

// Heap state with checkpoints in S3: after a failure, subtasks restore from
// the copies of their state files their process kept (none without local
// recovery); a copy that went bad on the local disk (one byte flipped in
// every copy as soon as it is written) is noticed by its checksum and the
// state file read from S3 instead. Every run's output is exactly-once.
TEST_F(S3Test, HeapStateRestoresFromLocalCopiesAndFallsBackToS3WhenOneIsBroken) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  ASSERT_TRUE(examples::generate_running_sum_input(path("in.txt"), 150000, 5000, 0, seed).ok());
  auto run = [&](const std::string& name, std::vector<std::string> more) {
    std::vector<std::string> args = {"--input", path("in.txt"), "--output", path(name + "-out"), "-p", "2",
                                     "--checkpoint-dir", server_->url(name), "--checkpoint-interval", "100ms",
                                     "--fail-every", "30000", "--seed", std::to_string(seed), "--rate", "50000",
                                     "--state-dir", path(name + "-state"), "--verbose"};
    args.insert(args.end(), more.begin(), more.end());
    auto r = run_running_sum(*server_, args, path(name));
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out.find("restarts: 0"), std::string::npos) << "no failure was injected: " << r.out;
    expect_exactly_once(path(name + "-out"));
    return r.err;
  };

  const std::string local = run("local", {});
  EXPECT_GT(bytes_from_local_copies(local), 0) << local;
  EXPECT_EQ(local.find("local copy not used"), std::string::npos) << local;

  const std::string remote = run("remote", {"--no-local-recovery"});
  EXPECT_EQ(bytes_from_local_copies(remote), 0) << remote;

  // Changelog checkpoints: a copy holds the subtask's whole chain (links to
  // the files of the copy before it, and the new file), so every byte of a
  // restore comes from local disk.
  const std::string changelog = run("changelog", {"--changelog"});
  EXPECT_GT(bytes_from_local_copies(changelog), 0) << changelog;
  EXPECT_EQ(bytes_from_local_copies(changelog), bytes_restored(changelog)) << changelog;
  EXPECT_EQ(changelog.find("local copy not used"), std::string::npos) << changelog;

  // The last byte written so far of every copy is flipped: bytes before a
  // file's end are never written again.
  std::atomic<bool> stop{false};
  std::thread flipper([&] {
    std::set<std::string> flipped;
    while (!stop) {
      std::error_code ec;
      for (fs::recursive_directory_iterator it(path("broken-state"), ec), end; !ec && it != end; it.increment(ec)) {
        const std::string p = it->path().string();
        if (p.find("/local/") == std::string::npos || !it->is_regular_file(ec) || flipped.count(p)) continue;
        const int fd = ::open(p.c_str(), O_RDWR);
        const off_t size = fd < 0 ? 0 : ::lseek(fd, 0, SEEK_END);
        char c;
        if (size > 0 && ::pread(fd, &c, 1, size - 1) == 1) {
          c = static_cast<char>(~c);
          if (::pwrite(fd, &c, 1, size - 1) == 1) flipped.insert(p);
        }
        if (fd >= 0) ::close(fd);
      }
      std::this_thread::yield();
    }
  });
  const std::string broken = run("broken", {});
  stop = true;
  flipper.join();
  EXPECT_NE(broken.find("local copy not used"), std::string::npos) << broken;
  EXPECT_NE(broken.find("checksum"), std::string::npos) << broken;
}

// Every object under `prefix`/.../shared/ is referred to by a retained
// checkpoint (native files and changelog chains), and every file a retained
// checkpoint refers to is there: subsumed checkpoints' files are gone.
void expect_shared_objects_referenced(S3Server& server, const std::string& prefix) {
  S3Client s3(server.settings());
  auto objects = s3.list({"weir", prefix});
  ASSERT_TRUE(objects.ok()) << objects.status();
  std::set<std::string> shared, referenced;
  std::vector<std::string> retained;
  for (const auto& o : *objects) {
    const std::string url = S3Url{"weir", o.key}.str();
    if (o.key.find("/shared/") != std::string::npos) shared.insert(url);
    if (o.key.size() > 10 && o.key.compare(o.key.size() - 10, 10, "/_metadata") == 0) retained.push_back(url);
  }
  ASSERT_GE(retained.size(), 1u);
  EXPECT_LE(retained.size(), 2u);
  server.set_env();
  for (const std::string& m : retained) {
    auto cp = checkpoint::load_checkpoint(m);
    ASSERT_TRUE(cp.ok()) << cp.status();
    for (const auto& op : cp->metadata.operators) {
      for (const auto& st : op.subtasks) {
        for (const auto& f : st.native_files) {
          if (f.shared) referenced.insert(checkpoint::native_file_location(cp->location, f.path));
        }
        for (const auto& f : st.changelog) referenced.insert(checkpoint::native_file_location(cp->location, f.path));
      }
    }
  }
  std::printf("retained checkpoints: %zu, shared files: %zu\n", retained.size(), shared.size());
  EXPECT_FALSE(referenced.empty()) << "no checkpoint refers to a shared file";
  for (const auto& f : referenced) EXPECT_EQ(shared.count(f), 1u) << f << " is referred to but missing";
  for (const auto& f : shared) EXPECT_EQ(referenced.count(f), 1u) << f << " is left behind";
}

// A running sum with state kept by `state` (flags) checkpointing to S3
// under `name`: it fails now and then and restores (from its local copies,
// or S3) exactly-once; the shared objects are exactly those the retained
// checkpoints refer to; and a run that fails for good is resumed by another
// process at three subtasks, which reads what it needs from S3. Returns
// the resuming run's stderr.
std::string S3Test::restores_and_rescales(const std::string& name, const std::vector<std::string>& state) {
  S3Server& server = *server_;
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  EXPECT_TRUE(examples::generate_running_sum_input(path("in.txt"), 150000, 20000, 0, seed).ok());
  auto with_state = [&state](std::vector<std::string> args) {
    args.insert(args.end(), state.begin(), state.end());
    return args;
  };
  auto r = run_running_sum(server,
                           with_state({"--input", path("in.txt"), "--output", path("out"), "-p", "2",
                                       "--checkpoint-dir", server.url(name), "--checkpoint-interval", "100ms",
                                       "--fail-every", "30000", "--seed", std::to_string(seed),
                                       "--retained-checkpoints", "2", "--rate", "50000"}),
                           path("run"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.find("restarts: 0"), std::string::npos) << "no failure was injected: " << r.out;
  expect_exactly_once(path("out"));
  expect_shared_objects_referenced(server, name + "/");

  // A job that fails for good (no restarts) after a checkpoint, resumed by
  // another process at three subtasks. Its first attempt fails after
  // 15,000-45,000 records per subtask, at 20,000 records/s at least 0.75 s
  // in: checkpoints every 100 ms have completed by then even on a loaded
  // machine (at 50,000/s, 0.3 s was sometimes too soon, and there was
  // nothing to resume from).
  const std::string chk2 = server.url(name + "2");
  auto failed = run_running_sum(server,
                                with_state({"--input", path("in.txt"), "--output", path("out2"), "-p", "2",
                                            "--checkpoint-dir", chk2, "--checkpoint-interval", "100ms",
                                            "--fail-every", "30000", "--seed", std::to_string(seed),
                                            "--restart-strategy", "none", "--rate", "20000"}),
                                path("fail"));
  EXPECT_EQ(failed.code, 4) << failed.out << failed.err;
  auto resumed = run_running_sum(server,
                                 with_state({"--input", path("in.txt"), "--output", path("out2"), "-p", "3",
                                             "--checkpoint-dir", chk2, "--restore", "latest", "--verbose"}),
                                 path("resume"));
  EXPECT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("restored from checkpoint"), std::string::npos) << resumed.out;
  expect_exactly_once(path("out2"));
  return resumed.err;
}

// Incremental RocksDB checkpoints in S3: new SST files go up once, under
// <job>/shared/, and later checkpoints refer to them; a subsumed
// checkpoint's SST files go once no retained checkpoint refers to them; a
// restore at another parallelism downloads the files it needs.
TEST_F(S3Test, IncrementalRocksDbCheckpointsRestoreAndRescale) {
  const std::string err = restores_and_rescales("inc", {"--state", "rocksdb", "--incremental"});
  // Each of the three subtasks opened RocksDB on downloaded files.
  EXPECT_NE(err.find("restored checkpoint"), std::string::npos) << err;
}

// Changelog checkpoints of heap state in S3: each checkpoint uploads a
// delta (now and then a base) under <job>/shared/, the retained ones'
// chains refer to them, subsumed chains' files go; a restore at another
// parallelism reads each chain's files.
TEST_F(S3Test, ChangelogHeapCheckpointsRestoreAndRescale) {
  restores_and_rescales("log", {"--state", "heap", "--changelog"});
}

}  // namespace
}  // namespace weir
