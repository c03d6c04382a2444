// The PostgreSQL sinks end to end: a throwaway PostgreSQL 15
// cluster (initdb + pg_ctl, on a Unix socket in the test's directory) per
// test, the running-sum job in real weir processes writing its sums as rows,
// the table read back with libpq and checked like the file output.
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <random>
#include <sstream>

#include "absl/strings/str_join.h"
#include "common/test_points.h"
#include "examples/running_sum/running_sum.h"
#include "sql/job_builder.h"
#include "sql/planner.h"
#include "testing/committing_sink.h"
#include "testing/seed.h"
#include "tests/at_most_once_checks.h"
#include "tests/pg_server.h"
#include "tests/process.h"
#include "weir/postgres.h"
#include "weir/weir.h"
#include "tests/sink_windows.h"

namespace fs = std::filesystem;

namespace weir {
namespace {

using testing::Child;
using testing::kPgBin;
using testing::PgServer;
using testing::TempDir;

class PostgresTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(kPgBin + "initdb")) << "PostgreSQL 15 is missing: run scripts/install-deps.sh";
    seed_ = testing::test_seed();
    dir_ = std::make_unique<TempDir>(std::string("pg-") +
                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    pg_ = std::make_unique<PgServer>(16);
    ASSERT_TRUE(pg_->ok()) << "PostgreSQL did not start: " << pg_->log();
    pg_->sql("CREATE TABLE results (key text NOT NULL, sum bigint NOT NULL, count bigint NOT NULL)");
    pg_->sql("CREATE TABLE totals (key text PRIMARY KEY, sum bigint NOT NULL, count bigint NOT NULL)");
    ASSERT_TRUE(examples::generate_running_sum_input(dir_->path("in.txt"), 100000, 500, 997, seed_).ok());
  }

  std::vector<std::string> args(bool restore, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> a = {testing::weir_bin(), "example", "running-sum", "--verbose",
                                  "--input", dir_->path("in.txt"), "--postgres", pg_->conninfo(),
                                  "--output-table", upsert_ ? "totals" : "results", "--output", dir_->path("rejects"),
                                  "--parallelism", "4", "--checkpoint-dir", dir_->path("chk"),
                                  "--checkpoint-interval", "50ms", "--rate", "5000"};
    if (restore) {
      a.push_back("--restore");
      a.push_back("latest");
    }
    if (upsert_) a.push_back("--postgres-upsert");
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }

  // Upsert: the table holds, per key, the final sum and count of the input.
  void check_final_sums() {
    std::map<std::string, std::pair<int64_t, int64_t>> want;
    std::istringstream in(testing::slurp(dir_->path("in.txt")));
    for (std::string line; std::getline(in, line);) {
      examples::ParsedLine p = examples::parse_running_sum_line(line);
      if (!p.ok) continue;
      auto& [sum, count] = want[p.key];
      sum += p.value;
      ++count;
    }
    std::map<std::string, std::pair<int64_t, int64_t>> got;
    for (const std::string& row : pg_->sql("SELECT key, sum, count FROM totals")) {
      size_t a = row.find('\t'), b = row.rfind('\t');
      got[row.substr(0, a)] = {std::stoll(row.substr(a + 1, b - a - 1)), std::stoll(row.substr(b + 1))};
    }
    ASSERT_EQ(got.size(), want.size());
    int wrong = 0;
    for (const auto& [key, v] : want) {
      auto it = got.find(key);
      if (it == got.end() || it->second != v) {
        if (++wrong <= 5) ADD_FAILURE() << "key " << key << ": want " << v.first << "," << v.second;
      }
    }
    EXPECT_EQ(wrong, 0);
  }

