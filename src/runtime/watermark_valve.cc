#include "runtime/watermark_valve.h"

#include <algorithm>

namespace weir::runtime {

WatermarkValve::Change WatermarkValve::on_watermark(int ch, int64_t watermark) {
  Channel& c = channels_[ch];
  if (watermark <= c.watermark) return {};
  c.watermark = watermark;
  return recompute();
}

WatermarkValve::Change WatermarkValve::on_idle(int ch, bool idle) {
  Channel& c = channels_[ch];
  if (c.idle == idle) return {};
  c.idle = idle;
  return recompute();
}

WatermarkValve::Change WatermarkValve::on_end(int ch) {
  Channel& c = channels_[ch];
  if (c.ended) return {};
  c.ended = true;
  return recompute();
}

WatermarkValve::Change WatermarkValve::on_reset(int ch) {
  Channel& c = channels_[ch];
  c.ended = false;
  c.idle = false;
  return recompute();
}

WatermarkValve::Change WatermarkValve::recompute() {
  int64_t min = kMaxWatermark;
  bool any_active = false, any_live = false;
  for (const Channel& c : channels_) {
    if (c.ended) continue;
    any_live = true;
    if (c.idle) continue;
    any_active = true;
    min = std::min(min, c.watermark);
  }
  Change change;
  if (any_live && !any_active) {
    if (!idle_) change.idle = idle_ = true;
    return change;
  }
  if (idle_) change.idle = idle_ = false;
  if (min > watermark_) change.watermark = watermark_ = min;
  return change;
}

}  // namespace weir::runtime
