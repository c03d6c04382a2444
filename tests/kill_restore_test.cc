// SIGKILL of the whole process at random moments, then `--restore latest`,
// repeated: the committed output must still be exactly-once.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <fstream>
#include <random>
#include <tuple>

#include "checkpoint/format.h"
#include "checkpoint/storage.h"
#include "checkpoint/file_storage.h"
#include "common/test_points.h"
#include "examples/running_sum/running_sum.h"
#include "weir/connectors.h"
#include "tests/process.h"
#include "testing/seed.h"

namespace fs = std::filesystem;

namespace weir {
namespace {

using testing::Child;
using testing::TempDir;

fs::path newest_checkpoint_dir(const std::string& root) {
  fs::path best;
  int64_t best_id = -1;
  std::error_code ec;
  for (const auto& job : fs::directory_iterator(root, ec)) {
    for (const auto& chk : fs::directory_iterator(job.path(), ec)) {
      std::string name = chk.path().filename().string();
      if (name.rfind("chk-", 0) != 0 || !fs::exists(chk.path() / "_metadata", ec)) continue;
      int64_t id = std::atoll(name.c_str() + 4);
      if (id > best_id) {
        best_id = id;
        best = chk.path();
      }
    }
  }
  return best;
}

class KillRestoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = testing::test_seed();
    rng_.seed(seed_);
    dir_ = std::make_unique<TempDir>(
        std::string("kill-") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_TRUE(examples::generate_running_sum_input(dir_->path("a.txt"), 700000, 2000, 1009, seed_).ok());
    ASSERT_TRUE(examples::generate_running_sum_input(dir_->path("b.txt"), 300000, 300, 0, seed_ + 1).ok());
  }

  std::vector<std::string> args(bool restore) {
    std::vector<std::string> a = {testing::weir_bin(), "example", "running-sum", "--verbose",
                                  "--input", dir_->path("a.txt"), "--input", dir_->path("b.txt"),
                                  "--output", dir_->path("out"), "--parallelism", "4",
                                  "--checkpoint-dir", dir_->path("chk"),
                                  "--checkpoint-interval", "20ms", "--state-dir", dir_->path("state")};
    // "heap-changelog": heap state, checkpoints as a changelog.
    const bool changelog = state_ == "heap-changelog";
    a.insert(a.end(), {"--state", changelog ? "heap" : state_});
    if (changelog) a.push_back("--changelog");
    if (incremental_) a.push_back("--incremental");
    if (restore) {
      a.push_back("--restore");
      a.push_back("latest");
    }
    return a;
  }

  // Runs until the job logs its `more`-th completed checkpoint, then
  // SIGKILLs it. Returns false when the job finished on its own first.
  bool run_and_kill(bool restore, int more, int round) {
    Child c(args(restore), dir_->path("round" + std::to_string(round)), /*pipe_stderr=*/true);
    int completed = 0;
    bool reached = c.wait_for_line(
        [&](const std::string& line) {
          return line.find("completed") != std::string::npos && ++completed >= more;
        },
        std::chrono::seconds(60));
    if (!reached) {  // the stream ended: the job finished before that
      EXPECT_EQ(c.wait(), 0) << c.err();
      return false;
    }
    c.kill9();
    int code = c.wait();
    if (code == 0) return false;  // it finished between the line and the kill
    EXPECT_EQ(code, 128 + SIGKILL) << c.err();
    return true;
  }

  void finish_and_check(int round) {
    Child last(args(true), dir_->path("final"));
    int code = last.wait();
    ASSERT_EQ(code, 0) << last.err();
    EXPECT_NE(last.out().find("restored from checkpoint"), std::string::npos) << last.out();
    auto check = examples::check_running_sum({dir_->path("a.txt"), dir_->path("b.txt")},
                                             dir_->path("out"));
    ASSERT_TRUE(check.ok()) << check.status();
    for (const auto& p : check->problems) ADD_FAILURE() << p;
    EXPECT_TRUE(check->exactly_once) << "after " << round << " kills";
  }