  // `exact`: every difference the checker notes is a failure.
  examples::RunningSumCheck check(bool exact = true) {
    std::vector<std::string> out;
    for (const std::string& row : pg_->sql("SELECT key, sum, count FROM results")) {
      std::string line = row;
      std::replace(line.begin(), line.end(), '\t', ',');
      out.push_back(line);
    }
    auto c = examples::check_running_sum({dir_->path("in.txt")}, dir_->path("rejects"), &out);
    EXPECT_TRUE(c.ok()) << c.status();
    if (!c.ok()) return {};
    if (exact) {
      for (const auto& p : c->problems) ADD_FAILURE() << p;
    }
    // Nothing is left prepared once the job finished.
    EXPECT_TRUE(pg_->sql("SELECT gid FROM pg_prepared_xacts").empty());
    return *c;
  }

  // SIGKILL of the whole job at random moments (after a random number of
  // completed checkpoints), repeated, then `--restore latest` to the end.
  void kill_repeatedly_then_finish() {
    std::mt19937_64 rng(seed_);
    int kills = 0;
    for (int round = 0; round < 4; ++round) {
      Child c(args(round > 0 && kills > 0), dir_->path("round" + std::to_string(round)), /*pipe_stderr=*/true);
      int completed = 0, more = 1 + static_cast<int>(rng() % 4);
      bool reached = c.wait_for_line(
          [&](const std::string& line) { return line.find("completed") != std::string::npos && ++completed >= more; },
          std::chrono::seconds(60));
      if (!reached) {
        ASSERT_EQ(c.wait(), 0) << c.err();
        break;
      }
      c.kill9();
      if (c.wait() == 0) break;  // it finished between the line and the kill
      ++kills;
    }
    EXPECT_GE(kills, 1);
    Child last(args(kills > 0), dir_->path("final"));
    ASSERT_EQ(last.wait(), 0) << last.err();
  }

  uint64_t seed_ = 0;
  bool upsert_ = false;
  std::unique_ptr<TempDir> dir_;
  std::unique_ptr<PgServer> pg_;
};

TEST_F(PostgresTest, InjectedTaskFailuresGiveExactlyOnceRows) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  Child job(args(false, {"--fail-every", "10000", "--seed", std::to_string(seed_)}), dir_->path("job"));
  ASSERT_EQ(job.wait(), 0) << job.err();
  EXPECT_EQ(job.out().find("restarts: 0"), std::string::npos) << "no failure was injected: " << job.out();
  EXPECT_TRUE(check().exactly_once);
  // The server's notices (each restart's CREATE TABLE IF NOT EXISTS) are
  // not printed.
  EXPECT_EQ(job.err().find("NOTICE"), std::string::npos) << job.err();
}

// At-most-once with injected failures: rows committed at each checkpoint,
// restarts from the latest with the sources continuing after what they had
// read: no row twice, the sums follow from the rows there, and the rows
// missing are exactly the records the job counted as lost.
TEST_F(PostgresTest, AtMostOnceLosesExactlyWhatItCounts) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  Child job(args(false, {"--fail-every", "10000", "--seed", std::to_string(seed_), "--mode", "at-most-once"}),
            dir_->path("job"));
  ASSERT_EQ(job.wait(), 0) << job.err();
  const int64_t lost = testing::lost_records_in(job.out());
  EXPECT_GT(lost, 0) << job.out();
  testing::expect_at_most_once(check(/*exact=*/false), lost);
}

// The summary says what the sink wrote: every row, committed in prepared
// transactions, as many as the table holds; the part-file count, which
// would say 0, is not printed.
TEST_F(PostgresTest, TheSummarySaysWhatTheSinkCommitted) {
  Child job(args(false), dir_->path("job"));
  ASSERT_EQ(job.wait(), 0) << job.err();
  const std::vector<std::string> count = pg_->sql("SELECT count(*) FROM results");
  ASSERT_EQ(count.size(), 1u);
  ASSERT_GT(std::stoll(count[0]), 0);
  EXPECT_NE(job.out().find("wrote " + count[0] + " records; " + count[0] + " committed in "), std::string::npos)
      << count[0] << " rows in the table; " << job.out();
  EXPECT_EQ(job.out().find("output records:"), std::string::npos) << job.out();
  EXPECT_NE(job.out().find("rejected lines: "), std::string::npos) << job.out();
}

