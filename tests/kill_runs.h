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
  // `more`-th completed checkpoint, or the first after it whose line
  // contains `needing` (e.g. "channel state"), then SIGKILLs it. False when
  // the job finished first. killed_at() names that checkpoint.
  bool run_and_kill(const std::vector<std::string>& args, int more, const std::string& name,
                    const std::string& needing = "") {
    Child c(args, dir_->path(name), /*pipe_stderr=*/true);
    int completed = 0;
    const bool reached = c.wait_for_line(
        [&](const std::string& line) {
          if (line.find("completed in") == std::string::npos || ++completed < more) return false;
          if (line.find(needing) == std::string::npos) return false;
          killed_at_ = line;
          return true;
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

  // The directory under `checkpoint_dir` of the checkpoint the last
  // run_and_kill killed the job at (from its line "job J: checkpoint N
  // completed ..."): restoring it rather than the latest, the next run
  // restores that one even when a newer one completed before the kill
  // landed. Empty when none.
  // `args` restoring killed_at(checkpoint_dir).
  std::vector<std::string> restoring_the_kill(std::vector<std::string> args,
                                              const std::string& checkpoint_dir) const {
    args.push_back("--restore");
    args.push_back(killed_at(checkpoint_dir));
    return args;
  }
  std::string killed_at(const std::string& checkpoint_dir) const {
    const size_t job = killed_at_.find("job ");
    const size_t colon = killed_at_.find(": checkpoint ", job);
    if (job == std::string::npos || colon == std::string::npos) return "";
    const size_t n = colon + std::string(": checkpoint ").size();
    const std::string id = killed_at_.substr(n, killed_at_.find(' ', n) - n);
    return checkpoint_dir + "/" + killed_at_.substr(job + 4, colon - job - 4) + "/chk-" + id;
  }

 private:
  const TempDir* dir_;
  std::string log_;
  std::string killed_at_;  // the line of the checkpoint run_and_kill killed at
};

}  // namespace weir::testing

#endif  // WEIR_TESTS_KILL_RUNS_H_