  uint64_t seed_;
  std::mt19937_64 rng_;
  std::unique_ptr<TempDir> dir_;
  std::string state_ = "heap";
  bool incremental_ = false;
};

// Parameter: the state backend (--state).
class KillRestoreBackendTest : public KillRestoreTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(KillRestoreBackendTest, RepeatedKillsAndRestoreLatestGiveExactlyOnceOutput) {
  SCOPED_TRACE("seed " + std::to_string(seed_));
  state_ = GetParam();
  int kills = 0;
  for (int round = 0; round < 5; ++round) {
    int more = 1 + static_cast<int>(rng_() % 4);
    if (!run_and_kill(round > 0, more, round)) break;
    ++kills;
  }
  EXPECT_GE(kills, 1);
  finish_and_check(kills);
}

INSTANTIATE_TEST_SUITE_P(Backends, KillRestoreBackendTest, ::testing::Values("heap", "rocksdb", "heap-changelog"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// Parameter: a crash point. The job dies at a visit of the point late
// enough that a checkpoint or two are complete (points passed once per
// subtask are visited more often than those passed once per checkpoint),
// and `--restore latest` must still give exactly-once output.
// Parameters: the crash point, and the state backend (rocksdb with
// incremental checkpoints).
class CrashPointTest : public KillRestoreTest,
                       public ::testing::WithParamInterface<std::tuple<CrashPoint, std::string>> {};

int visit_to_crash_at(CrashPoint p) {
  switch (p) {
    case CrashPoint::kStateFileWritten: return 60;  // every operator of every subtask
    case CrashPoint::kSinkPreCommitted:
    case CrashPoint::kSinkRecovered:  // (the pre-commit of the run before)
    case CrashPoint::kSinkPublished: return 20;     // every sink subtask
    default: return 3;                              // once per checkpoint
  }
}

TEST_P(CrashPointTest, KilledAtTheCrashPointRestoresLatestExactlyOnce) {
  if (!WEIR_TEST_POINTS) GTEST_SKIP() << "test points are compiled out of Release builds";
  const CrashPoint p = std::get<0>(GetParam());
  const std::string point(to_string(p));
  state_ = std::get<1>(GetParam());
  incremental_ = state_ == "rocksdb";
  bool restoring = false;
  if (p == CrashPoint::kSinkRecovered) {
    // A point of recovery: first a run killed with pre-committed output,
    // then the restoring run dies at the point.
    Child first(args(false), dir_->path("first"), /*pipe_stderr=*/true,
                {"WEIR_CRASH_AT=sink-pre-committed:" + std::to_string(visit_to_crash_at(p))});
    ASSERT_EQ(first.wait(), 128 + SIGKILL) << first.err();
    restoring = true;
  }
  Child c(args(restoring), dir_->path("crash"), /*pipe_stderr=*/true,
          {"WEIR_CRASH_AT=" + point + ":" + std::to_string(restoring ? 1 : visit_to_crash_at(p))});
  bool reached = c.wait_for_line(
      [&](const std::string& line) { return line.find("crash point " + point + " reached") != std::string::npos; },
      std::chrono::seconds(60));
  ASSERT_TRUE(reached) << "the job never reached crash point " << point << "; stderr: " << c.err();
  ASSERT_EQ(c.wait(), 128 + SIGKILL) << c.err();
  finish_and_check(1);
}

INSTANTIATE_TEST_SUITE_P(EveryPoint, CrashPointTest,
                         ::testing::Combine(::testing::ValuesIn(kAllCrashPoints),
                                            ::testing::Values("heap", "rocksdb", "heap-changelog")),
                         [](const ::testing::TestParamInfo<std::tuple<CrashPoint, std::string>>& info) {
                           std::string name;
                           for (char ch : to_string(std::get<0>(info.param))) {
                             if (ch != '-') name.push_back(ch);
                           }
                           std::string state = std::get<1>(info.param);
                           std::replace(state.begin(), state.end(), '-', '_');
                           return name + "_" + state;
                         });

// Whether the killed run had already published a part file that checkpoint
// `dir` pre-committed: then restoring an older checkpoint re-emits rows that
// are committed output, and only at-least-once can hold.
bool committed_part_of(const fs::path& dir, const std::string& out) {
  auto cp = checkpoint::load_checkpoint(dir.string());
  EXPECT_TRUE(cp.ok()) << cp.status();
  if (!cp.ok()) return true;
  auto storage = checkpoint::FileCheckpointStorage::at_directory(cp->location);
  for (const auto& op : cp->metadata.operators) {
    for (const auto& s : op.subtasks) {
      if (s.operator_state_length == 0) continue;
      auto bytes = storage->read_state_file(cp->location, s);
      EXPECT_TRUE(bytes.ok()) << bytes.status();
      if (!bytes.ok()) return true;
      auto state = checkpoint::decode_operator_state(
          (*bytes)->bytes().substr(s.operator_state_offset, s.operator_state_length));
      if (!state.ok()) return true;
      auto it = state->find("pending-files");
      if (it == state->end()) continue;
      for (const auto& e : it->second.entries) {
        auto f = deserialize_from_string<PendingPartFile>(e);
        if (!f || f->checkpoint_id != cp->metadata.checkpoint_id) continue;
        std::string prefix = op.uid == "rejects-sink" ? examples::kRejectsPrefix : examples::kOutputPrefix;
        if (fs::exists(fs::path(out) / (prefix + "-" + std::to_string(f->subtask) + "-" + std::to_string(f->seq)))) {
          return true;
        }
      }
    }
  }
  return false;
}

// Kills the job after a few checkpoints, flips a byte of the file `victim_of`
// picks in the newest checkpoint, and restores latest: the broken checkpoint
// is named on stderr and skipped, and the output stays exactly-once (unless
// the killed run had already committed part of the broken checkpoint).
class CorruptCheckpointTest : public KillRestoreTest {
 protected:
  void corrupt_newest_and_restore(const std::function<fs::path(const fs::path&)>& victim_of) {
    SCOPED_TRACE("seed " + std::to_string(seed_));
    ASSERT_TRUE(run_and_kill(false, 3, 0));
    fs::path newest = newest_checkpoint_dir(dir_->path("chk"));
    ASSERT_FALSE(newest.empty());
    // The job was killed right after the newest checkpoint completed; usually
    // before its sinks heard of it, but not always.
    const bool rolled_back_committed_output = committed_part_of(newest, dir_->path("out"));
    fs::path victim = victim_of(newest);
    ASSERT_FALSE(victim.empty());
    {
      std::fstream io(victim, std::ios::in | std::ios::out | std::ios::binary);
      io.seekg(13);
      char c = static_cast<char>(io.get());
      io.seekp(13);
      io.put(static_cast<char>(c ^ 0x5a));
    }
    Child last(args(true), dir_->path("final"));
    ASSERT_EQ(last.wait(), 0) << last.err();
    EXPECT_NE(last.err().find(newest.string()), std::string::npos)
        << "stderr: " << last.err() << "\nvictim: " << victim;
    auto check = examples::check_running_sum({dir_->path("a.txt"), dir_->path("b.txt")},
                                             dir_->path("out"));
    ASSERT_TRUE(check.ok()) << check.status();
    EXPECT_TRUE(check->nothing_lost);
    if (rolled_back_committed_output) return;  // duplicates are then the only right outcome
    for (const auto& p : check->problems) ADD_FAILURE() << p;
    EXPECT_TRUE(check->exactly_once);
  }
};

TEST_F(CorruptCheckpointTest, CorruptStateFileOfTheNewestCheckpointIsReportedAndSkipped) {
  corrupt_newest_and_restore([](const fs::path& newest) {
    fs::path victim;
    for (const auto& f : fs::directory_iterator(newest)) {
      if (f.path().extension() == ".state") victim = f.path();
    }
    return victim;
  });
}

// Incremental RocksDB checkpoints: a flipped byte inside an SST file (or,
// when the newest checkpoint uploaded none, its MANIFEST) is found by the
// checksum the metadata records for every file, not only by its size.
TEST_F(CorruptCheckpointTest, CorruptSstOfTheNewestIncrementalCheckpointIsReportedAndSkipped) {
  state_ = "rocksdb";
  incremental_ = true;
  corrupt_newest_and_restore([](const fs::path& newest) {
    const std::string id = newest.filename().string().substr(4);
    fs::path victim;
    std::error_code ec;
    for (const auto& f : fs::directory_iterator(newest.parent_path() / "shared" / ("c" + id), ec)) {
      if (f.path().extension() == ".sst" && fs::file_size(f.path()) > 64) victim = f.path();
    }
    if (!victim.empty()) return victim;
    for (const auto& f : fs::directory_iterator(newest)) {
      if (f.path().filename().string().find("MANIFEST") != std::string::npos) victim = f.path();
    }
    return victim;
  });
}

// Changelog checkpoints: a flipped byte in the file the newest checkpoint
// added to its chain (a delta, or a new base) is found by that file's
// checksum when the checkpoint is loaded.
TEST_F(CorruptCheckpointTest, CorruptChangelogFileOfTheNewestCheckpointIsReportedAndSkipped) {
  state_ = "heap-changelog";
  corrupt_newest_and_restore([](const fs::path& newest) {
    const std::string id = newest.filename().string().substr(4);
    fs::path victim;
    std::error_code ec;
    for (const auto& f : fs::directory_iterator(newest.parent_path() / "shared" / ("c" + id), ec)) {
      if (f.path().extension() == ".state") victim = f.path();
    }
    return victim;
  });
}

}  // namespace
}  // namespace weir
