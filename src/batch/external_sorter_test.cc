#include "batch/external_sorter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "testing/seed.h"

namespace weir::batch {
namespace external_sorter_test {

namespace fs = std::filesystem;

using Record = std::pair<std::string, std::string>;

class ExternalSorterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("weir-sorter-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  ExternalSorter::Options options(int64_t memory, int fan_in = 64, int io_buffer = 4096) const {
    ExternalSorter::Options o;
    o.spill_directory = (dir_ / "spill").string();
    o.memory_bytes = memory;
    o.max_fan_in = fan_in;
    o.io_buffer_bytes = io_buffer;
    return o;
  }

  // Random records whose keys repeat (few distinct keys), so stability shows;
  // each value is unique: its position in the input.
  static std::vector<Record> random_records(uint64_t seed, int n, int distinct_keys, size_t max_value) {
    std::mt19937_64 rng(seed);
    std::vector<Record> out;
    for (int i = 0; i < n; ++i) {
      std::string key = "k" + std::to_string(rng() % distinct_keys);
      if (rng() % 7 == 0) key.clear();  // empty keys sort first
      std::string value = std::to_string(i) + ":";
      value.append(rng() % (max_value + 1), static_cast<char>('a' + rng() % 26));
      out.emplace_back(std::move(key), std::move(value));
    }
    return out;
  }

  static std::vector<Record> read_all(ExternalSorter& s) {
    std::vector<Record> out;
    for (; s.valid(); s.next()) out.emplace_back(std::string(s.key()), std::string(s.value()));
    return out;
  }

  size_t files_in_spill_directory() const {
    const fs::path spill = dir_ / "spill";
    if (!fs::exists(spill)) return 0;
    return static_cast<size_t>(std::distance(fs::directory_iterator(spill), fs::directory_iterator()));
  }

