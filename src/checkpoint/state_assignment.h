// How a checkpoint's state is assigned to the subtasks of a job that
// restores it, at the same or another parallelism: pure functions from the
// checkpoint's handles and the new subtask's place to what that subtask
// restores. No I/O here; the task reads the files these name.
//
// Keyed state follows key groups: a subtask takes the key groups of its
// range from every old subtask whose range overlaps it. Operator (non-keyed)
// state is named lists redistributed by their mode (detail::Redistribution):
//   - even-split: at an unchanged parallelism each subtask keeps its own
//     entries; otherwise all entries, in old-subtask order, are dealt out in
//     contiguous ranges (subtask i of p gets [n*i/p, n*(i+1)/p));
//   - union: every subtask gets every entry;
//   - broadcast: every subtask gets old subtask 0's entries.
#ifndef WEIR_CHECKPOINT_STATE_ASSIGNMENT_H_
#define WEIR_CHECKPOINT_STATE_ASSIGNMENT_H_

#include <utility>
#include <vector>

#include "checkpoint/format.h"
#include "weir/detail/operator.h"
#include "weir/key_group.h"

namespace weir::checkpoint {

// The key groups both ranges hold (empty when they do not overlap).
KeyGroupRange overlap(KeyGroupRange a, KeyGroupRange b);

// The subtask states of `op` that a subtask owning `range` reads: those
// whose key groups overlap it and every one that holds operator state.
std::vector<const OperatorSubtaskState*> states_to_read(const OperatorStateHandles& op, KeyGroupRange range);

// The operator state of subtask `me` of `parallelism`, from the lists each
// old subtask wrote at `old_parallelism` (pairs of old subtask index and its
// lists, in any order).
detail::OperatorStateMap assign_operator_state(std::vector<std::pair<int, detail::OperatorStateMap>> by_old_subtask,
                                               int old_parallelism, int me, int parallelism);

}  // namespace weir::checkpoint

#endif  // WEIR_CHECKPOINT_STATE_ASSIGNMENT_H_
