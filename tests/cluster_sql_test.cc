// SQL on the cluster: a script submitted as the built-in job sql, and the
// SQL shell whose queries run on the cluster (their rows read back through
// the JobManager), each compared with the same SQL run in one process.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "testing/hostile_sql.h"
#include "tests/changelog.h"
#include "tests/cluster.h"
#include "tests/prometheus.h"
#include "weir/connectors.h"

using namespace std::chrono_literals;

namespace weir {
namespace {

using testing::Child;
using testing::Cluster;
using testing::eventually;

// A SQL script runs on the cluster as the built-in job sql (every process
// plans the same text): its rows, across an injected failure and at p=2,
// are those of the same script run in one process; bad SQL is named with
// its line and column.
// Scripts built to exhaust a planner, submitted to the JobManager: each is
// refused with the line and column it fails at, and the JobManager (which
// plans them in a child process first) goes on serving.
TEST(ClusterSqlTest, HostileScriptsAreRefusedAndTheJobManagerServesOn) {
  Cluster c("cluster-sql-hostile");
  ASSERT_TRUE(c.start({{"tm-1", 1}})) << c.jm_log();
  int tried = 0;
  for (const testing::HostileSql& h : testing::hostile_sql_scripts()) {
    if (h.refusal.empty() || h.text.size() > 60000) continue;  // job arguments are at most 64 KiB
    SCOPED_TRACE(h.name);
    ++tried;
    auto id = c.client().submit("sql", {"--script", h.text});
    ASSERT_FALSE(id.ok());
    EXPECT_TRUE(absl::IsInvalidArgument(id.status())) << id.status();
    EXPECT_NE(id.status().message().find(h.refusal), std::string_view::npos) << id.status();
    EXPECT_NE(id.status().message().find("line "), std::string_view::npos) << id.status();
    EXPECT_TRUE(c.jobmanager()->running());
  }
  EXPECT_GE(tried, 3);
  auto o = c.client().overview();
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ((*o)["taskmanagers"].size(), 1u);
}

TEST(ClusterTest, SqlScriptRunsOnTheClusterAsEmbedded) {
  Cluster c("cluster-sql");
  ASSERT_TRUE(c.start({{"tm-a", 2}})) << "the cluster did not come up\n" << c.jm_log();
  // Also an updating result: two-phase GROUP BYs (the second over the
  // first's changes) under a DENSE_RANK() TOP-N, as a changelog file.
  auto script = [&](const std::string& out, const std::string& fail_every) {
    return "SET \"table.optimizer.agg-phase-strategy\" = 'TWO_PHASE';\n"
           "CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT, date_time TIMESTAMP(3))\n"
           "  WITH (connector = 'nexmark', events = 40000, \"event-rate\" = 2000, \"fail-every\" = " + fail_every + ",\n"
           "        watermark = 'date_time - INTERVAL ''4'' SECOND');\n"
           "CREATE TABLE o (auction BIGINT, ws TIMESTAMP(3), n BIGINT, top BIGINT)\n"
           "  WITH (connector = 'filesystem', path = '" + out + "');\n"
           "INSERT INTO o SELECT auction, window_start, COUNT(*), MAX(price)\n"
           "FROM TUMBLE(bid, DESCRIPTOR(date_time), INTERVAL '5' SECOND) GROUP BY auction, window_start, window_end;\n"
           "CREATE TABLE r (m BIGINT, groups BIGINT, rk BIGINT)\n"
           "  WITH (connector = 'filesystem', format = 'changelog-csv', path = '" + out + "-ranked');\n"
           "INSERT INTO r SELECT m, groups, rk FROM (SELECT m, groups, DENSE_RANK() OVER (PARTITION BY MOD(m, 3) "
           "ORDER BY groups DESC) AS rk FROM (SELECT MOD(n, 20) AS m, COUNT(*) AS groups FROM (SELECT MOD(bidder, 200) "
           "AS g, COUNT(*) AS n FROM bid GROUP BY MOD(bidder, 200)) AS c GROUP BY MOD(n, 20)) AS s) AS t WHERE rk <= 2;\n"
           // DATE and ARRAY columns, unnested.
           "CREATE TABLE tagged (id BIGINT, d DATE, tags ARRAY<STRING>) WITH (connector = 'values', rows = '\n"
           "1,2024-02-29,\"[\"\"a\"\",\"\"b\"\"]\"\n2,2024-03-01,\"[]\"\n3,,\"[\"\"c\"\"]\"');\n"
           "CREATE TABLE u (id BIGINT, d DATE, tag STRING, n BIGINT) WITH (connector = 'filesystem', path = '" + out + "-unnest');\n"
           "INSERT INTO u SELECT id, TIMESTAMPADD(DAY, 1, d), UPPER(tag), n FROM tagged CROSS JOIN UNNEST(tags) WITH ORDINALITY AS t (tag, n);\n";
  };
  // weir sql FILE --jobmanager: the script submitted as the built-in job sql.
  std::ofstream(c.dir().path("cluster.sql")) << script(c.dir().path("cluster-out"), "9000");
  auto run = testing::run_weir({"sql", c.dir().path("cluster.sql"), "-p", "2", "--checkpoint-dir", c.dir().path("chk"),
                                "--checkpoint-interval", "100ms", "--jobmanager", c.rest(), "--secret-file",
                                c.secret_file()},
                               c.dir().path("run"));
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("FINISHED"), std::string::npos) << run.out;
  EXPECT_NE(run.err.find("restarted"), std::string::npos) << "no failure injected: " << run.err;
  std::ofstream(c.dir().path("job.sql")) << script(c.dir().path("embedded-out"), "0");
  auto embedded = testing::run_weir({"sql", c.dir().path("job.sql")}, c.dir().path("embedded"));
  ASSERT_EQ(embedded.code, 0) << embedded.err;
  auto got = read_published_lines(c.dir().path("cluster-out"), "part");
  auto want = read_published_lines(c.dir().path("embedded-out"), "part");
  ASSERT_TRUE(got.ok() && want.ok());
  ASSERT_GT(want->size(), 100u);
  EXPECT_EQ(std::multiset<std::string>(got->begin(), got->end()), std::multiset<std::string>(want->begin(), want->end()));
  auto got_ranked = read_published_lines(c.dir().path("cluster-out-ranked"), "part");
  auto want_ranked = read_published_lines(c.dir().path("embedded-out-ranked"), "part");
  ASSERT_TRUE(got_ranked.ok() && want_ranked.ok());
  const std::vector<std::string> ranked = testing::apply_changelog(*want_ranked);
  ASSERT_GT(ranked.size(), 5u);
  EXPECT_EQ(testing::apply_changelog(*got_ranked), ranked);
  auto got_unnest = read_published_lines(c.dir().path("cluster-out-unnest"), "part");
  auto want_unnest = read_published_lines(c.dir().path("embedded-out-unnest"), "part");
  ASSERT_TRUE(got_unnest.ok() && want_unnest.ok());
  const std::multiset<std::string> unnested = {"1,2024-03-01,A,1", "1,2024-03-01,B,2", "3,,C,1"};
  EXPECT_EQ(std::multiset<std::string>(want_unnest->begin(), want_unnest->end()), unnested);
  EXPECT_EQ(std::multiset<std::string>(got_unnest->begin(), got_unnest->end()), unnested);

