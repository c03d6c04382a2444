// The Kafka connectors end to end, against a Kafka-protocol broker in a
// process of its own (weir-mock-kafka: librdkafka's mock cluster), with the
// job in real weir processes and the output read back by an independent
// client (kcat, read_committed).
//
// The job: running-sum from a 4-partition input topic to a 3-partition
// output topic at parallelism 4. Each input record's key is its line number,
// so the checker of the file-based job applies unchanged.
#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>
#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <mutex>
#include <random>
#include <set>
#include <regex>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/test_points.h"
#include "examples/nexmark/generator.h"
#include "examples/orders/orders.h"
#include "examples/running_sum/running_sum.h"
#include "testing/seed.h"
#include "tests/at_most_once_checks.h"
#include "tests/changelog.h"
#include "tests/cluster.h"
#include "tests/pg_server.h"
#include "tests/prometheus.h"
#include "tests/process.h"
#include "tests/sink_windows.h"
#include "weir/kafka.h"

namespace fs = std::filesystem;

namespace weir {
namespace {

using testing::Child;
using testing::TempDir;

constexpr char kKcat[] = "/usr/bin/kcat";

// A broker for one test, stopped with it.
class Broker {
 public:
  explicit Broker(const std::string& log_prefix) {
    std::string bin = (fs::path(testing::weir_bin()).parent_path() / "weir-mock-kafka").string();
    child_ = std::make_unique<Child>(std::vector<std::string>{bin, "--topic", "in:4", "--topic", "out:3", "--topic",
                                                              "out.weir-markers:2", "--topic", "probe:1",
                                                              "--topic", "pos:2", "--topic", "orders:4", "--topic",
                                                              "order-totals:3", "--topic", "order-totals.weir-markers:1",
                                                              "--topic", "orders-rejects:1", "--topic",
                                                              "orders-rejects.weir-markers:1", "--topic", "nexmark:8", "--topic", "upserts:3",
                                                              "--topic", "upserts.weir-markers:1"},
                                     log_prefix, /*pipe_stderr=*/true);
    child_->wait_for_line(
        [&](const std::string& line) {
          if (line.rfind("bootstrap ", 0) != 0) return false;
          bootstrap_ = line.substr(10);
          return true;
        },
        std::chrono::seconds(30));
  }
  const std::string& bootstrap() const { return bootstrap_; }
  std::string err() const { return child_->err(); }
  // SIGUSR1: every broker down; SIGUSR2: back up.
  void signal(int sig) { child_->signal(sig); }

 private:
  std::unique_ptr<Child> child_;
  std::string bootstrap_;
};

// Writes each line of `path` to `topic` with its line number as the key.
void produce_lines(const std::string& bootstrap, const std::string& topic, const std::string& path) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  ASSERT_EQ(rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), err, sizeof(err)), RD_KAFKA_CONF_OK);
  rd_kafka_conf_set(conf, "linger.ms", "5", err, sizeof(err));
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
  ASSERT_NE(rk, nullptr) << err;
  std::ifstream in(path);
  std::string line;
  for (int64_t n = 1; std::getline(in, line); ++n) {
    std::string key = std::to_string(n);
    while (true) {
      rd_kafka_resp_err_t e = rd_kafka_producev(
          rk, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_KEY(key.data(), key.size()),
          RD_KAFKA_V_VALUE(line.data(), line.size()), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
      if (e == RD_KAFKA_RESP_ERR_NO_ERROR) break;
      ASSERT_EQ(e, RD_KAFKA_RESP_ERR__QUEUE_FULL) << rd_kafka_err2str(e);
      rd_kafka_poll(rk, 10);
    }
  }
  EXPECT_EQ(rd_kafka_flush(rk, 60000), RD_KAFKA_RESP_ERR_NO_ERROR);
  rd_kafka_destroy(rk);
}

// Whether a read_committed consumer of this broker sees records of an
// aborted transaction (librdkafka 2.0's mock cluster does: it keeps no
// transaction markers in its logs).
bool aborted_records_visible(const std::string& bootstrap, const std::string& log_prefix) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), err, sizeof(err));
  rd_kafka_conf_set(conf, "transactional.id", "weir-test-probe", err, sizeof(err));
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
  EXPECT_NE(rk, nullptr) << err;
  if (rk == nullptr) return true;
  auto ok = [](rd_kafka_error_t* e) {
    EXPECT_EQ(e, nullptr) << (e ? rd_kafka_error_string(e) : "");
    if (e) rd_kafka_error_destroy(e);
  };
  ok(rd_kafka_init_transactions(rk, 30000));
  ok(rd_kafka_begin_transaction(rk));
  rd_kafka_producev(rk, RD_KAFKA_V_TOPIC("probe"), RD_KAFKA_V_VALUE(const_cast<char*>("aborted"), 7),
                    RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
  rd_kafka_flush(rk, 30000);
  ok(rd_kafka_abort_transaction(rk, 30000));
  rd_kafka_destroy(rk);
  Child kcat({kKcat, "-C", "-b", bootstrap, "-t", "probe", "-e", "-q", "-X", "isolation.level=read_committed",
              "-f", "%s\\n"},
             log_prefix);
  EXPECT_EQ(kcat.wait(), 0) << kcat.err();
  return kcat.out().find("aborted") != std::string::npos;
}

// A topic's values as a read_committed consumer sees them.
std::vector<std::string> committed_values(const std::string& bootstrap, const std::string& topic,
                                          const std::string& log) {
  Child kcat({kKcat, "-C", "-b", bootstrap, "-t", topic, "-e", "-q", "-X", "isolation.level=read_committed", "-f",
              "%s\\n"},
             log);
  EXPECT_EQ(kcat.wait(), 0) << kcat.err();
  std::vector<std::string> lines;
  std::istringstream in(kcat.out());
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

class KafkaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(kKcat)) << kKcat << " is missing: run scripts/install-deps.sh";
    seed_ = testing::test_seed();
    rng_.seed(seed_);
    dir_ = std::make_unique<TempDir>(std::string("kafka-") +
                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    broker_ = std::make_unique<Broker>(dir_->path("broker"));
    ASSERT_FALSE(broker_->bootstrap().empty()) << "the broker did not start: " << broker_->err();
    ASSERT_TRUE(examples::generate_running_sum_input(dir_->path("in.txt"), lines_, 500, 997, seed_).ok());
    produce_lines(broker_->bootstrap(), "in", dir_->path("in.txt"));
  }

  // `bounded`: the job stops at the input topic's end; else it runs until
  // it is killed.
  std::vector<std::string> args(bool restore, const std::vector<std::string>& extra = {}, bool bounded = true) {
    std::vector<std::string> a = {testing::weir_bin(), "example", "running-sum", "--verbose",
                                  "--kafka-brokers", broker_->bootstrap(), "--input-topic", "in",
                                  "--output-topic", "out",
                                  "--output", dir_->path("rejects"), "--parallelism", "4",
                                  "--checkpoint-dir", dir_->path("chk"), "--checkpoint-interval", "50ms",
                                  "--state", state_, "--state-dir", dir_->path("state")};
    if (bounded) a.push_back("--kafka-bounded");
    if (restore) {
      a.push_back("--restore");
      a.push_back("latest");
    }
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }

  // The output topic as a read_committed consumer sees it, one value per line.
  std::vector<std::string> committed_output() {
    return committed_values(broker_->bootstrap(), "out", dir_->path("kcat"));
  }

  examples::RunningSumCheck check() {
    std::vector<std::string> out = committed_output();
    auto c = examples::check_running_sum({dir_->path("in.txt")}, dir_->path("rejects"), &out);
    EXPECT_TRUE(c.ok()) << c.status();
    if (!c.ok()) return {};
    for (const auto& p : c->problems) ADD_FAILURE() << p;
    return *c;
  }

  void expect_exactly_once_after_kills(const std::string& what) {
    examples::RunningSumCheck c = check_allowing_duplicates();
    EXPECT_TRUE(c.nothing_lost) << what;
    EXPECT_TRUE(c.exactly_once) << what;
    for (const auto& p : c.problems) ADD_FAILURE() << p;
  }

  examples::RunningSumCheck check_allowing_duplicates() {
    std::vector<std::string> out = committed_output();
    auto c = examples::check_running_sum({dir_->path("in.txt")}, dir_->path("rejects"), &out);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *c : examples::RunningSumCheck{};
  }

  // Runs the job restoring the latest checkpoint to the end.
  void finish() {
    Child last(args(true), dir_->path("final"));
    ASSERT_EQ(last.wait(), 0) << last.err();
    EXPECT_NE(last.out().find("restored from checkpoint"), std::string::npos) << last.out();
  }

  uint64_t seed_ = 0;
  std::mt19937_64 rng_;
  int64_t lines_ = 200000;
  std::unique_ptr<TempDir> dir_;
  std::unique_ptr<Broker> broker_;
  std::string state_ = "heap";
};

