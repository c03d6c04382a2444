// Savepoints through the command line, as a user takes them: SIGUSR1 on a
// running job writes a savepoint, SIGUSR2 stops the job with one, and
// --restore resumes from it at another parallelism on another backend.
// (The exactness of state across savepoints and rescaling is proven by
// src/runtime/rescale_test.cc.)
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <regex>

#include "tests/process.h"

namespace weir {
namespace {

namespace fs = std::filesystem;
using testing::Child;
using testing::TempDir;

// The savepoint path in a "savepoint N completed: PATH" log line.
std::string savepoint_path(const std::string& line) {
  std::smatch m;
  static const std::regex re("savepoint [0-9]+ completed: (.*)$");
  return std::regex_search(line, m, re) ? m[1].str() : "";
}

TEST(SavepointCliTest, SignalsTakeASavepointAndStopWithOneThenRestoreRescaled) {
  TempDir dir("savepoint-cli");
  std::vector<std::string> args = {testing::weir_bin(), "nexmark", "--query", "q5", "--events", "5000000",
                                   "--rate", "100000", "--parallelism", "2", "--checkpoint-interval", "50ms",
                                   "--state", "rocksdb", "--state-dir", dir.path("state"),
                                   "--savepoint-dir", dir.path("savepoints"), "--verbose"};
  Child job(args, dir.path("first"), /*pipe_stderr=*/true);
  auto completed = [](const std::string& l) { return l.find("checkpoint 2 completed") != std::string::npos; };
  ASSERT_TRUE(job.wait_for_line(completed, std::chrono::seconds(30))) << job.err();

  job.signal(SIGUSR1);
  std::string first;
  ASSERT_TRUE(job.wait_for_line([&](const std::string& l) { return !(first = savepoint_path(l)).empty(); },
                                std::chrono::seconds(30)))
      << job.err();
  EXPECT_TRUE(fs::exists(fs::path(first) / "_metadata")) << first;

  job.signal(SIGUSR2);
  std::string stopped;
  ASSERT_TRUE(job.wait_for_line([&](const std::string& l) { return !(stopped = savepoint_path(l)).empty(); },
                                std::chrono::seconds(30)))
      << job.err();
  ASSERT_EQ(job.wait(), 0) << job.err();
  EXPECT_NE(job.out().find("stopped with savepoint " + stopped), std::string::npos) << job.out();
  EXPECT_NE(first, stopped);

  // Resume at parallelism 3 on the heap backend; events after the
  // savepoint's positions are read, and the savepoints stay.
  Child resumed({testing::weir_bin(), "nexmark", "--query", "q5", "--events", "5000000", "--parallelism", "3",
                 "--restore", stopped, "--state", "heap"},
                dir.path("second"));
  ASSERT_EQ(resumed.wait(), 0) << resumed.err();
  EXPECT_NE(resumed.out().find("FINISHED"), std::string::npos) << resumed.out();
  EXPECT_NE(resumed.out().find("restored from checkpoint"), std::string::npos) << resumed.out();
  EXPECT_TRUE(fs::exists(fs::path(first) / "_metadata"));
  EXPECT_TRUE(fs::exists(fs::path(stopped) / "_metadata"));
}

TEST(SavepointCliTest, ASignalWithoutASavepointDirectoryIsReportedAndTheJobGoesOn) {
  TempDir dir("savepoint-cli-nodir");
  Child job({testing::weir_bin(), "nexmark", "--query", "q1", "--events", "400000", "--rate", "100000",
             "--checkpoint-interval", "50ms", "--verbose"},
            dir.path("run"), /*pipe_stderr=*/true);
  auto completed = [](const std::string& l) { return l.find("checkpoint 1 completed") != std::string::npos; };
  ASSERT_TRUE(job.wait_for_line(completed, std::chrono::seconds(30))) << job.err();
  job.signal(SIGUSR1);
  ASSERT_TRUE(job.wait_for_line(
      [](const std::string& l) { return l.find("savepoint failed: no savepoint directory given") != std::string::npos; },
      std::chrono::seconds(30)))
      << job.err();
  ASSERT_EQ(job.wait(), 0) << job.err();
  EXPECT_NE(job.out().find("FINISHED"), std::string::npos) << job.out();
}

}  // namespace
}  // namespace weir
