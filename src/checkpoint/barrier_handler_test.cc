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

// A task attempt deployed when checkpoint 4 was next (--failover task:
// its channels outlived the attempt before it) meets barrier 3 of a
// checkpoint aborted before it started on one channel only: in no handler
// does that barrier block the channel or start anything, and checkpoint 4
// is taken as usual.
TEST(BarrierHandlerTest, BarriersOfCheckpointsEndedBeforeTheTaskStartedAreStale) {
  for (auto mode : {CheckpointingMode::kExactlyOnce, CheckpointingMode::kAtLeastOnce, CheckpointingMode::kAtMostOnce}) {
    for (bool unaligned : {false, true}) {
      SCOPED_TRACE(std::string(mode == CheckpointingMode::kAtLeastOnce ? "at-least-once" : "aligning") +
                   (unaligned ? ", unaligned" : ""));
      auto h = make_barrier_handler(mode, 2, unaligned, false);
      h->start_at(4);
      BarrierDecision d = h->on_barrier(0, 3, false, false);
      EXPECT_FALSE(d.trigger);
      EXPECT_FALSE(d.abandoned);
      EXPECT_FALSE(h->is_blocked(0));
      EXPECT_FALSE(h->is_aligning());
      EXPECT_FALSE(h->is_recording(1));
      d = h->on_barrier(0, 4, false, false);
      EXPECT_EQ(d.trigger, unaligned && mode == CheckpointingMode::kExactlyOnce);
      d = h->on_barrier(1, 4, false, false);
      EXPECT_EQ(d.trigger, !(unaligned && mode == CheckpointingMode::kExactlyOnce));
      if (d.trigger) {
        EXPECT_EQ(d.checkpoint_id, 4);
      }
      for (int c = 0; c < 2; ++c) EXPECT_FALSE(h->is_blocked(c));
    }
  }
}

TEST(BarrierHandlerTest, ModeSelectsTheHandler) {
  EXPECT_NE(dynamic_cast<BarrierAligner*>(
                make_barrier_handler(CheckpointingMode::kExactlyOnce, 2).get()),
            nullptr);
  EXPECT_NE(dynamic_cast<BarrierTracker*>(
                make_barrier_handler(CheckpointingMode::kAtLeastOnce, 2).get()),
            nullptr);
}

TEST(BarrierUnalignerTest, SnapshotsAtTheFirstBarrierAndRecordsTheOthersUntilTheirs) {
  BarrierUnaligner u(3);
  auto d = u.on_barrier(1, 5);
  EXPECT_TRUE(d.trigger);
  EXPECT_TRUE(d.records_channels);
  EXPECT_EQ(d.checkpoint_id, 5);
  EXPECT_FALSE(d.completed);
  for (int c = 0; c < 3; ++c) EXPECT_FALSE(u.is_blocked(c));
  EXPECT_FALSE(u.is_recording(1));
  EXPECT_TRUE(u.is_recording(0));
  EXPECT_TRUE(u.is_recording(2));
  d = u.on_barrier(0, 5);
  EXPECT_FALSE(d.trigger);
  EXPECT_FALSE(d.completed);
  EXPECT_FALSE(u.is_recording(0));
  d = u.on_barrier(2, 5);
  EXPECT_TRUE(d.completed);
  EXPECT_EQ(d.completed_id, 5);
  EXPECT_FALSE(u.is_recording(2));
  EXPECT_FALSE(u.on_barrier(1, 5).trigger) << "a repeated barrier starts nothing";
}

TEST(BarrierUnalignerTest, ANewerBarrierAbandonsTheCheckpointStillRecording) {
  BarrierUnaligner u(2);
  ASSERT_TRUE(u.on_barrier(0, 5).trigger);
  auto d = u.on_barrier(0, 6);
  EXPECT_TRUE(d.abandoned);
  EXPECT_EQ(d.abandoned_id, 5);
  EXPECT_TRUE(d.trigger);
  EXPECT_EQ(d.checkpoint_id, 6);
  EXPECT_FALSE(u.on_barrier(1, 5).completed) << "the abandoned checkpoint cannot complete";
  EXPECT_TRUE(u.on_barrier(1, 6).completed);
}

TEST(BarrierUnalignerTest, AbortStopsTheRecording) {
  BarrierUnaligner u(2);
  ASSERT_TRUE(u.on_barrier(0, 5).trigger);
  u.on_abort(5);
  EXPECT_FALSE(u.is_recording(1));
  EXPECT_FALSE(u.on_barrier(1, 5).completed);
  u.on_abort(8);  // its barriers are yet to come
  EXPECT_FALSE(u.on_barrier(0, 8).trigger);
  EXPECT_TRUE(u.on_barrier(0, 9).trigger);
}

// A barrier behind the end of its channel's data does not snapshot: the
// last checkpoint of a finite input is taken once the whole input ended.
TEST(BarrierUnalignerTest, ABarrierBehindTheEndOfItsDataWaitsForALiveChannel) {
  BarrierUnaligner u(3);
  u.on_end_of_data(0);
  u.on_end_of_data(1);
  EXPECT_FALSE(u.on_barrier(0, 5).trigger);
  EXPECT_FALSE(u.is_recording(2)) << "nothing is recorded before the snapshot";
  auto d = u.on_barrier(2, 5);  // a live channel's barrier: snapshot now
  EXPECT_TRUE(d.trigger);
  EXPECT_TRUE(u.is_recording(1));
  EXPECT_TRUE(u.on_barrier(1, 5).completed);
  u.on_end_of_data(2);
  EXPECT_FALSE(u.on_barrier(0, 6).trigger);
  EXPECT_FALSE(u.on_barrier(1, 6).trigger);
  d = u.on_barrier(2, 6);
  EXPECT_TRUE(d.trigger);
  EXPECT_TRUE(d.completed);
}