  auto bad = testing::run_weir({"run", "--jobmanager", c.rest(), "--secret-file", c.secret_file(), "sql", "--script",
                                "CREATE TABLE t (a BIGINT) WITH (connector = 'print');\nINSERT INTO t SELECT b FROM t;"},
                               c.dir().path("bad"));
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.err.find("line 2, column 22: no column b"), std::string::npos) << bad.err;
  // weir sql FILE --jobmanager plans the script first: nothing submitted.
  std::ofstream(c.dir().path("bad.sql")) << "CREATE TABLE t (a BIGINT) WITH (connector = 'print');\nINSERT INTO t SELECT b FROM t;";
  auto jobs_before = testing::run_weir({"list", "--jobmanager", c.rest(), "--secret-file", c.secret_file()}, c.dir().path("l1"));
  auto planned_here = testing::run_weir(
      {"sql", c.dir().path("bad.sql"), "--jobmanager", c.rest(), "--secret-file", c.secret_file()}, c.dir().path("bad2"));
  EXPECT_EQ(planned_here.code, 2) << planned_here.err;
  EXPECT_EQ(planned_here.err, "weir: " + c.dir().path("bad.sql") + ": line 2, column 22: no column b\n");
  auto jobs_after = testing::run_weir({"list", "--jobmanager", c.rest(), "--secret-file", c.secret_file()}, c.dir().path("l2"));
  ASSERT_EQ(jobs_after.code, 0) << jobs_after.err;
  EXPECT_EQ(jobs_after.out, jobs_before.out);
}