// Parameter: the state backend.
class KafkaBackendTest : public KafkaTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(KafkaBackendTest, InjectedTaskFailuresGiveExactlyOnceOutput) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  state_ = GetParam();
  Child job(args(false, {"--fail-every", "20000", "--seed", std::to_string(seed_)}), dir_->path("job"));
  ASSERT_EQ(job.wait(), 0) << job.err();
  EXPECT_EQ(job.out().find("restarts: 0"), std::string::npos) << "no failure was injected: " << job.out();
  examples::RunningSumCheck c = check();
  EXPECT_EQ(c.valid_records, lines_ - lines_ / 997);
  EXPECT_TRUE(c.exactly_once);
}

// SIGKILL of the whole job, repeatedly, then `--restore latest`. The
// moments are crash points of the checkpoint and the sink chosen at random
// (seeded), not a kill from outside at any instant: a kill inside a sink's
// transaction leaves records that the mock cluster, unlike Kafka, shows to
// read_committed consumers after the abort (docs/kafka.md). The killed runs
// read the topic unbounded, so each one reaches its point however fast it
// consumed the input (a bounded run could end first); the last run is
// bounded and restores an unbounded run's checkpoint, which has no stop
// offsets: it reads on to the end the topic has when it starts.
TEST_P(KafkaBackendTest, RepeatedKillsAndRestoreLatestGiveExactlyOnceOutput) {
  if (!WEIR_TEST_POINTS) GTEST_SKIP() << "test points are compiled out of Release builds";
  SCOPED_TRACE("seed " + std::to_string(seed_));
  state_ = GetParam();
  const CrashPoint points[] = {CrashPoint::kStateFileWritten, CrashPoint::kMetadataAfterRename,
                               CrashPoint::kSinkPreCommitted, CrashPoint::kCompletedBeforeNotify,
                               CrashPoint::kSinkPublished, CrashPoint::kSinkRecovered};
  auto visit_of = [&](CrashPoint p) {
    switch (p) {
      case CrashPoint::kStateFileWritten: return 8 + static_cast<int>(rng_() % 24);  // every operator subtask
      case CrashPoint::kSinkPreCommitted:
      case CrashPoint::kSinkPublished: return 4 + static_cast<int>(rng_() % 12);  // every sink subtask
      case CrashPoint::kSinkRecovered: return 1;
      default: return 1 + static_cast<int>(rng_() % 4);  // once per checkpoint
    }
  };
  auto have_checkpoint = [&] {
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir_->path("chk"), ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      if (it->path().filename() == "_metadata") return true;
    }
    return false;
  };
  constexpr int kRounds = 5;
  for (int round = 0; round < kRounds; ++round) {
    // A run that restores nothing never reaches sink-recovered.
    const bool restore = have_checkpoint();
    const CrashPoint p = points[rng_() % (std::size(points) - (restore ? 0 : 1))];
    const std::string at = std::string(to_string(p)) + ":" + std::to_string(visit_of(p));
    Child c(args(restore, {}, /*bounded=*/false), dir_->path("round" + std::to_string(round)),
            /*pipe_stderr=*/false, {"WEIR_CRASH_AT=" + at});
    std::optional<int> code = c.wait_for_exit(std::chrono::seconds(120));
    ASSERT_TRUE(code.has_value()) << "round " << round << " never reached " << at << ": " << c.err();
    ASSERT_EQ(*code, 128 + SIGKILL) << "round " << round << " at " << at << ": " << c.err();
  }
  const int kills = kRounds;
  finish();
  expect_exactly_once_after_kills("after " + std::to_string(kills) + " kills");
}

INSTANTIATE_TEST_SUITE_P(Backends, KafkaBackendTest, ::testing::Values("heap", "rocksdb"));

TEST_F(KafkaTest, AtLeastOnceSinkLosesNothing) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  Child job(args(false, {"--fail-every", "20000", "--seed", std::to_string(seed_), "--kafka-delivery",
                         "at-least-once", "--mode", "at-least-once"}),
            dir_->path("job"));
  ASSERT_EQ(job.wait(), 0) << job.err();
  std::vector<std::string> out = committed_output();
  auto c = examples::check_running_sum({dir_->path("in.txt")}, dir_->path("rejects"), &out);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->nothing_lost);
}

// At-most-once with injected failures: the transactional sink commits at
// each checkpoint, a restart restores the latest and the sources continue
// after the offsets they had read, so the committed topic holds no record
// twice, its sums follow from the records it holds, and what it lacks is
// exactly what the job counted as lost.
TEST_F(KafkaTest, AtMostOnceLosesExactlyWhatItCounts) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  Child job(args(false, {"--fail-every", "20000", "--seed", std::to_string(seed_), "--mode", "at-most-once"}),
            dir_->path("job"));
  ASSERT_EQ(job.wait(), 0) << job.err();
  const int64_t lost = testing::lost_records_in(job.out());
  EXPECT_GT(lost, 0) << job.out();
  testing::expect_at_most_once(check_allowing_duplicates(), lost);
}

// The summary says what the sink wrote: every record of the output topic,
// committed in transactions; at-least-once, every record delivered. The
// part-file count, which would say 0, is not printed.
TEST_F(KafkaTest, TheSummarySaysWhatTheSinkCommitted) {
  size_t before = 0;  // the second run appends to the first's topic
  for (const std::string delivery : {"exactly-once", "at-least-once"}) {
    SCOPED_TRACE(delivery);
    Child job(args(false, {"--kafka-delivery", delivery}), dir_->path("job-" + delivery));
    ASSERT_EQ(job.wait(), 0) << job.err();
    const size_t all = committed_output().size();
    ASSERT_GT(all, before);
    const std::string n = std::to_string(all - before);
    before = all;
    EXPECT_NE(job.out().find("wrote " + n + " records; " + n + " committed in "), std::string::npos)
        << n << " records added to the topic; " << job.out();
    EXPECT_EQ(job.out().find("output records:"), std::string::npos) << job.out();
  }
}

