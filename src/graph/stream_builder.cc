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

namespace detail {

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
  for (int from : nodes_) {
    StreamEdge e;
    e.from = from;
    e.to = node;
    e.input = input;
    e.kind = kind_;
    e.ops = ops_;
    e.key_hash = key_hash_;
    e.tag = tag_;
    env_->add_edge(std::move(e));
  }
}

StreamRef StreamRef::partitioned(PartitionKind kind, std::shared_ptr<const void> key_hash) const {
  return StreamRef(env_, nodes_, ops_, kind, std::move(key_hash), tag_);
}

StreamRef StreamRef::union_with(const StreamRef& other) const {
  std::vector<int> all = nodes_;
  all.insert(all.end(), other.nodes_.begin(), other.nodes_.end());
  return StreamRef(env_, std::move(all), ops_, kind_, key_hash_, tag_);
}

StreamRef StreamRef::side_output(const RecordOps* ops, std::string tag) const {
  return StreamRef(env_, nodes_, ops, PartitionKind::kDefault, nullptr, std::move(tag));
}

void StreamRef::set_parallelism(int p) const {
  for (int n : nodes_) env_->node(n).parallelism = p;
}

void StreamRef::set_uid(std::string uid) const { env_->node(nodes_.back()).uid = std::move(uid); }

void StreamRef::set_name(std::string name) const { env_->node(nodes_.back()).name = std::move(name); }

}  // namespace detail
}  // namespace weir
