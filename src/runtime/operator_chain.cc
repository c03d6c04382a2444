#include "runtime/operator_chain.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "runtime/remote_results.h"

namespace weir::runtime {
namespace {

// The partitions of the vertex's outgoing job edges, by job edge.
absl::Status build_partitions(const ChainSetting& s, OperatorChain* chain,
                              std::vector<network::ResultPartition*>* partition_of_edge) {
  const graph::JobGraph& g = *s.graph;
  const TaskDeploymentDescriptor& tdd = *s.tdd;
  partition_of_edge->assign(g.edges.size(), nullptr);
  for (int e : s.vertex->outputs) {
    const graph::JobEdge& je = g.edges[e];
    int consumers = g.vertices[je.target_vertex].parallelism;
    std::vector<std::shared_ptr<network::ChannelWriter>> chans;
    for (int c = 0; c < consumers; ++c) {
      if (je.pointwise && c != tdd.execution.subtask) continue;
      if (je.blocking()) {
        const std::string remote = network::remote_result_directory(*s.job_config, tdd.job_id, je.exchange);
        auto file = network::ResultFileWriter::create(
            network::result_file_path(network::result_directory(*s.job_config, tdd.job_id, je.exchange), e,
                                      tdd.execution.subtask, c),
            /*durable=*/je.exchange == ExchangeMode::kPersisted,
            remote.empty() ? network::ResultFileWriter::Published{} : upload_result_to(remote));
        if (!file.ok()) return file.status();
        chans.push_back(std::move(*file));
        continue;
      }
      network::ChannelKey key{tdd.job_id, channel_attempt(tdd, *s.job_config), e, tdd.execution.subtask, c};
      const std::string* where = nullptr;
      if (tdd.task_locations != nullptr) where = &tdd.task_locations->at(g.task_index(je.target_vertex, c));
      if (where != nullptr && *where != tdd.location && s.data_plane != nullptr) {
        auto remote = s.data_plane->outbound(*where, key);
        if (!remote.ok()) return remote.status();
        s.register_channel(*remote);
        chans.push_back(std::move(*remote));
      } else {
        std::shared_ptr<network::LocalChannel> local = s.channels->get(key);
        s.register_channel(local);
        chans.push_back(std::move(local));
      }
    }
    chain->partitions.push_back(
        std::make_unique<network::ResultPartition>(std::move(chans), s.pool, s.cancelled, s.metrics));
    (*partition_of_edge)[e] = chain->partitions.back().get();
  }
  return absl::OkStatus();
}

}  // namespace

bool sorts_input_by_key(const graph::JobGraph& g, const graph::JobVertex& vertex, const JobConfig& config) {
  if (config.runtime_mode != RuntimeMode::kBatch || !config.sorted_inputs || vertex.is_source ||
      vertex.inputs.empty()) {
    return false;
  }
  if (!g.stream.nodes[vertex.nodes[0]].is_keyed) return false;
  return std::all_of(vertex.inputs.begin(), vertex.inputs.end(), [&](int e) {
    const detail::StreamEdge& se = g.stream.edges[g.edges[e].stream_edge];
    return g.edges[e].kind == detail::PartitionKind::kHash && se.key_hash != nullptr &&
           se.ops->read_key_hash != nullptr;
  });
}

absl::Status build_operator_chain(const ChainSetting& s, OperatorChain* chain) {
  const graph::JobGraph& g = *s.graph;
  const graph::JobVertex& vertex = *s.vertex;
  const TaskDeploymentDescriptor& tdd = *s.tdd;
  const detail::StreamGraph& sg = g.stream;
  const int n = static_cast<int>(vertex.nodes.size());
  chain->operators.resize(n);
  chain->contexts.resize(n);
  auto index_in_chain = [&](int node) {
    auto it = std::find(vertex.nodes.begin(), vertex.nodes.end(), node);
    return it == vertex.nodes.end() ? -1 : static_cast<int>(it - vertex.nodes.begin());
  };
  std::vector<network::ResultPartition*> partition_of_edge;
  absl::Status st = build_partitions(s, chain, &partition_of_edge);
  if (!st.ok()) return st;
  // Operators, last first, so each output can point at its target.
  std::vector<int> chained_target(n, -1);
  for (int i = n - 1; i >= 0; --i) {
    int node = vertex.nodes[i];
    const detail::StreamNode& sn = sg.nodes[node];
    chain->operators[i] = sn.make_operator();
    // One key's state at a time needs no RocksDB.
    static const StateBackendConfig kHeap;
    const bool sorted = i == 0 && sorts_input_by_key(g, vertex, *s.job_config) &&
                        chain->operators[i]->supports_key_blocks();
    if (i == 0) chain->sorted_input = sorted;
    RuntimeOperatorContext::Info info;
    info.subtask = tdd.execution.subtask;
    info.parallelism = vertex.parallelism;
    info.max_parallelism = g.max_parallelism;
    info.attempt = tdd.execution.attempt;
    info.uid = g.uids[node];
    info.key_groups = tdd.key_groups;
    // A source that reported at-most-once positions continues from them.
    info.restored = (tdd.restore != nullptr && tdd.restore->find(info.uid) != nullptr) ||
                    (i == 0 && tdd.source_positions != nullptr);
    info.processing_time = s.processing_time;
    info.job_id = tdd.job_id;
    info.state_backend = sorted ? &kHeap : s.state_backend;
    info.metrics = s.metrics;
    chain->contexts[i] = std::make_unique<RuntimeOperatorContext>(std::move(info));
    // Outputs by side-output tag ("" is the main output).
    std::map<std::string, std::vector<std::unique_ptr<detail::OutputBase>>> outs;
    std::map<std::string, const detail::StreamEdge*> edge_of_tag;
    for (size_t e = 0; e < sg.edges.size(); ++e) {
      const detail::StreamEdge& se = sg.edges[e];
      if (se.from != node) continue;
      int target = se.feedback ? -1 : index_in_chain(se.to);  // a feedback edge is a network edge
      chained_target[i] = target;  // meaningful when it is the only output
      if (target >= 0) {
        outs[se.tag].push_back(se.ops->make_chained(
            chain->operators[target].get(), &chain->contexts[target]->metrics().counter(detail::kRecordsInMetric)));
      } else {
        int je = g.job_edge_of(static_cast<int>(e));
        outs[se.tag].push_back(se.ops->make_writer(partition_of_edge[je], g.max_parallelism, se.kind, se.key_hash.get()));
      }
      edge_of_tag[se.tag] = &se;
    }
    detail::OperatorBase& op = *chain->operators[i];
    op.set_output(nullptr);
    // A source counts what it emits itself (detail::kRecordsOutMetric).
    // An operator whose one output calls the next operator in the chain
    // emits what that one receives: one counter serves as both, so a
    // record costs one increment there.
    Counter* records_out = nullptr;
    if (!sn.is_source) {
      MetricGroup& group = chain->contexts[i]->metrics();
      const bool one_chained = outs.size() == 1 && outs.begin()->first.empty() && outs.begin()->second.size() == 1 &&
                               chained_target[i] >= 0;
      if (one_chained) {
        group.share_counter(detail::kRecordsOutMetric,
                            chain->contexts[chained_target[i]]->metrics().shared_counter(detail::kRecordsInMetric));
      } else {
        records_out = &group.counter(detail::kRecordsOutMetric);
      }
    }
    for (auto& [tag, list] : outs) {
      std::unique_ptr<detail::OutputBase> out =
          list.size() == 1 ? std::move(list[0]) : edge_of_tag[tag]->ops->make_fanout(std::move(list));
      if (records_out != nullptr) out->count_into(records_out);
      if (tag.empty()) {
        op.set_output(std::move(out));
      } else {
        op.set_side_output(tag, std::move(out));
      }
    }
  }
  if (vertex.is_source) {
    chain->source = dynamic_cast<detail::SourceOperatorBase*>(chain->operators[0].get());
    if (chain->source == nullptr) return absl::InternalError("source vertex without a source operator");
  }
  return absl::OkStatus();
}

}  // namespace weir::runtime
