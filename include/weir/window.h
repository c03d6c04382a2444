// Windows: group a keyed stream's records by time (or count) and compute
// one result per key and window.
//
//   stream.key_by(key_of)
//         .window(TumblingEventTimeWindows::of(Duration(1000)))
//         .allowed_lateness(Duration(500))
//         .aggregate(count_and_sum);
//
// Assigners: tumbling, sliding and session windows in event time and
// processing time, and global windows fired by a count (count_window(n)).
// Functions: reduce and aggregate keep one accumulator per window;
// process sees all of a window's records; aggregate + process gives the
// process function the single aggregate.
//
// Event-time sliding windows whose size is a multiple of their slide,
// aggregated by an AggregateFunction with merge, keep one accumulator per
// slide instead
// (slicing, as Flink SQL's window aggregation does): a record updates one
// slice, and a window's result is its slices merged in time order when it
// fires. So merge must combine two accumulators as if the second one's
// records had been added after the first one's. Savepoints taken with
// per-window state (before slicing) restore unsliced.
//
// When a window fires: an event-time window fires once the watermark passes
// its end (its last millisecond, end - 1); a processing-time one when the
// clock does, and at the end of bounded input for those still open; a count
// window every n records (then it is emptied).
// Lateness: records for an event-time window that already fired are still
// added while the watermark is before end - 1 + allowed_lateness, and each
// such record fires the window again. Every firing emits the window's
// complete result so far (not a delta): a later firing for the same key and
// window supersedes the earlier one. Records later than that are dropped
// and counted, or sent to the late-data side output when one is set.
#ifndef WEIR_WINDOW_H_
#define WEIR_WINDOW_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "weir/config.h"
#include "weir/detail/operator.h"

namespace weir {

// [start, end) in milliseconds.
struct TimeWindow {
  int64_t start = 0;
  int64_t end = 0;

  int64_t max_timestamp() const { return end - 1; }
  bool intersects(const TimeWindow& o) const { return start <= o.end && end >= o.start; }
  TimeWindow cover(const TimeWindow& o) const {
    return {std::min(start, o.start), std::max(end, o.end)};
  }
  auto weir_fields() { return std::tie(start, end); }
  friend bool operator==(const TimeWindow&, const TimeWindow&) = default;
  friend auto operator<=>(const TimeWindow&, const TimeWindow&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const TimeWindow& w) {
    return H::combine(std::move(h), w.start, w.end);
  }
};

// How records map to windows. Immutable value type.
struct WindowAssigner {
  enum class Kind : uint8_t { kTumbling, kSliding, kSession, kGlobal };
  Kind kind = Kind::kTumbling;
  bool event_time = true;
  int64_t size = 0;    // tumbling, sliding
  int64_t slide = 0;   // sliding
  int64_t offset = 0;  // tumbling, sliding
  int64_t gap = 0;     // session
  int64_t count = 0;   // global: fire every `count` records

  bool is_merging() const { return kind == Kind::kSession; }
  // Event-time sliding windows that are unions of whole slides. (In
  // processing time a record can arrive in the millisecond of a window that
  // just fired; it then fires again with that record alone, which slices
  // cannot tell apart.)
  bool is_sliceable() const { return kind == Kind::kSliding && event_time && slide > 0 && size % slide == 0; }
  // The slide-long slice of a sliding window holding `ts`.
  TimeWindow slice_of(int64_t ts) const {
    int64_t start = window_start(ts, slide);
    return {start, start + slide};
  }

  // The windows a record at `ts` belongs to.
  std::vector<TimeWindow> assign(int64_t ts) const {
    switch (kind) {
      case Kind::kTumbling: {
        int64_t start = window_start(ts, size);
        return {{start, start + size}};
      }
      case Kind::kSliding: {
        std::vector<TimeWindow> out;
        int64_t last = window_start(ts, slide);
        for (int64_t start = last; start > ts - size; start -= slide) out.push_back({start, start + size});
        return out;
      }
      case Kind::kSession:
        return {{ts, ts + gap}};
      case Kind::kGlobal:
        return {{INT64_MIN, INT64_MAX}};
    }
    return {};
  }

