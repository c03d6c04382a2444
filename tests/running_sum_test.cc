// The running-sum job through its command line, as a user runs it: a real
// process, real files, exit codes and messages.
#include <gtest/gtest.h>

#include <filesystem>

#include <fstream>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_split.h"

#include "examples/running_sum/running_sum.h"
#include "weir/connectors.h"
#include "weir/version.h"
#include "tests/at_most_once_checks.h"
#include "tests/process.h"
#include "testing/sanitizers.h"
#include "testing/seed.h"

namespace weir {
namespace {

using testing::run_weir;
using testing::TempDir;

class RunningSumTest : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = testing::test_seed();
    dir_ = std::make_unique<TempDir>(
        std::string("rs-") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  std::string path(const std::string& p) { return dir_->path(p); }
  void generate(const std::string& file, int64_t lines, int64_t bad_every, uint64_t seed) {
    ASSERT_TRUE(examples::generate_running_sum_input(path(file), lines, 500, bad_every, seed).ok());
  }

  uint64_t seed_;
  std::unique_ptr<TempDir> dir_;
};

// Parameter: the state backend (--state).
class RunningSumBackendTest : public RunningSumTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(RunningSumBackendTest, ExactlyOnceWithUnionOfTwoSourcesAndInjectedFailures) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  generate("a.txt", 600000, 997, seed_);
  generate("b.txt", 400000, 0, seed_ + 1);
  auto r = run_weir({"example", "running-sum", "--input", path("a.txt"), "--input", path("b.txt"),
                     "--output", path("out"), "--parallelism", "4", "--checkpoint-dir",
                     path("chk"), "--checkpoint-interval", "30ms", "--fail-every", "60000",
                     "--seed", std::to_string(seed_), "--state", GetParam(), "--state-dir", path("state")},
                    path("run"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("FINISHED"), std::string::npos) << r.out;
  auto check = examples::check_running_sum({path("a.txt"), path("b.txt")}, path("out"));
  ASSERT_TRUE(check.ok()) << check.status();
  for (const auto& p : check->problems) ADD_FAILURE() << p;
  EXPECT_TRUE(check->exactly_once);
  EXPECT_EQ(check->reject_lines, 601);  // 600000 / 997
  EXPECT_EQ(r.out.find("restarts: 0"), std::string::npos) << "no failure was injected: " << r.out;
  // The summary's counts are the last attempts'; over all attempts the
  // sources sent every valid line at least once (replays count again).
  int64_t sent = 0;
  int restarted = 0;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    const size_t at = line.find(" over all ");
    if (line.rfind("vertex source", 0) != 0 || at == std::string::npos) continue;
    ++restarted;
    sent += std::stoll(line.substr(line.rfind("out ") + 4));
  }
  EXPECT_EQ(restarted, 2) << r.out;  // both source vertices
  EXPECT_GE(sent, 1000000 - 601) << r.out;
}

INSTANTIATE_TEST_SUITE_P(Backends, RunningSumBackendTest, ::testing::Values("heap", "rocksdb"));

// Blocking exchange: the sources write their output to files, then the sums
// run from them; each sum subtask fails once and starts over from its input
// files alone (no checkpoints), and the output is exactly once.
TEST_P(RunningSumBackendTest, BlockingExchangeRerunsOnlyTheFailedStageExactlyOnce) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  generate("a.txt", 300000, 997, seed_);
  auto r = run_weir({"example", "running-sum", "--input", path("a.txt"), "--output", path("out"),
                     "--parallelism", "3", "--exchange", "blocking", "--result-dir", path("results"),
                     "--mode", "none", "--fail-every", "40000", "--seed", std::to_string(seed_), "--state",
                     GetParam(), "--state-dir", path("state")},
                    path("run"));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("FINISHED"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("restarts: 0"), std::string::npos) << "no failure was injected: " << r.out;
  EXPECT_NE(r.err.find("region"), std::string::npos) << r.err;
  auto check = examples::check_running_sum({path("a.txt")}, path("out"));
  ASSERT_TRUE(check.ok()) << check.status();
  for (const auto& p : check->problems) ADD_FAILURE() << p;
  EXPECT_TRUE(check->exactly_once);
  EXPECT_TRUE(std::filesystem::is_empty(path("results"))) << "result files left behind";
}

