// Reading a Prometheus text page (docs/metrics.md) in tests: GET /metrics
// of a process, its samples, sums over the samples of a name.
#ifndef WEIR_TESTS_PROMETHEUS_H_
#define WEIR_TESTS_PROMETHEUS_H_

#include <gtest/gtest.h>
#include <httplib.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "network/data_plane.h"
#include "tests/cluster.h"

namespace weir::testing {

// A Prometheus text page (docs/metrics.md) as samples: name, labels, value.
struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};
inline std::vector<Sample> parse_prometheus(const std::string& text) {
  std::vector<Sample> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    Sample s;
    size_t at = line.find_first_of("{ ");
    s.name = line.substr(0, at);
    if (at != std::string::npos && line[at] == '{') {
      ++at;
      while (at < line.size() && line[at] != '}') {
        const size_t eq = line.find("=\"", at);
        if (eq == std::string::npos) break;
        std::string key = line.substr(at, eq - at), value;
        at = eq + 2;
        for (; at < line.size() && line[at] != '"'; ++at) {
          if (line[at] == '\\' && at + 1 < line.size()) ++at;
          value += line[at];
        }
        s.labels[key] = value;
        ++at;  // the closing quote
        if (at < line.size() && line[at] == ',') ++at;
      }
      ++at;  // '}'
    }
    try {
      s.value = std::stod(line.substr(at));
    } catch (const std::exception&) {
      ADD_FAILURE() << "no value on the line: " << line;
      continue;
    }
    out.push_back(std::move(s));
  }
  return out;
}

// The sum of the samples named `name` whose labels include `match`, and
// how many there were.
struct Total {
  double sum = 0;
  int samples = 0;
};
inline Total total(const std::vector<Sample>& page, const std::string& name,
            const std::map<std::string, std::string>& match = {}) {
  Total t;
  for (const Sample& s : page) {
    if (s.name != name) continue;
    bool ok = true;
    for (const auto& [k, v] : match) ok = ok && s.labels.count(k) && s.labels.at(k) == v;
    if (!ok) continue;
    t.sum += s.value;
    ++t.samples;
  }
  return t;
}

// The series (name and labels) that appear more than once on a page:
// Prometheus rejects a page with one.
inline std::vector<std::string> duplicate_series(const std::vector<Sample>& page) {
  std::map<std::string, int> seen;
  std::vector<std::string> out;
  for (const Sample& s : page) {
    std::string series = s.name + "{";
    for (const auto& [k, v] : s.labels) series += k + "=\"" + v + "\",";
    series += "}";
    if (++seen[series] == 2) out.push_back(series);
  }
  return out;
}

// GET /metrics of `address` (HOST:PORT), with the bearer secret unless empty.
inline httplib::Result scrape(const std::string& address, const std::string& secret) {
  auto client = http_client(address);
  httplib::Client& http = *client;
  httplib::Headers auth;
  if (!secret.empty()) auth = {{"Authorization", "Bearer " + secret}};
  return http.Get("/metrics", auth);
}

}  // namespace weir::testing

#endif  // WEIR_TESTS_PROMETHEUS_H_
