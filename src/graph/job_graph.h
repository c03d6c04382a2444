// The job graph: the stream graph with operators chained into tasks.
//
// An edge is chained (records passed as objects by a direct call) when it is
// forward, both ends have the same parallelism, and the target has no other
// input. Each group of chained operators is a JobVertex, run as `parallelism`
// subtasks; every other edge is a JobEdge crossing the network. Immutable
// after build_job_graph(); shared by the JobManager and TaskManagers.
#ifndef WEIR_GRAPH_JOB_GRAPH_H_
#define WEIR_GRAPH_JOB_GRAPH_H_

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "weir/config.h"
#include "weir/detail/graph.h"

namespace weir::graph {

struct JobEdge {
  int stream_edge = 0;
  int source_vertex = 0;
  int target_vertex = 0;
  detail::PartitionKind kind = detail::PartitionKind::kForward;  // resolved, never kDefault
  bool pointwise = false;  // subtask i feeds only subtask i
  ExchangeMode exchange = ExchangeMode::kPipelined;
  // The back edge of an iteration, into its head.
  bool feedback = false;
  // Both ends in the loop of one iteration: the edge carries that loop's
  // round markers (network::EventKind::kRound).
  bool in_loop = false;
  bool blocking() const { return exchange != ExchangeMode::kPipelined; }
};

struct JobVertex {
  int id = 0;
  std::string name;
  int parallelism = 1;
  bool is_source = false;
  // Its head operator is an iteration's head (its feedback edges are inputs).
  bool iteration_head = false;
  std::vector<int> nodes;    // stream node ids, topological, head first
  std::vector<int> inputs;   // JobEdge indices
  std::vector<int> outputs;  // JobEdge indices
};

struct JobGraph {
  detail::StreamGraph stream;
  std::vector<JobVertex> vertices;
  std::vector<JobEdge> edges;
  std::vector<std::string> uids;      // per stream node
  std::vector<int> node_parallelism;  // per stream node
  std::vector<int> node_vertex;       // per stream node
  int max_parallelism = kDefaultMaxParallelism;

  int total_subtasks() const {
    int n = 0;
    for (const auto& v : vertices) n += v.parallelism;
    return n;
  }
  // Subtasks are numbered vertex by vertex: the task index of subtask s of
  // vertex v (how deployments and checkpoint acknowledgements count them).
  int task_index(int vertex, int subtask) const {
    int n = 0;
    for (int u = 0; u < vertex; ++u) n += vertices[u].parallelism;
    return n + subtask;
  }
  // The job edge a stream edge became, or -1 when it is chained.
  int job_edge_of(int stream_edge) const;
  // Whether any edge is blocking or persisted: the job runs in stages.
  bool staged() const;
  // Whether the job has an iteration (a cycle).
  bool iterates() const;
};

// The pipelined regions of the execution graph: for each task index, the
// id (0..n-1) of its region. A pipelined forward (pointwise) edge joins
// subtask i of its ends; any other pipelined edge joins all its producers
// and consumers; a blocking or persisted edge joins nothing (its consumers
// read what its producers wrote after they finished).
std::vector<int> pipelined_regions(const JobGraph& g);

// For each region of `region_of` (pipelined_regions): the regions whose
// blocking results it reads.
std::vector<std::set<int>> region_inputs(const JobGraph& g, const std::vector<int>& region_of);

// Validates the graph (parallelism bounds, unique uids, forward edges
// between equal parallelism, iterations that form a cycle of their own) and
// chains it. A feedback edge is never chained, so its head's vertex has it
// as an input (from itself, when the whole loop is chained into it).
absl::StatusOr<std::shared_ptr<const JobGraph>> build_job_graph(const detail::StreamGraph& graph,
                                                                const JobConfig& config);

}  // namespace weir::graph

#endif  // WEIR_GRAPH_JOB_GRAPH_H_
