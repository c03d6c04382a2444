// Reading a Prometheus text page (docs/metrics.md) in tests: GET /metrics
// of a process, its samples, sums over the samples of a name.
#ifndef WEIR_TESTS_PROMETHEUS_H_
#define WEIR_TESTS_PROMETHEUS_H_

#include <gtest/gtest.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "network/data_plane.h"
#include "tests/cluster.h"
#include "tests/process.h"

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

// What `promtool check metrics` says of a page: its exit code (0 clean, 3
// lint problems, 1 a page it cannot parse) and its lines of complaint.
struct PromtoolCheck {
  int code = -1;
  std::vector<std::string> problems;
};
inline PromtoolCheck promtool_check(const std::string& page, const std::string& log_prefix) {
  PromtoolCheck out;
  {
    std::ofstream(log_prefix + ".page") << page;
  }
  RunResult r = run_program({"/bin/sh", "-c", "exec /usr/bin/promtool check metrics < '" + log_prefix + ".page'"},
                            log_prefix);
  out.code = r.code;
  std::istringstream lines(r.out + r.err);
  std::string line;
  while (std::getline(lines, line)) {
    if (!line.empty()) out.problems.push_back(line);
  }
  return out;
}

// A Prometheus server (Debian's `prometheus`) for one test, scraping
// `targets` (HOST:PORT) every second with the cluster secret from
// `secret_file`, over HTTPS trusting `ca_file` unless it is ""; its data
// and log in `dir`. Stopped with it.
class PrometheusServer {
 public:
  PrometheusServer(const std::string& dir, const std::vector<std::string>& targets, const std::string& secret_file,
                   const std::string& ca_file)
      : server_(dir + "/prometheus") {
    std::string list;
    for (const std::string& t : targets) list += (list.empty() ? "\"" : ", \"") + t + "\"";
    std::ofstream(dir + "/prometheus.yml") << "global:\n"
                                               "  scrape_interval: 1s\n"
                                               "  scrape_timeout: 1s\n"
                                               "scrape_configs:\n"
                                               "  - job_name: weir\n"
                                            << (ca_file.empty() ? "" : "    scheme: https\n    tls_config: {ca_file: " + ca_file + "}\n")
                                            << "    authorization: {credentials_file: "
                                            << secret_file << "}\n"
                                            << "    static_configs:\n"
                                               "      - targets: ["
                                            << list << "]\n";
    ok_ = server_.start({"/usr/bin/prometheus", "--config.file=" + dir + "/prometheus.yml",
                         "--storage.tsdb.path=" + dir + "/data",
                         "--web.listen-address=127.0.0.1:" + std::to_string(server_.port())});
  }
  bool ok() const { return ok_; }
  std::string log() const { return server_.log(); }

  // The result vector of instant query `expr` (GET /api/v1/query), empty
  // when the query failed or gave nothing.
  nlohmann::json query(const std::string& expr) {
    httplib::Client http("127.0.0.1", server_.port());
    http.set_read_timeout(5, 0);
    auto r = http.Get("/api/v1/query", httplib::Params{{"query", expr}}, httplib::Headers{});
    if (!r || r->status != 200) return nlohmann::json::array();
    nlohmann::json body = nlohmann::json::parse(r->body, nullptr, false);
    if (body.is_discarded() || body.value("status", "") != "success") return nlohmann::json::array();
    return body["data"]["result"];
  }
  // GET /api/v1/targets: each active target's health and last error.
  nlohmann::json targets() {
    httplib::Client http("127.0.0.1", server_.port());
    auto r = http.Get("/api/v1/targets");
    if (!r || r->status != 200) return nlohmann::json::array();
    nlohmann::json body = nlohmann::json::parse(r->body, nullptr, false);
    return body.is_discarded() ? nlohmann::json::array() : body["data"]["activeTargets"];
  }

 private:
  LoopbackServer server_;
  bool ok_ = false;
};

}  // namespace weir::testing

#endif  // WEIR_TESTS_PROMETHEUS_H_
