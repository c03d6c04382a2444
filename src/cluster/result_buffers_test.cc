#include "cluster/result_buffers.h"

#include <gtest/gtest.h>

#include <thread>

namespace weir::cluster {
namespace {

ResultBatch batch(const std::string& id, int subtask, int subtasks, int64_t seq, std::string rows, bool end = false) {
  return ResultBatch{id, subtask, subtasks, seq, std::move(rows), end};
}

TEST(ResultBuffersTest, BatchesComeBackInOrderAndTheResultEndsWhenEverySubtaskEnded) {
  ResultBuffers buffers({});
  auto id = buffers.open();
  ASSERT_TRUE(id.ok()) << id.status();
  ASSERT_EQ(buffers.push(batch(*id, 0, 2, 0, "a"), absl::ZeroDuration()).value(), true);
  ASSERT_EQ(buffers.push(batch(*id, 1, 2, 0, "b"), absl::ZeroDuration()).value(), true);
  ASSERT_EQ(buffers.push(batch(*id, 0, 2, 1, "c", /*end=*/true), absl::ZeroDuration()).value(), true);
  auto got = buffers.fetch(*id, 0, absl::ZeroDuration());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->batches, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(got->next, 3);
  EXPECT_FALSE(got->end);  // subtask 1 has not ended
  ASSERT_EQ(buffers.push(batch(*id, 1, 2, 1, "", /*end=*/true), absl::ZeroDuration()).value(), true);
  got = buffers.fetch(*id, 3, absl::ZeroDuration());
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->batches, std::vector<std::string>{""});
  EXPECT_TRUE(got->end);  // nothing after this page
  got = buffers.fetch(*id, 4, absl::ZeroDuration());
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got->batches.empty());
  EXPECT_TRUE(got->end);
  EXPECT_EQ(got->next, 4);
}

TEST(ResultBuffersTest, AFullQueueHoldsThePushUntilTheClientFetchesPastIt) {
  ResultBuffers::Options o;
  o.max_bytes = 10;
  ResultBuffers buffers(o);
  const std::string id = buffers.open().value();
  ASSERT_EQ(buffers.push(batch(id, 0, 1, 0, "123456"), absl::ZeroDuration()).value(), true);
  // 6 + 6 > 10: not taken while the first is queued.
  EXPECT_EQ(buffers.push(batch(id, 0, 1, 1, "abcdef"), absl::Milliseconds(20)).value(), false);
  // A fetch that does not move past the first batch frees nothing.
  ASSERT_EQ(buffers.fetch(id, 0, absl::ZeroDuration())->batches.size(), 1u);
  EXPECT_EQ(buffers.push(batch(id, 0, 1, 1, "abcdef"), absl::ZeroDuration()).value(), false);
  absl::StatusOr<bool> pushed = false;
  std::thread sink([&] { pushed = buffers.push(batch(id, 0, 1, 1, "abcdef"), absl::Seconds(60)); });
  auto got = buffers.fetch(id, 1, absl::Seconds(60));  // drops "123456", then waits for the next
  sink.join();
  ASSERT_TRUE(pushed.ok()) << pushed.status();
  EXPECT_TRUE(*pushed);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->batches, std::vector<std::string>{"abcdef"});
  // A batch larger than the bound goes alone into an empty queue.
  ASSERT_EQ(buffers.fetch(id, 2, absl::ZeroDuration())->batches.size(), 0u);
  EXPECT_EQ(buffers.push(batch(id, 0, 1, 2, std::string(100, 'x')), absl::ZeroDuration()).value(), true);
}

TEST(ResultBuffersTest, ABatchPushedAgainIsTakenOnceAndOneOutOfOrderIsRefused) {
  ResultBuffers buffers({});
  const std::string id = buffers.open().value();
  ASSERT_EQ(buffers.push(batch(id, 0, 1, 0, "a"), absl::ZeroDuration()).value(), true);
  EXPECT_EQ(buffers.push(batch(id, 0, 1, 0, "a"), absl::ZeroDuration()).value(), true);
  auto skipped = buffers.push(batch(id, 0, 1, 2, "c"), absl::ZeroDuration());
  EXPECT_TRUE(absl::IsInvalidArgument(skipped.status())) << skipped.status();
  auto other_sink = buffers.push(batch(id, 0, 3, 1, "b"), absl::ZeroDuration());
  EXPECT_TRUE(absl::IsInvalidArgument(other_sink.status())) << other_sink.status();
  EXPECT_EQ(buffers.fetch(id, 0, absl::ZeroDuration())->batches, std::vector<std::string>{"a"});
  auto ahead = buffers.fetch(id, 5, absl::ZeroDuration());
  EXPECT_TRUE(absl::IsInvalidArgument(ahead.status())) << ahead.status();
}

TEST(ResultBuffersTest, AClosedResultFailsItsPushesEvenOneWaitingForRoom) {
  ResultBuffers::Options o;
  o.max_bytes = 1;
  ResultBuffers buffers(o);
  const std::string id = buffers.open().value();
  ASSERT_EQ(buffers.push(batch(id, 0, 1, 0, "a"), absl::ZeroDuration()).value(), true);
  absl::StatusOr<bool> pushed = true;
  std::thread sink([&] { pushed = buffers.push(batch(id, 0, 1, 1, "b"), absl::Seconds(60)); });
  buffers.close(id);
  sink.join();
  EXPECT_TRUE(absl::IsNotFound(pushed.status())) << pushed.status();
  EXPECT_NE(pushed.status().message().find(id), std::string::npos);
  EXPECT_TRUE(absl::IsNotFound(buffers.fetch(id, 0, absl::ZeroDuration()).status()));
  EXPECT_TRUE(absl::IsNotFound(buffers.push(batch("unknown", 0, 1, 0, "a"), absl::ZeroDuration()).status()));
}

TEST(ResultBuffersTest, AResultNobodyFetchesIsDroppedAndOpenResultsAreBounded) {
  ManualClock clock;
  ResultBuffers::Options o;
  o.max_results = 2;
  o.idle = absl::Seconds(60);
  ResultBuffers buffers(o, &clock);
  const std::string read = buffers.open().value();
  const std::string unread = buffers.open().value();
  EXPECT_TRUE(absl::IsResourceExhausted(buffers.open().status()));
  clock.advance(40'000);
  ASSERT_TRUE(buffers.fetch(read, 0, absl::ZeroDuration()).ok());
  clock.advance(30'000);  // unread: 70 s without a fetch; read: 30 s
  EXPECT_TRUE(absl::IsNotFound(buffers.push(batch(unread, 0, 1, 0, "a"), absl::ZeroDuration()).status()));
  EXPECT_EQ(buffers.push(batch(read, 0, 1, 0, "a"), absl::ZeroDuration()).value(), true);
  EXPECT_EQ(buffers.open_results(), 1u);
  EXPECT_TRUE(buffers.open().ok());
}

}  // namespace
}  // namespace weir::cluster