// On the cluster as embedded: a datagen table, the script's SET of job
// keys (parallelism), and a row an expression fails on: the job fails at
// once naming the expression, whatever restarts the strategy allows.
TEST(ClusterSqlTest, ARowNoRestartCanFixFailsTheJobOnceOnTheCluster) {
  Cluster c("cluster-sql-unrecoverable");
  ASSERT_TRUE(c.start({{"tm-1", 2}})) << c.jm_log();
  std::ofstream(c.dir().path("fails.sql"))
      << "SET 'parallelism.default' = '2';\n"
         "SET 'restart-strategy.type' = 'fixed-delay';\n"
         "SET 'restart-strategy.fixed-delay.attempts' = '50';\n"
         "SET 'restart-strategy.fixed-delay.delay' = '10 ms';\n"
         "CREATE TABLE g (id BIGINT) WITH ('connector' = 'datagen', 'rows-per-second' = '5000',\n"
         "  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '3000');\n"
         "CREATE TABLE o (x BIGINT) WITH ('connector' = 'blackhole');\n"
         "INSERT INTO o SELECT 10 / (id - 1000) FROM g;\n";
  auto run = testing::run_weir({"sql", c.dir().path("fails.sql"), "--checkpoint-dir", c.dir().path("chk"), "--jobmanager",
                                c.rest(), "--secret-file", c.secret_file()},
                               c.dir().path("fails"));
  EXPECT_EQ(run.code, 4) << run.out << run.err;
  EXPECT_NE(run.err.find("division by zero"), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find("restarted"), std::string::npos) << "restarted after a failure no restart fixes: " << run.err;
}

// Nexmark q5 from SQL reads the bids twice, through two chains of the same
// operators: the job graph names the second vertex "... (2)", so the two
// are told apart by name as well as by task_id. While the job runs on two
// TaskManagers, neither their pages nor the JobManager's has a series twice.
TEST(ClusterSqlTest, MetricsOfVerticesOfOneNameAreDistinctSeries) {
  Cluster c("cluster-sql-metrics");
  ASSERT_TRUE(c.start({{"tm-a", 2}, {"tm-b", 2}})) << c.jm_log();
  auto submitted = testing::run_weir({"run", "--detached", "--jobmanager", c.rest(), "--secret-file", c.secret_file(),
                                      "nexmark", "--query", "q5", "--api", "sql", "-p", "2", "--events", "100000000",
                                      "--rate", "20000", "--checkpoint-dir", c.dir().path("chk"),
                                      "--checkpoint-interval", "200ms"},
                                     c.dir().path("submit"));
  ASSERT_EQ(submitted.code, 0) << submitted.err;
  const size_t at = submitted.out.find("submitted job ");
  ASSERT_NE(at, std::string::npos) << submitted.out;
  std::string job = submitted.out.substr(at + 14);
  job = job.substr(0, job.find('\n'));
  auto overview = c.client().overview();
  ASSERT_TRUE(overview.ok()) << overview.status();
  std::vector<std::string> pages = {c.rest()};
  for (const auto& tm : (*overview)["taskmanagers"]) pages.push_back(tm["metrics_address"].get<std::string>());
  ASSERT_EQ(pages.size(), 3u) << *overview;
  const std::string bids = "nexmark -> FROM nexmark_events (bids)";
  // Running: both source vertices' tasks on the TaskManagers' pages, by
  // their two names and two task_ids.
  std::vector<std::vector<testing::Sample>> scraped;
  std::set<std::string> names, ids;
  const bool running = testing::eventually(
      [&] {
        scraped.clear();
        names.clear();
        ids.clear();
        for (const std::string& address : pages) {
          auto page = testing::scrape(address, c.secret());
          if (!page || page->status != 200) return false;
          scraped.push_back(testing::parse_prometheus(page->body));
        }
        for (size_t i = 1; i < scraped.size(); ++i) {
          for (const testing::Sample& s : scraped[i]) {
            if (s.name != "weir_taskmanager_job_task_numRecordsOut") continue;
            const std::string& name = s.labels.at("task_name");
            if (name != bids && name != bids + " (2)") continue;
            names.insert(name);
            ids.insert(s.labels.at("task_id"));
          }
        }
        return names.size() == 2 && ids.size() == 2;
      },
      60s);
  ASSERT_TRUE(running) << "the two source vertices, as '" << bids << "' and '" << bids << " (2)', not both on the pages";
  for (size_t i = 0; i < scraped.size(); ++i) {
    EXPECT_EQ(testing::duplicate_series(scraped[i]), std::vector<std::string>{}) << pages[i];
  }
  auto canceled = c.client().cancel(job);
  EXPECT_TRUE(canceled.ok()) << canceled.status();
}

