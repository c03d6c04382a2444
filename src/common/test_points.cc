#include "common/test_points.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

#include "absl/synchronization/mutex.h"

namespace weir {

std::string_view to_string(CrashPoint p) {
  switch (p) {
    case CrashPoint::kStateFileWritten: return "state-file-written";
    case CrashPoint::kMetadataBeforeRename: return "metadata-before-rename";
    case CrashPoint::kMetadataAfterRename: return "metadata-after-rename";
    case CrashPoint::kSinkPreCommitted: return "sink-pre-committed";
    case CrashPoint::kCompletedBeforeNotify: return "completed-before-notify";
    case CrashPoint::kSinkPublished: return "sink-published";
    case CrashPoint::kSinkRecovered: return "sink-recovered";
  }
  return "unknown";
}

std::optional<CrashPoint> parse_crash_point(std::string_view name) {
  for (CrashPoint p : kAllCrashPoints) {
    if (to_string(p) == name) return p;
  }
  return std::nullopt;
}

namespace internal {
namespace {

// The armed crash point, read from the environment once.
struct Armed {
  std::optional<CrashPoint> point;
  int64_t visit = 1;
};

const Armed& armed() {
  static const Armed a = [] {
    Armed r;
    const char* env = std::getenv("WEIR_CRASH_AT");
    if (env == nullptr || *env == '\0') return r;
    std::string_view spec(env);
    std::string_view name = spec.substr(0, spec.find(':'));
    r.point = parse_crash_point(name);
    if (!r.point) {
      std::fprintf(stderr, "weir: WEIR_CRASH_AT=%s names no crash point; ignored\n", env);
      return r;
    }
    if (name.size() < spec.size()) r.visit = std::max<int64_t>(1, std::atoll(env + name.size() + 1));
    return r;
  }();
  return a;
}

std::atomic<int64_t> visits{0};

struct Registry {
  absl::Mutex mu;
  std::map<std::string, std::vector<std::string>> predecessors ABSL_GUARDED_BY(mu);
  std::set<std::string> passed ABSL_GUARDED_BY(mu);
  std::map<std::string, std::function<void()>> callbacks ABSL_GUARDED_BY(mu);
};
Registry& registry() {
  static Registry* r = new Registry();
  return *r;
}
std::atomic<bool> enabled{false};

// Open crash fences, and whether a crash point waits for them to close.
struct Fences {
  absl::Mutex mu;
  int open ABSL_GUARDED_BY(mu) = 0;
  bool kill_pending ABSL_GUARDED_BY(mu) = false;
};
Fences& fences() {
  static Fences* f = new Fences();
  return *f;
}

}  // namespace

void enter_crash_fence() {
  Fences& f = fences();
  absl::MutexLock lock(&f.mu);
  // Once a kill is pending this waits for the process to die.
  auto no_kill = [&f]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(f.mu) { return !f.kill_pending; };
  f.mu.Await(absl::Condition(&no_kill));
  ++f.open;
}

void leave_crash_fence() {
  Fences& f = fences();
  absl::MutexLock lock(&f.mu);
  --f.open;
}

void reach_crash_point(CrashPoint p) {
  const Armed& a = armed();
  if (!a.point || *a.point != p) return;
  if (visits.fetch_add(1) + 1 != a.visit) return;
  {
    Fences& f = fences();
    absl::MutexLock lock(&f.mu);
    f.kill_pending = true;
    auto closed = [&f]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(f.mu) { return f.open == 0; };
    if (!f.mu.AwaitWithTimeout(absl::Condition(&closed), absl::Seconds(60))) {
      std::string line = "weir: crash point " + std::string(to_string(p)) + " waited 60 s for crash fences\n";
      (void)!::write(2, line.data(), line.size());
      std::abort();
    }
  }
  std::string line = "weir: crash point " + std::string(to_string(p)) + " reached (WEIR_CRASH_AT): killing the process\n";
  (void)!::write(2, line.data(), line.size());
  ::kill(::getpid(), SIGKILL);
}

bool sync_points_enabled() { return enabled.load(std::memory_order_relaxed); }

void reach_sync_point(std::string_view point) {
  Registry& r = registry();
  const std::string name(point);
  std::function<void()> callback;
  {
    absl::MutexLock lock(&r.mu);
    auto pre = r.predecessors.find(name);
    if (pre != r.predecessors.end()) {
      const std::vector<std::string>& wait_for = pre->second;
      auto all_passed = [&r, &wait_for]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(r.mu) {
        if (!enabled.load()) return true;
        for (const auto& p : wait_for) {
          if (!r.passed.contains(p)) return false;
        }
        return true;
      };
      // A dependency never met is a broken test, not a hang.
      if (!r.mu.AwaitWithTimeout(absl::Condition(&all_passed), absl::Seconds(60))) {
        std::string line = "weir: sync point " + name + " waited 60 s for its predecessors\n";
        (void)!::write(2, line.data(), line.size());
        std::abort();
      }
    }
    auto cb = r.callbacks.find(name);
    if (cb != r.callbacks.end()) callback = cb->second;
  }
  if (callback) callback();
  absl::MutexLock lock(&r.mu);
  r.passed.insert(name);
}

}  // namespace internal

void SyncPoints::load_dependencies(std::vector<std::pair<std::string, std::string>> before) {
  internal::Registry& r = internal::registry();
  absl::MutexLock lock(&r.mu);
  for (auto& [a, b] : before) r.predecessors[b].push_back(a);
}

void SyncPoints::set_callback(const std::string& name, std::function<void()> fn) {
  internal::Registry& r = internal::registry();
  absl::MutexLock lock(&r.mu);
  r.callbacks[name] = std::move(fn);
}

void SyncPoints::enable() { internal::enabled.store(true); }

void SyncPoints::reset() {
  internal::Registry& r = internal::registry();
  absl::MutexLock lock(&r.mu);
  internal::enabled.store(false);
  r.predecessors.clear();
  r.passed.clear();
  r.callbacks.clear();
}

}  // namespace weir
