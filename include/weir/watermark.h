// Event time at the sources: how records get their timestamps and how the
// watermark ("no record older than this will follow") is derived.
//
//   auto wm = WatermarkStrategy<Bid>::for_bounded_out_of_orderness(
//                 Duration(500), [](const Bid& b) { return b.date_time; })
//                 .with_idleness(Duration(5000));
//   env.from_source<Bid>(make_source, "bids", wm);
//
// Watermarks are generated per split inside a source (the source's watermark
// is the minimum over its active splits), checked every `interval`, and never
// move backwards. A split that delivers nothing for `idleness` stops holding
// the watermark back; when all are idle the source is marked idle downstream.
#ifndef WEIR_WATERMARK_H_
#define WEIR_WATERMARK_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "weir/config.h"
#include "weir/detail/operator.h"

namespace weir {

template <typename T>
struct WatermarkStrategy {
  // Event time of a record, in ms since the epoch. Required.
  std::function<int64_t(const T&)> timestamp_of;
  // How late a record may be relative to the newest seen. 0: monotonous.
  Duration max_out_of_orderness{0};
  // A split without records for this long stops holding the watermark back.
  // Default: never.
  std::optional<Duration> idleness;
  // How often the watermark is recomputed and emitted. 0: after every poll
  // of the source (deterministic for tests; costly). Default: 200 ms.
  Duration interval{200};
  // Records whose timestamp is outside [0, kMaxValidTimestamp] go to this
  // side output of the source (read it with get_side_output) and are
  // counted. Without one, such a record fails the source task with a message
  // that names its timestamp: it is never dropped silently.
  std::optional<OutputTag<T>> invalid_timestamps;

  // 9999-12-31T23:59:59.999Z.
  static constexpr int64_t kMaxValidTimestamp = 253402300799999;

  static WatermarkStrategy for_bounded_out_of_orderness(Duration bound,
                                                        std::function<int64_t(const T&)> ts) {
    return WatermarkStrategy{std::move(ts), bound, std::nullopt, Duration(200), std::nullopt};
  }
  static WatermarkStrategy for_monotonous_timestamps(std::function<int64_t(const T&)> ts) {
    return WatermarkStrategy{std::move(ts), Duration(0), std::nullopt, Duration(200), std::nullopt};
  }
  WatermarkStrategy& with_idleness(Duration timeout) {
    idleness = timeout;
    return *this;
  }
  WatermarkStrategy& with_interval(Duration every) {
    interval = every;
    return *this;
  }
  WatermarkStrategy& with_invalid_timestamps(OutputTag<T> tag) {
    invalid_timestamps = std::move(tag);
    return *this;
  }

  // Rejects what cannot work, with the reason.
  absl::Status validate() const {
    if (!timestamp_of) return absl::InvalidArgumentError("watermark strategy has no timestamp assigner");
    if (max_out_of_orderness.count() < 0) {
      return absl::InvalidArgumentError("watermark strategy: negative out-of-orderness bound " +
                                        std::to_string(max_out_of_orderness.count()) + " ms");
    }
    if (idleness && idleness->count() <= 0) {
      return absl::InvalidArgumentError("watermark strategy: idleness timeout must be positive");
    }
    if (interval.count() < 0) {
      return absl::InvalidArgumentError("watermark strategy: interval must not be negative");
    }
    return absl::OkStatus();
  }
};

}  // namespace weir

#endif  // WEIR_WATERMARK_H_