// The shell's output with only the last of consecutive tables kept. A shell
// reading a pipe prints a new table whenever its result changed since the
// last one, and how many come depends on timing; the last is the result.
std::string final_tables(const std::string& out) {
  std::vector<std::string> lines = absl::StrSplit(out, '\n');
  std::vector<std::pair<bool, std::string>> blocks;  // (a table?, its text)
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!absl::StartsWith(lines[i], "+-")) {
      blocks.emplace_back(false, lines[i] + "\n");
      continue;
    }
    std::string table;
    for (; i < lines.size(); ++i) {
      table += lines[i] + "\n";
      if (absl::EndsWith(lines[i], " rows") || absl::EndsWith(lines[i], " row")) break;
    }
    if (i + 1 < lines.size() && lines[i + 1].empty()) ++i;  // the blank line after a table
    blocks.emplace_back(true, table);
  }
  std::string kept;
  for (size_t b = 0; b < blocks.size(); ++b) {
    if (blocks[b].first && b + 1 < blocks.size() && blocks[b + 1].first) continue;
    kept += blocks[b].second;
  }
  return kept;
}

// `weir sql --jobmanager` without a script: the shell's queries run on the
// cluster, their rows pushed by the result sinks to the JobManager and
// fetched from it. The same statements give the same tables as the shell
// run in this process: a bounded GROUP BY (updating), ORDER BY with LIMIT,
// a view, a result of ~370k rows (more than the JobManager queues for one
// result, so the sinks wait for the shell), an error that leaves the shell
// going. A LIMIT over an endless source cancels the query's job; a query
// that fails says why; an INSERT is submitted and runs on; bad job flags are
// refused before anything is submitted.
TEST(ClusterSqlTest, TheShellRunsItsQueriesOnTheClusterAsInProcess) {
  Cluster c("cluster-sql-shell");
  ASSERT_TRUE(c.start({{"tm-a", 2}, {"tm-b", 2}})) << "the cluster did not come up\n" << c.jm_log();
  const std::string statements = R"(CREATE TABLE t (k BIGINT, v VARCHAR, d DECIMAL(6, 2), ts TIMESTAMP(3))
  WITH (connector = 'values', "scan.parallelism" = '1', rows = '1,a,1.50,1000
2,b,10.25,2000
1,c,,61000
3,,2.00,3600000');
CREATE TABLE bid (auction BIGINT, bidder BIGINT, price BIGINT) WITH (connector = 'nexmark', events = '400000');
SELECT k, COUNT(*) AS n, SUM(d) AS total FROM t GROUP BY k ORDER BY n DESC, total;
SHOW TABLES;
SELECT v, ts FROM t ORDER BY 2 DESC LIMIT 2;
SELECT nope FROM t;
CREATE VIEW low AS SELECT k, v FROM t WHERE d < 5;
SELECT * FROM low ORDER BY k;
SHOW TABLES;
SELECT auction, bidder, price FROM bid ORDER BY price DESC, auction, bidder LIMIT 4;
SHOW TABLES;
SELECT COUNT(*) AS n, SUM(price) AS total, COUNT(DISTINCT bidder) AS bidders FROM bid;
)";
  auto shell = [&](const std::vector<std::string>& where, const std::string& name, const std::string& input) {
    std::vector<std::string> args = {testing::weir_bin(), "sql", "-p", "2"};
    args.insert(args.end(), where.begin(), where.end());
    auto child = std::make_unique<Child>(args, c.dir().path(name), false, std::vector<std::string>{}, true);
    EXPECT_TRUE(child->write_stdin(input));
    child->close_stdin();
    return child;
  };
  const std::vector<std::string> cluster = {"--jobmanager",     c.rest(), "--secret-file", c.secret_file(),
                                            "--checkpoint-dir", c.dir().path("chk")};
  auto embedded = shell({}, "embedded", statements);
  ASSERT_EQ(embedded->wait(), 0) << embedded->err();
  auto remote = shell(cluster, "remote", statements);
  ASSERT_EQ(remote->wait(), 0) << remote->err();
  const std::string want = final_tables(embedded->out());
  ASSERT_NE(want.find("| 1 | 2 |  1.50 |"), std::string::npos) << "no GROUP BY result: " << want;
  ASSERT_NE(want.find("| 368000 |"), std::string::npos) << "no count of the bids: " << want;
  EXPECT_NE(want.find("error: line 1, column 8: no column nope"), std::string::npos) << want;
  EXPECT_EQ(final_tables(remote->out()), want);

  // Endless input, LIMIT: the shell cancels the job once it has 3 rows.
  auto limited = shell(cluster, "limited",
                       "CREATE TABLE bid (auction BIGINT, price BIGINT) WITH (connector = 'nexmark', "
                       "\"event-rate\" = '2000');\nSELECT auction, price FROM bid LIMIT 3;\n"
                       "SELECT 10 / (price - price) AS x FROM bid;\n");
  ASSERT_EQ(limited->wait(), 0) << limited->err();
  EXPECT_NE(limited->out().find("3 rows\n\n(LIMIT reached: the query was canceled)"), std::string::npos)
      << limited->out();
  EXPECT_NE(limited->out().find("error: the query failed: "), std::string::npos) << limited->out();
  EXPECT_NE(limited->out().find("division by zero"), std::string::npos) << limited->out();
  auto jobs = c.client().list();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  std::multiset<std::string> states;
  for (const auto& j : (*jobs)["jobs"]) states.insert(j["status"].get<std::string>());
  EXPECT_EQ(states.count("RUNNING"), 0u) << jobs->dump();
  EXPECT_GE(states.count("CANCELED"), 1u) << jobs->dump();

  // INSERT: submitted, runs on its own.
  const std::string out = c.dir().path("inserted");
  auto inserting = shell(cluster, "insert",
                         "CREATE TABLE t (k BIGINT, v VARCHAR) WITH (connector = 'values', rows = '1,a\n2,b\n3,c');\n"
                         "CREATE TABLE o (k BIGINT, v VARCHAR) WITH (connector = 'filesystem', path = '" + out + "');\n"
                         "INSERT INTO o SELECT k * 10, v FROM t WHERE k > 1;\n");
  ASSERT_EQ(inserting->wait(), 0) << inserting->err();
  EXPECT_NE(inserting->out().find(" submitted (weir list shows it"), std::string::npos) << inserting->out();
  std::vector<std::string> written;
  EXPECT_TRUE(eventually(
      [&] {
        auto lines = read_published_lines(out, "part");
        if (lines.ok()) written = *lines;
        return written.size() == 2;
      },
      60s))
      << inserting->out();
  EXPECT_EQ(std::multiset<std::string>(written.begin(), written.end()),
            (std::multiset<std::string>{"20,b", "30,c"}));

  // A wrong job flag: exit 2 before any query is read or submitted.
  const size_t jobs_before = (*jobs)["jobs"].size() + 1;  // and the INSERT's
  std::vector<std::string> bad_flags = cluster;
  bad_flags.insert(bad_flags.end(), {"--state", "nowhere"});
  auto refused = shell(bad_flags, "refused", "SELECT 1 AS one FROM t;\n");
  EXPECT_EQ(refused->wait(), 2);
  EXPECT_NE(refused->err().find("state backend 'nowhere'"), std::string::npos) << refused->err();
  auto after = c.client().list();
  ASSERT_TRUE(after.ok());
  EXPECT_EQ((*after)["jobs"].size(), jobs_before) << after->dump();
}

}  // namespace
}  // namespace weir
