#include "cli/embedded.h"

#include <fmt/format.h>

#include <algorithm>

#include "cli/exit_codes.h"
#include "weir/config.h"

namespace weir::cli {

JobConsole::JobConsole(bool quiet, std::optional<std::string> savepoint_dir, bool drain)
    : savepoint_dir_(std::move(savepoint_dir)), drain_(drain), line_(quiet) {
  control_.on_savepoint([this](const SavepointResult& r) {
    line_.say(stdout, r.error.empty() ? fmt::format("savepoint {} completed: {}\n", r.id, r.path)
                                      : fmt::format("savepoint failed: {}\n", r.error));
  });
  line_.tick([this](ProgressLine::Clock::duration elapsed) { return progress_text(elapsed); });
  if (!savepoint_dir_) return;
  sigemptyset(&set_);
  sigaddset(&set_, SIGUSR1);
  sigaddset(&set_, SIGUSR2);
  pthread_sigmask(SIG_BLOCK, &set_, nullptr);
  signal_thread_ = std::thread([this] {
    while (true) {
      int sig = 0;
      if (sigwait(&set_, &sig) != 0) continue;
      if (done_) return;
      if (sig == SIGUSR1) control_.trigger_savepoint(*savepoint_dir_);
      if (sig == SIGUSR2) control_.stop_with_savepoint(*savepoint_dir_, drain_);
    }
  });
}

JobConsole::~JobConsole() {
  if (signal_thread_.joinable()) {
    done_ = true;
    pthread_kill(signal_thread_.native_handle(), SIGUSR1);
    signal_thread_.join();
  }
}

absl::StatusOr<JobResult> JobConsole::run(StreamEnvironment& env, const std::string& name) {
  absl::StatusOr<JobResult> result = env.execute(name, &control_);
  line_.stop();
  return result;
}

std::optional<std::string> JobConsole::progress_text(ProgressLine::Clock::duration elapsed) {
  std::optional<JobProgress> p = control_.progress();
  if (!p) return std::nullopt;
  return job_progress_text(to_string(p->status), p->source_records, rate_.update(p->source_records, elapsed),
                           p->completed_checkpoints, elapsed);
}

void print_result(const JobResult& r, std::FILE* out) {
  const CheckpointCounts& cp = r.checkpoint_counts;
  std::fprintf(out, "job %s %s in %.3f s\n", r.job_id.c_str(), std::string(to_string(r.status)).c_str(),
               r.wall_time.count() / 1000.0);
  if (r.restored_checkpoint_id >= 0) {
    std::fprintf(out, "restored from checkpoint %lld (%s)\n", static_cast<long long>(r.restored_checkpoint_id),
                 r.restored_from.c_str());
  }
  std::fprintf(out, "checkpoints completed: %lld (failed: %lld, mean %.1f ms, max %lld ms)\n",
               static_cast<long long>(cp.completed), static_cast<long long>(cp.failed),
               cp.completed == 0 ? 0.0 : static_cast<double>(cp.duration_sum_ms) / cp.completed,
               static_cast<long long>(cp.duration_max_ms));
  std::fprintf(out, "restarts: %d\n", r.restarts);
  if (r.dropped_records > 0) {
    std::fprintf(out, "records dropped in flight by task failover: %lld\n",
                 static_cast<long long>(r.dropped_records));
  }
  if (r.lost_records > 0) {
    std::fprintf(out, "records lost (at-most-once: read after the checkpoint a restart restored, or dropped in flight): %lld\n",
                 static_cast<long long>(r.lost_records));
  }
  if (!r.stopped_with_savepoint.empty()) {
    std::fprintf(out, "stopped with savepoint %s\n", r.stopped_with_savepoint.c_str());
  }
  for (const auto& v : r.vertices) {
    std::fprintf(out,
                 "vertex %s (p=%d): records in %lld, out %lld (%lld bytes); backpressured %lld ms, idle %lld ms\n",
                 v.name.c_str(), v.parallelism, static_cast<long long>(v.records_in),
                 static_cast<long long>(v.records_out), static_cast<long long>(v.bytes_out),
                 static_cast<long long>(v.backpressured_ms), static_cast<long long>(v.idle_ms));
    // The counts above are the last attempt's: after a restart, what the
    // earlier attempts did (and what was replayed) shows here.
    if (v.attempts > 1) {
      std::fprintf(out, "vertex %s over all %d attempts: records in %lld, out %lld\n", v.name.c_str(), v.attempts,
                   static_cast<long long>(v.records_in_all_attempts),
                   static_cast<long long>(v.records_out_all_attempts));
    }
    auto sorted = v.gauges.find("sort.records");
    if (sorted != v.gauges.end()) {
      auto gauge = [&](const char* name) {
        auto it = v.gauges.find(name);
        return static_cast<long long>(it == v.gauges.end() ? 0 : it->second);
      };
      std::fprintf(out, "vertex %s sorted its input by key: %lld records, %lld bytes spilled in %lld runs\n",
                   v.name.c_str(), static_cast<long long>(sorted->second), gauge("sort.spilled_bytes"),
                   gauge("sort.spilled_runs"));
    }
    // What a sink to an external system wrote. Like every metric, the
    // counts are its last attempt's.
    const std::string sink = sink_summary([&](std::string_view name) -> std::optional<int64_t> {
      auto it = v.gauges.find(std::string(name));
      if (it == v.gauges.end()) return std::nullopt;
      return it->second;
    });
    if (!sink.empty()) {
      std::fprintf(out, "vertex %s %s%s\n", v.name.c_str(), sink.c_str(), r.restarts > 0 ? " (since its last restart)" : "");
    }
  }
}

std::string sink_summary(const std::function<std::optional<int64_t>(std::string_view name)>& metric) {
  const std::optional<int64_t> transactions = metric(kSinkTransactionsCommitted);
  if (!transactions) return "";
  const int64_t sent = metric(kSinkRecordsSent).value_or(0), committed = metric(kSinkRecordsCommitted).value_or(0);
  return "wrote " + std::to_string(sent) + " records; " + std::to_string(committed) + " committed in " +
         std::to_string(*transactions) + " transaction" + (*transactions == 1 ? "" : "s");
}

int finish_run(const absl::StatusOr<JobResult>& result) {
  if (!result.ok()) {
    return fail(absl::IsInvalidArgument(result.status()) ? kBadArguments : kBadInput,
                std::string(result.status().message()));
  }
  print_result(*result, stdout);
  if (result->status != JobStatus::kFinished) return fail(kJobFailed, "job failed: " + result->failure);
  return kOk;
}

}  // namespace weir::cli
