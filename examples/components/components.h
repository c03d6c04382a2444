// The connected-components job: an iteration (a cycle in the dataflow).
// Its input is a graph's edges, one `u v` line each (two integers); for
// every vertex it writes `vertex,label` each time the vertex's label falls,
// the label being the smallest vertex id it is known to be connected to. A
// vertex's first line is its own id; once the input ended and the loop went
// quiet, every vertex's last label is the smallest id in its component.
//
// Edges enter an iteration; a keyed operator keeps each vertex's label and
// neighbours, offers its label to each new neighbour and, when its label
// falls, to all of them; the offers go round the loop. Malformed lines are
// rejected with their line number and reason into the same directory.
//
// Also the reference checker: union-find over the input gives each
// vertex's component, against which the committed output is checked.
#ifndef WEIR_EXAMPLES_COMPONENTS_H_
#define WEIR_EXAMPLES_COMPONENTS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "weir/stream.h"

namespace weir::examples {

struct ComponentsOptions {
  std::string input;
  std::string output_dir;
  int parallelism = 1;
  // A components subtask throws after about this many records (0: never),
  // then again only after a checkpoint completed in the new attempt.
  int64_t fail_every = 0;
  uint64_t seed = 0;
  int64_t rate = 0;  // lines per second per source subtask (0: as fast as it goes)
};

inline constexpr char kComponentsPrefix[] = "labels";
inline constexpr char kComponentsRejectsPrefix[] = "rejects";

void build_components(StreamEnvironment& env, const ComponentsOptions& options);

// One input line: the edge, or why it is rejected.
struct ParsedEdge {
  bool ok = false;
  int64_t from = 0;
  int64_t to = 0;
  std::string reason;
};
ParsedEdge parse_edge_line(std::string_view text);

struct ComponentsCheck {
  int64_t edges = 0;
  int64_t vertices = 0;
  int64_t components = 0;
  int64_t rejects_expected = 0;
  int64_t output_lines = 0;
  int64_t reject_lines = 0;
  // Every vertex's labels fall strictly, in commit order (a label committed
  // twice, or a later one not lower, is a duplicate from a replay), start
  // at its own id, and end at its component's smallest id; every rejected
  // line is committed once.
  bool exactly_once = false;
  std::vector<std::string> problems;  // the first few found
};
absl::StatusOr<ComponentsCheck> check_components(const std::string& input, const std::string& output_dir);

// `weir generate graph`: `edges` random edges over `vertices` vertices, one
// malformed line every `bad_every` (0: none).
absl::Status write_graph(const std::string& path, int64_t vertices, int64_t edges, int64_t bad_every, uint64_t seed);

}  // namespace weir::examples

#endif  // WEIR_EXAMPLES_COMPONENTS_H_
