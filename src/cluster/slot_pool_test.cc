#include "cluster/slot_pool.h"

#include <gtest/gtest.h>

#include <map>

namespace weir::cluster {
namespace {

SessionPtr taskmanager(const std::string& id, int slots, int network_buffers = 1000) {
  auto s = std::make_shared<Session>();
  s->id = id;
  s->data_address = id + ":1";
  s->slots = slots;
  s->network_buffers = network_buffers;
  return s;
}

std::map<std::string, int> by_taskmanager(const std::vector<SessionPtr>& slots) {
  std::map<std::string, int> out;
  for (const auto& s : slots) ++out[s->id];
  return out;
}

TEST(SlotPoolTest, SpreadsOverTheTaskManagersWithTheMostFreeSlots) {
  SlotPool pool;
  auto a = taskmanager("a", 4), b = taskmanager("b", 2), c = taskmanager("c", 2);
  pool.add(a);
  pool.add(b);
  pool.add(c);
  auto got = pool.allocate(4, 10, {});
  ASSERT_TRUE(got.ok()) << got.status();
  // Free before each pick (a, b, c): 4 2 2 -> a; 3 2 2 -> a; 2 2 2 -> a (ties
  // go to the first id); 1 2 2 -> b.
  EXPECT_EQ(by_taskmanager(*got), (std::map<std::string, int>{{"a", 3}, {"b", 1}}));
  EXPECT_EQ(pool.used(a), 3);
  EXPECT_EQ(pool.totals().slots, 8);
  EXPECT_EQ(pool.totals().used, 4);
}

TEST(SlotPoolTest, TooFewFreeSlotsIsUnavailableWithTheCounts) {
  SlotPool pool;
  pool.add(taskmanager("a", 2));
  pool.add(taskmanager("small", 8, /*network_buffers=*/4));
  auto got = pool.allocate(3, 10, {});
  ASSERT_TRUE(absl::IsUnavailable(got.status())) << got.status();
  EXPECT_EQ(got.status().message(), "needs 3 slots, 2 free of 10 on 2 TaskManagers (10 network buffers each)");
  EXPECT_EQ(pool.totals().used, 0);
}

TEST(SlotPoolTest, ReleasedSlotsAreFreeAgainAndSlotsOfARemovedTaskManagerAreGone) {
  SlotPool pool;
  auto a = taskmanager("a", 2), b = taskmanager("b", 2);
  pool.add(a);
  pool.add(b);
  auto first = pool.allocate(4, 1, {});
  ASSERT_TRUE(first.ok());
  EXPECT_FALSE(pool.allocate(1, 1, {}).ok());
  pool.remove(b);
  // The job gives back what it held on b (gone) and on a, and takes two.
  auto again = pool.allocate(2, 1, *first);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(by_taskmanager(*again), (std::map<std::string, int>{{"a", 2}}));
  EXPECT_EQ(pool.used(b), 0);
  // b registers again (a new session): its slots are offered afresh, and a
  // release naming the old session does not touch them.
  auto b2 = taskmanager("b", 2);
  pool.add(b2);
  auto more = pool.allocate(1, 1, {});
  ASSERT_TRUE(more.ok());
  pool.release({b, nullptr});
  EXPECT_EQ(pool.used(b2), 1);
  pool.release(*more);
  EXPECT_EQ(pool.used(b2), 0);
  pool.release(*more);  // releasing twice never goes below zero
  EXPECT_EQ(pool.used(b2), 0);
}

}  // namespace
}  // namespace weir::cluster
