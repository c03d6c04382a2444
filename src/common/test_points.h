// Test points: named places in the engine where a test can order threads
// (sync points) or end the process at one exact step (crash points), so a
// failure path found once can be replayed every time.
//
// Crash points are armed by the environment of the process:
//   WEIR_CRASH_AT=<name>[:<n>]
// kills the process with SIGKILL the n-th time (default the first) it
// reaches the crash point <name> (to_string of a CrashPoint), after one line
// on stderr naming it. The kill-restore test walks every crash point and
// checks that `--restore latest` still gives exactly-once output.
//
// Sync points follow RocksDB's TEST_SYNC_POINT: WEIR_SYNC_POINT("A") is a
// no-op until a test enables processing; then a thread reaching "B" after
// load_dependencies({{"A", "B"}}) waits until some thread has passed "A"
// (60 s at most: then the process aborts naming "B"), and a callback set for
// a point runs when a thread reaches it.
//
// Both compile to nothing unless WEIR_TEST_POINTS is 1, which the build sets
// for every build type but Release.
#ifndef WEIR_COMMON_TEST_POINTS_H_
#define WEIR_COMMON_TEST_POINTS_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace weir {

// The steps of a checkpoint where a crash is worth replaying, in the order a
// checkpoint takes them. DO NOT reorder: tests walk them by value.
enum class CrashPoint : uint8_t {
  kStateFileWritten = 0,     // a subtask's state file is written, not yet acknowledged
  kMetadataBeforeRename,     // _metadata.tmp written and synced, not renamed
  kMetadataAfterRename,      // _metadata in place: the checkpoint is complete
  kSinkPreCommitted,         // a sink pre-committed its output for a checkpoint
  kCompletedBeforeNotify,    // the checkpoint is complete, no task notified yet
  kSinkPublished,            // a sink published what a completed checkpoint covers
  kSinkRecovered,            // a restored sink finished the restored checkpoint's output, before running on
};
inline constexpr CrashPoint kAllCrashPoints[] = {
    CrashPoint::kStateFileWritten,     CrashPoint::kMetadataBeforeRename, CrashPoint::kMetadataAfterRename,
    CrashPoint::kSinkPreCommitted,     CrashPoint::kCompletedBeforeNotify, CrashPoint::kSinkPublished,
    CrashPoint::kSinkRecovered,
};

// "state-file-written", "metadata-before-rename", ...
std::string_view to_string(CrashPoint p);
std::optional<CrashPoint> parse_crash_point(std::string_view name);

namespace internal {
// Kills the process if WEIR_CRASH_AT names `p` and this is its n-th visit.
void reach_crash_point(CrashPoint p);
// Whether a test enabled sync points (cheap: one relaxed atomic load).
bool sync_points_enabled();
void enter_crash_fence();
void leave_crash_fence();
void reach_sync_point(std::string_view name);
}  // namespace internal

// Holds crash points off while it lives (WEIR_CRASH_FENCE): an armed crash
// point reached on another thread waits until no fence is open (60 s at
// most) before it kills, and no fence opens once a kill is pending. For a
// stretch whose interruption the test cannot observe faithfully, such as a
// Kafka transaction: the test broker shows records of aborted transactions
// to read_committed consumers.
class CrashFence {
 public:
  CrashFence() { internal::enter_crash_fence(); }
  ~CrashFence() { internal::leave_crash_fence(); }
  CrashFence(const CrashFence&) = delete;
  CrashFence& operator=(const CrashFence&) = delete;
};

// The registry of sync points (one per process).
class SyncPoints {
 public:
  // Each pair (a, b): a thread reaching b waits until a has been passed.
  static void load_dependencies(std::vector<std::pair<std::string, std::string>> before);
  // Runs `fn` on the thread that reaches `name`, each time.
  static void set_callback(const std::string& name, std::function<void()> fn);
  static void enable();
  // Disables processing, forgets dependencies, callbacks and passed points.
  static void reset();
};

}  // namespace weir

#if WEIR_TEST_POINTS
#define WEIR_CRASH_POINT(p) ::weir::internal::reach_crash_point(p)
#define WEIR_SYNC_POINT(name)                                                          \
  do {                                                                                 \
    if (::weir::internal::sync_points_enabled()) ::weir::internal::reach_sync_point(name); \
  } while (0)
#define WEIR_CRASH_FENCE(var) ::weir::CrashFence var
#else
#define WEIR_CRASH_FENCE(var) \
  do {                        \
  } while (0)
#define WEIR_CRASH_POINT(p) \
  do {                      \
  } while (0)
#define WEIR_SYNC_POINT(name) \
  do {                        \
  } while (0)
#endif

#endif  // WEIR_COMMON_TEST_POINTS_H_
