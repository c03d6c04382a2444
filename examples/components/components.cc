// The connected-components job, written against the public API only.
#include "components.h"

#include <algorithm>
#include <charconv>
#include <functional>
#include <fstream>
#include <map>
#include <numeric>
#include <random>
#include <stdexcept>

#include "weir/connectors.h"

namespace weir::examples {
namespace {

// An edge as it enters the loop (`edge`: `other` is a neighbour of
// `vertex`), or a label offered to `vertex`.
struct Offer {
  int64_t vertex = 0;
  int64_t other = 0;
  bool edge = false;
  auto weir_fields() { return std::tie(vertex, other, edge); }
};

struct VertexState {
  int64_t label = 0;
  std::vector<int64_t> neighbours;
  auto weir_fields() { return std::tie(label, neighbours); }
};

const OutputTag<std::string> kLabels{"labels"};
const OutputTag<std::string> kRejects{"rejects"};

class Components final : public KeyedProcessFunction<int64_t, Offer, Offer> {
 public:
  Components(int64_t fail_every, uint64_t seed) : fail_every_(fail_every), seed_(seed) {}

  absl::Status open(KeyedRuntimeContext<int64_t>& ctx) override {
    state_ = &ctx.get_state(ValueStateDescriptor<VertexState>{"vertex"});
    const OperatorContext& op = ctx.operator_context();
    armed_ = op.attempt() == 0;  // later attempts fail only after progress
    std::mt19937_64 rng(seed_ * 1000003 + op.subtask_index() * 7919 + op.attempt());
    if (fail_every_ > 0) threshold_ = std::max<int64_t>(1, fail_every_ / 2 + static_cast<int64_t>(rng() % (fail_every_ + 1)));
    return absl::OkStatus();
  }

  void process_element(const Offer& in, Context& ctx, Collector<Offer>& out) override {
    const int64_t v = ctx.current_key();
    VertexState s;
    if (std::optional<VertexState> known = state_->value()) {
      s = std::move(*known);
    } else {
      s.label = v;
      emit_label(ctx, v, v);
    }
    if (in.edge) {
      s.neighbours.push_back(in.other);
      out.collect(Offer{in.other, s.label, false});
    } else if (in.other < s.label) {
      s.label = in.other;
      emit_label(ctx, v, s.label);
      for (int64_t n : s.neighbours) out.collect(Offer{n, s.label, false});
    }
    state_->update(std::move(s));
    if (fail_every_ > 0 && armed_ && ++processed_ >= threshold_) {
      armed_ = false;
      throw std::runtime_error("injected failure after " + std::to_string(processed_) + " records");
    }
  }

  void notify_checkpoint_complete(int64_t) override { armed_ = fail_every_ > 0; }

 private:
  static void emit_label(Context& ctx, int64_t vertex, int64_t label) {
    ctx.output(kLabels, std::to_string(vertex) + "," + std::to_string(label));
  }

