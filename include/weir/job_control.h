// Controls a running job from another thread: savepoints,
// stop-with-savepoint, and a look at its progress. Pass one to
// StreamEnvironment::execute; requests made before the job runs wait until
// it does.
//
// A savepoint is a full snapshot in the canonical, backend-independent
// format, written to its own directory `<target>/savepoint-<job>-<id>` and
// owned by the user: the engine never deletes it. Restore from it like from
// a checkpoint (JobConfig::restore = its path), into either state backend
// and at any parallelism.
//
// Thread-safe.
#ifndef WEIR_JOB_CONTROL_H_
#define WEIR_JOB_CONTROL_H_

#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "weir/job_result.h"

namespace weir {
namespace detail {
class JobControlAccess;
}  // namespace detail

// What a running job has done so far, for a progress display.
struct JobProgress {
  JobStatus status = JobStatus::kCreated;
  // Records the sources emitted: the sum over their subtasks, each counted
  // from the start of its current attempt.
  int64_t source_records = 0;
  int64_t completed_checkpoints = 0;  // savepoints included
  int restarts = 0;
};

class JobControl {
 public:
  struct Request {
    enum class Kind { kSavepoint, kStop, kCancel } kind = Kind::kSavepoint;
    std::string target_directory;
    // kStop: first end the sources' input, so event time advances to the
    // end and every timer and window fires; the final snapshot is the
    // savepoint. Without drain the job stops with its timers pending, ready
    // to resume.
    bool drain = false;
  };
  using Listener = std::function<void(const SavepointResult&)>;

  void trigger_savepoint(std::string target_directory) {
    submit({Request::Kind::kSavepoint, std::move(target_directory), false});
  }
  void stop_with_savepoint(std::string target_directory, bool drain) {
    submit({Request::Kind::kStop, std::move(target_directory), drain});
  }
  // Ends the job now, without a savepoint: every task is canceled and
  // execute() returns a CANCELED result (no effect once the job ended).
  void cancel() { submit({Request::Kind::kCancel, "", false}); }
  // The job's progress now; empty before it runs and after it ended. Takes
  // as long as the job's coordinator needs to answer (microseconds).
  std::optional<JobProgress> progress() {
    std::lock_guard lock(progress_mu_);
    if (!progress_) return std::nullopt;
    return progress_();
  }
  // Called (on an engine thread) as each savepoint completes or fails.
  void on_savepoint(Listener listener) {
    std::lock_guard lock(mu_);
    listener_ = std::move(listener);
  }

 private:
  friend class detail::JobControlAccess;

  // The running job attaches a handler of requests and what answers
  // progress(), and reports savepoints.
  void attach(std::function<void(Request)> handler, std::function<JobProgress()> progress) {
    {
      std::lock_guard lock(progress_mu_);
      progress_ = std::move(progress);
    }
    std::vector<Request> queued;
    {
      std::lock_guard lock(mu_);
      handler_ = std::move(handler);
      queued.swap(queued_);
    }
    for (auto& r : queued) handler_(std::move(r));
  }
  // After detach() returns, neither function is called again.
  void detach() {
    {
      std::lock_guard lock(progress_mu_);
      progress_ = nullptr;
    }
    std::lock_guard lock(mu_);
    handler_ = nullptr;
  }
  void report(const SavepointResult& r) {
    Listener l;
    {
      std::lock_guard lock(mu_);
      l = listener_;
    }
    if (l) l(r);
  }
  void submit(Request r) {
    std::function<void(Request)> h;
    {
      std::lock_guard lock(mu_);
      if (!handler_) {
        queued_.push_back(std::move(r));
        return;
      }
      h = handler_;
    }
    h(std::move(r));
  }

  std::mutex mu_;
  std::function<void(Request)> handler_;
  std::vector<Request> queued_;
  Listener listener_;
  // Its own lock, held while progress_ runs: the job's coordinator answers
  // it, and also takes mu_ when it reports a savepoint.
  std::mutex progress_mu_;
  std::function<JobProgress()> progress_;
};

namespace detail {
// The engine's side of a JobControl: the running job attaches the handler
// of its requests and its progress (may be empty), detaches them when it
// ends, and reports savepoints.
class JobControlAccess {
 public:
  static void attach(JobControl& c, std::function<void(JobControl::Request)> handler,
                     std::function<JobProgress()> progress) {
    c.attach(std::move(handler), std::move(progress));
  }
  static void detach(JobControl& c) { c.detach(); }
  static void report(JobControl& c, const SavepointResult& r) { c.report(r); }
};
}  // namespace detail

}  // namespace weir

#endif  // WEIR_JOB_CONTROL_H_
