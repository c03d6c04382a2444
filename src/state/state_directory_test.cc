// Job state directories: a live owner's directory is kept, a dead one's is
// swept.
#include "state/state_directory.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

namespace weir::state {
namespace {

namespace fs = std::filesystem;

class StateDirectoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("weir-state-dir-test-" + std::to_string(::getpid()));
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(StateDirectoryTest, SweepRemovesOnlyDirectoriesOfDeadOwners) {
  // A child process takes a job directory, writes state and is killed.
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto dir = JobStateDirectory::acquire(root_, "dead-job");
    if (!dir.ok()) ::_exit(1);
    std::ofstream((*dir)->path() / "working-copy.sst") << "state";
    ::raise(SIGKILL);
    ::_exit(2);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << WEXITSTATUS(status);
  ASSERT_TRUE(fs::exists(root_ / "dead-job" / "working-copy.sst"));

  auto live = JobStateDirectory::acquire(root_, "live-job");
  ASSERT_TRUE(live.ok()) << live.status();
  fs::create_directories(root_ / "not-a-job");  // no lock file: left alone

  auto removed = JobStateDirectory::sweep(root_, /*min_age_seconds=*/0);
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_EQ(removed[0], root_ / "dead-job");
  EXPECT_FALSE(fs::exists(root_ / "dead-job"));
  EXPECT_TRUE(fs::exists(root_ / "live-job"));
  EXPECT_TRUE(fs::exists(root_ / "not-a-job"));
  // A lock file younger than the minimum age is not touched either.
  std::ofstream(root_ / "not-a-job" / ".owner") << "";
  EXPECT_TRUE(JobStateDirectory::sweep(root_, /*min_age_seconds=*/3600).empty());
}

TEST_F(StateDirectoryTest, ASecondOwnerIsRefusedAndTheOwnerRemovesItsDirectory) {
  auto first = JobStateDirectory::acquire(root_, "job");
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = JobStateDirectory::acquire(root_, "job");
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("in use"), std::string::npos) << second.status();
  first->reset();
  EXPECT_FALSE(fs::exists(root_ / "job"));
}

}  // namespace
}  // namespace weir::state
