// Runs of a job's command line (an embedded `weir example ...`) that a test
// SIGKILLs after some completed checkpoints and then finishes with
// --restore latest, collecting everything the runs logged.
#ifndef WEIR_TESTS_KILL_RUNS_H_
#define WEIR_TESTS_KILL_RUNS_H_

#include <gtest/gtest.h>

#include <csignal>
#include <string>
#include <vector>

#include "tests/process.h"

namespace weir::testing {

class KilledRuns {
 public:
  // Logs go under `dir`.
  explicit KilledRuns(const TempDir* dir) : dir_(dir) {}

  // Runs `args` (which must log at info level) until the job logs its
  // `more`-th completed checkpoint, then SIGKILLs it. False when the job
  // finished first.
  bool run_and_kill(const std::vector<std::string>& args, int more, const std::string& name) {
    Child c(args, dir_->path(name), /*pipe_stderr=*/true);
    int completed = 0;
    const bool reached = c.wait_for_line(
        [&](const std::string& line) {
          return line.find("completed in") != std::string::npos && ++completed >= more;
        },
        std::chrono::seconds(60));
    if (reached) c.kill9();
    const int code = c.wait();
    log_ += c.err();
    if (!reached || code == 0) {
      EXPECT_EQ(code, 0) << c.err();
      return false;
    }
    EXPECT_EQ(code, 128 + SIGKILL) << c.err();
    return true;
  }

  // Runs `args` to its end, which must be a success; its log.
  std::string finish(const std::vector<std::string>& args) {
    Child last(args, dir_->path("final"));
    const int code = last.wait();
    EXPECT_EQ(code, 0) << last.err();
    log_ += last.err();
    return last.err();
  }

  // What every run logged so far.
  const std::string& log() const { return log_; }

 private:
  const TempDir* dir_;
  std::string log_;
};

}  // namespace weir::testing

#endif  // WEIR_TESTS_KILL_RUNS_H_
