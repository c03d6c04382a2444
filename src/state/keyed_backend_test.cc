// Keyed state on both backends: the BackendTest tests run on heap and on
// RocksDB tables, and snapshots of one restore into the other; the tests
// after them cover one backend's own mechanism (heap TTL cleanup, RocksDB
// compaction and its entry cache).
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <random>
#include <thread>

#include "runtime/operator_context.h"
#include "state/rocksdb_store.h"
#include "testing/seed.h"
#include "weir/detail/keyed_backend.h"
#include "weir/functions.h"

namespace weir::detail {
namespace {

constexpr int kMaxP = 16;

std::shared_ptr<KvStore> make_store(StateBackendKind kind) {
  if (kind == StateBackendKind::kHeap) return nullptr;
  static std::atomic<int> next{0};
  auto dir = std::filesystem::temp_directory_path() /
             ("weir-backend-test-" + std::to_string(::getpid())) / std::to_string(next++);
  auto store = state::open_rocksdb_store(dir, 64 << 20);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? *store : nullptr;
}

// Processing time that moves only when told to.
class ManualClock final : public ProcessingTimeService {
 public:
  int64_t now_ms() const override { return now; }
  void schedule(int64_t, std::function<void()>) override {}
  int64_t now = 0;
};

// Drives keyed state as a keyed operator would: one backend, a current key.
class Harness {
 public:
  explicit Harness(KeyGroupRange range, StateBackendKind kind = StateBackendKind::kHeap)
      : op_(runtime::RuntimeOperatorContext::Info{0, 1, kMaxP, 0, "op", range, false, &clock_, "", nullptr}),
        store_(make_store(kind)),
        backend_(range, store_),
        ctx_(&op_, &backend_) {}
  ManualClock& clock() { return clock_; }
  KvStore* store() { return store_.get(); }

  void set_key(const std::string& k) {
    key_ = k;
    backend_.set_current_key(&key_, key_group_of(key_, kMaxP));
  }
  KeyedRuntimeContext<std::string>& ctx() { return ctx_; }
  KeyedBackend<std::string>& backend() { return backend_; }

  // Serializes every key group of a snapshot, as the async writer does.
  static std::map<int, std::string> write(const KeyedStateSnapshot& snap) {
    std::map<int, std::string> out;
    for (int kg = snap.range().start; kg < snap.range().end; ++kg) {
      ByteWriter w(&out[kg]);
      snap.write_key_group(kg, w);
    }
    return out;
  }
  void restore(const std::map<int, std::string>& groups) {
    for (const auto& [kg, bytes] : groups) {
      if (backend_.core().range().contains(kg)) {
        ASSERT_TRUE(backend_.core().restore_key_group(kg, bytes).ok());
      }
    }
  }

