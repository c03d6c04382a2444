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
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "weir/config.h"
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
  // The head of an iteration (DataStream::iterate): its input 0 also takes
  // the iteration's feedback edges.
  bool iteration_head = false;
  std::function<std::unique_ptr<OperatorBase>()> make_operator;
  // Sources: builds one (never opened) to ask whether it is bounded.
  std::function<bool()> bounded;
};

// The typed pieces the runtime needs for records of one type: one table per
// type (`record_ops<T>()` in weir/stream.h), so the untyped runtime can wire
// a job without knowing its types.
struct RecordOps {
  // Serializes records into a network partition, choosing each record's
  // channel by `kind` (for kHash by the key group of `key_hash`, a
  // `std::function<uint64_t(const T&)>`).
  std::unique_ptr<OutputBase> (*make_writer)(PartitionWriter* writer, int max_parallelism, PartitionKind kind,
                                             const void* key_hash) = nullptr;
  // Deserializes records into input `input` of `target`, counting them in
  // `records_in` (the target's numRecordsIn).
  std::unique_ptr<InputAdapter> (*make_reader)(OperatorBase* target, int input, Counter* records_in) = nullptr;
  // Calls `target` directly when both are chained into one task, counting
  // the records in `records_in` (the target's numRecordsIn).
  std::unique_ptr<OutputBase> (*make_chained)(OperatorBase* target, Counter* records_in) = nullptr;
  // Combines several outputs of this record type into one.
  std::unique_ptr<OutputBase> (*make_fanout)(std::vector<std::unique_ptr<OutputBase>> outs) = nullptr;
  // The key hash (`key_hash` as for make_writer) of the record in a network
  // frame; false when the frame does not decode. Batch execution sorts a
  // keyed operator's input by it.
  bool (*read_key_hash)(const void* key_hash, std::string_view frame, uint64_t* hash) = nullptr;
};

struct StreamEdge {
  int from = 0;
  int to = 0;
  PartitionKind kind = PartitionKind::kDefault;
  // The edge's record type.
  const RecordOps* ops = nullptr;
  // For kHash: the record's key hash, a `std::function<uint64_t(const T&)>`.
  std::shared_ptr<const void> key_hash;
  // Which input of `to` this edge feeds (two-input operators). Default: 0.
  int input = 0;
  // The side output of `from` this edge carries; empty for the main output.
  std::string tag;
  // Set by DataStream::exchange(); else the job's (JobConfig::effective_exchange).
  std::optional<ExchangeMode> exchange;
  // A back edge of an iteration (IterativeStream::close_with): from the
  // iteration's body to its head, against the order of the node ids.
  bool feedback = false;
};

// What a DataStream stands for: the nodes whose records it carries, and how
// the edges to the next operator partition them.
struct StreamSpec {
  std::vector<int> nodes;
  const RecordOps* ops = nullptr;
  PartitionKind kind = PartitionKind::kDefault;
  std::shared_ptr<const void> key_hash;  // for kHash
  std::string tag;                       // side output of `nodes`, or empty
  std::optional<ExchangeMode> exchange;  // of the next edges, when chosen
};

struct StreamGraph {
  std::vector<StreamNode> nodes;
  std::vector<StreamEdge> edges;
};

}  // namespace weir::detail

#endif  // WEIR_DETAIL_GRAPH_H_
