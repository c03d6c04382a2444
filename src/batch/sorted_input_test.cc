#include "batch/sorted_input.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "testing/seed.h"
#include "weir/key_group.h"

namespace weir::batch {
namespace {

namespace fs = std::filesystem;

struct Sent {
  int input;
  uint64_t hash;
  int64_t timestamp;
  std::string frame;
};

std::string frame_of(int64_t timestamp, const std::string& body) {
  std::string f(sizeof(timestamp), '\0');
  std::memcpy(f.data(), &timestamp, sizeof(timestamp));
  return f + body;
}

class SortedInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("weir-sorted-input-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  ExternalSorter::Options options(int64_t memory) const {
    ExternalSorter::Options o;
    o.spill_directory = (dir_ / "spill").string();
    o.memory_bytes = memory;
    o.io_buffer_bytes = 4096;
    return o;
  }

  fs::path dir_;
};

// Records of few keys on two inputs, timestamps out of order (negative ones
// and none among them), through a budget far below their size: they come
// back once each, each key's records in one block, blocks ordered by key
// group, each block's records by timestamp, input, and then as they were
// added.
TEST_F(SortedInputTest, GroupsKeysAndOrdersEachByTimestampThroughSpills) {
  const uint64_t seed = weir::testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  constexpr int kMaxParallelism = 128;
  std::vector<uint64_t> hashes;
  for (int k = 0; k < 300; ++k) hashes.push_back(rng());
  hashes.push_back(hashes[0] ^ 1);  // likely the same key group as hashes[0], another key
  std::vector<Sent> sent;
  SortedInput in(options(64 << 10), kMaxParallelism);
  for (int i = 0; i < 20000; ++i) {
    Sent s;
    s.input = static_cast<int>(rng() % 2);
    s.hash = hashes[rng() % hashes.size()];
    int r = static_cast<int>(rng() % 20);
    s.timestamp = r == 0 ? INT64_MIN : static_cast<int64_t>(rng() % 2000) - 500;
    s.frame = frame_of(s.timestamp, "#" + std::to_string(i) + std::string(rng() % 40, 'x'));
    ASSERT_TRUE(in.add(s.input, s.hash, s.frame).ok());
    sent.push_back(std::move(s));
  }
  ASSERT_TRUE(in.finish().ok());
  EXPECT_GT(in.stats().spilled_runs, 1);

  // Expected: by (key group, hash, timestamp, input), stable.
  std::vector<Sent> want = sent;
  auto order = [&](const Sent& s) {
    return std::make_tuple(key_group_for_hash(s.hash, kMaxParallelism), s.hash, s.timestamp, s.input);
  };
  std::stable_sort(want.begin(), want.end(), [&](const Sent& a, const Sent& b) { return order(a) < order(b); });

  size_t i = 0;
  for (; in.valid(); in.next(), ++i) {
    ASSERT_LT(i, want.size());
    EXPECT_EQ(in.input(), want[i].input) << "record " << i;
    EXPECT_EQ(in.frame(), want[i].frame) << "record " << i;
    EXPECT_EQ(in.key_group(), key_group_for_hash(want[i].hash, kMaxParallelism)) << "record " << i;
    const bool same = i > 0 && want[i - 1].hash == want[i].hash;
    EXPECT_EQ(in.same_key_as_previous(), same) << "record " << i;
  }
  EXPECT_TRUE(in.status().ok()) << in.status();
  EXPECT_EQ(i, want.size());
}

TEST_F(SortedInputTest, RefusesAFrameWithoutATimestamp) {
  SortedInput in(options(1 << 20), 128);
  absl::Status s = in.add(0, 42, "abc");
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("3 bytes"), std::string_view::npos) << s;
}

TEST_F(SortedInputTest, AnEmptyInputHasNoRecords) {
  SortedInput in(options(1 << 20), 128);
  ASSERT_TRUE(in.finish().ok());
  EXPECT_FALSE(in.valid());
  EXPECT_TRUE(in.status().ok());
}

}  // namespace
}  // namespace weir::batch
