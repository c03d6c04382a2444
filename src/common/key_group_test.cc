#include "weir/key_group.h"

#include <gtest/gtest.h>

namespace weir {
namespace {

TEST(KeyGroupTest, RangesPartitionAllKeyGroupsContiguously) {
  for (int max_p : {1, 7, 128, 1000}) {
    for (int p = 1; p <= std::min(max_p, 64); ++p) {
      int next = 0;
      for (int i = 0; i < p; ++i) {
        KeyGroupRange r = key_group_range_for_operator(max_p, p, i);
        EXPECT_EQ(r.start, next) << max_p << "/" << p << "/" << i;
        EXPECT_FALSE(r.empty());
        for (int kg = r.start; kg < r.end; ++kg) {
          EXPECT_EQ(operator_index_for_key_group(max_p, p, kg), i);
        }
        next = r.end;
      }
      EXPECT_EQ(next, max_p);
    }
  }
}

TEST(KeyGroupTest, HashIsStableAcrossBuilds) {
  // xxh64("abc", seed 0): a published test vector. Key groups are stored in
  // checkpoints, so this value must never change.
  EXPECT_EQ(hash_bytes("abc", 3), 0x44bc2cf5ad770999ULL);
  EXPECT_EQ(KeyHash<std::string>{}("abc"), 0x44bc2cf5ad770999ULL);
  EXPECT_EQ(key_group_of(std::string("abc"), 128), static_cast<int>(0x44bc2cf5ad770999ULL % 128));
}

TEST(KeyGroupTest, KeysSpreadOverKeyGroups) {
  std::vector<int> hits(128, 0);
  for (int i = 0; i < 12800; ++i) ++hits[key_group_of(std::string("key") + std::to_string(i), 128)];
  for (int h : hits) {
    EXPECT_GT(h, 50);
    EXPECT_LT(h, 150);
  }
}

}  // namespace
}  // namespace weir