  fs::path dir_;
};

// The expected order: by key bytewise, equal keys in input order.
std::vector<Record> stable_sorted(std::vector<Record> records) {
  std::stable_sort(records.begin(), records.end(),
                   [](const Record& a, const Record& b) { return a.first < b.first; });
  return records;
}

TEST_F(ExternalSorterTest, SortsStablyInMemoryWithoutSpilling) {
  const uint64_t seed = weir::testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  auto input = random_records(seed, 5000, 50, 20);
  ExternalSorter s(options(64 << 20));
  for (const auto& [k, v] : input) ASSERT_TRUE(s.add(k, v).ok());
  ASSERT_TRUE(s.finish().ok());
  EXPECT_EQ(read_all(s), stable_sorted(input));
  EXPECT_TRUE(s.status().ok());
  EXPECT_EQ(s.stats().records, 5000);
  EXPECT_EQ(s.stats().spilled_runs, 0);
  EXPECT_EQ(files_in_spill_directory(), 0u);
}

// An input many times the budget spills runs, merges them in passes when
// there are more than the fan-in, and still comes out in stable key order.
TEST_F(ExternalSorterTest, InputManyTimesTheBudgetSpillsMergesInPassesAndStaysStable) {
  const uint64_t seed = weir::testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  auto input = random_records(seed, 40000, 300, 60);
  size_t input_bytes = 0;
  for (const auto& [k, v] : input) input_bytes += k.size() + v.size();
  const int64_t budget = 300 << 10;  // ~1/10 of the input's bytes, blocks included
  ASSERT_GT(input_bytes, 5u * budget);
  {
    ExternalSorter s(options(budget, /*fan_in=*/3));
    for (const auto& [k, v] : input) ASSERT_TRUE(s.add(k, v).ok());
    ASSERT_TRUE(s.finish().ok());
    // Each run is at most the budget's worth of record bytes.
    EXPECT_GE(s.stats().spilled_runs, static_cast<int64_t>(input_bytes / budget));
    // ... and not much less: a record costs its bytes and 24 bytes of index.
    EXPECT_LE(s.stats().spilled_runs, static_cast<int64_t>(3 * input_bytes / budget + 1));
    EXPECT_GT(s.stats().merge_passes, 0);
    EXPECT_EQ(read_all(s), stable_sorted(input));
    EXPECT_TRUE(s.status().ok()) << s.status();
    // Runs consumed by merge passes are gone; what is left is one merge's worth.
    EXPECT_LE(files_in_spill_directory(), 3u);
  }
  EXPECT_EQ(files_in_spill_directory(), 0u) << "spilled runs outlived the sorter";
}

// Records larger than the read and write buffers, and one larger than the
// whole budget, round-trip whole.
TEST_F(ExternalSorterTest, RecordsLargerThanTheBuffersAndTheBudgetRoundTrip) {
  std::vector<Record> input;
  for (int i = 0; i < 40; ++i) {
    input.emplace_back("key" + std::to_string(i % 5), std::string(static_cast<size_t>(1000 + 997 * i), 'a' + i % 26));
  }
  input.emplace_back("key2", std::string(200000, 'z'));  // > the 64 KiB budget
  input.emplace_back(std::string(5000, 'k'), "long key");
  input.emplace_back("", "");
  ExternalSorter s(options(64 << 10, 2, 256));
  for (const auto& [k, v] : input) ASSERT_TRUE(s.add(k, v).ok());
  ASSERT_TRUE(s.finish().ok());
  EXPECT_GT(s.stats().spilled_runs, 1);
  EXPECT_EQ(read_all(s), stable_sorted(input));
  EXPECT_TRUE(s.status().ok()) << s.status();
}

TEST_F(ExternalSorterTest, EmptyInputEndsAtOnceAndMisuseIsRefused) {
  ExternalSorter s(options(1 << 20));
  ASSERT_TRUE(s.finish().ok());
  EXPECT_FALSE(s.valid());
  s.next();  // harmless at the end
  EXPECT_FALSE(s.valid());
  EXPECT_EQ(s.add("k", "v").code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.finish().code(), absl::StatusCode::kFailedPrecondition);
}

// A spilled run damaged on disk ends the iteration with an error naming the
// file, instead of wrong records or a crash.
TEST_F(ExternalSorterTest, DamagedRunIsReportedWithItsPath) {
  auto input = random_records(7, 20000, 100, 40);
  ExternalSorter s(options(128 << 10));
  for (const auto& [k, v] : input) ASSERT_TRUE(s.add(k, v).ok());
  ASSERT_GT(s.stats().spilled_runs, 2);
  ASSERT_LT(s.stats().spilled_runs, 40);
  const fs::path victim = fs::path(dir_ / "spill" / "run-1.sort");
  ASSERT_TRUE(fs::exists(victim));
  const auto size = fs::file_size(victim);
  fs::resize_file(victim, size - size / 3);
  // The damage shows when the run is read: in finish() if its first record
  // is gone, else while iterating; either way nothing after it is made up.
  absl::Status finished = s.finish();
  std::vector<Record> out;
  if (finished.ok()) out = read_all(s);
  const absl::Status st = finished.ok() ? s.status() : finished;
  EXPECT_LT(out.size(), input.size());
  EXPECT_EQ(st.code(), absl::StatusCode::kDataLoss) << st;
  EXPECT_NE(st.message().find(victim.string()), std::string::npos) << st;
  EXPECT_NE(st.message().find("damaged"), std::string::npos) << st;
}

// A full spill disk fails add() with the path and the cause, and the sorter
// stays failed.
TEST_F(ExternalSorterTest, FullDiskFailsWithPathAndCause) {
  const fs::path mnt = dir_ / "small";
  fs::create_directories(mnt);
  const std::string mount = "mount -t tmpfs -o size=256k tmpfs " + mnt.string() + " 2>/dev/null";
  if (std::system(mount.c_str()) != 0) GTEST_SKIP() << "this environment cannot mount a small tmpfs to fill up";
  absl::Status failed;
  {
    ExternalSorter::Options o = options(64 << 10);
    o.spill_directory = (mnt / "spill").string();
    ExternalSorter s(o);
    auto input = random_records(11, 50000, 1000, 40);
    for (const auto& [k, v] : input) {
      failed = s.add(k, v);
      if (!failed.ok()) break;
    }
    EXPECT_EQ(s.add("k", "v").code(), failed.code());
    EXPECT_EQ(s.finish().code(), failed.code());
  }
  const std::string umount = "umount " + mnt.string();
  ASSERT_EQ(std::system(umount.c_str()), 0);
  EXPECT_EQ(failed.code(), absl::StatusCode::kResourceExhausted) << failed;
  EXPECT_NE(failed.message().find("No space left on device"), std::string::npos) << failed;
  EXPECT_NE(failed.message().find((mnt / "spill").string()), std::string::npos) << failed;
}

}  // namespace external_sorter_test
}  // namespace weir::batch
