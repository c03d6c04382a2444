// Running a job in this process: what `weir example`, `weir nexmark` and
// `weir run --embedded` share.
#ifndef WEIR_CLI_EMBEDDED_H_
#define WEIR_CLI_EMBEDDED_H_

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>

#include "weir/job_control.h"
#include "weir/job_result.h"

namespace weir::cli {

// Savepoints on signals: SIGUSR1 takes a savepoint into --savepoint-dir,
// SIGUSR2 stops the job with one. The signals are blocked in every thread
// (so construct this before the job starts any) and taken by sigwait on a
// thread of their own, which forwards them to the job's JobControl.
class SignalControl {
 public:
  SignalControl(std::string dir, bool drain);
  ~SignalControl();
  JobControl* control() { return &control_; }

 private:
  const std::string dir_;
  const bool drain_;
  sigset_t set_;
  std::atomic<bool> done_{false};
  JobControl control_;
  std::thread thread_;
};

// The job's end, restarts and checkpoints, for people.
void print_result(const JobResult& r, std::FILE* out);

}  // namespace weir::cli

#endif  // WEIR_CLI_EMBEDDED_H_