// SIGKILL of the whole job at random moments (after a random number of
// completed checkpoints), repeated, then `--restore latest`: a real server
// rolls back whatever was open, so any instant is fair.
TEST_F(PostgresTest, RepeatedKillsAndRestoreLatestGiveExactlyOnceRows) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  kill_repeatedly_then_finish();
  if (HasFatalFailure()) return;
  EXPECT_TRUE(check().exactly_once);
}

// Parameter: a crash point of the sink's commit protocol; the job is
// SIGKILLed there and `--restore latest` must leave exactly-once rows.
class PostgresCrashPointTest : public PostgresTest, public ::testing::WithParamInterface<CrashPoint> {};

TEST_P(PostgresCrashPointTest, KilledAtTheCrashPointRestoresLatestExactlyOnce) {
  if (!WEIR_TEST_POINTS) GTEST_SKIP() << "test points are compiled out of Release builds";
  const CrashPoint p = GetParam();
  testing::kill_at_sink_window(
      p, [&](bool restore) { return args(restore); }, [&](const std::string& name) { return dir_->path(name); }, /*pre_commits=*/24);
  if (HasFatalFailure()) return;
  Child last(args(true), dir_->path("final"));
  ASSERT_EQ(last.wait(), 0) << last.err();
  EXPECT_TRUE(check().exactly_once);
}

INSTANTIATE_TEST_SUITE_P(SinkWindows, PostgresCrashPointTest,
                         testing::kSinkWindows, testing::sink_window_name);

TEST_F(PostgresTest, MissingColumnRefusedLoginAndDisabledPreparedTransactionsAreNamed) {
  pg_->sql("CREATE TABLE narrow (key text, sum bigint)");
  std::vector<std::string> a = args(false, {"--restart-strategy", "none"});
  for (auto& x : a) {
    if (x == "results") x = "narrow";
  }
  Child job(a, dir_->path("narrow"));
  EXPECT_NE(job.wait(), 0);
  EXPECT_NE(job.err().find("column \"count\" does not exist"), std::string::npos) << job.err();

  // A login the server refuses: named by host and port, with the cause, and
  // without the connection string (it could hold a password).
  a = args(false, {"--restart-strategy", "none"});
  for (auto& x : a) {
    if (x == pg_->conninfo()) x = pg_->conninfo() + " user=ghost password=hunter2";
  }
  Child ghost(a, dir_->path("ghost"));
  EXPECT_NE(ghost.wait(), 0);
  EXPECT_NE(ghost.err().find("cannot connect"), std::string::npos) << ghost.err();
  EXPECT_NE(ghost.err().find("role \"ghost\" does not exist"), std::string::npos) << ghost.err();
  EXPECT_EQ(ghost.err().find("hunter2"), std::string::npos) << ghost.err();

  PgServer off(0);
  ASSERT_TRUE(off.ok()) << off.log();
  off.sql("CREATE TABLE results (key text, sum bigint, count bigint)");
  a = args(false, {"--restart-strategy", "none"});
  for (auto& x : a) {
    if (x == pg_->conninfo()) x = off.conninfo();
  }
  Child refused(a, dir_->path("refused"));
  EXPECT_NE(refused.wait(), 0);
  EXPECT_NE(refused.err().find("max_prepared_transactions is 0"), std::string::npos) << refused.err();
}