  const int64_t fail_every_;
  const uint64_t seed_;
  ValueState<VertexState>* state_ = nullptr;
  bool armed_ = false;
  int64_t processed_ = 0;
  int64_t threshold_ = 0;
};

bool parse_int(std::string_view s, int64_t* v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

}  // namespace

ParsedEdge parse_edge_line(std::string_view text) {
  ParsedEdge e;
  if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
  const size_t space = text.find(' ');
  if (space == std::string_view::npos) {
    e.reason = "not two vertex ids";
    return e;
  }
  if (!parse_int(text.substr(0, space), &e.from) || !parse_int(text.substr(space + 1), &e.to)) {
    e.reason = "a vertex id is not an integer";
    return e;
  }
  e.ok = true;
  return e;
}

void build_components(StreamEnvironment& env, const ComponentsOptions& o) {
  env.config().default_parallelism = o.parallelism;
  const std::string path = o.input, out_dir = o.output_dir;
  const int64_t rate = o.rate, fail_every = o.fail_every;
  const uint64_t seed = o.seed;
  auto lines = env.from_source<TextLine>([path, rate] { return std::make_unique<FileSource>(path, rate); }, "edges");
  lines.uid("edges");
  auto edges = lines.transform<Offer>("parse", [] {
    // Both directions of an edge; a malformed line to the rejects.
    class Parse final : public OneInputStreamOperator<TextLine, Offer> {
     public:
      void process_element(const TextLine& l, int64_t) override {
        ParsedEdge e = parse_edge_line(l.text);
        if (!e.ok) {
          output().collect(kRejects, std::to_string(l.line_number) + "," + e.reason);
          return;
        }
        output().collect(Offer{e.from, e.to, true});
        output().collect(Offer{e.to, e.from, true});
      }
    };
    return std::make_unique<Parse>();
  });
  edges.uid("parse");
  edges.get_side_output(kRejects)
      .sink_to([out_dir] { return std::make_unique<ExactlyOnceFileSink>(out_dir, kComponentsRejectsPrefix); },
               "rejects-sink")
      .uid("rejects-sink");

  IterativeStream<Offer> loop = edges.iterate();
  loop.uid("iteration");
  auto offers = loop.key_by([](const Offer& m) { return m.vertex; })
                    .process<Offer>([fail_every, seed] { return std::make_unique<Components>(fail_every, seed); },
                                    "components");
  offers.uid("components");
  loop.close_with(offers);
  offers.get_side_output(kLabels)
      .sink_to([out_dir] { return std::make_unique<ExactlyOnceFileSink>(out_dir, kComponentsPrefix); },
               "labels-sink")
      .uid("labels-sink");
}

absl::StatusOr<ComponentsCheck> check_components(const std::string& input, const std::string& output_dir) {
  ComponentsCheck c;
  auto note = [&](std::string p) {
    if (c.problems.size() < 10) c.problems.push_back(std::move(p));
  };
  std::ifstream in(input);
  if (!in) return absl::NotFoundError("cannot read input " + input);
  // Union-find over the vertex ids, the smaller id the root.
  std::map<int64_t, int64_t> parent;
  std::function<int64_t(int64_t)> find = [&](int64_t x) {
    auto it = parent.try_emplace(x, x).first;
    if (it->second == x) return x;
    const int64_t root = find(it->second);
    parent[x] = root;
    return root;
  };
  std::map<int64_t, std::string> expected_rejects;
  std::string line;
  for (int64_t n = 1; std::getline(in, line); ++n) {
    ParsedEdge e = parse_edge_line(line);
    if (!e.ok) {
      expected_rejects[n] = e.reason;
      continue;
    }
    ++c.edges;
    const int64_t a = find(e.from), b = find(e.to);
    if (a != b) parent[std::max(a, b)] = std::min(a, b);
  }
  c.rejects_expected = static_cast<int64_t>(expected_rejects.size());
  c.vertices = static_cast<int64_t>(parent.size());
  for (const auto& [v, p] : parent) c.components += find(v) == v ? 1 : 0;

  bool exact = true;
  auto labels = read_published_lines(output_dir, kComponentsPrefix);
  if (!labels.ok()) return labels.status();
  c.output_lines = static_cast<int64_t>(labels->size());
  std::map<int64_t, int64_t> last;  // vertex -> its latest label, in commit order
  for (const std::string& l : *labels) {
    const size_t comma = l.find(',');
    int64_t v = 0, label = 0;
    if (comma == std::string::npos || !parse_int(std::string_view(l).substr(0, comma), &v) ||
        !parse_int(std::string_view(l).substr(comma + 1), &label)) {
      note("malformed output line: " + l);
      exact = false;
      continue;
    }
    auto it = last.find(v);
    if (it == last.end()) {
      if (label != v) {
        note("vertex " + std::to_string(v) + " starts at label " + std::to_string(label) + ", not its own id");
        exact = false;
      }
      last[v] = label;
      continue;
    }
    if (label >= it->second) {
      note("vertex " + std::to_string(v) + ": label " + std::to_string(label) + " committed after " +
           std::to_string(it->second) + " (a duplicate or out of order)");
      exact = false;
    }
    it->second = label;
  }
  for (const auto& [v, p] : parent) {
    auto it = last.find(v);
    if (it == last.end()) {
      note("vertex " + std::to_string(v) + " has no label");
      exact = false;
    } else if (it->second != find(v)) {
      note("vertex " + std::to_string(v) + " ends at label " + std::to_string(it->second) + ", its component's is " +
           std::to_string(find(v)));
      exact = false;
    }
  }
  if (last.size() != parent.size()) {
    note(std::to_string(last.size()) + " vertices labelled, the input has " + std::to_string(parent.size()));
    exact = false;
  }
  auto rejects = read_published_lines(output_dir, kComponentsRejectsPrefix);
  if (!rejects.ok()) return rejects.status();
  c.reject_lines = static_cast<int64_t>(rejects->size());
  std::map<int64_t, int> seen;
  for (const std::string& l : *rejects) {
    const size_t comma = l.find(',');
    int64_t n = 0;
    if (comma == std::string::npos || !parse_int(std::string_view(l).substr(0, comma), &n) ||
        expected_rejects.count(n) == 0 || expected_rejects[n] != l.substr(comma + 1) || ++seen[n] > 1) {
      note("unexpected reject line: " + l);
      exact = false;
    }
  }
  if (static_cast<int64_t>(seen.size()) != c.rejects_expected) {
    note(std::to_string(seen.size()) + " rejected lines committed, " + std::to_string(c.rejects_expected) +
         " expected");
    exact = false;
  }
  c.exactly_once = exact;
  return c;
}

absl::Status write_graph(const std::string& path, int64_t vertices, int64_t edges, int64_t bad_every, uint64_t seed) {
  std::ofstream out(path, std::ios::trunc);
  if (!out) return absl::InvalidArgumentError("cannot write " + path);
  std::mt19937_64 rng(seed);
  for (int64_t i = 1; i <= edges; ++i) {
    if (bad_every > 0 && i % bad_every == 0) {
      out << "not-an-edge " << i << "\n";
      continue;
    }
    out << static_cast<int64_t>(rng() % vertices) << ' ' << static_cast<int64_t>(rng() % vertices) << '\n';
  }
  out.close();
  if (!out) return absl::InternalError("writing " + path + " failed");
  return absl::OkStatus();
}

}  // namespace weir::examples
