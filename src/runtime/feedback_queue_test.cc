#include "runtime/feedback_queue.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <random>

#include <unistd.h>

#include "network/channel.h"
#include "testing/seed.h"

namespace weir::runtime {
namespace {

// The framed records of `chunk`, counted by payload.
void count_records(const std::string& chunk, std::map<std::string, int>* seen) {
  size_t at = 0;
  while (at < chunk.size()) {
    uint64_t len = 0;
    size_t header = 0;
    ASSERT_TRUE(network::parse_record_header(chunk.data() + at, chunk.size() - at, &len, &header));
    ASSERT_LE(at + header + len, chunk.size());
    ++(*seen)[chunk.substr(at + header, len)];
    at += header + len;
  }
}

// Past its memory budget the queue spills; every record comes out once,
// whether taken in chunks or read whole for a snapshot, and the spill file
// goes away with the queue.
TEST(FeedbackQueueTest, SpillsPastItsBudgetAndLosesNothing) {
  const uint64_t seed = weir::testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("weir-feedback-test-" + std::to_string(::getpid()) + "-" + std::to_string(seed)))
                               .string();
  std::map<std::string, int> pushed, popped;
  {
    FeedbackQueue q(path, 64 * 1024);
    int64_t n = 0;
    for (int round = 0; round < 3; ++round) {
      for (int i = 0; i < 20000; ++i) {
        std::string rec = "record-" + std::to_string(n++) + std::string(rng() % 40, 'x');
        ASSERT_TRUE(q.push(rec).ok());
        ++pushed[rec];
      }
      EXPECT_GT(q.spilled_bytes(), 0) << "over budget, it spills";
      EXPECT_TRUE(std::filesystem::exists(path));
      std::string all;
      ASSERT_TRUE(q.contents(&all).ok());
      std::map<std::string, int> snapshot;
      count_records(all, &snapshot);
      EXPECT_EQ(static_cast<int64_t>(snapshot.size()), q.records());
      // Take about half of what is queued.
      const int64_t target = q.records() / 2;
      while (q.records() > target) {
        std::string chunk;
        ASSERT_TRUE(q.pop_chunk(&chunk).ok());
        ASSERT_FALSE(chunk.empty());
        count_records(chunk, &popped);
      }
    }
    while (!q.empty()) {
      std::string chunk;
      ASSERT_TRUE(q.pop_chunk(&chunk).ok());
      count_records(chunk, &popped);
    }
    std::string none;
    ASSERT_TRUE(q.pop_chunk(&none).ok());
    EXPECT_TRUE(none.empty());
  }
  EXPECT_EQ(popped, pushed);
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(FeedbackQueueTest, AnUnwritableSpillFileIsNamed) {
  FeedbackQueue q("/proc/weir-cannot-write-here/feedback", 1024);
  absl::Status s;
  for (int i = 0; i < 10000 && s.ok(); ++i) s = q.push(std::string(100, 'y'));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("iteration feedback spill file /proc/weir-cannot-write-here/feedback"),
            std::string::npos)
      << s;
}

}  // namespace
}  // namespace weir::runtime
