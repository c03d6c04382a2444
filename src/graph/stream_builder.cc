// The graph building behind the DataStream API: nodes and the edges between
// them, compiled once here for every record type (weir/stream.h keeps only
// the typed parts).
#include <utility>

#include "weir/stream.h"

namespace weir {

detail::StreamNode& StreamEnvironment::add_node(std::string name) {
  detail::StreamNode n;
  n.id = static_cast<int>(graph_.nodes.size());
  n.name = std::move(name);
  graph_.nodes.push_back(std::move(n));
  return graph_.nodes.back();
}

void StreamEnvironment::add_edge(detail::StreamEdge e) { graph_.edges.push_back(std::move(e)); }

int StreamEnvironment::add_stream(detail::StreamSpec spec) {
  streams_.push_back(std::move(spec));
  return static_cast<int>(streams_.size()) - 1;
}

namespace detail {

StreamRef::StreamRef(StreamEnvironment* env, int node, const RecordOps* ops) : env_(env) {
  StreamSpec spec;
  spec.nodes = {node};
  spec.ops = ops;
  id_ = env->add_stream(std::move(spec));
}

StreamRef::StreamRef(StreamEnvironment* env, StreamSpec spec) : env_(env), id_(env->add_stream(std::move(spec))) {}

const StreamSpec& StreamRef::spec() const { return env_->streams_[id_]; }

int StreamRef::add_operator(std::string name, bool keyed,
                            std::function<std::unique_ptr<OperatorBase>()> make) const {
  StreamNode& n = env_->add_node(std::move(name));
  n.make_operator = std::move(make);
  n.is_keyed = keyed;
  int id = n.id;
  connect(id, 0);
  return id;
}

void StreamRef::connect(int node, int input) const {
  const StreamSpec& s = spec();
  for (int from : s.nodes) {
    StreamEdge e;
    e.from = from;
    e.to = node;
    e.input = input;
    e.kind = s.kind;
    e.ops = s.ops;
    e.key_hash = s.key_hash;
    e.tag = s.tag;
    e.exchange = s.exchange;
    env_->add_edge(std::move(e));
  }
}

void StreamRef::connect_feedback(int head) const {
  const StreamSpec& s = spec();
  for (int from : s.nodes) {
    StreamEdge e;
    e.from = from;
    e.to = head;
    e.input = 0;
    // Unsaid: round robin over the heads (forward is refused when the job
    // graph is built).
    e.kind = s.kind == PartitionKind::kDefault ? PartitionKind::kRebalance : s.kind;
    e.ops = s.ops;
    e.key_hash = s.key_hash;
    e.tag = s.tag;
    e.exchange = s.exchange;
    e.feedback = true;
    env_->add_edge(std::move(e));
  }
}

StreamRef StreamRef::partitioned(PartitionKind kind, std::shared_ptr<const void> key_hash) const {
  StreamSpec s = spec();
  s.kind = kind;
  s.key_hash = std::move(key_hash);
  return StreamRef(env_, std::move(s));
}

StreamRef StreamRef::exchanged(ExchangeMode mode) const {
  StreamSpec s = spec();
  s.exchange = mode;
  return StreamRef(env_, std::move(s));
}

StreamRef StreamRef::union_with(const StreamRef& other) const {
  StreamSpec s = spec();
  const std::vector<int>& more = other.spec().nodes;
  s.nodes.insert(s.nodes.end(), more.begin(), more.end());
  return StreamRef(env_, std::move(s));
}

StreamRef StreamRef::side_output(const RecordOps* ops, std::string tag) const {
  StreamSpec s;
  s.nodes = spec().nodes;
  s.ops = ops;
  s.tag = std::move(tag);
  return StreamRef(env_, std::move(s));
}

void StreamRef::set_parallelism(int p) const {
  for (int n : spec().nodes) env_->node(n).parallelism = p;
}

void StreamRef::set_uid(std::string uid) const { env_->node(spec().nodes.back()).uid = std::move(uid); }

void StreamRef::set_name(std::string name) const { env_->node(spec().nodes.back()).name = std::move(name); }

}  // namespace detail
}  // namespace weir
