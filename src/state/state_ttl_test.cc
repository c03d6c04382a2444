// State time-to-live on both backends (BackendTest: expiry after the last
// write or access, visibility of expired values, list and map elements
// expiring one by one, snapshots leaving expired entries out), then each
// backend's own cleanup: heap snapshots, RocksDB compaction.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "testing/keyed_state_harness.h"

namespace weir::detail {
namespace {

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

}  // namespace
}  // namespace weir::detail
