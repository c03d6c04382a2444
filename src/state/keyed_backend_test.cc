// Keyed state on both backends: the BackendTest tests run on heap and on
// RocksDB tables (scoping to the current key, in-place updates, snapshots
// and their isolation from later writes, restore of a subtask's key groups,
// type and kind checks), and snapshots of one backend restore into the
// other. TTL is tested in state_ttl_test.cc, the RocksDB entry cache in
// kv_cache_test.cc.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "testing/keyed_state_harness.h"

namespace weir::detail {
namespace {

TEST_P(BackendTest, StatesAreScopedToTheCurrentKey) {
  Harness h(kAll, kind());
  auto& value = h.ctx().get_state(ValueStateDescriptor<int64_t>{"v"});
  auto& list = h.ctx().get_list_state(ListStateDescriptor<std::string>{"l"});
  auto& map = h.ctx().get_map_state(MapStateDescriptor<std::string, int>{"m"});
  auto& reducing = h.ctx().get_reducing_state(
      ReducingStateDescriptor<int64_t>{"r", [](const int64_t& a, const int64_t& b) { return a + b; }});
  h.set_key("a");
  value.update(1);
  list.add("x");
  map.put("k", 1);
  reducing.add(5);
  reducing.add(6);
  h.set_key("b");
  EXPECT_FALSE(value.value().has_value());
  EXPECT_TRUE(list.get().empty());
  EXPECT_TRUE(map.is_empty());
  EXPECT_FALSE(reducing.get().has_value());
  value.update(2);
  h.set_key("a");
  EXPECT_EQ(value.value(), 1);
  EXPECT_EQ(list.get(), std::vector<std::string>{"x"});
  EXPECT_EQ(map.get("k"), 1);
  EXPECT_EQ(reducing.get(), 11);
  map.remove("k");
  EXPECT_TRUE(map.is_empty());
  value.clear();
  EXPECT_FALSE(value.value().has_value());
  EXPECT_TRUE(h.ctx().status().ok());
}

TEST_P(BackendTest, ValueStateModifyInPlaceIsAnUpdate) {
  Harness h(kAll, kind());
  auto& v = h.ctx().get_state(ValueStateDescriptor<std::vector<std::string>>{"v"});
  // Enough keys that a RocksDB table's entries come and go between uses.
  for (int i = 0; i < 2000; ++i) {
    h.set_key("k" + std::to_string(i));
    ASSERT_EQ(v.peek(), nullptr);
    std::vector<std::string>& in_place = v.modify();
    ASSERT_TRUE(in_place.empty());
    in_place.push_back("a" + std::to_string(i));
  }
  for (int i = 0; i < 2000; i += 2) {
    h.set_key("k" + std::to_string(i));
    v.modify().push_back("b");
  }
  auto snap = h.backend().core().snapshot().value();
  h.set_key("k0");
  v.modify().push_back("after the snapshot");
  ASSERT_NE(v.peek(), nullptr);
  EXPECT_EQ(v.peek()->size(), 3u);
  auto groups = Harness::write(*snap);
  for (StateBackendKind into : {kind(), other()}) {
    Harness restored(kAll, into);
    restored.restore(groups);
    auto& rv = restored.ctx().get_state(ValueStateDescriptor<std::vector<std::string>>{"v"});
    for (int i = 0; i < 2000; ++i) {
      restored.set_key("k" + std::to_string(i));
      std::vector<std::string> want = {"a" + std::to_string(i)};
      if (i % 2 == 0) want.push_back("b");
      ASSERT_EQ(rv.value(), want) << "key k" << i;
    }
  }
}

TEST_P(BackendTest, TtlValueModifyIsAWriteAndStartsFreshWhenExpired) {
  Harness h(kAll, kind());
  auto& v = h.ctx().get_state(ValueStateDescriptor<int64_t>{"v"}.with_ttl(ttl_of(100)));
  h.set_key("a");
  h.clock().now = 1000;
  v.modify() = 5;
  h.clock().now = 1099;
  ASSERT_NE(v.peek(), nullptr);
  EXPECT_EQ(*v.peek(), 5);
  v.modify() += 1;  // stamped 1099
  h.clock().now = 1198;
  ASSERT_NE(v.peek(), nullptr);
  EXPECT_EQ(*v.peek(), 6);
  h.clock().now = 1199;
  EXPECT_EQ(v.peek(), nullptr);
  EXPECT_EQ(v.modify(), 0);  // expired: a fresh value, not 6
}

TEST_P(BackendTest, SnapshotIsUnaffectedByLaterWrites) {
  Harness h(kAll, kind());
  auto& value = h.ctx().get_state(ValueStateDescriptor<int64_t>{"v"});
  for (int i = 0; i < 1000; ++i) {
    h.set_key("k" + std::to_string(i));
    value.update(i);
  }
  auto snap = h.backend().core().snapshot().value();
  // The task keeps writing while the snapshot is (not yet) written out.
  for (int i = 0; i < 1000; ++i) {
    h.set_key("k" + std::to_string(i));
    value.update(-1);
  }
  h.set_key("new");
  value.update(7);
  auto groups = Harness::write(*snap);

  Harness restored(kAll, kind());
  restored.restore(groups);
  auto& rv = restored.ctx().get_state(ValueStateDescriptor<int64_t>{"v"});
  for (int i = 0; i < 1000; ++i) {
    restored.set_key("k" + std::to_string(i));
    ASSERT_EQ(rv.value(), i);
  }
  restored.set_key("new");
  EXPECT_FALSE(rv.value().has_value());
}

// The asynchronous part as it runs: the snapshot is written on another
// thread while the task keeps updating every key (before and after the
// writer lets go of a key group). The snapshot holds the values of its
// moment, the live state the newest ones. Under `make tsan` this is also
// the check that releasing written groups is free of races.
TEST_P(BackendTest, SnapshotWrittenOnAnotherThreadWhileTheTaskWritesIsExact) {
  Harness h(kAll, kind());
  auto& value = h.ctx().get_state(ValueStateDescriptor<int64_t>{"v"});
  constexpr int kKeys = 2000;
  int64_t current = 0;  // key i holds current + i
  auto write_all = [&](int64_t base) {
    for (int i = 0; i < kKeys; ++i) {
      h.set_key("k" + std::to_string(i));
      value.update(base + i);
    }
    current = base;
  };
  write_all(0);
  for (int round = 1; round <= 5; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const int64_t at_snapshot = current;
    auto snap = h.backend().core().snapshot().value();
    std::atomic<bool> written{false};
    std::map<int, std::string> groups;
    std::thread writer([&] {
      groups = Harness::write(*snap);
      written = true;
    });
    // Keep writing until the writer is done, then once more.
    do {
      write_all(current + kKeys);
    } while (!written.load());
    writer.join();
    write_all(current + kKeys);
    snap.reset();

    Harness restored(kAll, kind());
    restored.restore(groups);
    auto& rv = restored.ctx().get_state(ValueStateDescriptor<int64_t>{"v"});
    for (int i = 0; i < kKeys; ++i) {
      restored.set_key("k" + std::to_string(i));
      ASSERT_EQ(rv.value(), at_snapshot + i);
      h.set_key("k" + std::to_string(i));
      ASSERT_EQ(value.value(), current + i);
    }
  }
}

TEST_P(BackendTest, RestoreTakesOnlyTheSubtasksKeyGroups) {
  Harness h(kAll, kind());
  auto& value = h.ctx().get_state(ValueStateDescriptor<int64_t>{"v"});
  for (int i = 0; i < 200; ++i) {
    h.set_key("k" + std::to_string(i));
    value.update(i);
  }
  auto groups = Harness::write(*h.backend().core().snapshot().value());
  KeyGroupRange half = key_group_range_for_operator(kMaxP, 2, 1);
  Harness part(half, other());
  part.restore(groups);
  auto& pv = part.ctx().get_state(ValueStateDescriptor<int64_t>{"v"});
  size_t n = 0;
  for (int i = 0; i < 200; ++i) {
    std::string k = "k" + std::to_string(i);
    if (!half.contains(key_group_of(k, kMaxP))) continue;
    part.set_key(k);
    EXPECT_EQ(pv.value(), i);
    ++n;
  }
  EXPECT_GT(n, 50u);
}

TEST_P(BackendTest, UnregisteredRestoredStateSurvivesTheNextSnapshot) {
  Harness h(kAll, kind());
  auto& value = h.ctx().get_state(ValueStateDescriptor<int64_t>{"v"});
  h.set_key("a");
  value.update(9);
  auto groups = Harness::write(*h.backend().core().snapshot().value());

  Harness middle(kAll, other());  // restores, never registers "v", snapshots again
  middle.restore(groups);
  auto again = Harness::write(*middle.backend().core().snapshot().value());

  Harness last(kAll, kind());
  last.restore(again);
  auto& v = last.ctx().get_state(ValueStateDescriptor<int64_t>{"v"});
  last.set_key("a");
  EXPECT_EQ(v.value(), 9);
}

TEST_P(BackendTest, SameNameWithAnotherKindIsAnError) {
  Harness h(kAll, kind());
  h.ctx().get_state(ValueStateDescriptor<int64_t>{"s"});
  h.ctx().get_list_state(ListStateDescriptor<int64_t>{"s"});
  EXPECT_FALSE(h.ctx().status().ok());
  EXPECT_NE(h.ctx().status().message().find("'s'"), std::string::npos);
}

// A restore refuses a state declared with another type than it was
// checkpointed with, naming it, even where the old bytes would decode.
TEST_P(BackendTest, ChangedStateTypeIsRefusedNamingTheState) {
  Harness h(kAll, kind());
  auto& value = h.ctx().get_state(ValueStateDescriptor<int64_t>{"total"});
  h.set_key("a");
  value.update(42);
  auto groups = Harness::write(*h.backend().core().snapshot().value());
  for (StateBackendKind target : {kind(), other()}) {
    {
      Harness r(kAll, target);
      r.restore(groups);
      r.ctx().get_state(ValueStateDescriptor<double>{"total"});  // 8 bytes, as i64
      ASSERT_FALSE(r.ctx().status().ok());
      EXPECT_NE(r.ctx().status().message().find("state 'total' changed type"), std::string::npos)
          << r.ctx().status();
      EXPECT_NE(r.ctx().status().message().find("i64"), std::string::npos) << r.ctx().status();
    }
    {
      Harness r(kAll, target);  // turning on TTL changes the stored type
      r.restore(groups);
      r.ctx().get_state(ValueStateDescriptor<int64_t>{"total"}.with_ttl(ttl_of(1000)));
      EXPECT_FALSE(r.ctx().status().ok());
    }
    {
      Harness r(kAll, target);  // the same declaration restores
      r.restore(groups);
      auto& v = r.ctx().get_state(ValueStateDescriptor<int64_t>{"total"});
      ASSERT_TRUE(r.ctx().status().ok()) << r.ctx().status();
      r.set_key("a");
      EXPECT_EQ(v.value(), 42);
    }
  }
}

// Key groups written before type signatures (state file version 1) restore
// without a type check.
TEST_P(BackendTest, KeyGroupsWithoutTypeSignaturesStillRestore) {
  const std::string key = "a";
  const int kg = key_group_of(key, kMaxP);
  std::string entries;
  ByteWriter e(&entries);
  e.put_varint(1);
  Serializer<std::string>::write(e, key);
  Serializer<int64_t>::write(e, 5);
  std::string blob;
  ByteWriter b(&blob);
  b.put_varint(1);
  b.put_string("v");
  b.put_fixed<uint8_t>(static_cast<uint8_t>(StateKind::kValue));  // no kKindHasType bit
  b.put_string(entries);
  Harness h(kAll, kind());
  ASSERT_TRUE(h.backend().core().restore_key_group(kg, blob).ok());
  auto& v = h.ctx().get_state(ValueStateDescriptor<int64_t>{"v"});
  ASSERT_TRUE(h.ctx().status().ok()) << h.ctx().status();
  h.set_key(key);
  EXPECT_EQ(v.value(), 5);
}

TEST_P(BackendTest, CorruptKeyGroupIsReported) {
  Harness h(kAll, kind());
  absl::Status s = h.backend().core().restore_key_group(3, "\x05garbage");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("key group 3"), std::string::npos);
}

TEST_P(BackendTest, SnapshotRestoresIntoEitherBackend) {
  Harness h(kAll, kind());
  auto& list = h.ctx().get_list_state(ListStateDescriptor<int64_t>{"l"});
  auto& map = h.ctx().get_map_state(MapStateDescriptor<std::string, int>{"m"});
  for (int i = 0; i < 300; ++i) {
    h.set_key("k" + std::to_string(i % 50));
    list.add(i);
    map.put("m" + std::to_string(i % 7), i);
  }
  auto groups = Harness::write(*h.backend().core().snapshot().value());
  for (StateBackendKind target : {kind(), other()}) {
    Harness r(kAll, target);
    r.restore(groups);
    auto& rl = r.ctx().get_list_state(ListStateDescriptor<int64_t>{"l"});
    auto& rm = r.ctx().get_map_state(MapStateDescriptor<std::string, int>{"m"});
    for (int k = 0; k < 50; ++k) {
      r.set_key("k" + std::to_string(k));
      std::vector<int64_t> want;
      for (int i = k; i < 300; i += 50) want.push_back(i);
      EXPECT_EQ(rl.get(), want) << "key k" << k;
      std::map<std::string, int> want_map;
      for (int i : want) want_map["m" + std::to_string(i % 7)] = static_cast<int>(i);
      auto got = rm.entries();
      std::map<std::string, int> got_map(got.begin(), got.end());
      EXPECT_EQ(got_map, want_map) << "key k" << k;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, BackendTest,
                         ::testing::Values(StateBackendKind::kHeap, StateBackendKind::kRocksDb),
                         [](const auto& info) { return std::string(to_string(info.param)); });

}  // namespace
}  // namespace weir::detail