// A sink rolls back only its own leftover prepared transactions: not those
// of a sink whose prefix extends its own ("r_s-1": a crash between a
// checkpoint's completion and its commit leaves them for that sink to
// commit), nor those a LIKE pattern's '_' would match.
TEST_F(PostgresTest, ASinkNeverRollsBackAnotherSinksPreparedTransactions) {
  pg_->sql("CREATE TABLE r_s (key text NOT NULL, sum bigint NOT NULL, count bigint NOT NULL)");
  const std::string others[] = {"weir-running-sum-r_s-1-0-5", "weir-running-sum-rXs-0-5",
                                "weir-running-sum-r_s-0-5x", "weir-running-sum-r_s--0-5"};
  const std::string own = "weir-running-sum-r_s-2-999999";
  for (const std::string& gid : {others[0], others[1], others[2], others[3], own}) {
    pg_->sql("BEGIN; INSERT INTO r_s VALUES ('" + gid + "', 1, 1); PREPARE TRANSACTION '" + gid + "'");
  }
  ASSERT_TRUE(examples::generate_running_sum_input(dir_->path("small.txt"), 2000, 50, 997, seed_).ok());
  Child job({testing::weir_bin(), "example", "running-sum", "--input", dir_->path("small.txt"), "--postgres",
             pg_->conninfo(), "--output-table", "r_s", "--output", dir_->path("rejects"), "--parallelism", "4",
             "--checkpoint-dir", dir_->path("chk"), "--checkpoint-interval", "50ms"},
            dir_->path("r_s"));
  ASSERT_EQ(job.wait(), 0) << job.err();
  std::vector<std::string> left = pg_->sql("SELECT gid FROM pg_prepared_xacts ORDER BY gid");
  std::sort(left.begin(), left.end());
  std::vector<std::string> want(std::begin(others), std::end(others));
  std::sort(want.begin(), want.end());
  EXPECT_EQ(left, want) << "the sink of r_s must roll back " << own << " and nothing else";
  // The rows of the job, and none of the rolled-back transaction's.
  EXPECT_EQ(pg_->sql("SELECT count(*) FROM r_s WHERE key LIKE 'weir-%'"), std::vector<std::string>{"0"});
  const std::vector<std::string> rows = pg_->sql("SELECT count(*) FROM r_s");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_GT(std::stoll(rows[0]), 0) << "the job's own rows are committed";
}

}  // namespace
}  // namespace weir

namespace weir {
namespace {

// ---- the upsert sink --------------------------------------------------------

class PostgresUpsertTest : public PostgresTest {
 protected:
  void SetUp() override {
    upsert_ = true;
    PostgresTest::SetUp();
  }
};

TEST_F(PostgresUpsertTest, InjectedTaskFailuresLeaveTheFinalSums) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  Child job(args(false, {"--fail-every", "10000", "--seed", std::to_string(seed_)}), dir_->path("job"));
  ASSERT_EQ(job.wait(), 0) << job.err();
  EXPECT_EQ(job.out().find("restarts: 0"), std::string::npos) << "no failure was injected: " << job.out();
  check_final_sums();
}

TEST_F(PostgresUpsertTest, RepeatedKillsAndRestoreLatestLeaveTheFinalSums) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  kill_repeatedly_then_finish();
  if (HasFatalFailure()) return;
  check_final_sums();
}

// The upsert sink writes its batch at the barrier and nothing at
// completion, so two of the four windows exist for it: killed after the
// batch of checkpoint n is written but before n completes (the table is
// ahead of the checkpoint restored), and after completion.
class PostgresUpsertCrashPointTest : public PostgresUpsertTest, public ::testing::WithParamInterface<CrashPoint> {};

TEST_P(PostgresUpsertCrashPointTest, KilledAtTheCrashPointRestoresLatestToTheFinalSums) {
  if (!WEIR_TEST_POINTS) GTEST_SKIP() << "test points are compiled out of Release builds";
  testing::kill_at_sink_window(
      GetParam(), [&](bool restore) { return args(restore); }, [&](const std::string& name) { return dir_->path(name); }, /*pre_commits=*/24);
  if (HasFatalFailure()) return;
  Child last(args(true), dir_->path("final"));
  ASSERT_EQ(last.wait(), 0) << last.err();
  check_final_sums();
}

