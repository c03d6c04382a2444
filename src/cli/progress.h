// The progress line: one line on the terminal, rewritten in place, that
// says what a running command has done so far (records, rate,
// checkpoints, elapsed time). Shown only when stdout is a terminal and the
// command was not given --quiet, so pipes and files get results only.
#ifndef WEIR_CLI_PROGRESS_H_
#define WEIR_CLI_PROGRESS_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

namespace weir::cli {

// "H:MM:SS".
std::string format_elapsed(std::chrono::steady_clock::duration elapsed);

// What a job's progress line says: `RUNNING  1200 records from sources
// (400/s)  3 checkpoints  0:00:03`. One format for jobs in this process and
// jobs followed on a cluster.
std::string job_progress_text(std::string_view status, int64_t source_records, int64_t records_per_s,
                              int64_t checkpoints, std::chrono::steady_clock::duration elapsed);

// A count's rate per second since the last call (the first: since the
// start); 0 when the count went down (a restarted subtask counts from 0).
class RatePerSecond {
 public:
  int64_t update(int64_t count, std::chrono::steady_clock::duration elapsed);

 private:
  int64_t last_count_ = 0;
  std::chrono::steady_clock::duration last_elapsed_{};
};

// Thread-safe. Off (every call does nothing but say()'s printing) when
// stdout is not a terminal or `quiet`.
class ProgressLine {
 public:
  using Clock = std::chrono::steady_clock;
  // Text for the line given the time since construction; nullopt keeps
  // the line as it is.
  using Source = std::function<std::optional<std::string>(Clock::duration elapsed)>;

  explicit ProgressLine(bool quiet);
  ~ProgressLine() { stop(); }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  bool enabled() const { return enabled_; }
  Clock::duration elapsed() const { return Clock::now() - start_; }

  // Replaces the line with `text`.
  void show(const std::string& text);
  // Clears the line, so that other output starts at the left margin.
  void clear();
  // Clears the line and prints `text` to `out` (stdout or stderr).
  void say(std::FILE* out, const std::string& text);

  // Stops the ticker and clears the line for good: later show() calls do
  // nothing. Idempotent.
  void stop();

  // Shows what `source` returns now and every `period` after, from a
  // thread of its own, until destruction. At most once per object.
  void tick(Source source, Clock::duration period = std::chrono::seconds(1));

 private:
  void clear_locked();

  const bool enabled_;
  const Clock::time_point start_ = Clock::now();
  std::mutex mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  bool shown_ = false;
  std::thread ticker_;
};

}  // namespace weir::cli

#endif  // WEIR_CLI_PROGRESS_H_