// With an aligned-checkpoint timeout: aligned first, blocking; the timeout
// (or a priority barrier from a producer that switched) makes it unaligned.
TEST(BarrierUnalignerTest, AlignedFirstSwitchesOnTimeoutOrAPriorityBarrier) {
  BarrierUnaligner u(3, /*aligned_first=*/true);
  auto d = u.on_barrier(0, 5);
  EXPECT_FALSE(d.trigger);
  EXPECT_TRUE(u.is_blocked(0));
  EXPECT_TRUE(u.is_aligning());
  EXPECT_EQ(u.aligning(), 5);
  d = u.on_timeout();
  EXPECT_TRUE(d.trigger);
  EXPECT_TRUE(d.records_channels);
  EXPECT_TRUE(d.unaligned);
  EXPECT_FALSE(u.is_blocked(0));
  EXPECT_FALSE(u.is_recording(0));
  EXPECT_TRUE(u.is_recording(1));
  EXPECT_FALSE(u.on_barrier(1, 5).completed);
  EXPECT_TRUE(u.on_barrier(2, 5).completed);
  EXPECT_FALSE(u.on_timeout().trigger) << "nothing is aligning";
  // All barriers before the timeout: an aligned checkpoint.
  u.on_barrier(0, 6);
  u.on_barrier(1, 6);
  d = u.on_barrier(2, 6);
  EXPECT_TRUE(d.trigger);
  EXPECT_FALSE(d.records_channels);
  EXPECT_FALSE(d.unaligned);
  EXPECT_TRUE(d.completed);
  // A priority barrier switches at once.
  u.on_barrier(0, 7);
  d = u.on_barrier(2, 7, /*savepoint=*/false, /*priority=*/true);
  EXPECT_TRUE(d.trigger);
  EXPECT_TRUE(d.unaligned);
  EXPECT_TRUE(u.is_recording(1));
  EXPECT_FALSE(u.is_blocked(0));
}

TEST(BarrierUnalignerTest, SavepointsAlign) {
  BarrierUnaligner u(2);
  auto d = u.on_barrier(0, 4, /*savepoint=*/true);
  EXPECT_FALSE(d.trigger);
  EXPECT_TRUE(u.is_blocked(0));
  EXPECT_FALSE(u.is_recording(1));
  d = u.on_barrier(1, 4, true);
  EXPECT_TRUE(d.trigger);
  EXPECT_FALSE(d.records_channels);
  EXPECT_FALSE(u.is_blocked(0));
  // A checkpoint barrier during a savepoint's alignment gives the savepoint up.
  ASSERT_FALSE(u.on_barrier(0, 7, true).trigger);
  d = u.on_barrier(1, 8);
  EXPECT_TRUE(d.abandoned);
  EXPECT_EQ(d.abandoned_id, 7);
  EXPECT_TRUE(d.trigger);
  EXPECT_FALSE(u.is_blocked(0));
}

// An iteration head: channels 0 and 1 are its input, 2 and 3 its feedback,
// whose barriers come back only after the head sent its own.
TEST(BarrierUnalignerTest, AnIterationHeadNeverWaitsForItsFeedback) {
  BarrierUnaligner u(4);
  u.set_feedback({false, false, true, true});
  auto d = u.on_barrier(1, 3);
  ASSERT_TRUE(d.trigger);
  EXPECT_TRUE(d.records_channels);
  for (int c : {0, 2, 3}) EXPECT_TRUE(u.is_recording(c)) << c;
  for (int c = 0; c < 4; ++c) EXPECT_FALSE(u.is_blocked(c));
  EXPECT_FALSE(u.on_barrier(0, 3).completed);
  EXPECT_FALSE(u.on_barrier(3, 3).completed);
  EXPECT_TRUE(u.is_recording(2));
  d = u.on_barrier(2, 3);
  EXPECT_TRUE(d.completed);
  EXPECT_EQ(d.completed_id, 3);

  // Once its input ended, a barrier behind the end of the input's data
  // snapshots when it came on every input channel, never waiting for the
  // feedback's (which is still running).
  u.on_end_of_data(0);
  u.on_end_of_data(1);
  EXPECT_FALSE(u.on_barrier(0, 4).trigger);
  d = u.on_barrier(1, 4);
  ASSERT_TRUE(d.trigger);
  EXPECT_TRUE(u.is_recording(2));
  EXPECT_TRUE(u.is_recording(3));

  // Savepoints too: aligned, the head would wait for itself.
  d = u.on_barrier(0, 5, /*savepoint=*/true);
  EXPECT_TRUE(d.abandoned);
  EXPECT_EQ(d.abandoned_id, 4);
  EXPECT_FALSE(d.trigger) << "a barrier behind the end of data waits for the other input";
  d = u.on_barrier(1, 5, true);
  EXPECT_TRUE(d.trigger);
  EXPECT_TRUE(d.records_channels);
  EXPECT_FALSE(u.is_blocked(0));
}

}  // namespace
}  // namespace weir::checkpoint
