// The crash windows of a transactional sink, shared by the tests of every
// exactly-once connector: the four crash points, and a run of the job that
// dies at one of them.
#ifndef WEIR_TESTS_SINK_WINDOWS_H_
#define WEIR_TESTS_SINK_WINDOWS_H_

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "common/test_points.h"
#include "tests/process.h"

namespace weir::testing {

// After pre-commit, before completion; after completion, before the
// commit; after the commit; during recovery.
inline const auto kSinkWindows =
    ::testing::Values(CrashPoint::kSinkPreCommitted, CrashPoint::kCompletedBeforeNotify, CrashPoint::kSinkPublished,
                      CrashPoint::kSinkRecovered);
inline std::string sink_window_name(const ::testing::TestParamInfo<CrashPoint>& info) {
  std::string name;
  for (char ch : to_string(info.param)) {
    if (ch != '-') name.push_back(ch);
  }
  return name;
}

// Runs the job (`args(restore)`, 4 sink subtasks) until it is SIGKILLed at
// crash point `p`, a few checkpoints in. For sink-recovered a first run is
// killed with output pre-committed, and the restoring run dies at the
// point. The caller then restores to the end and checks the output.
// `pre_commits`: the pre-commit visit to die at. Early checkpoints can be
// declined after some sinks pre-committed (a task not running yet on a
// loaded machine), so a job long enough for it passes more than 12 (three
// checkpoints' worth), making it likely that one completed before.
inline void kill_at_sink_window(CrashPoint p, const std::function<std::vector<std::string>(bool)>& args,
                                const std::function<std::string(const std::string&)>& path, int pre_commits = 12) {
  const std::string point(to_string(p));
  bool restoring = false;
  if (p == CrashPoint::kSinkRecovered) {
    Child first(args(false), path("first"), /*pipe_stderr=*/true,
                {"WEIR_CRASH_AT=sink-pre-committed:" + std::to_string(pre_commits)});
    ASSERT_EQ(first.wait(), 128 + SIGKILL) << first.err();
    restoring = true;
  }
  // Pre-commit and publish are visited by each sink subtask per checkpoint,
  // completion once per checkpoint.
  const int visit = restoring ? 1 : p == CrashPoint::kCompletedBeforeNotify ? 3
                                 : p == CrashPoint::kSinkPreCommitted    ? pre_commits
                                                                         : 12;
  Child c(args(restoring), path("crash"), /*pipe_stderr=*/true,
          {"WEIR_CRASH_AT=" + point + ":" + std::to_string(visit)});
  bool reached = c.wait_for_line(
      [&](const std::string& line) { return line.find("crash point " + point + " reached") != std::string::npos; },
      std::chrono::seconds(60));
  ASSERT_TRUE(reached) << "the job never reached crash point " << point << "; stderr: " << c.err();
  ASSERT_EQ(c.wait(), 128 + SIGKILL) << c.err();
}

}  // namespace weir::testing

#endif  // WEIR_TESTS_SINK_WINDOWS_H_