INSTANTIATE_TEST_SUITE_P(SinkWindows, PostgresUpsertCrashPointTest,
                         ::testing::Values(CrashPoint::kSinkPreCommitted, CrashPoint::kCompletedBeforeNotify),
                         testing::sink_window_name);

TEST_F(PostgresUpsertTest, ATableWithoutThePrimaryKeyIsRefused) {
  pg_->sql("DROP TABLE totals");
  pg_->sql("CREATE TABLE totals (key text, sum bigint, count bigint)");
  Child job(args(false, {"--restart-strategy", "none"}), dir_->path("job"));
  EXPECT_NE(job.wait(), 0);
  EXPECT_NE(job.err().find("must be the table's primary key or a unique index"), std::string::npos) << job.err();
}

// A changelog with inserts, updates (-U rows among them) and deletes of 50
// keys, applied by three sink subtasks under injected task failures: the
// table ends as the changelog's final state.
constexpr int64_t kChanges = 20000, kKeys = 50;

class ChangelogWithFailures final : public KeyedProcessFunction<int64_t, int64_t, PostgresRow> {
 public:
  explicit ChangelogWithFailures(uint64_t seed) : seed_(seed) {}
  static RowKind kind_of(int64_t i) {
    uint64_t h = static_cast<uint64_t>(i) * 2654435761u % 10;
    return h < 3 ? RowKind::kInsert : h < 6 ? RowKind::kUpdateAfter : h < 7 ? RowKind::kUpdateBefore : RowKind::kDelete;
  }
  absl::Status open(KeyedRuntimeContext<int64_t>& ctx) override {
    std::mt19937_64 rng(seed_ + ctx.operator_context().subtask_index() * 31 + ctx.operator_context().attempt());
    armed_ = ctx.operator_context().attempt() < 3;
    threshold_ = 1 + static_cast<int64_t>(rng() % 3000);
    return absl::OkStatus();
  }
  void process_element(const int64_t& i, Context& ctx, Collector<PostgresRow>& out) override {
    PostgresRow r;
    r.kind = kind_of(i);
    // A -U row carries the old values (here none): the sink deletes its
    // key's row, which a later +I or +U brings back.
    r.values = {std::to_string(ctx.current_key()), r.kind == RowKind::kUpdateBefore ? std::nullopt
                                                                                    : std::optional(std::to_string(i))};
    out.collect(r);
    if (armed_ && ++seen_ >= threshold_) {
      armed_ = false;
      throw std::runtime_error("injected failure");
    }
  }

 private:
  const uint64_t seed_;
  bool armed_ = false;
  int64_t seen_ = 0, threshold_ = 0;
};

TEST_F(PostgresTest, UpsertSinkAppliesInsertsUpdatesAndDeletesUnderFailures) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  pg_->sql("CREATE TABLE latest (k bigint PRIMARY KEY, v bigint)");
  JobConfig config = testing::failure_test_config(3);
  StreamEnvironment env(config);
  auto changes = env.from_source<int64_t>([] {
    return std::make_unique<GeneratorSource<int64_t>>([](int64_t i) { return i; }, kChanges, 100000);
  });
  changes.parallelism(1);
  const uint64_t seed = seed_;
  changes.key_by([](const int64_t& i) { return i % kKeys; })
      .process<PostgresRow>([seed] { return std::make_unique<ChangelogWithFailures>(seed); }, "changelog")
      .sink_to(PostgresUpsertSink::builder()
                   .conninfo(pg_->conninfo())
                   .table("latest")
                   .columns({"k", "v"})
                   .key_columns({"k"})
                   .max_batch_rows(7)
                   .build(),
               "upsert");
  auto result = env.execute("changelog");
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->status, JobStatus::kFinished);
  EXPECT_GE(result->restarts, 1);
  std::map<int64_t, int64_t> want;
  for (int64_t i = 0; i < kChanges; ++i) {
    RowKind k = ChangelogWithFailures::kind_of(i);
    if (k == RowKind::kDelete || k == RowKind::kUpdateBefore) {
      want.erase(i % kKeys);
    } else {
      want[i % kKeys] = i;
    }
  }
  std::map<int64_t, int64_t> got;
  for (const std::string& row : pg_->sql("SELECT k, v FROM latest")) {
    got[std::stoll(row.substr(0, row.find('\t')))] = std::stoll(row.substr(row.find('\t') + 1));
  }
  EXPECT_EQ(got, want);
}

