// Exactly-once iterations: the connected-components example (a cycle: the
// head, the keyed components operator, and the feedback edge back to the
// head) under injected failures, SIGKILLs of the whole process and
// rescaling 2 -> 3 -> 1, with both state backends and with aligned and
// unaligned checkpoints. The committed labels are checked against
// union-find over the input (examples/components): a label lost on the
// back edge leaves a vertex short of its component's smallest id; a label
// committed twice breaks its vertex's strictly falling sequence. Every
// run also shows that restores replayed the back edge's channel state and
// that the iteration ended by itself.
#include <gtest/gtest.h>

#include <csignal>
#include <random>
#include <string>
#include <vector>

#include "examples/components/components.h"
#include "tests/kill_runs.h"
#include "tests/process.h"
#include "testing/seed.h"

namespace weir {
namespace {

using testing::Child;
using testing::KilledRuns;
using testing::replayed_records;
using testing::TempDir;

void expect_components(const std::string& input, const std::string& out) {
  auto check = examples::check_components(input, out);
  ASSERT_TRUE(check.ok()) << check.status();
  for (const auto& p : check->problems) ADD_FAILURE() << p;
  EXPECT_TRUE(check->exactly_once);
  EXPECT_GT(check->components, 1);
}

class IterationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = testing::test_seed();
    rng_.seed(seed_);
    dir_ = std::make_unique<TempDir>(std::string("iteration-") +
                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    runs_ = std::make_unique<KilledRuns>(dir_.get());
    input_ = dir_->path("edges.txt");
    // Sparse: many components, long label chains, many rounds.
    ASSERT_TRUE(examples::write_graph(input_, 60000, 45000, 1000, seed_).ok());
  }

  // The job at parallelism `p`, sources at 8,000 lines/s per subtask,
  // checkpoints every 100 ms.
  std::vector<std::string> args(int p, const std::string& state, const std::string& checkpointing, bool restore) {
    std::vector<std::string> a = {testing::weir_bin(), "example", "connected-components", "--verbose", "--input",
                                  input_, "--output", dir_->path("out"), "-p", std::to_string(p), "--rate", "8000",
                                  "--checkpointing", checkpointing, "--checkpoint-interval", "100ms",
                                  "--checkpoint-dir", dir_->path("chk"), "--state", state, "--state-dir",
                                  dir_->path("state")};
    if (restore) {
      a.push_back("--restore");
      a.push_back("latest");
    }
    return a;
  }
  // The job at parallelism `p` restoring the checkpoint the last
  // run_and_kill killed it at.
  std::vector<std::string> restoring_the_kill(int p, const std::string& state) {
    return runs_->restoring_the_kill(args(p, state, "aligned", false), dir_->path("chk"));
  }

  bool run_and_kill(const std::vector<std::string>& a, int more, const std::string& name) {
    return runs_->run_and_kill(a, more, name);
  }

  void finish_and_check(const std::vector<std::string>& a) {
    const std::string last = runs_->finish(a);
    EXPECT_NE(last.find("ends its iteration after"), std::string::npos) << last;
    expect_components(input_, dir_->path("out"));
  }

  uint64_t seed_;
  std::mt19937_64 rng_;
  std::unique_ptr<TempDir> dir_;
  std::string input_;
  std::unique_ptr<KilledRuns> runs_;
};

// (state backend, checkpointing)
class IterationModeTest : public IterationTest,
                          public ::testing::WithParamInterface<std::tuple<std::string, std::string>> {};

TEST_P(IterationModeTest, InjectedFailuresAreExactlyOnce) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const auto& [state, checkpointing] = GetParam();
  std::vector<std::string> a = args(3, state, checkpointing, false);
  // Each components subtask fails after 15,000-45,000 of its records.
  for (const char* more : {"--fail-every", "30000", "--seed"}) a.push_back(more);
  a.push_back(std::to_string(seed_));
  Child job(a, dir_->path("job"));
  ASSERT_EQ(job.wait(), 0) << job.err();
  const std::string log = job.err();
  EXPECT_NE(log.find("attempt 1"), std::string::npos) << "no failure was injected\n" << log;
  EXPECT_GT(replayed_records(log), 0) << "no restore replayed the back edge\n" << log;
  EXPECT_NE(log.find("ends its iteration after"), std::string::npos) << log;
  expect_components(input_, dir_->path("out"));
}