// The checker the soak and these tests trust: committed sums compared with
// the input count records lost, duplicated, and out of order within their
// key (commit order), each where it happened.
TEST_F(RunningSumTest, TheCheckerCountsLostDuplicatedAndOutOfOrderSums) {
  std::ofstream(path("in.txt")) << "a,1\na,2\na,3\nb,5\nb,7\n";
  std::filesystem::create_directories(path("out"));
  auto check = [&](std::vector<std::string> lines) {
    auto c = examples::check_running_sum({path("in.txt")}, path("out"), &lines);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *c : examples::RunningSumCheck{};
  };
  // Sums per key: a 1,3,6 (counts 1..3), b 5,12 (counts 1..2), in order.
  auto good = check({"a,1,1", "b,5,1", "a,3,2", "b,12,2", "a,6,3"});
  EXPECT_TRUE(good.exactly_once);
  EXPECT_EQ(good.lost_records + good.duplicated_records + good.out_of_order_records, 0);

  auto lost = check({"a,1,1", "b,5,1", "a,6,3", "b,12,2"});
  EXPECT_FALSE(lost.exactly_once);
  EXPECT_EQ(lost.lost_records, 1);
  EXPECT_EQ(lost.out_of_order_records, 0);

  auto twice = check({"a,1,1", "a,3,2", "b,5,1", "a,3,2", "b,12,2", "a,6,3"});
  EXPECT_FALSE(twice.exactly_once);
  EXPECT_EQ(twice.duplicated_records, 1);
  EXPECT_EQ(twice.lost_records, 0);

  // Every sum committed once, but a's second after its third.
  auto swapped = check({"a,1,1", "b,5,1", "a,6,3", "b,12,2", "a,3,2"});
  EXPECT_EQ(swapped.out_of_order_records, 1);
  EXPECT_EQ(swapped.lost_records + swapped.duplicated_records, 0);

  // At most once: a's 2 and b's 7 lost from state and output alike.
  auto at_most_once = check({"a,1,1", "b,5,1", "a,4,2"});
  EXPECT_TRUE(at_most_once.at_most_once);
  EXPECT_FALSE(at_most_once.nothing_lost);
  EXPECT_EQ(at_most_once.lost_records, 2);
  EXPECT_TRUE(good.at_most_once);
  // Not at most once: a sum twice; a count skipped (a record's effect on
  // state kept while its output was lost); a sum no record explains.
  EXPECT_FALSE(twice.at_most_once);
  EXPECT_FALSE(lost.at_most_once);
  EXPECT_FALSE(check({"a,1,1", "a,5,2"}).at_most_once);
}

// With region failover, and with task failover (the failed sum subtask and
// the sources restart, the other sum subtasks run on; the records dropped in
// flight are counted and sent again).
TEST_F(RunningSumTest, AtLeastOnceLosesNothingUnderFailures) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  generate("a.txt", 600000, 501, seed_);
  for (const std::string failover : {"region", "task"}) {
    SCOPED_TRACE("--failover " + failover);
    const std::string out = path("out-" + failover);
    auto r = run_weir({"example", "running-sum", "--input", path("a.txt"), "--output", out, "--parallelism", "4",
                       "--mode", "at-least-once", "--checkpoint-interval", "30ms", "--fail-every", "60000",
                       "--seed", std::to_string(seed_), "--failover", failover},
                      path("run-" + failover));
    ASSERT_EQ(r.code, 0) << r.err;
    if (failover == "task") {
      EXPECT_NE(r.out.find("records dropped in flight by task failover: "), std::string::npos) << r.out;
    }
    auto check = examples::check_running_sum({path("a.txt")}, out);
    ASSERT_TRUE(check.ok()) << check.status();
    EXPECT_TRUE(check->nothing_lost);
  }
}

