// How an operator's (non-keyed) list state is handed out when a job
// restores at another parallelism: OperatorListState (weir/context.h) is
// declared with one of these, as Flink's getListState, getUnionListState
// and broadcast state are.
#ifndef WEIR_OPERATOR_STATE_H_
#define WEIR_OPERATOR_STATE_H_

#include <cstdint>

namespace weir {

// DO NOT CHANGE values: stored in checkpoints.
enum class Redistribution : uint8_t {
  kEvenSplit = 0,  // entries are divided among subtasks
  kUnion = 1,      // every subtask gets every entry
  kBroadcast = 2,  // every subtask gets subtask 0's entries (identical copies)
};

}  // namespace weir

#endif  // WEIR_OPERATOR_STATE_H_