// Parameter: a crash point of the sink's commit protocol. The job is
// SIGKILLed there, deterministically; `--restore latest` must still give
// exactly-once output in the topic.
class KafkaCrashPointTest : public KafkaTest, public ::testing::WithParamInterface<CrashPoint> {};

TEST_P(KafkaCrashPointTest, KilledAtTheCrashPointRestoresLatestExactlyOnce) {
  if (!WEIR_TEST_POINTS) GTEST_SKIP() << "test points are compiled out of Release builds";
  // The kill waits until no sink subtask is inside a transaction (a crash
  // fence), so no transaction is aborted with records in it and the mock
  // cluster shows what a real broker would.
  const CrashPoint p = GetParam();
  // The input read at 100 000 lines/s per subtask lasts half a second at
  // least: enough checkpoints (every 50 ms) to reach each point, however
  // fast the machine (unthrottled, a fast one finished after two).
  testing::kill_at_sink_window(
      p, [&](bool restore) { return args(restore, {"--rate", "100000"}); },
      [&](const std::string& name) { return dir_->path(name); });
  if (HasFatalFailure()) return;
  finish();
  expect_exactly_once_after_kills("killed at " + std::string(to_string(p)));
}

INSTANTIATE_TEST_SUITE_P(SinkWindows, KafkaCrashPointTest,
                         testing::kSinkWindows, testing::sink_window_name);

// Records a source read, collected in the test process (embedded jobs).
struct Collected {
  static std::mutex mu;
  static std::vector<KafkaRecord> records;
};
std::mutex Collected::mu;
std::vector<KafkaRecord> Collected::records;

class CollectingSink final : public Sink<KafkaRecord> {
 public:
  absl::Status open(OperatorContext&) override { return absl::OkStatus(); }
  absl::Status write(const KafkaRecord& r) override {
    std::lock_guard<std::mutex> lock(Collected::mu);
    Collected::records.push_back(r);
    return absl::OkStatus();
  }
};

// Runs a bounded KafkaSource (`configure` sets its options) at parallelism
// 2 in this process and returns what it read.
std::vector<KafkaRecord> read_with(const std::string& bootstrap,
                                   const std::function<void(KafkaSource::Builder&)>& configure) {
  {
    std::lock_guard<std::mutex> lock(Collected::mu);
    Collected::records.clear();
  }
  JobConfig config;
  config.default_parallelism = 2;
  StreamEnvironment env(config);
  KafkaSource::Builder b = KafkaSource::builder();
  b.bootstrap_servers(bootstrap).bounded();
  configure(b);
  env.from_source<KafkaRecord>(b.build(), "kafka").sink_to([] { return std::make_unique<CollectingSink>(); });
  auto result = env.execute("read");
  EXPECT_TRUE(result.ok()) << result.status();
  if (result.ok()) {
    EXPECT_EQ(result->status, JobStatus::kFinished) << result->failure;
  }
  std::lock_guard<std::mutex> lock(Collected::mu);
  return Collected::records;
}

// 100 records into topic "pos" (2 partitions): key k<i>, value v<i>,
// timestamp (i + 1) * 1000, a header h=<i>.
void produce_positions(const std::string& bootstrap) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), err, sizeof(err));
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
  ASSERT_NE(rk, nullptr) << err;
  for (int i = 0; i < 100; ++i) {
    std::string k = "k" + std::to_string(i), v = "v" + std::to_string(i), h = std::to_string(i);
    rd_kafka_headers_t* hdrs = rd_kafka_headers_new(1);
    rd_kafka_header_add(hdrs, "h", 1, h.data(), static_cast<ssize_t>(h.size()));
    ASSERT_EQ(rd_kafka_producev(rk, RD_KAFKA_V_TOPIC("pos"), RD_KAFKA_V_PARTITION(i % 2),
                                RD_KAFKA_V_KEY(k.data(), k.size()), RD_KAFKA_V_VALUE(v.data(), v.size()),
                                RD_KAFKA_V_TIMESTAMP((i + 1) * 1000LL), RD_KAFKA_V_HEADERS(hdrs),
                                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END),
              RD_KAFKA_RESP_ERR_NO_ERROR);
  }
  ASSERT_EQ(rd_kafka_flush(rk, 30000), RD_KAFKA_RESP_ERR_NO_ERROR);
  rd_kafka_destroy(rk);
}

// Whether the broker finds offset 0 of "pos" partition 0 for timestamp 1.
bool broker_answers_timestamp_lookups(const std::string& bootstrap) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), err, sizeof(err));
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
  if (rk == nullptr) return false;
  rd_kafka_topic_partition_list_t* l = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(l, "pos", 0)->offset = 1;
  bool ok = rd_kafka_offsets_for_times(rk, l, 30000) == RD_KAFKA_RESP_ERR_NO_ERROR && l->elems[0].offset == 0;
  rd_kafka_topic_partition_list_destroy(l);
  rd_kafka_destroy(rk);
  return ok;
}

// `count` records "<prefix><i>" into `topic` (created by the broker if new).
void produce_values(const std::string& bootstrap, const std::string& topic, const std::string& prefix, int count) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), err, sizeof(err));
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
  ASSERT_NE(rk, nullptr) << err;
  for (int i = 0; i < count; ++i) {
    std::string v = prefix + std::to_string(i);
    ASSERT_EQ(rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_VALUE(v.data(), v.size()),
                                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END),
              RD_KAFKA_RESP_ERR_NO_ERROR);
  }
  ASSERT_EQ(rd_kafka_flush(rk, 30000), RD_KAFKA_RESP_ERR_NO_ERROR);
  rd_kafka_destroy(rk);
}

size_t collected() {
  std::lock_guard<std::mutex> lock(Collected::mu);
  return Collected::records.size();
}

// An unbounded source with a topic pattern finds a topic created while it
// runs (partition discovery every 200 ms) and reads it from its start.
TEST_F(KafkaTest, TopicsCreatedWhileRunningAreDiscoveredByThePattern) {
  const std::string& b = broker_->bootstrap();
  produce_values(b, "disc-a", "a", 10);
  {
    std::lock_guard<std::mutex> lock(Collected::mu);
    Collected::records.clear();
  }
  JobConfig config;
  config.default_parallelism = 2;
  StreamEnvironment env(config);
  env.from_source<KafkaRecord>(KafkaSource::builder()
                                   .bootstrap_servers(b)
                                   .topic_pattern("^disc-")
                                   .partition_discovery(std::chrono::milliseconds(200))
                                   .build(),
                               "kafka")
      .sink_to([] { return std::make_unique<CollectingSink>(); });
  JobControl control;
  absl::StatusOr<JobResult> result = absl::UnknownError("not run");
  std::thread job([&] { result = env.execute("discovery", &control); });
  bool first = testing::eventually([] { return collected() >= 10; }, std::chrono::seconds(30));
  if (first) produce_values(b, "disc-b", "b", 10);
  bool second = first && testing::eventually([] { return collected() >= 20; }, std::chrono::seconds(30));
  control.stop_with_savepoint(dir_->path("savepoint"), /*drain=*/false);
  job.join();
  ASSERT_TRUE(first) << "the existing topic was not read";
  ASSERT_TRUE(second) << "the new topic was not discovered: " << collected() << " records";
  ASSERT_TRUE(result.ok()) << result.status();
  std::multiset<std::string> values;
  {
    std::lock_guard<std::mutex> lock(Collected::mu);
    for (const auto& r : Collected::records) values.insert(r.topic + ":" + r.value);
  }
  std::multiset<std::string> want;
  for (int i = 0; i < 10; ++i) {
    want.insert("disc-a:a" + std::to_string(i));
    want.insert("disc-b:b" + std::to_string(i));
  }
  EXPECT_EQ(values, want);
}

