#include "runtime/input_gate.h"

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace weir::runtime {
namespace {

network::ChannelEvent barrier(int64_t id) {
  network::ChannelEvent ev;
  ev.kind = network::EventKind::kBarrier;
  ev.checkpoint_id = id;
  return ev;
}

network::ChannelEvent watermark(int64_t ts) {
  network::ChannelEvent ev;
  ev.kind = network::EventKind::kWatermark;
  ev.timestamp_ms = ts;
  return ev;
}

// A gate over `n` local channels, opened with `mode`.
struct Gate {
  explicit Gate(int n, CheckpointingMode mode = CheckpointingMode::kExactlyOnce) {
    for (int i = 0; i < n; ++i) {
      channels.push_back(std::make_shared<network::LocalChannel>(4));
      InputGate::Channel c;
      c.reader = channels.back();
      gate.add(std::move(c));
    }
    gate.open(mode, &wakeup);
  }
  // The channels of the events poll() returns until it returns none.
  std::vector<int> drain() {
    std::vector<int> order;
    int ch = -1;
    while (gate.poll(&ch)) order.push_back(ch);
    return order;
  }

  Wakeup wakeup;
  std::vector<std::shared_ptr<network::LocalChannel>> channels;
  InputGate gate;
};

TEST(InputGateTest, ChannelsAreReadInTurn) {
  Gate g(3);
  for (int round = 0; round < 2; ++round) {
    for (auto& c : g.channels) ASSERT_TRUE(c->push(watermark(round)));
  }
  // Each poll starts after the channel that had the last event.
  EXPECT_EQ(g.drain(), (std::vector<int>{0, 1, 2, 0, 1, 2}));
}

TEST(InputGateTest, ExactlyOnceAlignmentHoldsBackAChannelPastItsBarrierUntilEveryBarrierCame) {
  Gate g(2);
  ASSERT_TRUE(g.channels[0]->push(barrier(7)));
  ASSERT_TRUE(g.channels[0]->push(watermark(1)));  // after the barrier: waits
  ASSERT_TRUE(g.channels[1]->push(watermark(2)));
  int ch = -1;
  ASSERT_TRUE(g.gate.poll(&ch).has_value());
  ASSERT_EQ(ch, 0);
  InputGate::Barrier first = g.gate.on_barrier(0, 7);
  EXPECT_FALSE(first.decision.trigger);
  // Channel 0 is blocked: only channel 1's events come.
  EXPECT_EQ(g.drain(), std::vector<int>{1});
  ASSERT_TRUE(g.channels[1]->push(barrier(7)));
  ASSERT_TRUE(g.gate.poll(&ch).has_value());
  ASSERT_EQ(ch, 1);
  InputGate::Barrier last = g.gate.on_barrier(1, 7);
  EXPECT_TRUE(last.decision.trigger);
  EXPECT_EQ(last.decision.checkpoint_id, 7);
  EXPECT_GE(last.alignment_ms, 0);
  // Aligned: channel 0's held event is read now.
  EXPECT_EQ(g.drain(), std::vector<int>{0});
}

TEST(InputGateTest, AnAbortedAlignmentReleasesItsChannels) {
  Gate g(2);
  ASSERT_TRUE(g.channels[0]->push(barrier(3)));
  ASSERT_TRUE(g.channels[0]->push(watermark(1)));
  int ch = -1;
  ASSERT_TRUE(g.gate.poll(&ch).has_value());
  g.gate.on_barrier(0, 3);
  EXPECT_TRUE(g.drain().empty());
  g.gate.on_abort(3);
  EXPECT_EQ(g.drain(), std::vector<int>{0});
}

TEST(InputGateTest, AtLeastOnceNeverBlocksAChannel) {
  Gate g(2, CheckpointingMode::kAtLeastOnce);
  ASSERT_TRUE(g.channels[0]->push(barrier(3)));
  ASSERT_TRUE(g.channels[0]->push(watermark(1)));
  int ch = -1;
  ASSERT_TRUE(g.gate.poll(&ch).has_value());
  EXPECT_FALSE(g.gate.on_barrier(0, 3).decision.trigger);
  EXPECT_EQ(g.drain(), std::vector<int>{0});
}

TEST(InputGateTest, TheLastChannelToEndEndsTheInputAndAReopenedOneCountsAgain) {
  Gate g(2);
  EXPECT_FALSE(g.gate.end(0));
  EXPECT_FALSE(g.gate.end(0));  // once
  EXPECT_TRUE(g.gate.end(1));
  EXPECT_TRUE(g.gate.all_ended());
  EXPECT_FALSE(g.gate.reopen(1));  // it had ended
  EXPECT_FALSE(g.gate.all_ended());
  EXPECT_TRUE(g.gate.reopen(1));  // live already
  EXPECT_TRUE(g.gate.end(1));
}

TEST(InputGateTest, ARemoteChannelThatClosedBeforeItsEndFailsTheTaskNamingTheProducer) {
  Wakeup wakeup;
  auto local = std::make_shared<network::LocalChannel>(4);
  InputGate gate;
  InputGate::Channel c;
  c.reader = local;
  c.remote = local;
  c.producer = "vertex 1 subtask 0";
  c.producer_location = "10.0.0.2:6121";
  gate.add(std::move(c));
  gate.open(CheckpointingMode::kAtLeastOnce, &wakeup);
  int ch = -1;
  EXPECT_FALSE(gate.poll(&ch).has_value());
  local->close();
  try {
    gate.poll(&ch);
    FAIL() << "a broken remote channel was not reported";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "the channel from vertex 1 subtask 0 closed: the connection to its TaskManager (10.0.0.2:6121) broke");
  }
  gate.close();
}

}  // namespace
}  // namespace weir::runtime