// At-most-once under injected failures: restarts restore the latest
// checkpoint and the sources continue after what they had read, so nothing
// is committed twice, every key's sums follow from the records committed
// (state and output lost the same records), and the job counts exactly the
// records lost, which `weir verify running-sum --at-most-once` finds too.
TEST_F(RunningSumTest, AtMostOnceLosesExactlyWhatItCountsUnderFailures) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  generate("a.txt", 300000, 501, seed_);
  const std::string out = path("out");
  auto r = run_weir({"example", "running-sum", "--input", path("a.txt"), "--output", out, "--parallelism", "4",
                     "--mode", "at-most-once", "--checkpoint-interval", "100ms", "--rate", "20000",
                     "--fail-every", "40000", "--seed", std::to_string(seed_)},
                    path("run"));
  ASSERT_EQ(r.code, 0) << r.err;
  const int64_t lost = testing::lost_records_in(r.out);
  EXPECT_GT(lost, 0) << r.out;
  auto check = examples::check_running_sum({path("a.txt")}, out);
  ASSERT_TRUE(check.ok()) << check.status();
  testing::expect_at_most_once(*check, lost);
  auto verified = run_weir({"verify", "running-sum", "--input", path("a.txt"), "--output", out, "--at-most-once"},
                           path("verify"));
  EXPECT_EQ(verified.code, 0) << verified.out << verified.err;
  EXPECT_NE(verified.out.find("records lost: " + std::to_string(lost) + " "), std::string::npos) << verified.out;
  EXPECT_NE(verified.out.find("at most once: yes"), std::string::npos) << verified.out;
}

// Memory is bounded by configuration, not by the input: the sources release
// the pages they read, so four times the input costs no more memory. (Before
// that, at parallelism 6 every source subtask kept the pages it had read,
// and counting line numbers up to its start touched most of the file.)
TEST_F(RunningSumTest, PeakMemoryDoesNotGrowWithTheInput) {
  if (testing::kAddressSanitizer) {
    GTEST_SKIP() << "peak RSS under AddressSanitizer is its quarantine's, not the job's; the plain build checks it";
  }
  generate("small.txt", 2000000, 0, seed_);
  generate("large.txt", 8000000, 0, seed_);
  auto peak_rss_mb = [&](const std::string& input) {
    testing::Child c({testing::weir_bin(), "example", "running-sum", "--input", path(input), "--output",
                      path("out-" + input), "-p", "6", "--checkpoint-dir", path("chk-" + input)},
                     path("run-" + input));
    EXPECT_EQ(c.wait(), 0) << c.err();
    return c.peak_rss_kb() / 1024;
  };
  const long small = peak_rss_mb("small.txt"), large = peak_rss_mb("large.txt");
  // The large input is 68 MB bigger; what grows with it must not be kept.
  EXPECT_LT(large, small + 30) << "peak RSS " << small << " MB for 2 M lines, " << large << " MB for 8 M lines";
}