  absl::Status validate() const {
    switch (kind) {
      case Kind::kTumbling:
        if (size <= 0) return absl::InvalidArgumentError("window size must be positive, got " + std::to_string(size) + " ms");
        break;
      case Kind::kSliding:
        if (size <= 0) return absl::InvalidArgumentError("window size must be positive, got " + std::to_string(size) + " ms");
        if (slide <= 0) return absl::InvalidArgumentError("window slide must be positive, got " + std::to_string(slide) + " ms");
        if (slide > size) {
          return absl::InvalidArgumentError("window slide " + std::to_string(slide) +
                                            " ms is larger than its size " + std::to_string(size) + " ms");
        }
        break;
      case Kind::kSession:
        if (gap <= 0) return absl::InvalidArgumentError("session gap must be positive, got " + std::to_string(gap) + " ms");
        break;
      case Kind::kGlobal:
        if (count <= 0) return absl::InvalidArgumentError("count window size must be positive");
        break;
    }
    return absl::OkStatus();
  }

 private:
  int64_t window_start(int64_t ts, int64_t step) const {
    int64_t r = (ts - offset) % step;
    if (r < 0) r += step;
    return ts - r;
  }
};

struct TumblingEventTimeWindows {
  static WindowAssigner of(Duration size, Duration offset = Duration(0)) {
    return {WindowAssigner::Kind::kTumbling, true, size.count(), 0, offset.count(), 0, 0};
  }
};
struct TumblingProcessingTimeWindows {
  static WindowAssigner of(Duration size, Duration offset = Duration(0)) {
    return {WindowAssigner::Kind::kTumbling, false, size.count(), 0, offset.count(), 0, 0};
  }
};
struct SlidingEventTimeWindows {
  static WindowAssigner of(Duration size, Duration slide, Duration offset = Duration(0)) {
    return {WindowAssigner::Kind::kSliding, true, size.count(), slide.count(), offset.count(), 0, 0};
  }
};
struct SlidingProcessingTimeWindows {
  static WindowAssigner of(Duration size, Duration slide, Duration offset = Duration(0)) {
    return {WindowAssigner::Kind::kSliding, false, size.count(), slide.count(), offset.count(), 0, 0};
  }
};
struct EventTimeSessionWindows {
  static WindowAssigner with_gap(Duration gap) {
    return {WindowAssigner::Kind::kSession, true, 0, 0, 0, gap.count(), 0};
  }
};
struct ProcessingTimeSessionWindows {
  static WindowAssigner with_gap(Duration gap) {
    return {WindowAssigner::Kind::kSession, false, 0, 0, 0, gap.count(), 0};
  }
};

// Incremental aggregation: one accumulator per key and window.
template <typename In, typename Acc, typename Out>
struct AggregateFunction {
  std::function<Acc()> create_accumulator;
  std::function<void(Acc&, const In&)> add;
  std::function<Out(const Acc&)> get_result;
  // Combines two accumulators (needed by session windows; with it, sliding
  // windows are sliced, see the top of this file).
  std::function<Acc(const Acc&, const Acc&)> merge;
};

// Sees all records of a window (or the single aggregate, when combined with
// an AggregateFunction). One instance per subtask.
template <typename K, typename In, typename Out>
class ProcessWindowFunction {
 public:
  struct Context {
    TimeWindow window;
    int64_t current_watermark;
    int64_t current_processing_time;
  };
  virtual ~ProcessWindowFunction() = default;
  virtual void process(const K& key, const Context& ctx, const std::vector<In>& elements,
                       Collector<Out>& out) = 0;
};

}  // namespace weir

#endif  // WEIR_WINDOW_H_
