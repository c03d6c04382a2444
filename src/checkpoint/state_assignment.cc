#include "checkpoint/state_assignment.h"

#include <algorithm>
#include <iterator>

namespace weir::checkpoint {

KeyGroupRange overlap(KeyGroupRange a, KeyGroupRange b) {
  KeyGroupRange r{std::max(a.start, b.start), std::min(a.end, b.end)};
  return r.empty() ? KeyGroupRange{} : r;
}

std::vector<const OperatorSubtaskState*> states_to_read(const OperatorStateHandles& op, KeyGroupRange range) {
  std::vector<const OperatorSubtaskState*> out;
  for (const auto& s : op.subtasks) {
    if (!overlap(s.key_groups, range).empty() || s.operator_state_length > 0) out.push_back(&s);
  }
  return out;
}

detail::OperatorStateMap assign_operator_state(std::vector<std::pair<int, detail::OperatorStateMap>> by_old_subtask,
                                               int old_parallelism, int me, int parallelism) {
  std::sort(by_old_subtask.begin(), by_old_subtask.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  const bool same_parallelism = old_parallelism == parallelism;
  detail::OperatorStateMap out;
  for (auto& [sub, lists] : by_old_subtask) {
    for (auto& [name, list] : lists) {
      detail::OperatorListStateData& d = out[name];
      d.mode = list.mode;
      bool take = false;
      switch (list.mode) {
        case detail::Redistribution::kEvenSplit: take = !same_parallelism || sub == me; break;
        case detail::Redistribution::kUnion: take = true; break;
        case detail::Redistribution::kBroadcast: take = sub == 0; break;
      }
      if (take) {
        d.entries.insert(d.entries.end(), std::make_move_iterator(list.entries.begin()),
                         std::make_move_iterator(list.entries.end()));
      }
    }
  }
  if (!same_parallelism) {
    for (auto& [name, d] : out) {
      if (d.mode != detail::Redistribution::kEvenSplit) continue;
      const size_t total = d.entries.size();
      const size_t begin = total * me / parallelism, end = total * (me + 1) / parallelism;
      d.entries = std::vector<std::string>(std::make_move_iterator(d.entries.begin() + begin),
                                           std::make_move_iterator(d.entries.begin() + end));
    }
  }
  return out;
}

}  // namespace weir::checkpoint
