// The registry of Nexmark queries; the jobs are in queries_*.cc.
#include "examples/nexmark/queries.h"

#include <fstream>
#include <functional>
#include <map>

#include "examples/nexmark/query_util.h"

namespace weir::nexmark {
namespace {

using namespace internal;  // NOLINT: the query builders

using Builder = std::function<absl::Status(StreamEnvironment&, const QueryOptions&)>;

// Adapts the builders that cannot fail.
template <void (*F)(StreamEnvironment&, const QueryOptions&)>
absl::Status ok(StreamEnvironment& env, const QueryOptions& o) {
  F(env, o);
  return absl::OkStatus();
}

const std::map<std::string, Builder>& builders() {
  static const auto* m = new std::map<std::string, Builder>{
      {"q0", ok<q0>},   {"q1", ok<q1>},   {"q2", ok<q2>},   {"q3", ok<q3>},   {"q4", ok<q4>},
      {"q5", ok<q5>},   {"q6", ok<q6>},   {"q7", ok<q7>},   {"q8", ok<q8>},   {"q9", ok<q9>},   {"q10", ok<q10>}, {"q11", ok<q11>},
      {"q12", ok<q12>}, {"q13", q13},     {"q14", ok<q14>}, {"q15", ok<q15>}, {"q16", ok<q16>},
      {"q17", ok<q17>}, {"q18", ok<q18>}, {"q19", ok<q19>}, {"q20", ok<q20>}, {"q21", ok<q21>},
      {"q22", ok<q22>}};
  return *m;
}

}  // namespace

const std::vector<std::string>& implemented_queries() {
  static const auto* v = [] {
    auto* out = new std::vector<std::string>;
    for (const auto& [name, fn] : builders()) out->push_back(name);
    return out;
  }();
  return *v;
}

absl::Status build_query(StreamEnvironment& env, const QueryOptions& o) {
  auto it = builders().find(o.query);
  if (it == builders().end()) {
    std::string known;
    for (const auto& q : implemented_queries()) known += (known.empty() ? "" : ", ") + q;
    return absl::InvalidArgumentError("unknown or not yet implemented query '" + o.query +
                                      "' (implemented: " + known + ")");
  }
  return it->second(env, o);
}

absl::Status write_default_side_input(const std::string& path) {
  std::ofstream out(path, std::ios::trunc);
  for (int i = 0; i < 10000; ++i) out << i << ',' << i << '\n';
  out.close();
  if (!out) return absl::PermissionDeniedError("cannot write side input " + path);
  return absl::OkStatus();
}

}  // namespace weir::nexmark