TEST_F(KafkaTest, SourceStartPositionsPatternsAndRecordFields) {
  produce_positions(broker_->bootstrap());
  const std::string& b = broker_->bootstrap();

  auto all = read_with(b, [](KafkaSource::Builder& s) { s.topics({"pos"}); });
  ASSERT_EQ(all.size(), 100u);
  std::map<std::string, const KafkaRecord*> by_key;
  for (const auto& r : all) by_key[r.key] = &r;
  ASSERT_EQ(by_key.size(), 100u);
  for (int i = 0; i < 100; ++i) {
    const KafkaRecord& r = *by_key.at("k" + std::to_string(i));
    EXPECT_EQ(r.value, "v" + std::to_string(i));
    EXPECT_EQ(r.topic, "pos");
    EXPECT_EQ(r.partition, i % 2);
    EXPECT_EQ(r.offset, i / 2);
    EXPECT_EQ(r.timestamp, (i + 1) * 1000);
    ASSERT_EQ(r.headers.size(), 1u);
    EXPECT_EQ(r.headers[0], std::make_pair(std::string("h"), std::to_string(i)));
  }

  EXPECT_EQ(read_with(b, [](KafkaSource::Builder& s) { s.topic_pattern("^po"); }).size(), 100u);
  EXPECT_EQ(read_with(b, [](KafkaSource::Builder& s) { s.topics({"pos"}).start_from(KafkaStartFrom::kLatest); })
                .size(),
            0u);
  // Offsets 10.. of partition 0 and 20.. of partition 1: 40 + 30 records.
  EXPECT_EQ(read_with(b, [](KafkaSource::Builder& s) { s.topics({"pos"}).start_from_offsets({{{"pos", 0}, 10}, {{"pos", 1}, 20}}); })
                .size(),
            70u);
  // Timestamps 50000 and later: records 49..99. librdkafka 2.0's mock
  // cluster answers every lookup by timestamp with the end of the
  // partition; then only "nothing earlier" can be checked.
  auto late = read_with(b, [](KafkaSource::Builder& s) { s.topics({"pos"}).start_from_timestamp(50000); });
  for (const auto& r : late) EXPECT_GE(r.timestamp, 50000) << r.key;
  if (broker_answers_timestamp_lookups(b)) {
    EXPECT_EQ(late.size(), 51u);
  } else {
    std::cout << "[ NOTE     ] the broker does not look offsets up by timestamp: read " << late.size()
              << " records from timestamp 50000, not checked against 51\n";
  }
  // No offsets committed for the group: from the beginning.
  EXPECT_EQ(read_with(b, [](KafkaSource::Builder& s) {
              s.topics({"pos"}).group_id("never-committed").start_from(KafkaStartFrom::kCommitted);
            }).size(),
            100u);
}

TEST(KafkaOptionsTest, ContradictoryOrMissingSettingsAreNamed) {
  KafkaSourceOptions o;
  EXPECT_NE(o.validate().message().find("no bootstrap servers"), std::string::npos);
  o.bootstrap_servers = "b:9092";
  EXPECT_NE(o.validate().message().find("either topics or a topic pattern"), std::string::npos);
  o.topic_pattern = "([";
  EXPECT_NE(o.validate().message().find("topic pattern '(['"), std::string::npos) << o.validate();
  o.topic_pattern = "t.*";
  o.start_from = KafkaStartFrom::kCommitted;
  EXPECT_NE(o.validate().message().find("needs a group id"), std::string::npos);
  o.group_id = "g";
  EXPECT_TRUE(o.validate().ok()) << o.validate();
  EXPECT_FALSE(parse_kafka_delivery("maybe").ok());
  EXPECT_EQ(*parse_kafka_delivery("at-least-once"), KafkaDelivery::kAtLeastOnce);
}

// The subtask of a partition depends on the topic and the parallelism only,
// and spreads a topic's partitions over all subtasks.
TEST(KafkaOptionsTest, PartitionAssignmentIsAFunctionOfTopicAndParallelism) {
  for (int p = 1; p <= 7; ++p) {
    std::set<int> used;
    for (int32_t part = 0; part < p; ++part) {
      int s = KafkaSource::subtask_for("orders", part, p);
      EXPECT_GE(s, 0);
      EXPECT_LT(s, p);
      EXPECT_EQ(s, KafkaSource::subtask_for("orders", part, p));
      used.insert(s);
    }
    EXPECT_EQ(static_cast<int>(used.size()), p) << "parallelism " << p;
  }
}

// The savepoint path in a "savepoint N completed: PATH" log line.
std::string savepoint_path(const std::string& line) {
  std::smatch m;
  static const std::regex re("savepoint [0-9]+ completed: (.*)$");
  return std::regex_search(line, m, re) ? m[1].str() : "";
}

// Stop with a savepoint at parallelism 4, resume at 2, stop again, resume at
// 6 to the end: partitions move between source subtasks by the formula, the
// sink's pending batches and transactional ids of the writers that went
// away are taken over, and the topic holds every sum once.
TEST_F(KafkaTest, RescaledThroughSavepointsFourTwoSixIsExactlyOnce) {
  std::string restore;
  const int stages[] = {4, 2, 6};
  for (int i = 0; i < 3; ++i) {
    std::vector<std::string> a = args(false, {"--savepoint-dir", dir_->path("savepoints"), "--rate", "15000"});
    for (size_t k = 0; k + 1 < a.size(); ++k) {
      if (a[k] == "--parallelism") a[k + 1] = std::to_string(stages[i]);
    }
    if (!restore.empty()) {
      a.push_back("--restore");
      a.push_back(restore);
    }
    Child job(a, dir_->path("stage" + std::to_string(i)), /*pipe_stderr=*/true);
    if (i == 2) {
      ASSERT_EQ(job.wait(), 0) << job.err();
      break;
    }
    int completed = 0;
    ASSERT_TRUE(job.wait_for_line(
        [&](const std::string& l) { return l.find("completed") != std::string::npos && ++completed >= 3; },
        std::chrono::seconds(60)))
        << job.err();
    job.signal(SIGUSR2);
    ASSERT_TRUE(job.wait_for_line([&](const std::string& l) { return !(restore = savepoint_path(l)).empty(); },
                                  std::chrono::seconds(60)))
        << "stage " << i << ": no savepoint; " << job.err();
    ASSERT_EQ(job.wait(), 0) << job.err();
  }
  examples::RunningSumCheck c = check();
  EXPECT_TRUE(c.exactly_once);
}

