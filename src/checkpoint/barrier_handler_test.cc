#include "checkpoint/barrier_handler.h"

#include <gtest/gtest.h>

namespace weir::checkpoint {
namespace {

TEST(BarrierAlignerTest, BlocksEachChannelUntilAllDeliveredTheBarrier) {
  BarrierAligner a(3);
  auto d = a.on_barrier(1, 5);
  EXPECT_FALSE(d.trigger);
  EXPECT_EQ(a.state(), BarrierAligner::State::kAligning);
  EXPECT_TRUE(a.is_blocked(1));
  EXPECT_FALSE(a.is_blocked(0));
  d = a.on_barrier(0, 5);
  EXPECT_FALSE(d.trigger);
  EXPECT_TRUE(a.is_blocked(0));
  d = a.on_barrier(2, 5);
  EXPECT_TRUE(d.trigger);
  EXPECT_EQ(d.checkpoint_id, 5);
  EXPECT_EQ(a.state(), BarrierAligner::State::kIdle);
  for (int c = 0; c < 3; ++c) EXPECT_FALSE(a.is_blocked(c));
}

TEST(BarrierAlignerTest, SingleChannelTriggersAtOnce) {
  BarrierAligner a(1);
  EXPECT_TRUE(a.on_barrier(0, 1).trigger);
  EXPECT_FALSE(a.is_blocked(0));
}

TEST(BarrierAlignerTest, NewerBarrierAbandonsTheAlignmentInProgress) {
  BarrierAligner a(2);
  a.on_barrier(0, 1);
  auto d = a.on_barrier(1, 2);  // channel 1 skipped to checkpoint 2
  EXPECT_TRUE(d.abandoned);
  EXPECT_EQ(d.abandoned_id, 1);
  EXPECT_FALSE(d.trigger);
  EXPECT_TRUE(a.is_blocked(1));
  EXPECT_FALSE(a.is_blocked(0));
  EXPECT_FALSE(a.on_barrier(0, 1).trigger);  // the late barrier 1 is ignored
  EXPECT_TRUE(a.on_barrier(0, 2).trigger);
}

TEST(BarrierAlignerTest, AbortUnblocksAndLateBarriersAreIgnored) {
  BarrierAligner a(2);
  a.on_barrier(0, 3);
  a.on_abort(3);
  EXPECT_FALSE(a.is_blocked(0));
  EXPECT_EQ(a.state(), BarrierAligner::State::kIdle);
  EXPECT_FALSE(a.on_barrier(1, 3).trigger);
  EXPECT_FALSE(a.is_blocked(1));
  // The next checkpoint aligns normally.
  a.on_barrier(1, 4);
  EXPECT_TRUE(a.on_barrier(0, 4).trigger);
}

TEST(BarrierAlignerTest, AbortBeforeAnyBarrierSuppressesThatCheckpoint) {
  BarrierAligner a(2);
  a.on_abort(7);
  EXPECT_FALSE(a.on_barrier(0, 7).trigger);
  EXPECT_FALSE(a.on_barrier(1, 7).trigger);
  EXPECT_FALSE(a.is_blocked(0));
}

TEST(BarrierTrackerTest, NeverBlocksAndTriggersOnTheLastBarrier) {
  BarrierTracker t(3);
  EXPECT_FALSE(t.on_barrier(0, 1).trigger);
  EXPECT_FALSE(t.is_blocked(0));
  EXPECT_FALSE(t.on_barrier(2, 1).trigger);
  auto d = t.on_barrier(1, 1);
  EXPECT_TRUE(d.trigger);
  EXPECT_EQ(d.checkpoint_id, 1);
}

TEST(BarrierTrackerTest, OverlappingCheckpointsAndSubsumption) {
  BarrierTracker t(2);
  t.on_barrier(0, 1);
  t.on_barrier(0, 2);
  EXPECT_TRUE(t.on_barrier(1, 2).trigger);   // 2 complete first
  EXPECT_FALSE(t.on_barrier(1, 1).trigger);  // 1 is subsumed by 2
}

TEST(BarrierTrackerTest, AbortedCheckpointNeverTriggers) {
  BarrierTracker t(2);
  t.on_barrier(0, 1);
  t.on_abort(1);
  EXPECT_FALSE(t.on_barrier(1, 1).trigger);
  t.on_barrier(0, 2);
  EXPECT_TRUE(t.on_barrier(1, 2).trigger);
}

TEST(BarrierHandlerTest, ModeSelectsTheHandler) {
  EXPECT_NE(dynamic_cast<BarrierAligner*>(
                make_barrier_handler(CheckpointingMode::kExactlyOnce, 2).get()),
            nullptr);
  EXPECT_NE(dynamic_cast<BarrierTracker*>(
                make_barrier_handler(CheckpointingMode::kAtLeastOnce, 2).get()),
            nullptr);
}

}  // namespace
}  // namespace weir::checkpoint