TEST_F(RunningSumTest, MalformedLinesGoToRejectsWithLineAndReason) {
  std::ofstream(path("in.txt")) << "a,1\nno comma\nb,x\na,2\n,3\nc,99999999999999999999\nb,-4\n";
  auto r = run_weir({"example", "running-sum", "--input", path("in.txt"), "--output", path("out")},
                    path("run"));
  ASSERT_EQ(r.code, 0) << r.err;
  auto out = read_published_lines(path("out"), examples::kOutputPrefix);
  ASSERT_TRUE(out.ok());
  std::sort(out->begin(), out->end());
  EXPECT_EQ(*out, (std::vector<std::string>{"a,1,1", "a,3,2", "b,-4,1"}));
  auto rejects = read_published_lines(path("out"), examples::kRejectsPrefix);
  ASSERT_TRUE(rejects.ok());
  std::sort(rejects->begin(), rejects->end());
  EXPECT_EQ(*rejects, (std::vector<std::string>{"2,missing comma", "3,value is not an integer",
                                                "5,empty key", "6,value out of range"}));
  // The summary counts both, and each file sink says what it committed.
  EXPECT_NE(r.out.find("output records: 3, rejected lines: 4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("wrote 3 records; 3 committed in 1 transaction\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("wrote 4 records; 4 committed in 1 transaction\n"), std::string::npos) << r.out;
}

// On a terminal the embedded commands keep a progress line, rewritten in
// place and cleared before the result: a job's records from its sources,
// their rate, its checkpoints and the time; generate and verify their
// lines. With --quiet, or when stdout is not a terminal, there is none.
TEST_F(RunningSumTest, EmbeddedCommandsShowProgressOnATerminalOnly) {
  using testing::on_a_terminal;
  using testing::run_program;
  const std::string bin = testing::weir_bin();
  const std::string in = path("in.txt");
  auto gen = run_program(on_a_terminal({bin, "generate", "running-sum-input", "--output", in, "--lines", "400000",
                                        "--keys", "100"}),
                         path("gen"));
  ASSERT_EQ(gen.code, 0) << gen.out;
  EXPECT_NE(gen.out.find("\r\033[Kwriting  "), std::string::npos) << gen.out;
  EXPECT_NE(gen.out.find(" of 400000 lines  0:00:0"), std::string::npos) << gen.out;

  // Two subtasks at 100000 lines/s each: two seconds, two progress lines.
  auto job = run_program(on_a_terminal({bin, "example", "running-sum", "--input", in, "--output", path("out"), "-p",
                                        "2", "--checkpoint-interval", "200ms", "--rate", "100000"}),
                         path("job"));
  ASSERT_EQ(job.code, 0) << job.out;
  const size_t running = job.out.find("\r\033[KRUNNING  ");
  ASSERT_NE(running, std::string::npos) << job.out;
  EXPECT_NE(job.out.find(" records from sources (", running), std::string::npos) << job.out;
  EXPECT_NE(job.out.find(" checkpoints  0:00:0", running), std::string::npos) << job.out;
  // The line is cleared, and the result starts at the left margin.
  EXPECT_NE(job.out.find("\r\033[Kjob ", running), std::string::npos) << job.out;
  EXPECT_NE(job.out.find(" FINISHED in "), std::string::npos) << job.out;

  auto verified = run_program(on_a_terminal({bin, "verify", "running-sum", "--input", in, "--output", path("out")}),
                              path("verify"));
  EXPECT_EQ(verified.code, 0) << verified.out;
  EXPECT_NE(verified.out.find("\r\033[Kchecking  "), std::string::npos) << verified.out;
  EXPECT_NE(verified.out.find("exactly-once: yes"), std::string::npos) << verified.out;

  // --quiet on a terminal, and no terminal at all: results only.
  auto quiet = run_program(on_a_terminal({bin, "example", "running-sum", "--input", in, "--output", path("quiet"),
                                          "-p", "2", "--rate", "100000", "--quiet"}),
                           path("quiet"));
  ASSERT_EQ(quiet.code, 0) << quiet.out;
  EXPECT_EQ(quiet.out.find("records from sources"), std::string::npos) << quiet.out;
  EXPECT_NE(quiet.out.find(" FINISHED in "), std::string::npos) << quiet.out;
  auto piped = run_weir({"example", "running-sum", "--input", in, "--output", path("piped"), "-p", "2", "--rate",
                         "100000"},
                        path("piped"));
  ASSERT_EQ(piped.code, 0) << piped.err;
  EXPECT_EQ(piped.out.find("\033[K"), std::string::npos) << piped.out;
  EXPECT_NE(piped.out.find(" FINISHED in "), std::string::npos) << piped.out;
}

// `weir --version` names the version; a bare `weir` points to --help (one
// line, exit 2) instead of printing the parser's complaint.
TEST_F(RunningSumTest, TheCommandLineStatesItsVersionAndPointsToHelp) {
  auto r = run_weir({"--version"}, path("version"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, std::string("weir ") + WEIR_VERSION + "\n");
  r = run_weir({}, path("bare"));
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, "weir: give a command (weir --help lists them)\n");
}

// Help names each option's value in a word and shows its default, never
// the parser's types or ranges; `weir run JOB --help` lists the job's
// options without a cluster or a secret; --opt=value works as --opt value.
TEST_F(RunningSumTest, HelpShowsEveryJobsOptionsAndDefaultsInPlainWords) {
  auto no_internals = [](const std::string& help, const std::string& what) {
    // The parser's type names as words (an environment variable such as
    // $AWS_ENDPOINT_URL may hold the letters).
    for (const char* internal : {"INT", "TEXT", "UINT"}) {
      EXPECT_FALSE(std::regex_search(help, std::regex(std::string("\\b") + internal + "\\b")))
          << what << " shows \"" << internal << "\":\n" << help;
    }
    for (const char* internal : {"9223372036854775807", " in [", "REQUIRED"}) {
      EXPECT_EQ(help.find(internal), std::string::npos) << what << " shows \"" << internal << "\":\n" << help;
    }
  };
  auto run = run_weir({"run", "running-sum", "--help"}, path("help-rs"));
  ASSERT_EQ(run.code, 0) << run.err;
  EXPECT_NE(run.out.find("Usage: weir run running-sum [OPTIONS]"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("--checkpoint-interval DURATION"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("(default: 1s)"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("--sort-memory SIZE"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("(default: 16mb)"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("--rate N"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("--output PATH (required)"), std::string::npos) << run.out;
  no_internals(run.out, "weir run running-sum --help");
  for (const char* job : {"nexmark", "orders", "line-copy", "sql"}) {
    auto r = run_weir({"run", job, "--help"}, path(std::string("help-") + job));
    EXPECT_EQ(r.code, 0) << job << ": " << r.err;
    EXPECT_NE(r.out.find(std::string("Usage: weir run ") + job), std::string::npos) << r.out;
    no_internals(r.out, std::string("weir run ") + job + " --help");
  }
  EXPECT_NE(run_weir({"run", "nexmark", "--help"}, path("help-nx")).out.find("--query"), std::string::npos);
  auto unknown = run_weir({"run", "no-such-job", "--help"}, path("help-unknown"));
  EXPECT_EQ(unknown.code, 2);
  EXPECT_EQ(unknown.err,
            "weir: run: unknown job 'no-such-job' (built-in jobs: running-sum, orders, connected-components, line-copy, nexmark, sql; or "
            "the path of a job library)\n");
  // Every command's help, and the built-in jobs named where jobs are run.
  auto top = run_weir({"run", "--help"}, path("help-run"));
  EXPECT_NE(top.out.find("Built-in JOBs: running-sum, orders, connected-components, line-copy, nexmark, sql."), std::string::npos) << top.out;
  for (const std::vector<std::string>& command :
       std::vector<std::vector<std::string>>{{"--help"}, {"run", "--help"}, {"jobmanager", "--help"},
                                             {"taskmanager", "--help"}, {"example", "running-sum", "--help"},
                                             {"nexmark", "--help"}, {"generate", "--help"}, {"list", "--help"},
                                             {"stop", "--help"}}) {
    auto r = run_weir(command, path("help"));
    EXPECT_EQ(r.code, 0) << command[0] << ": " << r.err;
    std::string what = "weir";
    for (const auto& c : command) what += " " + c;
    no_internals(r.out, what);
  }
  EXPECT_NE(run_weir({"taskmanager", "--help"}, path("help-tm")).out.find("--metrics-port PORT|FROM-TO"), std::string::npos);

  // --opt=value, as everywhere.
  std::ofstream(path("eq.txt")) << "a,1\nb,2\na,3\n";
  auto eq = run_weir({"example", "running-sum", "--input=" + path("eq.txt"), "--output=" + path("eq-out"),
                      "--checkpoint-interval=200ms", "--parallelism=2"},
                     path("eq"));
  EXPECT_EQ(eq.code, 0) << eq.err;
  auto verified = run_weir({"verify", "running-sum", "--input=" + path("eq.txt"), "--output=" + path("eq-out")},
                           path("eq-verify"));
  EXPECT_EQ(verified.code, 0) << verified.out << verified.err;
}

TEST_F(RunningSumTest, BadArgumentsExitWithCode2AndOneLine) {
  auto r = run_weir({"example", "running-sum", "--input", path("x"), "--output", path("o"),
                     "--mode", "sometimes"},
                    path("run"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("invalid mode 'sometimes'"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;

  std::ofstream(path("in.txt")) << "a,1\n";
  r = run_weir({"example", "running-sum", "--input", path("in.txt"), "--output", path("o"),
                "--checkpoint-interval", "soon"},
               path("run"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("invalid duration 'soon'"), std::string::npos) << r.err;

  r = run_weir({"example", "running-sum", "--output", path("o")}, path("run"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--input"), std::string::npos) << r.err;
  // Task failover would break exactly-once (the default mode).
  r = run_weir({"example", "running-sum", "--input", path("in.txt"), "--output", path("o"), "--failover", "task"},
               path("run"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--failover task drops the records in flight"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  // A sort budget that is no size, and a batch job asked to restore.
  r = run_weir({"example", "running-sum", "--input", path("in.txt"), "--output", path("o"), "--runtime-mode", "batch",
                "--sort-memory", "64 parsecs"},
               path("run"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--sort-memory: invalid memory size '64 parsecs': unknown unit 'parsecs'"), std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  r = run_weir({"example", "running-sum", "--input", path("in.txt"), "--output", path("o"), "--runtime-mode", "batch",
                "--restore", path("nowhere")},
               path("run"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("runtime mode batch does not restore state"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST_F(RunningSumTest, UnreadableInputExitsWithCode3) {
  auto r = run_weir({"example", "running-sum", "--input", path("missing.txt"), "--output",
                     path("o")},
                    path("run"));
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("cannot read input " + path("missing.txt")), std::string::npos) << r.err;
}

// A job restored with another output directory publishes the files its
// checkpoint left pending where they were written, and writes on into the
// new directory: the two together hold the output exactly once.
TEST_F(RunningSumTest, RestoreIntoAnotherOutputDirectoryPublishesWhereTheCheckpointWrote) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  generate("in.txt", 60000, 0, seed_);
  auto failed = run_weir({"example", "running-sum", "--input", path("in.txt"), "--output", path("old"), "-p", "2",
                          "--checkpoint-dir", path("chk"), "--checkpoint-interval", "50ms", "--fail-every", "15000",
                          "--seed", std::to_string(seed_), "--restart-strategy", "none", "--rate", "20000"},
                         path("first"));
  ASSERT_EQ(failed.code, 4) << failed.out << failed.err;
  auto resumed = run_weir({"example", "running-sum", "--input", path("in.txt"), "--output", path("new"), "-p", "2",
                           "--checkpoint-dir", path("chk"), "--restore", "latest", "--verbose"},
                          path("resumed"));
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_NE(resumed.err.find("restored checkpoint left pending in " + path("old")), std::string::npos)
      << resumed.err;
  // Both directories' published files, side by side.
  namespace fs = std::filesystem;
  fs::create_directories(path("all"));
  for (const char* d : {"old", "new"}) {
    for (const auto& e : fs::directory_iterator(path(d))) {
      const std::string name = e.path().filename().string();
      if (name.front() == '.') continue;
      ASSERT_FALSE(fs::exists(fs::path(path("all")) / name)) << name << " is in both directories";
      fs::copy_file(e.path(), fs::path(path("all")) / name);
    }
  }
  auto check = examples::check_running_sum({path("in.txt")}, path("all"));
  ASSERT_TRUE(check.ok()) << check.status();
  for (const auto& p : check->problems) ADD_FAILURE() << p;
  EXPECT_TRUE(check->exactly_once);
}

TEST_F(RunningSumTest, RestoreLatestWithoutCheckpointsIsAClearError) {
  std::ofstream(path("in.txt")) << "a,1\n";
  std::filesystem::create_directories(path("chk"));
  auto r = run_weir({"example", "running-sum", "--input", path("in.txt"), "--output", path("o"),
                     "--checkpoint-dir", path("chk"), "--restore", "latest"},
                    path("run"));
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("no complete checkpoint under " + path("chk")), std::string::npos) << r.err;
  // A path that is no directory at all says so, rather than calling it an
  // incomplete checkpoint.
  r = run_weir({"example", "running-sum", "--input", path("in.txt"), "--output", path("o"), "--checkpoint-dir",
                path("chk"), "--restore", path("no/such/path")},
               path("run"));
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find(path("no/such/path") + ": no such checkpoint directory"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

}  // namespace
}  // namespace weir

namespace weir {
namespace {

TEST_F(RunningSumTest, UnrecoverableFailureExitsWithCode4AndOneLine) {
  generate("a.txt", 100000, 0, seed_);
  auto r = run_weir({"example", "running-sum", "--input", path("a.txt"), "--output", path("out"),
                     "--restart-strategy", "none", "--fail-every", "1000"},
                    path("run"));
  EXPECT_EQ(r.code, 4);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("injected failure"), std::string::npos) << r.err;
  // Nothing of the failed attempt was committed.
  auto out = read_published_lines(path("out"), examples::kOutputPrefix);
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->empty());
}

// A 256 KiB tmpfs at `dir` to fill up, unmounted when it goes (also when an
// assertion ends the test early). Mounting needs root: without it, ok() is
// false and the test skips.
class SmallDisk {
 public:
  explicit SmallDisk(std::string dir) : dir_(std::move(dir)) {
    std::filesystem::create_directories(dir_);
    std::string cmd = "mount -t tmpfs -o size=256k tmpfs " + dir_ + " 2>/dev/null";
    mounted_ = std::system(cmd.c_str()) == 0;
  }
  ~SmallDisk() { (void)unmount(); }
  bool ok() const { return mounted_; }
  // True once it is unmounted.
  bool unmount() {
    if (!mounted_) return true;
    std::string cmd = "umount " + dir_;
    mounted_ = std::system(cmd.c_str()) != 0;
    return !mounted_;
  }

 private:
  const std::string dir_;
  bool mounted_ = false;
};

// A full output disk: the job fails with the path and the cause, and the
// committed output stays consistent (nothing half-published).
TEST_F(RunningSumTest, FullDiskIsReportedWithPathAndCause) {
  generate("a.txt", 200000, 0, seed_);
  std::string mnt = path("small");
  SmallDisk disk(mnt);
  if (!disk.ok()) GTEST_SKIP() << "this environment cannot mount a small tmpfs to fill up";
  auto r = run_weir({"example", "running-sum", "--input", path("a.txt"), "--output", mnt + "/out",
                     "--restart-attempts", "1", "--checkpoint-interval", "50ms"},
                    path("run"));
  EXPECT_EQ(r.code, 4) << r.err;
  // One line ends it; the one restart before was logged with its cause.
  std::vector<std::string> lines = absl::StrSplit(r.err, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 2u) << r.err;
  EXPECT_NE(lines[0].find("restart 1 in"), std::string::npos) << r.err;
  EXPECT_NE(lines[0].find("No space left on device"), std::string::npos) << r.err;
  EXPECT_EQ(lines[1].rfind("weir: job failed: ", 0), 0u) << r.err;
  EXPECT_NE(lines[1].find("No space left on device"), std::string::npos) << r.err;
  EXPECT_NE(lines[1].find(mnt + "/out"), std::string::npos) << r.err;
  ASSERT_TRUE(disk.unmount());
}

// Result files that fill their disk: the producer fails naming the file and
// the cause, its partial file is removed, and with no restart left the job
// ends with exit code 4 and that message.
TEST_F(RunningSumTest, FullResultDiskIsReportedWithPathAndCause) {
  generate("a.txt", 200000, 0, seed_);
  std::string mnt = path("small");
  SmallDisk disk(mnt);
  if (!disk.ok()) GTEST_SKIP() << "this environment cannot mount a small tmpfs to fill up";
  auto r = run_weir({"example", "running-sum", "--input", path("a.txt"), "--output", path("out"),
                     "--runtime-mode", "batch", "--result-dir", mnt, "--restart-strategy", "none"},
                    path("run"));
  std::vector<std::string> left;
  for (const auto& f : std::filesystem::recursive_directory_iterator(mnt)) {
    if (f.is_regular_file()) left.push_back(f.path().string());
  }
  ASSERT_TRUE(disk.unmount());
  EXPECT_EQ(r.code, 4) << r.err;
  std::vector<std::string> lines = absl::StrSplit(r.err, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_EQ(lines[0].rfind("weir: job failed: ", 0), 0u) << r.err;
  EXPECT_NE(lines[0].find("No space left on device"), std::string::npos) << r.err;
  EXPECT_NE(lines[0].find(mnt + "/"), std::string::npos) << r.err;
  EXPECT_NE(lines[0].find(".inprogress"), std::string::npos) << r.err;
  EXPECT_TRUE(left.empty()) << "result files left on the full disk: " << left.size() << ", e.g. " << left[0];
}

// Counts out of range, fractions and huge numbers are refused naming the
// option and the range, in one short line.
TEST_F(RunningSumTest, NumbersOutOfRangeAreRefusedNamingTheRange) {
  for (const auto& [flag, value, range] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"--events", "99999999999999999999", "from 1 to 9223372036854775807"},
           {"--events", "1e400", "from 1 to 9223372036854775807"},
           {"--events", "0", "from 1 to 9223372036854775807"},
           {"--rate", "-1", "from 0 to 9223372036854775807"},
           {"--rate", "2.5", "from 0 to 9223372036854775807"}}) {
    auto r = run_weir({"nexmark", "--query", "q0", flag, value}, path("nx"));
    EXPECT_EQ(r.code, 2) << flag << " " << value << ": " << r.err;
    EXPECT_EQ(r.err, "weir: " + flag + ": " + value + " is not a whole number " + range + "\n");
  }
}

// A permanent error (here a checkpoint directory that cannot be created)
// does not restart forever: after 10 failures in a row, over 10 s, without
// a completed checkpoint the job fails with the cause, exit 4, and the
// failures were logged at the default level, repeats folded into a count.
TEST_F(RunningSumTest, PermanentErrorEndsTheJobInsteadOfRestartingForever) {
  generate("a.txt", 200000, 0, seed_);
  { std::ofstream(path("afile")) << "x"; }
  auto r = run_weir({"example", "running-sum", "--input", path("a.txt"), "--output", path("out"),
                     "--checkpoint-dir", path("afile") + "/chk", "--checkpoint-interval", "20ms", "-p", "2"},
                    path("run"));
  EXPECT_EQ(r.code, 4) << r.err;
  std::vector<std::string> lines = absl::StrSplit(r.err, '\n', absl::SkipEmpty());
  ASSERT_GE(lines.size(), 3u) << r.err;
  EXPECT_LE(lines.size(), 8u) << "repeated failures are not folded: " << r.err;
  EXPECT_NE(lines.front().find("Not a directory); tolerable failed checkpoints: 0; restart 1 in 100 ms"),
            std::string::npos)
      << r.err;
  EXPECT_NE(lines[lines.size() - 2].find("more failures like the one"), std::string::npos) << r.err;
  EXPECT_EQ(lines.back().rfind("weir: job failed: ", 0), 0u) << r.err;
  EXPECT_NE(lines.back().find(" failures in a row over 10 s without a completed checkpoint; the last: "),
            std::string::npos)
      << r.err;
  EXPECT_NE(lines.back().find(path("afile") + "/chk"), std::string::npos) << r.err;
  EXPECT_NE(lines.back().find("Not a directory"), std::string::npos) << r.err;

  // The limit is a flag: with it off, --restart-attempts bounds the restarts.
  auto unlimited = run_weir({"example", "running-sum", "--input", path("a.txt"), "--output", path("out2"),
                             "--checkpoint-dir", path("afile") + "/chk", "--checkpoint-interval", "20ms",
                             "--max-failures-without-progress", "0", "--restart-attempts", "12"},
                            path("run2"));
  EXPECT_EQ(unlimited.code, 4) << unlimited.err;
  EXPECT_NE(unlimited.out.find("restarts: 12"), std::string::npos) << unlimited.out;
}

// Checkpoint failures up to --tolerable-checkpoint-failures in a row do not
// fail the job: they are logged, and once the checkpoint directory can be
// written again the job completes, exactly-once, without a restart.
TEST_F(RunningSumTest, ToleratedCheckpointFailuresAreLoggedAndTheJobCarriesOn) {
  generate("a.txt", 300000, 0, seed_);
  { std::ofstream(path("blocked")) << "x"; }
  testing::Child job({testing::weir_bin(), "example", "running-sum", "--input", path("a.txt"), "--output",
                      path("out"), "--checkpoint-dir", path("blocked") + "/chk", "--checkpoint-interval", "20ms",
                      "--tolerable-checkpoint-failures", "1000000", "--rate", "100000"},
                     path("run"), /*pipe_stderr=*/true);
  ASSERT_TRUE(job.wait_for_line(
      [](const std::string& line) { return line.find("1 failed in a row, 1000000 tolerated") != std::string::npos; },
      std::chrono::seconds(30)))
      << job.err();
  std::filesystem::remove(path("blocked"));  // the directory can be made again
  ASSERT_EQ(job.wait(), 0) << job.err();
  EXPECT_NE(job.out().find("restarts: 0"), std::string::npos) << job.out();
  auto check = examples::check_running_sum({path("a.txt")}, path("out"));
  ASSERT_TRUE(check.ok()) << check.status();
  for (const auto& p : check->problems) ADD_FAILURE() << p;
  EXPECT_TRUE(check->exactly_once);

  auto bad = run_weir({"example", "running-sum", "--input", path("a.txt"), "--output", path("out2"),
                       "--tolerable-checkpoint-failures", "-1"},
                      path("bad"));
  EXPECT_EQ(bad.code, 2) << bad.err;
  EXPECT_NE(bad.err.find("--tolerable-checkpoint-failures"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace weir