// On a cluster: a TaskManager running half the job dies (SIGKILL, at a
// crash point after its sink subtasks committed a checkpoint's
// transactions), a new one takes its slots, and the topic holds every sum
// once.
TEST_F(KafkaTest, KilledTaskManagerOnAClusterGivesExactlyOnceOutput) {
  if (!WEIR_TEST_POINTS) GTEST_SKIP() << "test points are compiled out of Release builds";
  testing::Cluster c("kafka-cluster");
  c.start_jobmanager();
  ASSERT_TRUE(c.ok()) << c.jm_log();
  Child* doomed = c.start_taskmanager("tm0", 2, "127.0.0.1", {}, {"WEIR_CRASH_AT=sink-published:4"});
  c.start_taskmanager("tm1", 2);
  ASSERT_TRUE(c.ok()) << c.jm_log();
  auto job = c.client().submit(
      "running-sum", {"--kafka-brokers", broker_->bootstrap(), "--input-topic", "in", "--kafka-bounded",
                      "--output-topic", "out", "--output", dir_->path("rejects"), "-p", "4", "--checkpoint-dir",
                      c.dir().path("chk"), "--checkpoint-interval", "100ms", "--rate", "10000"});
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_EQ(doomed->wait(), 128 + SIGKILL) << "tm0 never reached its crash point\n" << c.jm_log();
  c.start_taskmanager("tm2", 2);
  ASSERT_TRUE(c.ok()) << c.jm_log();
  auto done = c.client().wait(*job, 120000);
  ASSERT_TRUE(done.ok()) << done.status();
  ASSERT_EQ((*done)["status"], "FINISHED") << *done << "\n" << c.jm_log();
  EXPECT_GE((*done)["restarts"].get<int>(), 1);
  EXPECT_TRUE(check().exactly_once);
}

// Every broker down in the middle of a run, then back: the source's client
// reconnects, the exactly-once sink commits what it could not while they
// were down, and the output is exactly-once.
TEST_F(KafkaTest, ABrokerOutageMidRunIsRiddenOutExactlyOnce) {
  Child c(args(false, {"--rate", "5000"}), dir_->path("job"), /*pipe_stderr=*/true);
  int completed = 0;
  ASSERT_TRUE(c.wait_for_line(
      [&](const std::string& line) { return line.find("completed") != std::string::npos && ++completed >= 5; },
      std::chrono::seconds(60)))
      << c.err();
  broker_->signal(SIGUSR1);
  // The clients notice: librdkafka's connection errors, through weir's log.
  bool noticed = c.wait_for_line(
      [&](const std::string& line) {
        return line.find("weir-kafka") != std::string::npos &&
               (line.find("refused") != std::string::npos || line.find("Disconnected") != std::string::npos ||
                line.find("down") != std::string::npos);
      },
      std::chrono::seconds(30));
  broker_->signal(SIGUSR2);
  ASSERT_TRUE(noticed) << "no client noticed the outage: " << c.err();
  ASSERT_EQ(c.wait(), 0) << c.err();
  EXPECT_TRUE(check().exactly_once);
}

// The source reports each partition's lag (and their sum) in the job's
// metrics; on a cluster they show in the REST API's vertex metrics.
TEST_F(KafkaTest, ConsumerLagPerPartitionShowsInTheRestApi) {
  testing::Cluster c("kafka-lag");
  ASSERT_TRUE(c.start({{"tm0", 2}})) << c.jm_log();
  auto job = c.client().submit(
      "running-sum", {"--kafka-brokers", broker_->bootstrap(), "--input-topic", "in", "--kafka-bounded",
                      "--output-topic", "out", "--output", dir_->path("rejects"), "-p", "2", "--rate", "2000",
                      "--checkpoint-dir", c.dir().path("chk")});
  ASSERT_TRUE(job.ok()) << job.status();
  nlohmann::json gauges;
  bool seen = testing::eventually(
      [&] {
        auto j = c.client().job(*job);
        if (!j.ok()) return false;
        for (const auto& v : (*j)["vertices"]) {
          if (v["name"].get<std::string>().rfind("kafka-source", 0) != 0 || !v["metrics"].is_object()) continue;
          gauges = v["metrics"]["gauges"];
          // kafka.lag, one per partition (4), pendingRecords (and the
          // source's numRecordsOut, the rejects sink's counts).
          bool all = gauges.contains("kafka.lag") && gauges["kafka.lag"].get<int64_t>() > 0 &&
                     gauges.contains("pendingRecords");
          for (int p = 0; p < 4; ++p) all = all && gauges.contains("kafka.lag.in." + std::to_string(p));
          return all;
        }
        return false;
      },
      std::chrono::seconds(30));
  ASSERT_TRUE(seen) << gauges << "\n" << c.jm_log();
  int64_t sum = 0;
  for (int p = 0; p < 4; ++p) {
    ASSERT_TRUE(gauges.contains("kafka.lag.in." + std::to_string(p))) << gauges;
    sum += gauges["kafka.lag.in." + std::to_string(p)].get<int64_t>();
  }
  EXPECT_EQ(sum, gauges["kafka.lag"].get<int64_t>());
  EXPECT_EQ(gauges["pendingRecords"], gauges["kafka.lag"]) << gauges;  // Flink's name for it
  EXPECT_GE(gauges.value("numRecordsOut", int64_t{-1}), 0) << gauges;
  // 200 000 records at 2 x 2 000 a second: most are still to read.
  EXPECT_GT(sum, lines_ / 2) << gauges;
  // The TaskManager's /metrics has it per source subtask.
  auto overview = c.client().overview();
  ASSERT_TRUE(overview.ok()) << overview.status();
  auto page = testing::scrape((*overview)["taskmanagers"][0]["metrics_address"], c.secret());
  ASSERT_TRUE(page);
  ASSERT_EQ(page->status, 200) << page->body;
  const testing::Total pending =
      testing::total(testing::parse_prometheus(page->body), "weir_taskmanager_job_task_operator_pendingRecords",
                     {{"job_id", *job}});
  EXPECT_EQ(pending.samples, 2) << page->body;
  EXPECT_GT(pending.sum, lines_ / 4) << page->body;
  ASSERT_TRUE(c.client().cancel(*job).ok());
}

// Why the kill tests kill at crash points: this broker keeps no transaction
// markers, so read_committed consumers see aborted records. If this starts
// failing, the broker hides them, and kills at any instant can be tested.
TEST_F(KafkaTest, TheTestBrokerShowsAbortedTransactions) {
  EXPECT_TRUE(aborted_records_visible(broker_->bootstrap(), dir_->path("probe")));
}

TEST_F(KafkaTest, MissingTopicIsNamed) {
  Child job({testing::weir_bin(), "example", "running-sum", "--kafka-brokers", broker_->bootstrap(),
             "--input-topic", "nope", "--kafka-bounded", "--output", dir_->path("rejects"),
             "--restart-strategy", "none"},
            dir_->path("job"));
  EXPECT_NE(job.wait(), 0);
  EXPECT_NE(job.err().find("topic 'nope' does not exist on " + broker_->bootstrap()), std::string::npos)
      << job.err();
}

TEST_F(KafkaTest, ExactlyOnceWithoutTransactionalPrefixIsRefusedAtBuild) {
  // The built-in job sets a prefix; the options themselves refuse none.
  KafkaSinkOptions o;
  o.bootstrap_servers = broker_->bootstrap();
  o.topic = "out";
  absl::Status s = o.validate();
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("transactional id prefix"), std::string::npos) << s;
}

// ---- the orders example: Kafka -> windows -> Kafka and PostgreSQL ----------

using Totals = std::map<std::pair<std::string, int64_t>, std::pair<int64_t, int64_t>>;

