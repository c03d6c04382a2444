// Controls a running job from another thread: savepoints and
// stop-with-savepoint. Pass one to StreamEnvironment::execute; requests made
// before the job runs wait until it does.
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
#include <string>
#include <utility>
#include <vector>

#include "weir/job_result.h"

namespace weir {
namespace detail {
class JobControlAccess;
}  // namespace detail

class JobControl {
 public:
  struct Request {
    enum class Kind { kSavepoint, kStop } kind = Kind::kSavepoint;
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
  // Called (on an engine thread) as each savepoint completes or fails.
  void on_savepoint(Listener listener) {
    std::lock_guard lock(mu_);
    listener_ = std::move(listener);
  }

 private:
  friend class detail::JobControlAccess;

  // The running job attaches a handler, and reports savepoints.
  void attach(std::function<void(Request)> handler) {
    std::vector<Request> queued;
    {
      std::lock_guard lock(mu_);
      handler_ = std::move(handler);
      queued.swap(queued_);
    }
    for (auto& r : queued) handler_(std::move(r));
  }
  void detach() {
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
};

namespace detail {
// The engine's side of a JobControl: the running job attaches the handler
// of its requests, detaches it when it ends, and reports savepoints.
class JobControlAccess {
 public:
  static void attach(JobControl& c, std::function<void(JobControl::Request)> handler) {
    c.attach(std::move(handler));
  }
  static void detach(JobControl& c) { c.detach(); }
  static void report(JobControl& c, const SavepointResult& r) { c.report(r); }
};
}  // namespace detail

}  // namespace weir

#endif  // WEIR_JOB_CONTROL_H_