// The source reads a table once in primary-key order, a page at a time;
// under injected failures each row reaches the exactly-once sink once.
TEST_F(PostgresTest, SourceReadsEachRowOnceUnderFailures) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  constexpr int kRows = 3000;
  pg_->sql("CREATE TABLE items (a int NOT NULL, b text NOT NULL, v bigint, PRIMARY KEY (a, b))");
  // A two-column key whose order is not the insertion order.
  pg_->sql("INSERT INTO items SELECT i % 7, 'k' || (i / 7), i FROM generate_series(1, " + std::to_string(kRows) + ") i");
  pg_->sql("INSERT INTO items VALUES (99, 'null-value', NULL)");
  testing::CommitLog<PostgresRow> log;
  JobConfig config = testing::failure_test_config(2);
  StreamEnvironment env(config);
  const uint64_t seed = seed_;
  env.from_source<PostgresRow>(PostgresSource::builder()
                                   .conninfo(pg_->conninfo())
                                   .table("items")
                                   .columns({"v", "b"})
                                   .key_columns({"a", "b"})
                                   .fetch_size(7)
                                   .build(),
                               "items")
      .sink_to([&log, seed] { return std::make_unique<testing::CommittingSink<PostgresRow>>(&log, 400, seed); }, "commit");
  auto result = env.execute("read-items");
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->status, JobStatus::kFinished) << result->failure;
  EXPECT_GE(result->restarts, 1);
  std::map<std::string, int> seen;  // "v b" -> times
  for (const PostgresRow& r : log.all()) ++seen[r.values[0].value_or("NULL") + " " + r.values[1].value_or("NULL")];
  EXPECT_EQ(seen.size(), static_cast<size_t>(kRows + 1));
  for (const auto& [row, times] : seen) EXPECT_EQ(times, 1) << row;
  EXPECT_EQ(seen.count("NULL null-value"), 1u);
  EXPECT_EQ(seen.count("3000 k428"), 1u);
}

TEST_F(PostgresTest, SourceNamesAMissingTableAndRefusesNoKey) {
  JobConfig config;
  config.restart.kind = RestartStrategyKind::kNone;
  StreamEnvironment env(config);
  testing::CollectingSink<PostgresRow>::Rows rows;
  env.from_source<PostgresRow>(
         PostgresSource::builder().conninfo(pg_->conninfo()).table("nowhere").columns({"a"}).key_columns({"a"}).build(), "pg")
      .sink_to([&rows] { return std::make_unique<testing::CollectingSink<PostgresRow>>(&rows); }, "collect");
  auto result = env.execute("missing");
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->status, JobStatus::kFailed);
  EXPECT_NE(result->failure.find("postgres source of nowhere"), std::string::npos) << result->failure;
  EXPECT_NE(result->failure.find("\"nowhere\" does not exist"), std::string::npos) << result->failure;
  PostgresSourceOptions o;
  o.conninfo = "host=x";
  o.table = "t";
  o.columns = {"a"};
  EXPECT_EQ(std::string(o.validate().message()),
            "postgres source of t: needs the table's primary key (rows are read in its order and resumed after it)");
}