std::string first_difference(const Totals& got, const Totals& want) {
  auto show = [](const Totals::value_type& t) {
    return t.first.first + "@" + std::to_string(t.first.second) + " = " + std::to_string(t.second.first) + " orders, " +
           std::to_string(t.second.second);
  };
  for (const auto& w : want) {
    auto it = got.find(w.first);
    if (it == got.end()) return "missing " + show(w);
    if (it->second != w.second) return "want " + show(w) + ", got " + show(*it);
  }
  for (const auto& g : got) {
    if (!want.count(g.first)) return "unexpected " + show(g);
  }
  return "none";
}


// Runs the job `args(false)` until five checkpoints completed, kills it
// (SIGKILL), then runs `args(true)` (its --restore latest) to the end.
void kill_after_five_checkpoints_then_restore(const std::function<std::vector<std::string>(bool)>& args,
                                              TempDir& dir) {
  Child first(args(false), dir.path("first"), /*pipe_stderr=*/true);
  int completed = 0;
  ASSERT_TRUE(first.wait_for_line(
      [&](const std::string& line) { return line.find("completed") != std::string::npos && ++completed >= 5; },
      std::chrono::seconds(60)))
      << first.err();
  first.kill9();
  ASSERT_EQ(first.wait(), 128 + SIGKILL) << "the job ended before it was killed";
  Child last(args(true), dir.path("last"));
  ASSERT_EQ(last.wait(), 0) << last.err();
}

// The committed totals of topic order-totals (JSON), each window once.
Totals kafka_totals(const std::string& bootstrap, TempDir& dir) {
  Totals in_kafka;
  for (const std::string& v : committed_values(bootstrap, "order-totals", dir.path("kcat-totals"))) {
    auto j = nlohmann::json::parse(v);
    auto key = std::make_pair(j["customer"].get<std::string>(), j["window_start"].get<int64_t>());
    EXPECT_EQ(in_kafka.count(key), 0u) << "twice: " << v;
    in_kafka[key] = {j["orders"].get<int64_t>(), j["amount"].get<int64_t>()};
  }
  return in_kafka;
}

// The orders job written in SQL: a Kafka table (JSON; bad records skipped,
// as "json.ignore-parse-errors" says; the record timestamp as a column) ->
// TUMBLE windows -> a Kafka table (exactly-once) and a PostgreSQL table
// upserted by its primary key, and a GROUP BY per customer (an updating
// result) upserted into another; killed once mid-run and restored to the
// end. Each holds what the input implies, each window once.
TEST(OrdersJobTest, SqlKafkaToKafkaAndPostgresAfterAKillAreExactlyOnce) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  TempDir dir("orders-sql");
  Broker broker(dir.path("broker"));
  ASSERT_FALSE(broker.bootstrap().empty()) << broker.err();
  testing::PgServer pg(4);
  ASSERT_TRUE(pg.ok()) << pg.log();
  pg.sql("CREATE TABLE window_totals (customer text, window_start timestamp, window_end timestamp, orders bigint, "
         "amount bigint, PRIMARY KEY (customer, window_start))");
  pg.sql("CREATE TABLE customer_totals (customer text PRIMARY KEY, orders bigint, amount bigint)");
  pg.sql("CREATE TABLE window_log (customer text, window_start timestamp, orders bigint, amount bigint)");

  examples::GeneratedOrders g;
  g.count = 20000;
  g.bad_every = 997;
  g.seed = seed;
  Child gen({testing::weir_bin(), "generate", "orders", "--kafka-brokers", broker.bootstrap(), "--count",
             std::to_string(g.count), "--bad-every", std::to_string(g.bad_every), "--seed", std::to_string(seed)},
            dir.path("gen"));
  ASSERT_EQ(gen.wait(), 0) << gen.err();

  const std::string kafka = "\"properties.bootstrap.servers\" = '" + broker.bootstrap() + "'";
  const std::string script = dir.path("orders.sql");
  std::ofstream(script) << R"(
    CREATE TABLE orders (id VARCHAR, customer VARCHAR, amount BIGINT, ts TIMESTAMP(3), kts TIMESTAMP(3))
      WITH (connector = 'kafka', topic = 'orders', )" << kafka << R"(, format = 'json',
            "json.ignore-parse-errors" = 'true', "scan.bounded.mode" = 'latest-offset',
            "scan.records-per-second" = '2000', "metadata.timestamp" = 'kts',
            watermark = 'ts - INTERVAL ''2'' SECOND', "scan.watermark.idle-timeout" = '10 s');
    CREATE TABLE totals (customer VARCHAR, window_start TIMESTAMP(3), window_end TIMESTAMP(3), orders BIGINT,
                         amount BIGINT)
      WITH (connector = 'kafka', topic = 'order-totals', )" << kafka << R"(, format = 'json',
            "sink.transactional-id-prefix" = 'sql-totals');
    CREATE TABLE window_totals (customer VARCHAR, window_start TIMESTAMP(3), window_end TIMESTAMP(3),
                                orders BIGINT, amount BIGINT, PRIMARY KEY (customer, window_start))
      WITH (connector = 'postgres', conninfo = ')" << pg.conninfo() << R"(');
    CREATE TABLE per_customer (customer VARCHAR PRIMARY KEY, orders BIGINT, amount BIGINT)
      WITH (connector = 'postgres', conninfo = ')" << pg.conninfo() << R"(', "table-name" = 'customer_totals');
    CREATE VIEW windows AS
      SELECT customer, window_start, window_end, COUNT(*) AS orders, SUM(amount) AS amount
      FROM TUMBLE(orders, DESCRIPTOR(ts), INTERVAL '1' SECOND)
      WHERE kts = ts
      GROUP BY customer, window_start, window_end;
    INSERT INTO totals SELECT * FROM windows;
    INSERT INTO window_totals SELECT * FROM windows;
    CREATE TABLE window_log (customer VARCHAR, window_start TIMESTAMP(3), orders BIGINT, amount BIGINT)
      WITH (connector = 'postgres', conninfo = ')" << pg.conninfo() << R"(', "sink.transaction-prefix" = 'sql-log');
    INSERT INTO per_customer SELECT customer, COUNT(*), SUM(amount) FROM orders GROUP BY customer;
    INSERT INTO window_log SELECT customer, window_start, orders, amount FROM windows;
  )";
  auto args = [&](bool restore) {
    std::vector<std::string> a = {testing::weir_bin(), "sql", script, "--verbose", "-p", "2", "--checkpoint-dir",
                                  dir.path("chk"), "--checkpoint-interval", "100ms"};
    if (restore) a.insert(a.end(), {"--restore", "latest"});
    return a;
  };
  kill_after_five_checkpoints_then_restore(args, dir);
  if (HasFatalFailure()) return;

  const Totals want = examples::expected_order_totals(g, 1000);
  const Totals in_kafka = kafka_totals(broker.bootstrap(), dir);
  EXPECT_TRUE(in_kafka == want) << "the totals in Kafka differ from the input's: " << first_difference(in_kafka, want);

  Totals in_pg;
  for (const std::string& row : pg.sql("SELECT customer, (extract(epoch from window_start) * 1000)::bigint, orders, "
                                       "amount FROM window_totals")) {
    std::vector<std::string> cols = absl::StrSplit(row, '\t');
    ASSERT_EQ(cols.size(), 4u) << row;
    in_pg[{cols[0], std::stoll(cols[1])}] = {std::stoll(cols[2]), std::stoll(cols[3])};
  }
  EXPECT_TRUE(in_pg == want) << "the PostgreSQL table differs from the input's totals: " << first_difference(in_pg, want);

  // Without a primary key: inserts, exactly once (a prepared transaction per
  // checkpoint), so each window's row is there once.
  Totals in_log;
  for (const std::string& row : pg.sql("SELECT customer, (extract(epoch from window_start) * 1000)::bigint, orders, "
                                       "amount FROM window_log")) {
    std::vector<std::string> cols = absl::StrSplit(row, '\t');
    ASSERT_EQ(cols.size(), 4u) << row;
    const auto key = std::make_pair(cols[0], std::stoll(cols[1]));
    EXPECT_EQ(in_log.count(key), 0u) << "twice: " << row;
    in_log[key] = {std::stoll(cols[2]), std::stoll(cols[3])};
  }
  EXPECT_TRUE(in_log == want) << "the inserted windows differ from the input's totals: " << first_difference(in_log, want);

  std::map<std::string, std::pair<int64_t, int64_t>> want_customers, got_customers;
  for (const auto& [key, t] : want) {
    want_customers[key.first].first += t.first;
    want_customers[key.first].second += t.second;
  }
  for (const std::string& row : pg.sql("SELECT customer, orders, amount FROM customer_totals")) {
    std::vector<std::string> cols = absl::StrSplit(row, '\t');
    ASSERT_EQ(cols.size(), 3u) << row;
    got_customers[cols[0]] = {std::stoll(cols[1]), std::stoll(cols[2])};
  }
  EXPECT_EQ(got_customers, want_customers);
}