 private:
  ManualClock clock_;
  runtime::RuntimeOperatorContext op_;
  std::shared_ptr<KvStore> store_;
  KeyedBackend<std::string> backend_;
  KeyedRuntimeContext<std::string> ctx_;
  std::string key_;
};

const KeyGroupRange kAll{0, kMaxP};

StateTtlConfig ttl_of(int64_t ms, StateTtlConfig::UpdateType u = StateTtlConfig::UpdateType::kOnCreateAndWrite,
                      StateTtlConfig::Visibility v = StateTtlConfig::Visibility::kNeverReturnExpired) {
  StateTtlConfig c;
  c.ttl = std::chrono::milliseconds(ms);
  c.update_type = u;
  c.visibility = v;
  return c;
}

class BackendTest : public ::testing::TestWithParam<StateBackendKind> {
 protected:
  StateBackendKind kind() const { return GetParam(); }
  // The other backend: snapshots are restored into it too.
  StateBackendKind other() const {
    return kind() == StateBackendKind::kHeap ? StateBackendKind::kRocksDb : StateBackendKind::kHeap;
  }
};

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

TEST_P(BackendTest, TtlExpiresEntriesAfterTheirLastWrite) {
  Harness h(kAll, kind());
  auto& v = h.ctx().get_state(ValueStateDescriptor<int64_t>{"v"}.with_ttl(ttl_of(100)));
  auto& r = h.ctx().get_reducing_state(ReducingStateDescriptor<int64_t>{
      "r", [](const int64_t& a, const int64_t& b) { return a + b; }}.with_ttl(ttl_of(100)));
  h.clock().now = 1000;
  h.set_key("a");
  v.update(1);
  r.add(5);
  h.clock().now = 1099;
  EXPECT_EQ(v.value(), 1);  // reading does not extend it
  EXPECT_EQ(r.get(), 5);
  h.clock().now = 1100;
  EXPECT_FALSE(v.value().has_value());
  EXPECT_FALSE(r.get().has_value());
  r.add(2);  // a fresh entry, not 5 + 2
  EXPECT_EQ(r.get(), 2);
}

TEST_P(BackendTest, TtlOnReadAndWriteExtendsOnEveryRead) {
  Harness h(kAll, kind());
  auto& v = h.ctx().get_state(
      ValueStateDescriptor<int64_t>{"v"}.with_ttl(ttl_of(100, StateTtlConfig::UpdateType::kOnReadAndWrite)));
  h.clock().now = 1000;
  h.set_key("a");
  v.update(7);
  h.clock().now = 1090;
  EXPECT_EQ(v.value(), 7);
  h.clock().now = 1189;
  EXPECT_EQ(v.value(), 7);
  h.clock().now = 1289;
  EXPECT_FALSE(v.value().has_value());
}

TEST_P(BackendTest, TtlReturnExpiredIfNotCleanedUpKeepsItUntilCleanup) {
  Harness h(kAll, kind());
  auto cfg = ttl_of(100, StateTtlConfig::UpdateType::kOnCreateAndWrite,
                    StateTtlConfig::Visibility::kReturnExpiredIfNotCleanedUp);
  auto& v = h.ctx().get_state(ValueStateDescriptor<int64_t>{"v"}.with_ttl(cfg));
  h.clock().now = 1000;
  h.set_key("a");
  v.update(3);
  h.clock().now = 5000;
  EXPECT_EQ(v.value(), 3);
}

TEST_P(BackendTest, TtlListElementsExpireOneByOne) {
  Harness h(kAll, kind());
  auto& l = h.ctx().get_list_state(ListStateDescriptor<std::string>{"l"}.with_ttl(ttl_of(100)));
  h.set_key("a");
  h.clock().now = 1000;
  l.add("x");
  h.clock().now = 1050;
  l.add("y");
  h.clock().now = 1099;
  EXPECT_EQ(l.get(), (std::vector<std::string>{"x", "y"}));
  h.clock().now = 1100;
  EXPECT_EQ(l.get(), std::vector<std::string>{"y"});
  h.clock().now = 1150;
  EXPECT_TRUE(l.get().empty());
  l.add("z");
  EXPECT_EQ(l.get(), std::vector<std::string>{"z"});
  h.clock().now = 1200;
  l.update({"p", "q"});
  h.clock().now = 1299;
  EXPECT_EQ(l.get(), (std::vector<std::string>{"p", "q"}));
  h.clock().now = 1300;
  EXPECT_TRUE(l.get().empty());
  EXPECT_TRUE(h.ctx().status().ok()) << h.ctx().status();
}

TEST_P(BackendTest, TtlListOnReadAndWriteExtendsLiveElements) {
  Harness h(kAll, kind());
  auto& l = h.ctx().get_list_state(
      ListStateDescriptor<int64_t>{"l"}.with_ttl(ttl_of(100, StateTtlConfig::UpdateType::kOnReadAndWrite)));
  h.set_key("a");
  h.clock().now = 1000;
  l.add(1);
  h.clock().now = 1090;
  l.add(2);
  EXPECT_EQ(l.get(), (std::vector<int64_t>{1, 2}));  // both now stamped 1090
  h.clock().now = 1189;
  EXPECT_EQ(l.get(), (std::vector<int64_t>{1, 2}));
  h.clock().now = 1289;
  EXPECT_TRUE(l.get().empty());
}

TEST_P(BackendTest, TtlMapValuesExpireOneByOne) {
  Harness h(kAll, kind());
  auto& m = h.ctx().get_map_state(MapStateDescriptor<std::string, int64_t>{"m"}.with_ttl(ttl_of(100)));
  h.set_key("a");
  h.clock().now = 1000;
  m.put("x", 1);
  h.clock().now = 1050;
  m.put("y", 2);
  h.clock().now = 1099;
  EXPECT_EQ(m.get("x"), 1);
  EXPECT_TRUE(m.contains("y"));
  h.clock().now = 1100;
  EXPECT_FALSE(m.get("x").has_value());
  EXPECT_FALSE(m.contains("x"));
  EXPECT_EQ(m.get("y"), 2);
  auto entries = m.entries();
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0], (std::pair<std::string, int64_t>{"y", 2}));
  EXPECT_FALSE(m.is_empty());
  h.clock().now = 1150;
  EXPECT_TRUE(m.is_empty());
  EXPECT_TRUE(m.entries().empty());
  m.put("x", 3);  // a fresh value
  EXPECT_EQ(m.get("x"), 3);
}

