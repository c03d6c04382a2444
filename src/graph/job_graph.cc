#include "graph/job_graph.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <set>

#include "weir/key_group.h"

namespace weir::graph {

int JobGraph::job_edge_of(int stream_edge) const {
  for (size_t i = 0; i < edges.size(); ++i) {
    if (edges[i].stream_edge == stream_edge) return static_cast<int>(i);
  }
  return -1;
}

bool JobGraph::iterates() const {
  for (const auto& v : vertices) {
    if (v.iteration_head) return true;
  }
  return false;
}

bool JobGraph::staged() const {
  for (const auto& e : edges) {
    if (e.blocking()) return true;
  }
  return false;
}

namespace {

// Marks each iteration's head vertex and the edges of its loop, and refuses
// what an iteration cannot run: a head never closed, a feedback edge that
// does not come from the head's body or is forward, two iterations sharing
// a loop, a blocking exchange in a loop, batch execution and --failover task.
absl::Status check_iterations(JobGraph& g, const JobConfig& config) {
  const detail::StreamGraph& sg = g.stream;
  const int nv = static_cast<int>(g.vertices.size());
  std::vector<int> loop_of(nv, -1);  // the head vertex whose loop a vertex is in
  for (size_t h = 0; h < sg.nodes.size(); ++h) {
    if (!sg.nodes[h].iteration_head) continue;
    const std::string& name = sg.nodes[h].name;
    const int hv = g.node_vertex[h];
    g.vertices[hv].iteration_head = true;
    if (config.runtime_mode == RuntimeMode::kBatch) {
      return absl::InvalidArgumentError("iteration '" + name +
                                        "' cannot run in batch mode: its stages would wait for each other; use "
                                        "--runtime-mode streaming");
    }
    if (config.failover == FailoverStrategy::kTask) {
      return absl::InvalidArgumentError("iteration '" + name +
                                        "' restarts as a whole with its region: use --failover region or full");
    }
    // Downstream of the head, over every edge but feedback edges.
    std::vector<bool> down(nv, false);
    std::vector<int> todo{hv};
    down[hv] = true;
    while (!todo.empty()) {
      const int v = todo.back();
      todo.pop_back();
      for (int e : g.vertices[v].outputs) {
        const JobEdge& je = g.edges[e];
        if (je.feedback || down[je.target_vertex]) continue;
        down[je.target_vertex] = true;
        todo.push_back(je.target_vertex);
      }
    }
    // Upstream of its feedback edges' sources, inside `down`.
    std::vector<bool> up(nv, false);
    bool closed = false;
    for (const int e : g.vertices[hv].inputs) {
      const JobEdge& je = g.edges[e];
      if (!je.feedback) continue;
      closed = true;
      const detail::StreamEdge& se = sg.edges[je.stream_edge];
      if (!down[je.source_vertex]) {
        return absl::InvalidArgumentError("the feedback of iteration '" + name + "' comes from '" +
                                          sg.nodes[se.from].name +
                                          "', which is not downstream of the iteration: close_with takes a stream "
                                          "computed from the iteration's records");
      }
      if (je.kind == detail::PartitionKind::kForward) {
        return absl::InvalidArgumentError("the feedback of iteration '" + name +
                                          "' is forward: feed it back with key_by, rebalance or broadcast (every "
                                          "head subtask must hear from every feedback subtask to agree on the "
                                          "iteration's end)");
      }
      if (!up[je.source_vertex]) {
        up[je.source_vertex] = true;
        todo.push_back(je.source_vertex);
      }
    }
    if (!closed) {
      return absl::InvalidArgumentError("iteration '" + name + "' is never closed: call close_with(feedback)");
    }
    while (!todo.empty()) {
      const int v = todo.back();
      todo.pop_back();
      for (int e : g.vertices[v].inputs) {
        const JobEdge& je = g.edges[e];
        if (je.feedback || !down[je.source_vertex] || up[je.source_vertex]) continue;
        up[je.source_vertex] = true;
        todo.push_back(je.source_vertex);
      }
    }
    for (int v = 0; v < nv; ++v) {
      if (!up[v]) continue;
      if (loop_of[v] >= 0) {
        return absl::InvalidArgumentError("iterations '" + g.vertices[loop_of[v]].name + "' and '" + name +
                                          "' share '" + g.vertices[v].name +
                                          "': an iteration's loop cannot run inside another's");
      }
      loop_of[v] = hv;
    }
  }
  for (JobEdge& e : g.edges) {
    if (loop_of[e.source_vertex] < 0 || loop_of[e.source_vertex] != loop_of[e.target_vertex]) continue;
    e.in_loop = true;
    if (e.blocking()) {
      return absl::InvalidArgumentError("the loop of iteration '" + g.vertices[loop_of[e.source_vertex]].name +
                                        "' has a " + std::string(to_string(e.exchange)) +
                                        " exchange: a cycle runs pipelined (use --exchange pipelined)");
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::shared_ptr<const JobGraph>> build_job_graph(const detail::StreamGraph& sg,
                                                                const JobConfig& config) {
  auto g = std::make_shared<JobGraph>();
  g->stream = sg;
  g->max_parallelism = config.max_parallelism;
  const size_t n = sg.nodes.size();
  if (config.max_parallelism < 1 || config.max_parallelism > 32768) {
    return absl::InvalidArgumentError("max parallelism must be in [1, 32768], got " +
                                      std::to_string(config.max_parallelism));
  }
  if (n == 0) return absl::InvalidArgumentError("the job has no operators");

  std::vector<std::vector<int>> in_edges(n), out_edges(n);
  for (size_t e = 0; e < sg.edges.size(); ++e) {
    in_edges[sg.edges[e].to].push_back(static_cast<int>(e));
    out_edges[sg.edges[e].from].push_back(static_cast<int>(e));
  }

  // Parallelism and uids.
  g->uids.resize(n);
  g->node_parallelism.resize(n);
  std::set<std::string> seen;
  bool has_source = false;
  for (size_t i = 0; i < n; ++i) {
    const detail::StreamNode& node = sg.nodes[i];
    int p = node.parallelism > 0 ? node.parallelism : config.default_parallelism;
    if (p < 1 || p > config.max_parallelism) {
      return absl::InvalidArgumentError("operator '" + node.name + "': parallelism " +
                                        std::to_string(p) + " is outside [1, max parallelism " +
                                        std::to_string(config.max_parallelism) + "]");
    }
    g->node_parallelism[i] = p;
    has_source |= node.is_source;
    if (!node.is_source && in_edges[i].empty()) {
      return absl::InvalidArgumentError("operator '" + node.name + "' has no input");
    }
    std::string uid = node.uid;
    if (uid.empty()) {
      // Derived from the operator's position and inputs: stable for the same program.
      std::string basis = std::to_string(i) + "|" + node.name;
      for (int e : in_edges[i]) {
        if (!sg.edges[e].feedback) basis += "|" + g->uids[sg.edges[e].from];
      }
      char buf[17];
      std::snprintf(buf, sizeof(buf), "%016llx",
                    static_cast<unsigned long long>(hash_bytes(basis.data(), basis.size())));
      uid = node.name + "-" + buf;
    }
    if (!seen.insert(uid).second) {
      return absl::InvalidArgumentError("operator uid '" + uid + "' is used twice");
    }
    g->uids[i] = uid;
  }
  if (!has_source) return absl::InvalidArgumentError("the job has no source");
  if (config.runtime_mode == RuntimeMode::kBatch) {
    if (!config.restore.empty()) {
      return absl::InvalidArgumentError("runtime mode batch does not restore state (--restore " + config.restore +
                                        "): a batch job computes its result from its bounded input alone");
    }
    for (const detail::StreamNode& node : sg.nodes) {
      if (node.is_source && !(node.bounded && node.bounded())) {
        return absl::InvalidArgumentError("runtime mode batch needs bounded sources; source '" + node.name +
                                          "' is unbounded");
      }
    }
  }

  // Resolve partitioning and chain.
  auto resolved_kind = [&](const detail::StreamEdge& e) -> absl::StatusOr<detail::PartitionKind> {
    bool same = g->node_parallelism[e.from] == g->node_parallelism[e.to];
    switch (e.kind) {
      case detail::PartitionKind::kDefault:
        return same ? detail::PartitionKind::kForward : detail::PartitionKind::kRebalance;
      case detail::PartitionKind::kForward:
        if (!same) {
          return absl::InvalidArgumentError(
              "forward edge from '" + sg.nodes[e.from].name + "' to '" + sg.nodes[e.to].name +
              "' needs equal parallelism (" + std::to_string(g->node_parallelism[e.from]) +
              " vs " + std::to_string(g->node_parallelism[e.to]) + ")");
        }
        return e.kind;
      default:
        return e.kind;
    }
  };

  g->node_vertex.assign(n, -1);
  std::vector<detail::PartitionKind> kinds(sg.edges.size());
  for (size_t e = 0; e < sg.edges.size(); ++e) {
    auto k = resolved_kind(sg.edges[e]);
    if (!k.ok()) return k.status();
    kinds[e] = *k;
  }
  for (size_t i = 0; i < n; ++i) {  // node ids are a topological order
    const auto& ins = in_edges[i];
    // An edge asked to be blocking or persisted is a network edge.
    // Nothing is chained to an iteration head: it takes one record at a
    // time, never waiting in a push, so it always drains its feedback.
    bool chain = ins.size() == 1 && kinds[ins[0]] == detail::PartitionKind::kForward &&
                 !sg.nodes[i].is_source && !sg.nodes[sg.edges[ins[0]].from].iteration_head &&
                 sg.edges[ins[0]].exchange.value_or(ExchangeMode::kPipelined) == ExchangeMode::kPipelined;
    if (chain) {
      int v = g->node_vertex[sg.edges[ins[0]].from];
      g->node_vertex[i] = v;
      g->vertices[v].nodes.push_back(static_cast<int>(i));
      g->vertices[v].name += " -> " + sg.nodes[i].name;
      continue;
    }
    JobVertex v;
    v.id = static_cast<int>(g->vertices.size());
    v.name = sg.nodes[i].name;
    v.parallelism = g->node_parallelism[i];
    v.is_source = sg.nodes[i].is_source;
    v.nodes.push_back(static_cast<int>(i));
    g->node_vertex[i] = v.id;
    g->vertices.push_back(std::move(v));
  }
  // Vertex names are unique: a repeated one gets " (2)", " (3)", ... in
  // vertex order, so that the web UI, the CLI and the logs tell them apart.
  std::map<std::string, int> names;
  for (JobVertex& v : g->vertices) {
    const int count = ++names[v.name];
    if (count == 1) continue;
    std::string name = v.name + " (" + std::to_string(count) + ")";
    for (int more = count; names.count(name) != 0; ++more) name = v.name + " (" + std::to_string(more + 1) + ")";
    names[name] = 1;
    v.name = std::move(name);
  }
  for (size_t e = 0; e < sg.edges.size(); ++e) {
    int from_v = g->node_vertex[sg.edges[e].from];
    int to_v = g->node_vertex[sg.edges[e].to];
    if (from_v == to_v && !sg.edges[e].feedback) continue;  // chained
    JobEdge je;
    je.feedback = sg.edges[e].feedback;
    je.stream_edge = static_cast<int>(e);
    je.source_vertex = from_v;
    je.target_vertex = to_v;
    je.kind = kinds[e];
    je.pointwise = kinds[e] == detail::PartitionKind::kForward;
    je.exchange = sg.edges[e].exchange.value_or(config.effective_exchange());
    int idx = static_cast<int>(g->edges.size());
    g->vertices[from_v].outputs.push_back(idx);
    g->vertices[to_v].inputs.push_back(idx);
    g->edges.push_back(je);
  }
  if (absl::Status s = check_iterations(*g, config); !s.ok()) return s;
  if (config.checkpoint.unaligned && config.checkpoint.mode != CheckpointingMode::kExactlyOnce) {
    return absl::InvalidArgumentError("unaligned checkpoints are exactly-once checkpoints: --checkpointing unaligned "
                                      "needs --mode exactly-once, not " +
                                      std::string(to_string(config.checkpoint.mode)));
  }
  if (config.failover == FailoverStrategy::kTask) {
    if (config.checkpoint.mode == CheckpointingMode::kExactlyOnce) {
      return absl::InvalidArgumentError(
          "--failover task drops the records in flight to and from the restarted subtask, which exactly-once "
          "cannot allow: use --mode at-least-once or at-most-once, or --failover region");
    }
    if (g->staged()) {
      return absl::InvalidArgumentError(
          "--failover task restarts one subtask while its neighbours run; a job with blocking or persisted "
          "exchanges restarts whole stages from their inputs: use --failover region");
    }
  }
  for (const JobEdge& e : g->edges) {
    if (!e.blocking()) continue;
    if (config.checkpoint.mode == CheckpointingMode::kAtMostOnce) {
      return absl::InvalidArgumentError(
          "exchange " + std::string(to_string(e.exchange)) +
          " cannot run at-most-once: a failed stage re-reads its whole input, while at-most-once sources "
          "continue where they were; use --mode none, or --exchange pipelined");
    }
    if (e.exchange == ExchangeMode::kPersisted && config.checkpoint.directory.empty()) {
      return absl::InvalidArgumentError(
          "exchange persisted writes its results under the checkpoint directory: set --checkpoint-dir");
    }
  }
  return std::shared_ptr<const JobGraph>(std::move(g));
}

std::vector<int> pipelined_regions(const JobGraph& g) {
  std::vector<int> parent(g.total_subtasks());
  for (size_t i = 0; i < parent.size(); ++i) parent[i] = static_cast<int>(i);
  std::function<int(int)> find = [&](int x) { return parent[x] == x ? x : parent[x] = find(parent[x]); };
  auto join = [&](int a, int b) { parent[find(a)] = find(b); };
  for (const auto& e : g.edges) {
    if (e.blocking()) continue;
    const int producers = g.vertices[e.source_vertex].parallelism;
    const int consumers = g.vertices[e.target_vertex].parallelism;
    if (e.pointwise) {
      for (int s = 0; s < producers; ++s) join(g.task_index(e.source_vertex, s), g.task_index(e.target_vertex, s));
      continue;
    }
    const int first = g.task_index(e.source_vertex, 0);
    for (int s = 1; s < producers; ++s) join(first, g.task_index(e.source_vertex, s));
    for (int s = 0; s < consumers; ++s) join(first, g.task_index(e.target_vertex, s));
  }
  std::vector<int> region(parent.size());
  std::map<int, int> ids;
  for (size_t i = 0; i < parent.size(); ++i) {
    region[i] = ids.try_emplace(find(static_cast<int>(i)), static_cast<int>(ids.size())).first->second;
  }
  return region;
}

std::vector<std::set<int>> region_inputs(const JobGraph& g, const std::vector<int>& region_of) {
  const int regions = region_of.empty() ? 0 : *std::max_element(region_of.begin(), region_of.end()) + 1;
  std::vector<std::set<int>> inputs(regions);
  for (const auto& e : g.edges) {
    if (!e.blocking()) continue;
    const int producers = g.vertices[e.source_vertex].parallelism;
    const int consumers = g.vertices[e.target_vertex].parallelism;
    for (int c = 0; c < consumers; ++c) {
      for (int p = 0; p < producers; ++p) {
        if (e.pointwise && p != c) continue;
        inputs[region_of[g.task_index(e.target_vertex, c)]].insert(region_of[g.task_index(e.source_vertex, p)]);
      }
    }
  }
  return inputs;
}

}  // namespace weir::graph
