#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <random>

#include "network/buffer_pool.h"
#include "network/channel.h"
#include "network/partition_writer.h"
#include "testing/seed.h"

namespace weir::network {
namespace {

using namespace std::chrono_literals;

TEST(BufferPoolTest, HandsOutAtMostTotalAndRecycles) {
  NetworkBufferPool pool(3, 64);
  std::atomic<bool> cancelled{false};
  {
    Buffer a = pool.request(cancelled), b = pool.request(cancelled), c = pool.request(cancelled);
    EXPECT_TRUE(a && b && c);
    EXPECT_EQ(pool.available(), 0);
    cancelled = true;
    EXPECT_FALSE(pool.request(cancelled));  // exhausted and cancelled: no wait
  }
  EXPECT_EQ(pool.available(), 3);
}

TEST(ChannelTest, ProducerBlocksWhenFullUntilConsumerTakes) {
  NetworkBufferPool pool(8, 64);
  std::atomic<bool> cancelled{false};
  LocalChannel ch(2);
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(ch.push({EventKind::kBuffer, pool.request(cancelled)}));
  auto blocked = std::async(std::launch::async, [&] {
    return ch.push({EventKind::kBuffer, pool.request(cancelled)});
  });
  // The third push cannot complete while two buffers are queued.
  EXPECT_EQ(blocked.wait_for(50ms), std::future_status::timeout);
  ASSERT_TRUE(ch.poll().has_value());
  ASSERT_EQ(blocked.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(blocked.get());
}

TEST(ChannelTest, CloseReleasesABlockedProducer) {
  NetworkBufferPool pool(8, 64);
  std::atomic<bool> cancelled{false};
  LocalChannel ch(1);
  ASSERT_TRUE(ch.push({EventKind::kBuffer, pool.request(cancelled)}));
  auto blocked = std::async(std::launch::async, [&] {
    return ch.push({EventKind::kBuffer, pool.request(cancelled)});
  });
  ch.close();
  ASSERT_EQ(blocked.wait_for(10s), std::future_status::ready);
  EXPECT_FALSE(blocked.get());
  EXPECT_EQ(pool.available(), 8);  // dropped buffers went back
}

TEST(ChannelTest, EventsKeepTheirOrderAndBarriersDoNotCountAgainstCapacity) {
  NetworkBufferPool pool(8, 64);
  std::atomic<bool> cancelled{false};
  LocalChannel ch(1);
  ASSERT_TRUE(ch.push({EventKind::kBuffer, pool.request(cancelled)}));
  ChannelEvent barrier;
  barrier.kind = EventKind::kBarrier;
  barrier.checkpoint_id = 4;
  ASSERT_TRUE(ch.push(std::move(barrier)));
  ASSERT_TRUE(ch.push({EventKind::kEndOfData, Buffer()}));
  EXPECT_EQ(ch.poll()->kind, EventKind::kBuffer);
  auto b = ch.poll();
  EXPECT_EQ(b->kind, EventKind::kBarrier);
  EXPECT_EQ(b->checkpoint_id, 4);
  EXPECT_EQ(ch.poll()->kind, EventKind::kEndOfData);
  EXPECT_FALSE(ch.poll().has_value());
}

// Records of random sizes, some larger than a buffer, written through a
// partition and read back through the deserializer.
TEST(RecordFramingTest, RecordsSpanningBuffersArriveWhole) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  NetworkBufferPool pool(64, 128);
  std::atomic<bool> cancelled{false};
  auto ch = std::make_shared<LocalChannel>(1000);
  ResultPartition out({ch}, &pool, &cancelled);
  std::vector<std::string> sent;
  for (int i = 0; i < 300; ++i) {
    size_t len = rng() % 4 == 0 ? rng() % 1000 : rng() % 40;
    std::string r(len, '\0');
    for (auto& c : r) c = static_cast<char>(rng());
    sent.push_back(r);
  }
  std::vector<std::string> got;
  RecordDeserializer in;
  auto drain = [&] {
    while (auto ev = ch->poll()) {
      ASSERT_EQ(ev->kind, EventKind::kBuffer);
      in.feed(ev->buffer.data(), ev->buffer.size(), [&](std::string_view r) {
        got.emplace_back(r);
        return true;
      });
    }
  };
  for (const auto& r : sent) {
    out.emit(0, r);
    drain();  // keep the pool from running dry
  }
  out.flush_all();
  drain();
  EXPECT_FALSE(in.has_partial());
  EXPECT_EQ(got, sent);
}

}  // namespace
}  // namespace weir::network