// An updating result (a GROUP BY whose HAVING deletes groups) into an
// upsert-kafka table, exactly-once with failures: the topic, read as a
// compacted topic is (the last record per key; a tombstone deletes), holds
// each group the input leaves. Then read back as an upsert-kafka table
// (each key's changes normalized into a changelog): its rows, and an
// aggregation over them, are that table's.
TEST(UpsertKafkaTest, AnUpdatingResultWrittenAndReadBackIsTheGroupsTable) {
  TempDir dir("upsert-kafka");
  Broker broker(dir.path("broker"));
  ASSERT_FALSE(broker.bootstrap().empty()) << broker.err();
  constexpr int64_t kEvents = 30000;
  // The groups' counts, and a HAVING bound that deletes about half.
  nexmark::Generator gen;
  std::map<int64_t, std::pair<int64_t, int64_t>> groups;  // g -> (count, max price)
  for (int64_t i = 0; i < kEvents; ++i) {
    const nexmark::Event e = gen.generate(i);
    if (e.type != nexmark::EventType::kBid) continue;
    auto& [n, top] = groups[e.bid.auction % 40];
    ++n;
    top = std::max(top, e.bid.price);
  }
  std::vector<int64_t> counts;
  for (const auto& [g, v] : groups) counts.push_back(v.first);
  std::sort(counts.begin(), counts.end());
  const int64_t bound = counts[counts.size() / 2];
  std::set<std::string> want;
  int64_t live = 0, total = 0;
  for (const auto& [g, v] : groups) {
    if (v.first >= bound) continue;
    want.insert(absl::StrCat(g, ",", v.first, ",", v.second));
    ++live;
    total += v.first;
  }
  ASSERT_GT(live, 5);
  ASSERT_LT(live, static_cast<int64_t>(groups.size()) - 5);

  const std::string kafka = "\"properties.bootstrap.servers\" = '" + broker.bootstrap() + "'";
  const std::string table = "CREATE TABLE counts (g BIGINT PRIMARY KEY, n BIGINT, top BIGINT) WITH (connector = "
                            "'upsert-kafka', topic = 'upserts', " + kafka + ", \"key.format\" = 'csv', "
                            "\"value.format\" = 'csv'";
  const std::string write = dir.path("write.sql");
  std::ofstream(write) << "CREATE TABLE bid (auction BIGINT, price BIGINT) WITH (connector = 'nexmark', events = "
                       << kEvents << ", rate = 10000, \"fail-every\" = 7000);\n"
                       << table << ", \"sink.transactional-id-prefix\" = 'upserts');\n"
                       << "INSERT INTO counts SELECT MOD(auction, 40), COUNT(*), MAX(price) FROM bid "
                       << "GROUP BY MOD(auction, 40) HAVING COUNT(*) < " << bound << ";\n";
  Child writer({testing::weir_bin(), "sql", write, "-p", "2", "--checkpoint-interval", "50ms"}, dir.path("writer"));
  ASSERT_EQ(writer.wait(), 0) << writer.err();
  EXPECT_EQ(writer.out().find("restarts: 0"), std::string::npos) << "no failure injected\n" << writer.out();

  // The topic as compaction would leave it.
  Child kcat({kKcat, "-C", "-b", broker.bootstrap(), "-t", "upserts", "-e", "-q", "-Z", "-X",
              "isolation.level=read_committed", "-f", "%k=%s\\n"},
             dir.path("kcat"));
  ASSERT_EQ(kcat.wait(), 0) << kcat.err();
  std::map<std::string, std::string> compacted;
  int tombstones = 0;
  std::istringstream lines(kcat.out());
  for (std::string l; std::getline(lines, l);) {
    const size_t eq = l.find('=');
    ASSERT_NE(eq, std::string::npos) << l;
    if (l.substr(eq + 1) == "NULL") {
      ++tombstones;
      compacted.erase(l.substr(0, eq));
    } else {
      compacted[l.substr(0, eq)] = l.substr(eq + 1);
    }
  }
  EXPECT_GT(tombstones, 0);
  std::set<std::string> in_topic;
  for (const auto& [k, v] : compacted) {
    EXPECT_EQ(v.substr(0, v.find(',')), k) << "the key is the PRIMARY KEY's value";
    in_topic.insert(v);
  }
  EXPECT_EQ(in_topic, want);

  // Read back: the rows, and what an aggregation over them gives.
  const std::string read = dir.path("read.sql");
  std::ofstream(read) << table << ", \"scan.bounded.mode\" = 'latest-offset');\n"
                      << "CREATE TABLE copy (g BIGINT, n BIGINT, top BIGINT) WITH (connector = 'filesystem', "
                      << "format = 'changelog-csv', path = '" << dir.path("copy") << "');\n"
                      << "CREATE TABLE summary (groups BIGINT, total BIGINT) WITH (connector = 'filesystem', "
                      << "format = 'changelog-csv', path = '" << dir.path("summary") << "');\n"
                      << "INSERT INTO copy SELECT g, n, top FROM counts;\n"
                      << "INSERT INTO summary SELECT COUNT(*), SUM(n) FROM counts;\n";
  Child reader({testing::weir_bin(), "sql", read, "-p", "2", "--checkpoint-interval", "50ms"}, dir.path("reader"));
  ASSERT_EQ(reader.wait(), 0) << reader.err();
  auto copy = read_published_lines(dir.path("copy"), "part");
  ASSERT_TRUE(copy.ok()) << copy.status();
  const std::vector<std::string> rows = testing::apply_changelog(*copy);
  EXPECT_EQ(std::set<std::string>(rows.begin(), rows.end()), want);
  EXPECT_EQ(rows.size(), want.size());
  auto summary = read_published_lines(dir.path("summary"), "part");
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(testing::apply_changelog(*summary), std::vector<std::string>{absl::StrCat(live, ",", total)});
}

