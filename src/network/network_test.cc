#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <future>
#include <random>

#include "network/buffer_pool.h"
#include "network/channel.h"
#include "network/channel_registry.h"
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

// An event of `kind`, carrying `buffer` when it is a data buffer.
ChannelEvent event(EventKind kind, Buffer buffer = Buffer()) {
  ChannelEvent ev;
  ev.kind = kind;
  ev.buffer = std::move(buffer);
  return ev;
}

TEST(ChannelTest, ProducerBlocksWhenFullUntilConsumerTakes) {
  NetworkBufferPool pool(8, 64);
  std::atomic<bool> cancelled{false};
  LocalChannel ch(2);
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(ch.push(event(EventKind::kBuffer, pool.request(cancelled))));
  auto blocked = std::async(std::launch::async, [&] {
    return ch.push(event(EventKind::kBuffer, pool.request(cancelled)));
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
  ASSERT_TRUE(ch.push(event(EventKind::kBuffer, pool.request(cancelled))));
  auto blocked = std::async(std::launch::async, [&] {
    return ch.push(event(EventKind::kBuffer, pool.request(cancelled)));
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
  ASSERT_TRUE(ch.push(event(EventKind::kBuffer, pool.request(cancelled))));
  ChannelEvent barrier;
  barrier.kind = EventKind::kBarrier;
  barrier.checkpoint_id = 4;
  ASSERT_TRUE(ch.push(std::move(barrier)));
  ASSERT_TRUE(ch.push(event(EventKind::kEndOfData)));
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
      in.feed(ev->buffer, [&](std::string_view r) {
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


// --failover task: a consumer joins a channel mid-stream (its last attempt
// left it) and a producer's new attempt starts over. Records of random
// sizes, many spanning buffers: whatever is cut, each record either arrives
// whole or is counted as dropped, exactly once.
TEST(RecordFramingTest, AConsumerJoiningMidStreamSkipsToAWholeRecordAndCountsWhatItLost) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  NetworkBufferPool pool(64, 64);
  std::atomic<bool> cancelled{false};
  auto ch = std::make_shared<LocalChannel>(1000);
  ResultPartition out({ch}, &pool, &cancelled);
  // Record i: 4 bytes of i, then filler.
  auto record = [&](uint32_t i) {
    std::string r(4 + (rng() % 3 == 0 ? rng() % 200 : rng() % 20), 'x');
    std::memcpy(r.data(), &i, 4);
    return r;
  };
  constexpr uint32_t kRecords = 2000;
  std::vector<bool> received(kRecords, false);
  int64_t dropped = 0;
  auto consumer = std::make_unique<RecordDeserializer>();
  auto take = [&](Buffer& b) {
    consumer->feed(b, [&](std::string_view r) {
      uint32_t i;
      EXPECT_GE(r.size(), 4u);
      std::memcpy(&i, r.data(), 4);
      EXPECT_LT(i, kRecords);
      EXPECT_FALSE(received[i]) << "record " << i << " twice";
      received[i] = true;
      return true;
    });
  };
  for (uint32_t i = 0; i < kRecords; ++i) {
    out.emit(0, record(i));
    if (rng() % 50 == 0) {
      // The consumer's attempt ends: what it held of a record and what is
      // queued are dropped; the next attempt reads on from here.
      if (consumer->has_partial()) ++dropped;
      dropped += ch->detach();
      consumer = std::make_unique<RecordDeserializer>();
      continue;
    }
    while (auto ev = ch->poll()) {
      ASSERT_EQ(ev->kind, EventKind::kBuffer);
      if (rng() % 4 == 0) {  // lost in a failing consumer's hands
        dropped += count_record_starts(ev->buffer);
        if (consumer->has_partial()) ++dropped;
        consumer = std::make_unique<RecordDeserializer>();
        continue;
      }
      take(ev->buffer);
    }
  }
  out.flush_all();
  while (auto ev = ch->poll()) take(ev->buffer);
  EXPECT_FALSE(consumer->has_partial());
  int64_t arrived = 0;
  for (bool r : received) arrived += r ? 1 : 0;
  EXPECT_GT(arrived, 0);
  EXPECT_GT(dropped, 0);
  EXPECT_EQ(arrived + dropped, kRecords) << "arrived " << arrived << ", counted dropped " << dropped;
}

TEST(ChannelTest, AbortReleasesABlockedProducerAndTheChannelStaysOpen) {
  NetworkBufferPool pool(8, 64);
  std::atomic<bool> cancelled{false}, abort{false};
  LocalChannel ch(1);
  Buffer one = pool.request(cancelled);  // one framed record of 3 bytes
  const char framed[] = {3, 'a', 'b', 'c'};
  std::memcpy(one.data(), framed, sizeof(framed));
  one.set_size(4);
  ASSERT_TRUE(ch.push(event(EventKind::kBuffer, std::move(one))));
  auto blocked = std::async(std::launch::async, [&] {
    return ch.push(event(EventKind::kBuffer, pool.request(cancelled)), nullptr, &abort);
  });
  EXPECT_EQ(blocked.wait_for(50ms), std::future_status::timeout);
  abort = true;
  ch.wake_producer();
  ASSERT_EQ(blocked.wait_for(10s), std::future_status::ready);
  EXPECT_FALSE(blocked.get());
  EXPECT_FALSE(ch.closed());
  EXPECT_EQ(ch.detach(), 1);  // the queued record
  ASSERT_TRUE(ch.push(event(EventKind::kBuffer, pool.request(cancelled))));  // the next attempt writes on
}

// A data buffer holding `text`.
ChannelEvent text_buffer(NetworkBufferPool& pool, const std::atomic<bool>& cancelled, std::string_view text) {
  ChannelEvent ev;
  ev.kind = EventKind::kBuffer;
  ev.buffer = pool.request(cancelled);
  std::memcpy(ev.buffer.data(), text.data(), text.size());
  ev.buffer.set_size(text.size());
  return ev;
}

// A priority barrier goes ahead of the data buffers, watermarks and end of
// data queued before it, taking a copy of the data; never ahead of an
// earlier barrier, nor the final checkpoint's ahead of the end of data. The
// consumer's counter knows it waits.
TEST(ChannelTest, APriorityBarrierOvertakesQueuedDataButNotEarlierBarriersNorFinalOnesTheEnd) {
  NetworkBufferPool pool(8, 64);
  std::atomic<bool> cancelled{false};
  auto buffer = [&](std::string_view text) { return text_buffer(pool, cancelled, text); };
  auto barrier = [](int64_t id, bool priority) {
    ChannelEvent ev;
    ev.kind = EventKind::kBarrier;
    ev.checkpoint_id = id;
    ev.priority = priority;
    return ev;
  };
  LocalChannel ch(4);
  std::atomic<int> waiting{0};
  ch.set_priority_counter(&waiting);
  ASSERT_TRUE(ch.push(buffer("ab")));
  ASSERT_TRUE(ch.push(barrier(1, false)));
  ASSERT_TRUE(ch.push(buffer("cd")));
  ChannelEvent wm;
  wm.kind = EventKind::kWatermark;
  ASSERT_TRUE(ch.push(std::move(wm)));
  ASSERT_TRUE(ch.push(buffer("ef")));
  ASSERT_FALSE(ch.poll_priority().has_value()) << "not at the head yet";
  ChannelEvent p = barrier(2, true);
  append_overtaken(&p, "gh");  // what the producer had not sent yet
  ASSERT_TRUE(ch.push(std::move(p)));
  EXPECT_EQ(waiting.load(), 1);
  EXPECT_EQ(ch.queued_buffers(), 3);
  // ab, barrier 1, then the priority barrier with cd and ef (and gh).
  auto e = ch.poll();
  ASSERT_EQ(e->kind, EventKind::kBuffer);
  EXPECT_EQ(std::string_view(e->buffer.data(), e->buffer.size()), "ab");
  EXPECT_EQ(ch.poll()->checkpoint_id, 1);
  auto pb = ch.poll_priority();
  ASSERT_TRUE(pb.has_value());
  EXPECT_EQ(pb->checkpoint_id, 2);
  ASSERT_NE(pb->overtaken, nullptr);
  EXPECT_EQ(*pb->overtaken, "cdefgh");
  EXPECT_EQ(waiting.load(), 0);
  EXPECT_EQ(ch.poll()->buffer.size(), 2u);
  EXPECT_EQ(ch.poll()->kind, EventKind::kWatermark);
  EXPECT_EQ(ch.poll()->buffer.size(), 2u);
  // It overtakes an end of data too; the final checkpoint's stays behind,
  // carrying nothing.
  ASSERT_TRUE(ch.push(buffer("ij")));
  ChannelEvent end;
  end.kind = EventKind::kEndOfData;
  ASSERT_TRUE(ch.push(std::move(end)));
  ASSERT_TRUE(ch.push(barrier(3, true)));
  ChannelEvent final_barrier = barrier(4, true);
  final_barrier.final = true;
  ASSERT_TRUE(ch.push(std::move(final_barrier)));
  auto third = ch.poll();
  EXPECT_EQ(third->checkpoint_id, 3);
  ASSERT_NE(third->overtaken, nullptr);
  EXPECT_EQ(*third->overtaken, "ij");
  EXPECT_EQ(ch.poll()->kind, EventKind::kBuffer);
  EXPECT_EQ(ch.poll()->kind, EventKind::kEndOfData);
  auto last = ch.poll();
  EXPECT_EQ(last->checkpoint_id, 4);
  EXPECT_EQ(last->overtaken, nullptr);
  // Dropped with the channel, it is no longer counted.
  ASSERT_TRUE(ch.push(barrier(5, true)));
  EXPECT_EQ(waiting.load(), 1);
  ch.close();
  EXPECT_EQ(waiting.load(), 0);
}

// An aligned barrier whose timeout passed becomes a priority event where it
// waits, overtaking the data in front of it with a copy; a buffer pushed
// without waiting may exceed the capacity.
TEST(ChannelTest, APromotedBarrierOvertakesWhatIsInFrontOfIt) {
  NetworkBufferPool pool(8, 64);
  std::atomic<bool> cancelled{false};
  auto buffer = [&](std::string_view text) { return text_buffer(pool, cancelled, text); };
  LocalChannel ch(2);
  ASSERT_TRUE(ch.push(buffer("ab")));
  ASSERT_TRUE(ch.push_now(buffer("cd")));
  ASSERT_TRUE(ch.push_now(buffer("ef")));
  EXPECT_EQ(ch.queued_buffers(), 3) << "push_now does not wait for room";
  EXPECT_FALSE(ch.has_space());
  ChannelEvent b;
  b.kind = EventKind::kBarrier;
  b.checkpoint_id = 9;
  ASSERT_TRUE(ch.push_now(std::move(b)));
  ASSERT_TRUE(ch.push_now(buffer("gh")));
  ch.promote_barrier(8);  // not queued: nothing happens
  EXPECT_FALSE(ch.poll_priority().has_value());
  ch.promote_barrier(9);
  auto p = ch.poll_priority();
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->checkpoint_id, 9);
  EXPECT_TRUE(p->priority);
  ASSERT_NE(p->overtaken, nullptr);
  EXPECT_EQ(*p->overtaken, "abcdef");
  for (std::string_view want : {"ab", "cd", "ef", "gh"}) {
    auto e = ch.poll();
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(std::string_view(e->buffer.data(), e->buffer.size()), want);
  }
}

// Buffer debloating: a consumer that asks for small buffers gets buffers of
// that size, from the same fixed pool (partly filled), with every record
// whole; asking for 0 brings full buffers back.
TEST(RecordFramingTest, ADebloatedChannelGetsBuffersOfTheSizeItAskedFor) {
  NetworkBufferPool pool(16, 1024);
  std::atomic<bool> cancelled{false};
  auto ch = std::make_shared<LocalChannel>(1000);
  ResultPartition out({ch}, &pool, &cancelled);
  ch->set_target_buffer_size(100);
  std::vector<size_t> sizes;
  int records = 0;
  RecordDeserializer in;
  auto drain = [&] {
    while (auto ev = ch->poll()) {
      sizes.push_back(ev->buffer.size());
      ASSERT_EQ(ev->buffer.capacity(), 1024u) << "buffers still come from the pool";
      in.feed(ev->buffer, [&](std::string_view r) {
        EXPECT_EQ(r, std::string(30, 'x'));
        ++records;
        return true;
      });
    }
  };
  for (int i = 0; i < 40; ++i) {
    out.emit(0, std::string(30, 'x'));
    drain();
  }
  ASSERT_FALSE(sizes.empty());
  for (size_t s : sizes) EXPECT_EQ(s, 100u);
  // Full buffers again.
  ch->set_target_buffer_size(0);
  out.flush_all();
  drain();
  sizes.clear();
  for (int i = 0; i < 100; ++i) out.emit(0, std::string(30, 'x'));
  drain();
  ASSERT_FALSE(sizes.empty());
  EXPECT_EQ(sizes.front(), 1024u);
  out.flush_all();
  drain();
  EXPECT_EQ(records, 140);
  EXPECT_FALSE(in.has_partial());
  EXPECT_EQ(pool.available(), 16) << "every buffer back in the pool";
}

// The deserializer stops after the record whose callback asked it to, and
// goes on from there.
TEST(RecordFramingTest, AYieldStopsAfterTheRecordAndTheRestFeedsOn) {
  std::string bytes;
  for (std::string_view r : {"one", "two", "three"}) {
    bytes.push_back(static_cast<char>(r.size()));
    bytes.append(r);
  }
  RecordDeserializer d;
  std::vector<std::string> seen;
  auto take = [&](std::string_view r) {
    seen.emplace_back(r);
    if (r == "two") d.yield();
    return true;
  };
  ASSERT_TRUE(d.feed(bytes.data(), bytes.size(), take));
  ASSERT_TRUE(d.yielded());
  EXPECT_EQ(seen, (std::vector<std::string>{"one", "two"}));
  const size_t at = d.next_record();
  EXPECT_EQ(at, 8u);
  ASSERT_TRUE(d.feed(bytes.data() + at, bytes.size() - at, take));
  EXPECT_FALSE(d.yielded());
  EXPECT_EQ(seen.back(), "three");
  EXPECT_FALSE(d.has_partial());
}

// A registry hands out one channel per key; released attempts come back
// closed; with reopen_closed (task failover on a cluster) a channel closed
// by a broken connection is replaced by a fresh one, unless released.
TEST(ChannelRegistryTest, ClosedChannelsReopenOnlyWhenAskedAndNeverWhenReleased) {
  ChannelRegistry registry(4);
  const ChannelKey k{"job", 0, 1, 0, 0};
  auto a = registry.get(k);
  EXPECT_EQ(registry.get(k), a);
  a->close();
  EXPECT_EQ(registry.get(k), a) << "replaced without reopen_closed";
  registry.set_reopen_closed(true);
  auto b = registry.get(k);
  EXPECT_NE(b, a);
  EXPECT_FALSE(b->closed());
  EXPECT_EQ(registry.get(k), b);
  registry.release("job", 0);
  EXPECT_TRUE(b->closed());
  EXPECT_TRUE(registry.get(k)->closed()) << "a released attempt's channel came back open";
}

}  // namespace
}  // namespace weir::network