// From SQL: each type read from PostgreSQL's columns (arrays and jsonb as
// ARRAY and MAP, bytea as BYTES), and a lookup join (FOR SYSTEM_TIME AS
// OF) with the table.
TEST_F(PostgresTest, SqlReadsEveryTypeAndJoinsTheTable) {
  pg_->sql("CREATE TABLE rates (currency text PRIMARY KEY, rate numeric(10, 4), ok boolean, since timestamp, "
           "day date, at time, tags text[], attrs jsonb, blob bytea, n bigint, d double precision)");
  pg_->sql("INSERT INTO rates VALUES ('EUR', 1.0842, true, '2026-01-01 00:00:05.934567', '2024-02-29', '13:45:07.25', "
           "'{a,b}', '{\"x\": 1}', '\\x00ff', 9007199254740993, 0.1), "
           "('USD', 1, false, NULL, NULL, NULL, '{}', '{}', '', NULL, NULL)");
  const std::string script =
      "CREATE TABLE rates (currency STRING, rate DECIMAL(10, 4), ok BOOLEAN, since TIMESTAMP(3), `day` DATE, `at` TIME, "
      "tags ARRAY<STRING>, attrs MAP<STRING, BIGINT>, blob BYTES, n BIGINT, d DOUBLE, "
      "PRIMARY KEY (currency) NOT ENFORCED) WITH ('connector' = 'postgres', 'conninfo' = '" + pg_->conninfo() +
      "', 'scan.fetch-size' = '1');\n"
      "CREATE TABLE orders (id BIGINT, currency STRING, pt AS PROCTIME()) WITH ('connector' = 'values', "
      "'rows' = '1,EUR\n2,USD\n3,GBP');\n"
      "CREATE TABLE out_all (currency STRING, rate DECIMAL(10, 4), ok BOOLEAN, since TIMESTAMP(3), `day` DATE, `at` TIME, "
      "tags ARRAY<STRING>, attrs MAP<STRING, BIGINT>, blob BYTES, n BIGINT, d DOUBLE) WITH ('connector' = 'print');\n"
      "CREATE TABLE out_join (id BIGINT, rate DECIMAL(10, 4), tag STRING) WITH ('connector' = 'print');\n"
      "INSERT INTO out_all SELECT * FROM rates;\n"
      "INSERT INTO out_join SELECT o.id, r.rate, r.tags[1] FROM orders AS o "
      "JOIN rates FOR SYSTEM_TIME AS OF o.pt AS r ON o.currency = r.currency;\n";
  auto parsed = sql::parse_script(script);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  auto planned = sql::plan_script(*parsed);
  ASSERT_TRUE(planned.ok()) << planned.status();
  auto collected = std::make_shared<testing::CollectingSink<Row>::Rows>();
  sql::TableConnectors connectors = sql::TableConnectors::built_in();
  connectors.sinks["print"] = [collected](const DataStream<Row>& rows, bool, const sql::TableDef&, const std::string& uid) {
    rows.sink_to([collected] { return std::make_unique<testing::CollectingSink<Row>>(collected.get()); }, "collect").uid(uid);
    return absl::OkStatus();
  };
  JobConfig config;
  config.default_parallelism = 2;
  config.restart.kind = RestartStrategyKind::kNone;
  StreamEnvironment env(config);
  ASSERT_TRUE(sql::build_job(*planned, connectors, env).ok());
  auto result = env.execute("pg-sql");
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_EQ(result->status, JobStatus::kFinished) << result->failure;
  std::vector<std::string> got;
  {
    std::lock_guard lock(collected->mu);
    for (const Row& r : collected->rows) {
      std::vector<std::string> parts;
      for (size_t i = 0; i < r.values.size(); ++i) parts.push_back(r.text(i).value_or("NULL"));
      got.push_back(absl::StrJoin(parts, "|"));
    }
  }
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<std::string>{
                     "1|1.0842|a",
                     "2|1.0000|NULL",
                     "EUR|1.0842|true|1767225605934|2024-02-29|13:45:07.250|[\"a\",\"b\"]|{\"x\":1}|AP8=|9007199254740993|0.1",
                     "USD|1.0000|false|NULL|NULL|NULL|[]|{}||NULL|NULL",
                 }));
}

}  // namespace
}  // namespace weir