// The orders job killed once mid-run and restored to the end: the totals
// topic (read_committed) and the PostgreSQL table hold each window's total
// exactly once and exactly as the input implies; every bad record is in
// the rejects topic once.
TEST(OrdersJobTest, KafkaToKafkaAndPostgresAfterAKillAreExactlyOnce) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  TempDir dir("orders-job");
  Broker broker(dir.path("broker"));
  ASSERT_FALSE(broker.bootstrap().empty()) << broker.err();
  testing::PgServer pg(4);
  ASSERT_TRUE(pg.ok()) << pg.log();
  pg.sql("CREATE TABLE order_totals (customer text, window_start bigint, window_end bigint, orders bigint, "
         "amount bigint, PRIMARY KEY (customer, window_start))");

  examples::GeneratedOrders g;
  g.count = 20000;
  g.bad_every = 997;
  g.seed = seed;
  Child gen({testing::weir_bin(), "generate", "orders", "--kafka-brokers", broker.bootstrap(), "--count",
             std::to_string(g.count), "--bad-every", std::to_string(g.bad_every), "--seed", std::to_string(seed)},
            dir.path("gen"));
  ASSERT_EQ(gen.wait(), 0) << gen.err();

  auto args = [&](bool restore) {
    std::vector<std::string> a = {testing::weir_bin(), "example", "orders", "--verbose", "--kafka-brokers",
                                  broker.bootstrap(), "--kafka-bounded", "--window-ms", "1000", "--postgres",
                                  pg.conninfo(), "-p", "2", "--rate", "4000", "--checkpoint-dir", dir.path("chk"),
                                  "--checkpoint-interval", "100ms"};
    if (restore) a.insert(a.end(), {"--restore", "latest"});
    return a;
  };
  kill_after_five_checkpoints_then_restore(args, dir);
  if (HasFatalFailure()) return;

  const Totals want = examples::expected_order_totals(g, 1000);
  const Totals in_kafka = kafka_totals(broker.bootstrap(), dir);
  EXPECT_EQ(in_kafka.size(), want.size());
  EXPECT_TRUE(in_kafka == want) << "the totals in Kafka differ from the input's: " << first_difference(in_kafka, want);

  Totals in_pg;
  for (const std::string& row : pg.sql("SELECT customer, window_start, orders, amount FROM order_totals")) {
    std::istringstream cols(row);
    std::string customer, start, orders, amount;
    std::getline(cols, customer, '\t');
    std::getline(cols, start, '\t');
    std::getline(cols, orders, '\t');
    std::getline(cols, amount, '\t');
    in_pg[{customer, std::stoll(start)}] = {std::stoll(orders), std::stoll(amount)};
  }
  EXPECT_TRUE(in_pg == want) << "the PostgreSQL table differs from the input's totals: " << first_difference(in_pg, want);

  std::vector<std::string> rejects = committed_values(broker.bootstrap(), "orders-rejects", dir.path("kcat-rejects"));
  EXPECT_EQ(static_cast<int64_t>(rejects.size()), g.count / g.bad_every);
  std::set<std::string> ids;
  for (const std::string& v : rejects) {
    auto j = nlohmann::json::parse(v);
    EXPECT_FALSE(j["reason"].get<std::string>().empty());
    EXPECT_NE(j["origin"].get<std::string>().find("topic orders partition"), std::string::npos);
    ids.insert(j["record"].get<std::string>());
  }
  EXPECT_EQ(ids.size(), rejects.size()) << "a rejected record twice";
}

// ---- Nexmark through Kafka ----------------------------------------------------

std::vector<std::string> sorted_lines(const std::string& path) {
  std::istringstream in(testing::slurp(path));
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  std::sort(lines.begin(), lines.end());
  return lines;
}

// `weir nexmark --produce-to` fills a topic; queries reading it with
// `--source kafka` give the rows they give from the generator.
TEST(NexmarkKafkaTest, QueriesFromATopicMatchTheGenerator) {
  TempDir dir("nexmark-kafka");
  Broker broker(dir.path("broker"));
  ASSERT_FALSE(broker.bootstrap().empty()) << broker.err();
  const std::string events = "100000";
  Child produce({testing::weir_bin(), "nexmark", "--produce-to", "nexmark", "--kafka-brokers", broker.bootstrap(),
                 "--events", events, "-p", "2"},
                dir.path("produce"));
  ASSERT_EQ(produce.wait(), 0) << produce.err();
  for (const std::string q : {"q3", "q5", "q8"}) {
    SCOPED_TRACE(q);
    Child from_kafka({testing::weir_bin(), "nexmark", "--source", "kafka", "--topic", "nexmark", "--kafka-brokers",
                      broker.bootstrap(), "--query", q, "-p", "2", "--output", dir.path(q + "-kafka.csv")},
                     dir.path(q + "-kafka"));
    ASSERT_EQ(from_kafka.wait(), 0) << from_kafka.err();
    EXPECT_NE(from_kafka.out().find("events: " + events + "\n"), std::string::npos) << from_kafka.out();
    Child generated({testing::weir_bin(), "nexmark", "--query", q, "--events", events, "-p", "2", "--output",
                     dir.path(q + "-gen.csv")},
                    dir.path(q + "-gen"));
    ASSERT_EQ(generated.wait(), 0) << generated.err();
    std::vector<std::string> want = sorted_lines(dir.path(q + "-gen.csv"));
    EXPECT_FALSE(want.empty());
    EXPECT_TRUE(sorted_lines(dir.path(q + "-kafka.csv")) == want);
  }
  Child bad({testing::weir_bin(), "nexmark", "--source", "kafka", "--query", "q5"}, dir.path("bad"));
  EXPECT_EQ(bad.wait(), 2);
  EXPECT_NE(bad.err().find("--source kafka needs --topic and --kafka-brokers"), std::string::npos) << bad.err();
}

// ---- unreachable brokers ------------------------------------------------------

// A port nothing listens on: bound, then closed.
std::string closed_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  ::close(fd);
  return "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
}

// The source and, separately, the sink pointed at an address without a
// broker: the task fails within the request timeout, the message names the
// address and the cause, and (restart strategy none) the job fails with it.
TEST(KafkaUnreachableTest, ASourceOrSinkWithoutABrokerFailsNamingTheAddress) {
  TempDir dir("kafka-unreachable");
  const std::string nowhere = closed_port();
  ASSERT_TRUE(examples::generate_running_sum_input(dir.path("in.txt"), 100, 5, 0, 1).ok());
  Child source({testing::weir_bin(), "example", "running-sum", "--kafka-brokers", nowhere, "--input-topic", "in",
                "--output", dir.path("out1"), "--restart-strategy", "none"},
               dir.path("source"));
  Child sink({testing::weir_bin(), "example", "running-sum", "--kafka-brokers", nowhere, "--input",
              dir.path("in.txt"), "--output-topic", "out", "--output", dir.path("out2"), "--restart-strategy", "none"},
             dir.path("sink"));
  for (Child* c : {&source, &sink}) {
    EXPECT_EQ(c->wait(), 4) << c->err();
    EXPECT_NE(c->err().find("kafka " + nowhere + ": cannot list topics within 30 s (is a broker there?)"),
              std::string::npos)
        << c->err();
  }
  EXPECT_NE(source.err().find("open kafka-source"), std::string::npos) << source.err();
  EXPECT_NE(sink.err().find("open kafka-sink"), std::string::npos) << sink.err();
  // librdkafka's own lines go through weir's log, not raw to stderr.
  EXPECT_EQ(source.err().find("%3|"), std::string::npos) << source.err();
}

}  // namespace
}  // namespace weir
