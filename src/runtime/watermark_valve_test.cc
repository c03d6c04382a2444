#include "runtime/watermark_valve.h"

#include <gtest/gtest.h>

namespace weir::runtime {
namespace {

TEST(WatermarkValveTest, TheInputWatermarkIsTheLeastOfTheChannelsAndOnlyAdvances) {
  WatermarkValve v(2);
  // One channel alone holds nothing: the other has said nothing yet.
  EXPECT_FALSE(v.on_watermark(0, 100).watermark.has_value());
  EXPECT_EQ(v.on_watermark(1, 50).watermark, 50);
  EXPECT_EQ(v.on_watermark(1, 200).watermark, 100);
  // A channel going back changes nothing, nor does the same value again.
  EXPECT_FALSE(v.on_watermark(0, 90).watermark.has_value());
  EXPECT_FALSE(v.on_watermark(1, 200).watermark.has_value());
  EXPECT_EQ(v.watermark(), 100);
  EXPECT_FALSE(v.idle());
}

TEST(WatermarkValveTest, AnIdleChannelNoLongerHoldsEventTimeBack) {
  WatermarkValve v(2);
  v.on_watermark(0, 100);
  v.on_watermark(1, 10);
  ASSERT_EQ(v.watermark(), 10);
  WatermarkValve::Change c = v.on_idle(1, true);
  EXPECT_EQ(c.watermark, 100);
  EXPECT_FALSE(c.idle.has_value());  // the input is not idle: channel 0 is active
  // Active again, the channel's old watermark does not move time back.
  c = v.on_idle(1, false);
  EXPECT_FALSE(c.watermark.has_value());
  EXPECT_FALSE(c.idle.has_value());
  EXPECT_EQ(v.watermark(), 100);
  // It holds time back again from there: 150 on channel 0 waits for it.
  EXPECT_FALSE(v.on_watermark(0, 150).watermark.has_value());
  EXPECT_EQ(v.on_watermark(1, 120).watermark, 120);
}

TEST(WatermarkValveTest, TheInputIsIdleWhenEveryLiveChannelIsAndActiveAgainWithTheFirst) {
  WatermarkValve v(2);
  v.on_watermark(0, 5);
  v.on_watermark(1, 7);
  EXPECT_FALSE(v.on_idle(0, true).idle.has_value());
  WatermarkValve::Change c = v.on_idle(1, true);
  EXPECT_EQ(c.idle, true);
  EXPECT_FALSE(c.watermark.has_value());
  EXPECT_TRUE(v.idle());
  // The same news twice changes nothing.
  c = v.on_idle(1, true);
  EXPECT_FALSE(c.idle.has_value());
  // A channel with a newer watermark wakes the input, which then advances.
  v.on_watermark(0, 30);  // idle still: remembered, not told
  c = v.on_idle(0, false);
  EXPECT_EQ(c.idle, false);
  EXPECT_EQ(c.watermark, 30);
  EXPECT_FALSE(v.idle());
}

TEST(WatermarkValveTest, EndedChannelsDropOutAndTheLastEndIsTheEndOfTime) {
  WatermarkValve v(3);
  v.on_watermark(0, 10);
  v.on_watermark(1, 20);
  v.on_watermark(2, 30);
  EXPECT_EQ(v.on_end(0).watermark, 20);
  EXPECT_FALSE(v.on_end(0).watermark.has_value());  // ended once
  // The live channel left idle with an ended one beside it: idle input.
  v.on_idle(2, true);
  EXPECT_EQ(v.on_end(1).idle, true);
  // The last channel ends: nothing live, so not idle, and time runs out.
  WatermarkValve::Change c = v.on_end(2);
  EXPECT_EQ(c.idle, false);
  EXPECT_EQ(c.watermark, kMaxWatermark);
}

TEST(WatermarkValveTest, AResetChannelIsLiveAndActiveAgain) {
  WatermarkValve v(2);
  v.on_watermark(0, 10);
  v.on_watermark(1, 40);
  EXPECT_EQ(v.on_end(0).watermark, 40);
  v.on_idle(1, true);
  ASSERT_TRUE(v.idle());
  // Its producer restarted: channel 0 is back, not idle; its watermark (10)
  // is behind the input's, which stays.
  WatermarkValve::Change c = v.on_reset(0);
  EXPECT_EQ(c.idle, false);
  EXPECT_FALSE(c.watermark.has_value());
  EXPECT_EQ(v.watermark(), 40);
  EXPECT_FALSE(v.on_watermark(0, 35).watermark.has_value());
  EXPECT_EQ(v.on_watermark(0, 45).watermark, 45);
}

}  // namespace
}  // namespace weir::runtime
