// Running a job in this process: what `weir example`, `weir nexmark`,
// `weir generate orders` and `weir run --embedded` share.
#ifndef WEIR_CLI_EMBEDDED_H_
#define WEIR_CLI_EMBEDDED_H_

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "cli/progress.h"
#include "absl/status/statusor.h"
#include "weir/job_control.h"
#include "weir/job_result.h"
#include "weir/stream.h"

namespace weir::cli {

// What a person at the terminal sees of, and does to, a job running in
// this process, which run() executes.
// - A progress line (cli/progress.h) unless `quiet` or stdout is not a
//   terminal: the job's state, the records its sources emitted and their
//   rate, its checkpoints, the time since start.
// - With a `savepoint_dir`, savepoints on signals: SIGUSR1 takes one into
//   it, SIGUSR2 stops the job with one (`drain`: after ending its input).
//   The signals are blocked in every thread (so construct this before the
//   job starts any) and taken by sigwait on a thread of their own.
class JobConsole {
 public:
  JobConsole(bool quiet, std::optional<std::string> savepoint_dir, bool drain = false);
  ~JobConsole();
  // env.execute(name) with this console; the progress line is gone when
  // it returns, so the result prints on a clean line.
  absl::StatusOr<JobResult> run(StreamEnvironment& env, const std::string& name);

 private:
  // The progress line's text: the rate is the difference since the last.
  std::optional<std::string> progress_text(ProgressLine::Clock::duration elapsed);

  const std::optional<std::string> savepoint_dir_;
  const bool drain_;
  JobControl control_;
  ProgressLine line_;
  RatePerSecond rate_;  // the ticker's
  sigset_t set_;
  std::atomic<bool> done_{false};
  std::thread signal_thread_;
};

// The job's end, restarts and checkpoints, for people.
void print_result(const JobResult& r, std::FILE* out);

// "wrote N records; M committed in K transactions": a sink's counts
// (weir/metrics.h kSinkRecordsSent, ...) from a vertex's summed metrics,
// by name; "" for a vertex without a sink that counts commits.
std::string sink_summary(const std::function<std::optional<int64_t>(std::string_view name)>& metric);

// The end of a run by JobConsole::run: prints the result and returns the
// exit code (docs/cli.md), or prints the error and returns its code.
int finish_run(const absl::StatusOr<JobResult>& result);

}  // namespace weir::cli

#endif  // WEIR_CLI_EMBEDDED_H_
