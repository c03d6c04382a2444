// The SQL logic tests: tests/sql/*.slt, statements and queries over bounded
// tables (the values connector) with the rows each query must give, run in
// this process at p=1 (heap state) and p=2 (RocksDB state). A file is a
// list of records separated by blank lines; '#' starts a comment line:
//
//   statement ok            the SQL (CREATE TABLE ...) is kept for the
//   CREATE TABLE ...        records after it
//
//   query ITRBS             a SELECT whose result columns are BIGINT (I),
//   SELECT ...              VARCHAR (T), DOUBLE (R), BOOLEAN (B),
//   ----                    TIMESTAMP(3) (S), DECIMAL(18, s) (Ns, e.g.
//                           N2), DATE (D), TIME (H), BYTES (Y), ARRAY
//                           of a letter's type (AI: ARRAY<BIGINT>), MAP
//                           of two (MTI: MAP<VARCHAR, BIGINT>); then its
//   1,abc,NULL              rows, in any order, as a sink is given them
//                           (sql/values.h: a DATE as text, an ARRAY as
//                           JSON, BYTES as base64), comma-separated, NULL,
//                           (empty) for ''
//
//   query ITR serial        the same, run at p=1 only: for a result that
//                           depends on the order rows and watermarks meet
//                           across parallel channels (a late row)
//
//   error TEXT              the SQL (with the statements so far) fails
//   INSERT INTO ...         when planned or built, its message containing
//                           TEXT
//
// An updating query's rows are the table its changelog leaves.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "sql/job_builder.h"
#include "sql/planner.h"
#include "testing/committing_sink.h"
#include "tests/changelog.h"
#include "weir/weir.h"

namespace weir {
namespace sql_logic_test {


struct Record {
  int line = 0;  // of its first line in the file
  std::string kind;  // "statement", "query", "error"
  std::string arg;   // query: the types; error: the text
  bool serial = false;  // query: at p=1 only
  std::string sql;
  std::vector<std::string> expected;
};

std::vector<Record> parse(const std::string& path) {
  std::ifstream in(path);
  std::vector<Record> out;
  std::string line;
  int n = 0;
  Record r;
  bool in_rows = false;
  auto finish = [&] {
    if (!r.kind.empty()) out.push_back(r);
    r = Record{};
    in_rows = false;
  };
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) {
      finish();
      continue;
    }
    if (r.kind.empty()) {
      if (line[0] == '#') continue;
      r.line = n;
      const size_t space = line.find(' ');
      r.kind = line.substr(0, space);
      r.arg = space == std::string::npos ? "" : line.substr(space + 1);
      if (r.kind == "query" && absl::EndsWith(r.arg, " serial")) {
        r.arg.resize(r.arg.size() - 7);
        r.serial = true;
      }
      continue;
    }
    if (r.kind == "query" && line == "----") {
      in_rows = true;
    } else if (in_rows) {
      r.expected.push_back(line);
    } else {
      r.sql += line + "\n";
    }
  }
  finish();
  return out;
}

std::string text_of(const Row& r) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < r.values.size(); ++i) {
    auto t = r.text(i);
    parts.push_back(!t ? "NULL" : t->empty() ? "(empty)" : *t);
  }
  return absl::StrJoin(parts, ",");
}

// Plans and builds `script` and runs it at parallelism `p`; the rows its
// 'print' tables received, or the error.
absl::StatusOr<std::vector<Row>> run(const std::string& script, int p, StateBackendKind backend = StateBackendKind::kHeap) {
  auto collected = std::make_shared<testing::CollectingSink<Row>::Rows>();
  auto parsed = sql::parse_script(script);
  if (!parsed.ok()) return parsed.status();
  auto planned = sql::plan_script(*parsed);
  if (!planned.ok()) return planned.status();
  sql::TableConnectors connectors = sql::TableConnectors::built_in();
  connectors.sinks["print"] = [collected](const DataStream<Row>& rows, bool, const sql::TableDef&,
                                          const std::string& uid) {
    rows.sink_to([collected] { return std::make_unique<testing::CollectingSink<Row>>(collected.get()); }, "collect")
        .uid(uid);
    return absl::OkStatus();
  };
  JobConfig config;
  config.default_parallelism = p;
  config.state.kind = backend;
  config.restart.kind = RestartStrategyKind::kNone;  // an error in a row fails the query at once
  StreamEnvironment env(config);
  absl::Status built = sql::build_job(*planned, connectors, env);
  if (!built.ok()) return built;
  auto result = env.execute("slt");
  if (!result.ok()) return result.status();
  if (result->status != JobStatus::kFinished) return absl::AbortedError("the job failed: " + result->failure);
  std::lock_guard lock(collected->mu);
  return collected->rows;
}

class SqlLogicTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SqlLogicTest, EveryRecordHolds) {
  const std::string path = std::string(WEIR_SOURCE_DIR) + "/tests/sql/" + GetParam() + ".slt";
  const std::vector<Record> records = parse(path);
  ASSERT_FALSE(records.empty()) << path;
  std::string statements;
  int queries = 0;
  for (const Record& r : records) {
    SCOPED_TRACE(GetParam() + ".slt:" + std::to_string(r.line));
    if (r.kind == "statement") {
      ASSERT_EQ(r.arg, "ok");
      statements += r.sql;
      continue;
    }
    if (r.kind == "error") {
      auto got = run(statements + r.sql, 1);
      ASSERT_FALSE(got.ok()) << "no error; wanted: " << r.arg;
      EXPECT_NE(std::string(got.status().message()).find(r.arg), std::string::npos) << got.status();
      continue;
    }
    ASSERT_EQ(r.kind, "query") << "unknown record";
    static const std::map<char, const char*> kTypes = {
        {'I', "BIGINT"}, {'T', "VARCHAR"}, {'R', "DOUBLE"}, {'B', "BOOLEAN"}, {'S', "TIMESTAMP(3)"},
        {'D', "DATE"},   {'H', "TIME"},    {'Y', "BYTES"}};
    std::vector<std::string> columns;
    for (size_t i = 0; i < r.arg.size(); ++i) {
      const char c = r.arg[i];
      std::string type;
      if (c == 'A' || c == 'M') {  // ARRAY<x>, MAP<x, y>
        const size_t n = c == 'A' ? 1 : 2;
        ASSERT_LE(i + n, r.arg.size() - 1) << "the element types of " << c;
        std::vector<std::string> elements;
        for (size_t k = 1; k <= n; ++k) {
          ASSERT_TRUE(kTypes.contains(r.arg[i + k])) << "type letter " << r.arg[i + k];
          elements.push_back(kTypes.at(r.arg[i + k]));
        }
        type = std::string(c == 'A' ? "ARRAY<" : "MAP<") + absl::StrJoin(elements, ", ") + ">";
        i += n;
      } else if (c == 'N') {  // N<scale>: DECIMAL(18, scale)
        size_t digits = i + 1;
        while (digits < r.arg.size() && absl::ascii_isdigit(static_cast<unsigned char>(r.arg[digits]))) ++digits;
        type = "DECIMAL(18, " + (digits > i + 1 ? r.arg.substr(i + 1, digits - i - 1) : std::string("0")) + ")";
        i = digits - 1;
      } else {
        ASSERT_TRUE(kTypes.contains(c)) << "type letter " << c;
        type = kTypes.at(c);
      }
      columns.push_back("c" + std::to_string(columns.size()) + " " + type);
    }
    const std::string script = statements + "CREATE TABLE slt_result (" + absl::StrJoin(columns, ", ") +
                               ") WITH (connector = 'print');\nINSERT INTO slt_result\n" + r.sql;
    std::vector<std::string> want = r.expected;
    std::sort(want.begin(), want.end());
    for (int p : {1, 2}) {
      if (p > 1 && r.serial) break;
      // p=1 on the heap backend, p=2 on RocksDB.
      const StateBackendKind backend = p == 1 ? StateBackendKind::kHeap : StateBackendKind::kRocksDb;
      SCOPED_TRACE("p=" + std::to_string(p) + ", " + std::string(to_string(backend)));
      auto rows = run(script, p, backend);
      ASSERT_TRUE(rows.ok()) << rows.status();
      // The table the changelog leaves.
      std::vector<std::string> changes;
      for (const Row& row : *rows) changes.push_back(std::string(row_kind_name(row.kind)) + "," + text_of(row));
      EXPECT_EQ(testing::apply_changelog(changes), want);
    }
    ++queries;
  }
  EXPECT_GT(queries, 0);
}

std::vector<std::string> slt_files() {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(std::string(WEIR_SOURCE_DIR) + "/tests/sql")) {
    if (e.path().extension() == ".slt") names.push_back(e.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

INSTANTIATE_TEST_SUITE_P(Files, SqlLogicTest, ::testing::ValuesIn(slt_files()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// Thirty views, each adding its input's column to itself: the chain of
// projections is composed only while the composition stays small (fully
// composed, the expression would have 2^30 terms), and the result is
// right. A 10,000-value IN list picks its rows.
TEST(SqlLimitsTest, LongChainsOfViewsAndLongInListsRunInBoundedTime) {
  std::string script = "CREATE TABLE t (a BIGINT) WITH (connector = 'values', rows = '\n1\n2\n3\n20000\n');\n"
                       "CREATE TABLE o (a BIGINT) WITH (connector = 'print');\n"
                       "CREATE VIEW v0 AS SELECT a FROM t WHERE a < 3;\n";
  for (int i = 1; i <= 30; ++i) {
    script += "CREATE VIEW v" + std::to_string(i) + " AS SELECT a + a AS a FROM v" + std::to_string(i - 1) + ";\n";
  }
  auto rows = run(script + "INSERT INTO o SELECT a FROM v30;", 1);
  ASSERT_TRUE(rows.ok()) << rows.status();
  std::vector<std::string> got;
  for (const Row& r : *rows) got.push_back(text_of(r));
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<std::string>{"1073741824", "2147483648"}));

  std::string in = "0";
  for (int i = 1; i < 10000; ++i) in += ", " + std::to_string(i * 2);
  rows = run("CREATE TABLE t (a BIGINT) WITH (connector = 'values', rows = '\n1\n2\n3\n19998\n20000\n');\n"
             "CREATE TABLE o (a BIGINT) WITH (connector = 'print');\n"
             "INSERT INTO o SELECT a FROM t WHERE a IN (" + in + ");", 1);
  ASSERT_TRUE(rows.ok()) << rows.status();
  got.clear();
  for (const Row& r : *rows) got.push_back(text_of(r));
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<std::string>{"19998", "2"}));
}

}  // namespace sql_logic_test
}  // namespace weir
