// Unaligned checkpoints on a backpressured job: the running sum with its
// file sink several times slower than its sources, so channels stay full
// and every checkpoint holds records in flight. Under injected failures,
// under SIGKILLs of the whole process, and through rescaling 2 -> 3 -> 1,
// the committed output is exactly-once, and the restores did replay
// channel state (each restore logs the records it replayed). Also the
// aligned-checkpoint timeout, and buffer debloating under failures.
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <random>
#include <string>
#include <vector>

#include "examples/running_sum/running_sum.h"
#include "tests/kill_runs.h"
#include "tests/process.h"
#include "testing/seed.h"

namespace weir {
namespace {

using testing::Child;
using testing::KilledRuns;
using testing::replayed_records;
using testing::TempDir;

void expect_exactly_once(const std::string& input, const std::string& out) {
  auto check = examples::check_running_sum({input}, out);
  ASSERT_TRUE(check.ok()) << check.status();
  for (const auto& p : check->problems) ADD_FAILURE() << p;
  EXPECT_TRUE(check->exactly_once);
}

class UnalignedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = testing::test_seed();
    rng_.seed(seed_);
    dir_ = std::make_unique<TempDir>(std::string("unaligned-") +
                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    runs_ = std::make_unique<KilledRuns>(dir_.get());
    input_ = dir_->path("in.txt");
    ASSERT_TRUE(examples::generate_running_sum_input(input_, 60000, 300, 0, seed_).ok());
  }

  // The job at parallelism `p`: sources at 10,000 lines/s per subtask, the
  // sink 4x slower, unaligned checkpoints every 100 ms.
  std::vector<std::string> args(int p, const std::string& state, bool restore) {
    std::vector<std::string> a = {testing::weir_bin(), "example", "running-sum", "--verbose", "--input", input_,
                                  "--output", dir_->path("out"), "-p", std::to_string(p), "--rate", "10000",
                                  "--sink-rate", "2500", "--checkpointing", "unaligned", "--checkpoint-interval",
                                  "100ms", "--checkpoint-dir", dir_->path("chk"), "--state", state, "--state-dir",
                                  dir_->path("state")};
    if (restore) {
      a.push_back("--restore");
      a.push_back("latest");
    }
    return a;
  }

  bool run_and_kill(const std::vector<std::string>& a, int more, const std::string& name) {
    return runs_->run_and_kill(a, more, name);
  }
  // The job at parallelism `p` restoring the checkpoint the last
  // run_and_kill killed it at.
  std::vector<std::string> restoring_the_kill(int p, const std::string& state) {
    return runs_->restoring_the_kill(args(p, state, false), dir_->path("chk"));
  }

  void finish_and_check(const std::vector<std::string>& a) {
    runs_->finish(a);
    expect_exactly_once(input_, dir_->path("out"));
  }

  uint64_t seed_;
  std::mt19937_64 rng_;
  std::unique_ptr<TempDir> dir_;
  std::string input_;
  std::unique_ptr<KilledRuns> runs_;
};

class UnalignedBackendTest : public UnalignedTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(UnalignedBackendTest, InjectedFailuresOnABackpressuredJobAreExactlyOnce) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  std::vector<std::string> a = args(4, GetParam(), false);
  // Each sum subtask fails after 4,000-12,000 of its ~15,000 records.
  for (const char* more : {"--fail-every", "8000", "--seed"}) a.push_back(more);
  a.push_back(std::to_string(seed_));
  Child job(a, dir_->path("job"));
  ASSERT_EQ(job.wait(), 0) << job.err();
  const std::string log = job.err();
  EXPECT_NE(log.find("attempt 1"), std::string::npos) << "no failure was injected\n" << log;
  EXPECT_GT(replayed_records(log), 0) << log;
  expect_exactly_once(input_, dir_->path("out"));
}

TEST_P(UnalignedBackendTest, RepeatedKillsAndRestoreLatestAreExactlyOnce) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  int kills = 0;
  for (int round = 0; round < 3; ++round) {
    const int more = 2 + static_cast<int>(rng_() % 4);
    if (!run_and_kill(args(4, GetParam(), round > 0), more, "round" + std::to_string(round))) break;
    ++kills;
  }
  ASSERT_GE(kills, 1) << runs_->log();
  finish_and_check(args(4, GetParam(), true));
  EXPECT_GT(replayed_records(runs_->log()), 0) << runs_->log();
}

INSTANTIATE_TEST_SUITE_P(Backends, UnalignedBackendTest, ::testing::Values("heap", "rocksdb"));

