// The event time of a task's input, from what its channels say (Flink's
// StatusWatermarkValve): the least watermark of the channels that have
// neither ended nor gone idle. Ended channels no longer hold event time
// back; idle ones neither, unless every live channel is idle, which makes
// the input idle. The watermark only advances.
#ifndef WEIR_RUNTIME_WATERMARK_VALVE_H_
#define WEIR_RUNTIME_WATERMARK_VALVE_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "weir/detail/operator.h"  // kMinWatermark

namespace weir::runtime {

class WatermarkValve {
 public:
  // What the input's consumer is told after a channel's news: whether the
  // input went idle or active again, and its new watermark.
  struct Change {
    std::optional<bool> idle;
    std::optional<int64_t> watermark;
  };

  explicit WatermarkValve(int channels) : channels_(static_cast<size_t>(channels)) {}

  // Channel `ch`'s watermark (one not above what it said before changes
  // nothing).
  Change on_watermark(int ch, int64_t watermark);
  Change on_idle(int ch, bool idle);
  Change on_end(int ch);
  // The channel's producer started over: live and active again, its
  // watermark kept.
  Change on_reset(int ch);

  int64_t watermark() const { return watermark_; }
  bool idle() const { return idle_; }

 private:
  struct Channel {
    int64_t watermark = kMinWatermark;
    bool idle = false;
    bool ended = false;
  };
  Change recompute();

  std::vector<Channel> channels_;
  int64_t watermark_ = kMinWatermark;
  bool idle_ = false;
};

}  // namespace weir::runtime

#endif  // WEIR_RUNTIME_WATERMARK_VALVE_H_