TEST_P(BackendTest, TtlMapOnReadAndWriteAndReturnExpired) {
  Harness h(kAll, kind());
  auto& read_write = h.ctx().get_map_state(
      MapStateDescriptor<std::string, int64_t>{"rw"}.with_ttl(ttl_of(100, StateTtlConfig::UpdateType::kOnReadAndWrite)));
  auto& keep = h.ctx().get_map_state(MapStateDescriptor<std::string, int64_t>{
      "keep"}.with_ttl(ttl_of(100, StateTtlConfig::UpdateType::kOnCreateAndWrite,
                     StateTtlConfig::Visibility::kReturnExpiredIfNotCleanedUp)));
  h.set_key("a");
  h.clock().now = 1000;
  read_write.put("x", 1);
  keep.put("x", 1);
  h.clock().now = 1090;
  EXPECT_EQ(read_write.get("x"), 1);  // extends to 1190
  h.clock().now = 1189;
  EXPECT_EQ(read_write.get("x"), 1);
  EXPECT_EQ(keep.get("x"), 1);  // expired, not cleaned up yet
  h.clock().now = 1289;
  EXPECT_FALSE(read_write.get("x").has_value());
}

// Snapshots leave out expired entries: whole entries on both backends,
// single expired list elements and map values too on the heap.
TEST_P(BackendTest, TtlSnapshotLeavesExpiredEntriesOut) {
  auto keep = ttl_of(100, StateTtlConfig::UpdateType::kOnCreateAndWrite,
                     StateTtlConfig::Visibility::kReturnExpiredIfNotCleanedUp);
  Harness h(kAll, kind());
  auto& l = h.ctx().get_list_state(ListStateDescriptor<int64_t>{"l"}.with_ttl(keep));
  auto& m = h.ctx().get_map_state(MapStateDescriptor<std::string, int64_t>{"m"}.with_ttl(keep));
  h.clock().now = 1000;
  h.set_key("old");
  l.add(1);
  m.put("x", 1);
  h.set_key("mixed");
  l.add(2);
  m.put("x", 2);
  h.clock().now = 1150;
  l.add(3);
  m.put("y", 3);
  h.set_key("new");
  l.add(4);
  auto groups = Harness::write(*h.backend().core().snapshot().value());
  for (StateBackendKind target : {kind(), other()}) {
    Harness r(kAll, target);
    r.restore(groups);
    auto& rl = r.ctx().get_list_state(ListStateDescriptor<int64_t>{"l"}.with_ttl(keep));
    auto& rm = r.ctx().get_map_state(MapStateDescriptor<std::string, int64_t>{"m"}.with_ttl(keep));
    r.clock().now = 1150;
    r.set_key("old");
    EXPECT_TRUE(rl.get().empty());
    EXPECT_TRUE(rm.is_empty());
    r.set_key("new");
    EXPECT_EQ(rl.get(), std::vector<int64_t>{4});
    r.set_key("mixed");
    if (kind() == StateBackendKind::kHeap) {
      EXPECT_EQ(rl.get(), std::vector<int64_t>{3});
      EXPECT_EQ(rm.entries().size(), 1u);
    } else {  // elements of a live entry expire on access
      EXPECT_EQ(rl.get(), (std::vector<int64_t>{2, 3}));
      EXPECT_EQ(rm.entries().size(), 2u);
    }
  }
}