// Checkpoints start aligned and switch to unaligned after 50 ms
// (execution.checkpointing.aligned-checkpoint-timeout): under backpressure
// they all switch, and a failure restores exactly-once from them.
TEST_F(UnalignedTest, AlignedCheckpointsTimingOutSwitchToUnalignedExactlyOnce) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  std::vector<std::string> a = args(4, "heap", false);
  for (const char* more : {"-D", "execution.checkpointing.aligned-checkpoint-timeout=50", "--fail-every", "8000",
                           "--seed"}) {
    a.push_back(more);
  }
  a.push_back(std::to_string(seed_));
  Child job(a, dir_->path("job"));
  ASSERT_EQ(job.wait(), 0) << job.err();
  const std::string log = job.err();
  // Checkpoints stored channel state (so they switched), and a restore
  // replayed some.
  EXPECT_NE(log.find("channel state"), std::string::npos) << log;
  EXPECT_GT(replayed_records(log), 0) << log;
  expect_exactly_once(input_, dir_->path("out"));
}

// Debloated buffers (partly filled, from the same pool) with aligned and
// with unaligned checkpoints: exactly-once under injected failures.
TEST_F(UnalignedTest, DebloatedBuffersKeepInjectedFailuresExactlyOnce) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  for (const char* checkpointing : {"aligned", "unaligned"}) {
    SCOPED_TRACE(checkpointing);
    std::vector<std::string> a = args(4, "heap", false);
    a[std::find(a.begin(), a.end(), "--checkpointing") - a.begin() + 1] = checkpointing;
    a[std::find(a.begin(), a.end(), "--output") - a.begin() + 1] = dir_->path(std::string("out-") + checkpointing);
    for (const char* more : {"--buffer-debloat", "--buffer-debloat-target", "200ms", "--fail-every", "8000",
                             "--seed"}) {
      a.push_back(more);
    }
    a.push_back(std::to_string(seed_));
    Child job(a, dir_->path(std::string("job-") + checkpointing));
    ASSERT_EQ(job.wait(), 0) << job.err();
    EXPECT_NE(job.err().find("attempt 1"), std::string::npos) << "no failure was injected\n" << job.err();
    expect_exactly_once(input_, dir_->path(std::string("out-") + checkpointing));
  }
}

// Killed at parallelism 2, restored at 3 and killed again, finished at 1:
// each restore redistributes the channel state (the keyed edge's records by
// key group, the sink's round-robin input by subtask). Each kill comes at
// a checkpoint that holds channel state, and the next run restores exactly
// that one.
TEST_F(UnalignedTest, RescalingTwoThreeOneThroughUnalignedCheckpointsIsExactlyOnce) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  ASSERT_TRUE(runs_->run_and_kill(args(2, "heap", false), 3, "p2", "channel state")) << runs_->log();
  const size_t before = runs_->log().size();
  ASSERT_TRUE(runs_->run_and_kill(restoring_the_kill(3, "rocksdb"), 3, "p3", "channel state")) << runs_->log();
  EXPECT_GT(replayed_records(runs_->log().substr(before)), 0) << "2 -> 3 replayed nothing\n" << runs_->log();
  const size_t before_last = runs_->log().size();
  finish_and_check(restoring_the_kill(1, "heap"));
  EXPECT_GT(replayed_records(runs_->log().substr(before_last)), 0) << "3 -> 1 replayed nothing\n" << runs_->log();
}

// Unaligned checkpoints are exactly-once checkpoints; Flink's key turns
// them on as the flag does.
TEST_F(UnalignedTest, OtherModesAndUnknownSpellingsAreRefusedAndFlinksKeyWorks) {
  auto r = testing::run_weir({"example", "running-sum", "--input", input_, "--output", dir_->path("o1"),
                              "--checkpointing", "unaligned", "--mode", "at-least-once"},
                             dir_->path("mode"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--checkpointing unaligned needs --mode exactly-once, not at-least-once"), std::string::npos)
      << r.err;
  r = testing::run_weir({"example", "running-sum", "--input", input_, "--output", dir_->path("o2"),
                         "--checkpointing", "sideways"},
                        dir_->path("spelling"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--checkpointing sideways: expected aligned or unaligned"), std::string::npos) << r.err;
  r = testing::run_weir({"example", "running-sum", "--input", input_, "--output", dir_->path("o3"), "-p", "2",
                         "--verbose", "-D", "execution.checkpointing.unaligned.enabled=true", "-D",
                         "execution.checkpointing.mode=AT_LEAST_ONCE"},
                        dir_->path("flink-keys"));
  EXPECT_EQ(r.code, 2) << "the key set unaligned checkpoints, which at-least-once refuses";
  EXPECT_NE(r.err.find("needs --mode exactly-once"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace weir
