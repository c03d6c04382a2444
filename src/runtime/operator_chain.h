// The operator chain of one subtask (Flink's OperatorChain): the operators
// of a JobVertex, each with its context, wired output to input — chained
// operators call each other, a network edge ends in a ResultPartition whose
// channels lead to the consumer subtasks (local queues, or the data plane
// for subtasks in other processes).
//
// Built on the task thread before anything is opened; owned by the task.
#ifndef WEIR_RUNTIME_OPERATOR_CHAIN_H_
#define WEIR_RUNTIME_OPERATOR_CHAIN_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "common/task_metrics.h"
#include "graph/job_graph.h"
#include "network/buffer_pool.h"
#include "network/channel_registry.h"
#include "network/data_plane.h"
#include "network/partition_writer.h"
#include "network/result_file.h"
#include "runtime/gateways.h"
#include "runtime/operator_context.h"
#include "weir/config.h"
#include "weir/detail/operator.h"

namespace weir::runtime {

// The attempt that names a task's channels (network::ChannelKey). Under
// --failover task a channel outlives the attempts of either end, so every
// attempt of one channel generation shares it.
inline int channel_attempt(const TaskDeploymentDescriptor& tdd, const JobConfig& config) {
  return config.failover == FailoverStrategy::kTask ? tdd.channel_generation : tdd.execution.attempt;
}

// What building a chain takes from its task.
struct ChainSetting {
  const graph::JobGraph* graph = nullptr;
  const graph::JobVertex* vertex = nullptr;
  const TaskDeploymentDescriptor* tdd = nullptr;
  network::NetworkBufferPool* pool = nullptr;
  network::ChannelRegistry* channels = nullptr;
  network::DataPlane* data_plane = nullptr;  // null in the embedded cluster
  const StateBackendConfig* state_backend = nullptr;
  // Where blocking and persisted edges put their files.
  const JobConfig* job_config = nullptr;
  detail::ProcessingTimeService* processing_time = nullptr;
  // The task's cancel flag and counters, shared with its partitions.
  const std::atomic<bool>* cancelled = nullptr;
  TaskMetrics* metrics = nullptr;
  // Called with every output channel as it is made, so the task can close
  // it when cancelled.
  std::function<void(const std::shared_ptr<network::LocalChannel>&)> register_channel;
};

struct OperatorChain {
  // Per chained node, head first.
  std::vector<std::unique_ptr<RuntimeOperatorContext>> contexts;
  std::vector<std::unique_ptr<detail::OperatorBase>> operators;
  // One per outgoing job edge.
  std::vector<std::unique_ptr<network::ResultPartition>> partitions;
  // The head operator of a source vertex, else null.
  detail::SourceOperatorBase* source = nullptr;
  // Batch execution: the head operator reads its input sorted by key, one
  // key block at a time (sorts_input_by_key, and the operator supports key
  // blocks); its state is on the heap.
  bool sorted_input = false;
};

// Whether subtasks of `vertex` sort their input by key: the job runs in
// batch mode with sorted inputs, the head operator is keyed and every input
// edge is partitioned by key hash.
bool sorts_input_by_key(const graph::JobGraph& g, const graph::JobVertex& vertex, const JobConfig& config);

// Builds the chain of `setting.vertex` for the subtask of `setting.tdd`
// into `chain`. An error (an output channel to another process that cannot
// be opened) leaves `chain` partly built; nothing in it is open.
absl::Status build_operator_chain(const ChainSetting& setting, OperatorChain* chain);

}  // namespace weir::runtime

#endif  // WEIR_RUNTIME_OPERATOR_CHAIN_H_
