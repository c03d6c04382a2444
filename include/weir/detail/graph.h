// The stream graph: what the DataStream API records, before chaining.
// Nodes are operators; edges say how records are partitioned between them.
// The typed parts (how to build an operator, how to serialize an edge's
// records) are factories instantiated by the API templates, so the untyped
// runtime can wire a job without knowing its types. Built on one thread and
// immutable once execute() is called.
#ifndef WEIR_DETAIL_GRAPH_H_
#define WEIR_DETAIL_GRAPH_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "weir/detail/operator.h"

namespace weir::detail {

// DO NOT CHANGE values: they appear in job descriptions sent between processes.
enum class PartitionKind : uint8_t {
  kDefault = 0,    // forward when parallelism matches, else rebalance
  kForward = 1,    // subtask i -> subtask i (chained when possible)
  kHash = 2,       // by key group of the record's key
  kRebalance = 3,  // round robin
  kBroadcast = 4,  // every record to every subtask
};

struct StreamNode {
  int id = 0;
  std::string name;
  std::string uid;           // empty: derived when the job graph is built
  int parallelism = 0;       // 0: the job's default
  bool is_source = false;
  bool is_keyed = false;     // owns keyed state, needs a key-group range
  std::function<std::unique_ptr<OperatorBase>()> make_operator;
};

struct StreamEdge {
  int from = 0;
  int to = 0;
  PartitionKind kind = PartitionKind::kDefault;
  // Serializes `from`'s records into a network partition.
  std::function<std::unique_ptr<OutputBase>(PartitionWriter*, int max_parallelism)> make_writer;
  // Deserializes records into input `input` of `to`.
  std::unique_ptr<InputAdapter> (*make_reader)(OperatorBase* target, int input) = nullptr;
  // Calls `to` directly when both are chained into one task.
  std::unique_ptr<OutputBase> (*make_chained)(OperatorBase* target) = nullptr;
  // Which input of `to` this edge feeds (two-input operators). Default: 0.
  int input = 0;
  // The side output of `from` this edge carries; empty for the main output.
  std::string tag;
  // Combines several outputs of this edge's record type into one.
  std::unique_ptr<OutputBase> (*make_fanout)(std::vector<std::unique_ptr<OutputBase>> outs) = nullptr;
};

struct StreamGraph {
  std::vector<StreamNode> nodes;
  std::vector<StreamEdge> edges;
};

}  // namespace weir::detail

#endif  // WEIR_DETAIL_GRAPH_H_