// Heap: a snapshot leaves expired entries out, so a restore does not see them.
TEST(TtlCleanupTest, HeapSnapshotLeavesExpiredEntriesOut) {
  auto cfg = ttl_of(100, StateTtlConfig::UpdateType::kOnCreateAndWrite,
                    StateTtlConfig::Visibility::kReturnExpiredIfNotCleanedUp);
  Harness h(kAll, StateBackendKind::kHeap);
  auto& v = h.ctx().get_state(ValueStateDescriptor<int64_t>{"v"}.with_ttl(cfg));
  h.clock().now = 1000;
  h.set_key("old");
  v.update(1);
  h.clock().now = 1150;
  h.set_key("new");
  v.update(2);
  auto groups = Harness::write(*h.backend().core().snapshot().value());
  Harness r(kAll, StateBackendKind::kHeap);
  r.restore(groups);
  auto& rv = r.ctx().get_state(ValueStateDescriptor<int64_t>{"v"}.with_ttl(cfg));
  r.clock().now = 1150;
  r.set_key("old");
  EXPECT_FALSE(rv.value().has_value());
  r.set_key("new");
  EXPECT_EQ(rv.value(), 2);
}

// RocksDB: a compaction drops expired entries (by the wall clock).
TEST(TtlCleanupTest, RocksDbCompactionDropsExpiredEntries) {
  auto cfg = ttl_of(60000, StateTtlConfig::UpdateType::kOnCreateAndWrite,
                    StateTtlConfig::Visibility::kReturnExpiredIfNotCleanedUp);
  Harness h(kAll, StateBackendKind::kRocksDb);
  // No entry cache beyond the current key: what a compaction drops is gone
  // at the next read (a cached entry would still be returned, as expired
  // entries not cleaned up may be).
  h.store()->set_cache_bytes(0);
  auto& v = h.ctx().get_state(ValueStateDescriptor<int64_t>{"v"}.with_ttl(cfg));
  auto& l = h.ctx().get_list_state(ListStateDescriptor<int64_t>{"l"}.with_ttl(cfg));
  const int64_t wall = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
  h.clock().now = wall - 120000;  // two minutes ago: expired by now
  for (int i = 0; i < 100; ++i) {
    h.set_key("old" + std::to_string(i));
    v.update(i);
    l.add(i);
  }
  h.clock().now = wall;
  for (int i = 0; i < 100; ++i) {
    h.set_key("new" + std::to_string(i));
    v.update(i);
    l.add(i);
  }
  h.set_key("flush");  // the table writes its cached entry through
  v.update(0);
  h.set_key("other");
  (void)v.value();
  h.store()->compact();
  for (int i = 0; i < 100; ++i) {
    h.set_key("old" + std::to_string(i));
    EXPECT_FALSE(v.value().has_value()) << "old" << i;
    EXPECT_TRUE(l.get().empty()) << "old" << i;
    h.set_key("new" + std::to_string(i));
    EXPECT_EQ(v.value(), i);
    EXPECT_EQ(l.get(), std::vector<int64_t>{i});
  }
}