TEST_P(IterationModeTest, RepeatedKillsAndRestoreLatestAreExactlyOnce) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  const auto& [state, checkpointing] = GetParam();
  int kills = 0;
  for (int round = 0; round < 3; ++round) {
    const int more = 2 + static_cast<int>(rng_() % 4);
    if (!run_and_kill(args(3, state, checkpointing, round > 0), more, "round" + std::to_string(round))) break;
    ++kills;
  }
  ASSERT_GE(kills, 1) << runs_->log();
  finish_and_check(args(3, state, checkpointing, true));
  EXPECT_GT(replayed_records(runs_->log()), 0) << runs_->log();
}

INSTANTIATE_TEST_SUITE_P(Modes, IterationModeTest,
                         ::testing::Combine(::testing::Values("heap", "rocksdb"),
                                            ::testing::Values("aligned", "unaligned")),
                         [](const auto& info) { return std::get<0>(info.param) + "_" + std::get<1>(info.param); });

// Killed at parallelism 2, restored at 3 and killed again, finished at 1:
// the back edge's channel state (a round-robin edge) is dealt out by old
// subtask, the vertices' state by key group. Each kill comes at a
// checkpoint that holds channel state (when the loop is quiet one may
// hold none), and the next run restores exactly that one.
TEST_F(IterationTest, RescalingTwoThreeOneIsExactlyOnce) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  ASSERT_TRUE(runs_->run_and_kill(args(2, "heap", "aligned", false), 3, "p2", "channel state")) << runs_->log();
  const size_t before = runs_->log().size();
  ASSERT_TRUE(runs_->run_and_kill(restoring_the_kill(3, "rocksdb"), 3, "p3", "channel state")) << runs_->log();
  EXPECT_GT(replayed_records(runs_->log().substr(before)), 0) << "2 -> 3 replayed nothing\n" << runs_->log();
  const size_t before_last = runs_->log().size();
  finish_and_check(restoring_the_kill(1, "heap"));
  EXPECT_GT(replayed_records(runs_->log().substr(before_last)), 0) << "3 -> 1 replayed nothing\n" << runs_->log();
}

// Stopped with a savepoint (SIGUSR2) at parallelism 2 on RocksDB, resumed
// from it at 3 on the heap: the iteration's savepoint is taken like its
// checkpoints (an aligned one would wait for the feedback forever).
TEST_F(IterationTest, StopWithASavepointAndResumeRescaled) {
  std::vector<std::string> a = args(2, "rocksdb", "aligned", false);
  a.push_back("--savepoint-dir");
  a.push_back(dir_->path("savepoints"));
  Child job(a, dir_->path("first"), /*pipe_stderr=*/true);
  ASSERT_TRUE(job.wait_for_line(
      [](const std::string& l) { return l.find("checkpoint 2 completed") != std::string::npos; },
      std::chrono::seconds(60)))
      << job.err();
  job.signal(SIGUSR2);
  ASSERT_EQ(job.wait(), 0) << job.err();
  const std::string out = job.out();
  const size_t at = out.find("stopped with savepoint ");
  ASSERT_NE(at, std::string::npos) << out;
  const size_t from = at + std::string("stopped with savepoint ").size();
  const std::string savepoint = out.substr(from, out.find('\n', from) - from);
  std::vector<std::string> resumed = args(3, "heap", "aligned", false);
  resumed.push_back("--restore");
  resumed.push_back(savepoint);
  finish_and_check(resumed);
  EXPECT_NE(runs_->log().find("restored checkpoint"), std::string::npos) << runs_->log();
}

// Without checkpoints the iteration still ends by itself, and right.
TEST_F(IterationTest, EndsByItselfWithoutCheckpoints) {
  std::vector<std::string> a = {testing::weir_bin(), "example", "connected-components", "--verbose", "--input",
                                input_, "--output", dir_->path("out"), "-p", "2", "--mode", "none"};
  Child job(a, dir_->path("job"));
  ASSERT_EQ(job.wait(), 0) << job.err();
  EXPECT_NE(job.err().find("ends its iteration after"), std::string::npos) << job.err();
  expect_components(input_, dir_->path("out"));
}

}  // namespace
}  // namespace weir
