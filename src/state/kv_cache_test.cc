// The RocksDB table's write-back cache of decoded entries.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>

#include "testing/keyed_state_harness.h"
#include "testing/seed.h"

namespace weir::detail {
namespace {

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
        if (v != nullptr) {
          ASSERT_EQ(*v, it->second) << key << " at step " << step;
        }
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

}  // namespace
}  // namespace weir::detail