// The RocksDB table's write-back cache under a budget far smaller than the
// state: random reads, writes, erases and snapshots agree with a plain map,
// the cache stays within its budget, and a snapshot taken at any point
// restores what the map held then (into both backends).
TEST(KvCacheTest, EvictionsWriteBackAndSnapshotsSeeEverything) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed) + " (WEIR_TEST_SEED replays it)");
  std::mt19937_64 rng(seed);
  Harness h(kAll, StateBackendKind::kRocksDb);
  constexpr size_t kBudget = 2048;
  h.store()->set_cache_bytes(kBudget);
  auto t = h.backend().core().table<std::string, std::string>("v", StateKind::kValue);
  ASSERT_TRUE(t.ok()) << t.status();
  auto* table = dynamic_cast<KvTable<std::string, std::string>*>(*t);
  ASSERT_NE(table, nullptr);
  std::map<std::string, std::string> expected;
  std::map<std::string, std::string> at_snapshot;
  std::map<int, std::string> snapshot_bytes;
  size_t max_entries = 0;
  for (int step = 0; step < 20000; ++step) {
    const std::string key = "k" + std::to_string(rng() % 500);
    const int kg = key_group_of(key, kMaxP);
    switch (rng() % 6) {
      case 0:
      case 1: {  // read-modify-write in place
        std::string& v = table->get_or_create(kg, key);
        v += static_cast<char>('a' + rng() % 26);
        expected[key] += v.back();
        break;
      }
      case 2: {
        std::string v(rng() % 40, 'x');
        table->put(kg, key, v);
        expected[key] = v;
        break;
      }
      case 3:
        table->erase(kg, key);
        expected.erase(key);
        break;
      case 4: {
        const std::string* v = table->find(kg, key);
        auto it = expected.find(key);
        ASSERT_EQ(v != nullptr, it != expected.end()) << key << " at step " << step;
        if (v != nullptr) ASSERT_EQ(*v, it->second) << key << " at step " << step;
        break;
      }
      default:
        if (rng() % 50 == 0) {
          auto snap = h.backend().core().snapshot();
          ASSERT_TRUE(snap.ok()) << snap.status();
          snapshot_bytes = Harness::write(**snap);
          at_snapshot = expected;
        }
    }
    max_entries = std::max(max_entries, table->cached_entries());
    size_t longest = 0;
    for (const auto& [k, v] : expected) longest = std::max(longest, v.size());
    // The estimate goes over by at most the entry inserted last: its slot
    // (under 128 bytes for a string key and value) and its encoded value.
    ASSERT_LE(table->cached_bytes(), kBudget + 128 + longest + 8) << "at step " << step;
  }
  EXPECT_LT(max_entries, 500u) << "the cache never evicted";
  std::map<std::string, std::string> seen;
  table->for_each([&](const std::string& k, const std::string& v) { seen[k] = v; });
  EXPECT_EQ(seen, expected);
  ASSERT_FALSE(snapshot_bytes.empty());
  for (StateBackendKind kind : {StateBackendKind::kHeap, StateBackendKind::kRocksDb}) {
    Harness r(kAll, kind);
    r.restore(snapshot_bytes);
    auto rt = r.backend().core().table<std::string, std::string>("v", StateKind::kValue);
    ASSERT_TRUE(rt.ok()) << rt.status();
    r.backend().core().end_restore();
    std::map<std::string, std::string> restored;
    (*rt)->for_each([&](const std::string& k, const std::string& v) { restored[k] = v; });
    EXPECT_EQ(restored, at_snapshot) << to_string(kind);
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, BackendTest,
                         ::testing::Values(StateBackendKind::kHeap, StateBackendKind::kRocksDb),
                         [](const auto& info) { return std::string(to_string(info.param)); });

}  // namespace
}  // namespace weir::detail
