#include "cli/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <utility>

namespace weir::cli {

std::string format_elapsed(std::chrono::steady_clock::duration elapsed) {
  const int64_t s = std::chrono::duration_cast<std::chrono::seconds>(elapsed).count();
  return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
}

std::string job_progress_text(std::string_view status, int64_t source_records, int64_t records_per_s,
                              int64_t checkpoints, std::chrono::steady_clock::duration elapsed) {
  return fmt::format("{}  {} records from sources ({}/s)  {} checkpoints  {}", status, source_records,
                     records_per_s, checkpoints, format_elapsed(elapsed));
}

int64_t RatePerSecond::update(int64_t count, std::chrono::steady_clock::duration elapsed) {
  const double seconds = std::chrono::duration<double>(elapsed - last_elapsed_).count();
  const int64_t rate = seconds > 0 && count >= last_count_
                           ? std::llround((count - last_count_) / seconds)
                           : 0;
  last_count_ = count;
  last_elapsed_ = elapsed;
  return rate;
}

ProgressLine::ProgressLine(bool quiet) : enabled_(!quiet && ::isatty(STDOUT_FILENO) == 1) {}

void ProgressLine::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (ticker_.joinable()) ticker_.join();
  std::lock_guard lock(mu_);
  clear_locked();
}

void ProgressLine::show(const std::string& text) {
  std::lock_guard lock(mu_);
  if (!enabled_ || stopping_) return;
  std::fprintf(stdout, "\r\033[K%s", text.c_str());
  std::fflush(stdout);
  shown_ = true;
}

void ProgressLine::clear() {
  std::lock_guard lock(mu_);
  clear_locked();
}

void ProgressLine::clear_locked() {
  if (!shown_) return;
  std::fprintf(stdout, "\r\033[K");
  std::fflush(stdout);
  shown_ = false;
}

void ProgressLine::say(std::FILE* out, const std::string& text) {
  std::lock_guard lock(mu_);
  clear_locked();
  std::fputs(text.c_str(), out);
  std::fflush(out);
}

void ProgressLine::tick(Source source, Clock::duration period) {
  std::lock_guard lock(mu_);
  if (!enabled_ || stopping_ || ticker_.joinable()) return;
  ticker_ = std::thread([this, source = std::move(source), period] {
    std::unique_lock lock(mu_);
    while (!stopping_) {
      lock.unlock();
      std::optional<std::string> text = source(elapsed());
      if (text) show(*text);
      lock.lock();
      stop_cv_.wait_for(lock, period, [this] { return stopping_; });
    }
  });
}

}  // namespace weir::cli
