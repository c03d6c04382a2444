#include "checkpoint/state_assignment.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace weir::checkpoint {
namespace {

using detail::OperatorListStateData;
using detail::OperatorStateMap;
using detail::Redistribution;
using Entries = std::vector<std::string>;

// Old subtask i of `old_p` held list "l" with entries "i.0", "i.1", ... (count[i] of them).
std::vector<std::pair<int, OperatorStateMap>> lists(Redistribution mode, const std::vector<int>& count) {
  std::vector<std::pair<int, OperatorStateMap>> out;
  for (int i = static_cast<int>(count.size()) - 1; i >= 0; --i) {  // any order
    OperatorListStateData d;
    d.mode = mode;
    for (int k = 0; k < count[i]; ++k) d.entries.push_back(std::to_string(i) + "." + std::to_string(k));
    out.emplace_back(i, OperatorStateMap{{"l", d}});
  }
  return out;
}

TEST(StateAssignmentTest, OperatorStateFollowsItsRedistributionMode) {
  struct Row {
    const char* what;
    Redistribution mode;
    std::vector<int> old_counts;  // entries per old subtask; old parallelism = size
    int me;
    int parallelism;
    Entries expected;
  };
  const std::vector<Row> table = {
      {"even split, same parallelism: own entries", Redistribution::kEvenSplit, {2, 1}, 1, 2, {"1.0"}},
      {"even split, same parallelism: own entries", Redistribution::kEvenSplit, {2, 1}, 0, 2, {"0.0", "0.1"}},
      {"even split, scale out: contiguous ranges", Redistribution::kEvenSplit, {2, 2}, 0, 3, {"0.0"}},
      {"even split, scale out: contiguous ranges", Redistribution::kEvenSplit, {2, 2}, 1, 3, {"0.1"}},
      {"even split, scale out: contiguous ranges", Redistribution::kEvenSplit, {2, 2}, 2, 3, {"1.0", "1.1"}},
      {"even split, scale in: all in order", Redistribution::kEvenSplit, {1, 1, 1}, 0, 1, {"0.0", "1.0", "2.0"}},
      {"even split, more subtasks than entries", Redistribution::kEvenSplit, {1}, 0, 2, {}},
      {"even split, more subtasks than entries", Redistribution::kEvenSplit, {1}, 1, 2, {"0.0"}},
      {"union: everything everywhere", Redistribution::kUnion, {1, 2}, 1, 2, {"0.0", "1.0", "1.1"}},
      {"union: everything everywhere, rescaled", Redistribution::kUnion, {1, 2}, 2, 4, {"0.0", "1.0", "1.1"}},
      {"broadcast: subtask 0's copy", Redistribution::kBroadcast, {2, 2}, 1, 2, {"0.0", "0.1"}},
      {"broadcast: subtask 0's copy, rescaled", Redistribution::kBroadcast, {2, 2}, 4, 5, {"0.0", "0.1"}},
  };
  for (const Row& row : table) {
    SCOPED_TRACE(std::string(row.what) + ", subtask " + std::to_string(row.me) + " of " +
                 std::to_string(row.parallelism));
    OperatorStateMap got = assign_operator_state(lists(row.mode, row.old_counts),
                                                 static_cast<int>(row.old_counts.size()), row.me, row.parallelism);
    ASSERT_EQ(got.count("l"), 1u);
    EXPECT_EQ(got["l"].mode, row.mode);
    EXPECT_EQ(got["l"].entries, row.expected);
  }
}

TEST(StateAssignmentTest, EvenSplitEntriesAreNeitherLostNorDuplicatedAtAnyParallelism) {
  for (int old_p = 1; old_p <= 5; ++old_p) {
    std::vector<int> counts;
    int total = 0;
    for (int i = 0; i < old_p; ++i) total += counts.emplace_back((i * 7) % 4);
    for (int p = 1; p <= 7; ++p) {
      Entries all;
      for (int me = 0; me < p; ++me) {
        OperatorStateMap got = assign_operator_state(lists(Redistribution::kEvenSplit, counts), old_p, me, p);
        for (auto& e : got["l"].entries) all.push_back(e);
      }
      Entries expected;
      for (int i = 0; i < old_p; ++i) {
        for (int k = 0; k < counts[i]; ++k) expected.push_back(std::to_string(i) + "." + std::to_string(k));
      }
      EXPECT_EQ(all, expected) << old_p << " -> " << p << " (" << total << " entries)";
    }
  }
}

TEST(StateAssignmentTest, ASubtaskReadsTheStatesOverlappingItsKeyGroupsAndAllOperatorState) {
  OperatorStateHandles op;
  op.parallelism = 3;
  op.max_parallelism = 12;
  for (int i = 0; i < 3; ++i) {
    OperatorSubtaskState s;
    s.subtask = i;
    s.key_groups = KeyGroupRange{4 * i, 4 * (i + 1)};
    op.subtasks.push_back(s);
  }
  auto subtasks_of = [&](KeyGroupRange r) {
    std::vector<int> out;
    for (const OperatorSubtaskState* s : states_to_read(op, r)) out.push_back(s->subtask);
    return out;
  };
  EXPECT_EQ(subtasks_of({0, 6}), (std::vector<int>{0, 1}));
  EXPECT_EQ(subtasks_of({4, 8}), (std::vector<int>{1}));
  EXPECT_EQ(subtasks_of({8, 12}), (std::vector<int>{2}));
  EXPECT_EQ(subtasks_of({0, 12}), (std::vector<int>{0, 1, 2}));
  op.subtasks[2].operator_state_length = 10;  // operator state is read whatever the range
  EXPECT_EQ(subtasks_of({0, 4}), (std::vector<int>{0, 2}));
  EXPECT_EQ(overlap({0, 6}, {4, 12}), (KeyGroupRange{4, 6}));
  EXPECT_TRUE(overlap({0, 4}, {4, 8}).empty());
}

}  // namespace
}  // namespace weir::checkpoint
