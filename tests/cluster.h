// A JobManager and TaskManagers as `weir` processes on loopback, for the
// cluster tests and benchmarks: started, waited for (each with a deadline),
// and killed with the object.
#ifndef WEIR_TESTS_CLUSTER_H_
#define WEIR_TESTS_CLUSTER_H_

#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

#include "cluster/client.h"
#include "network/data_plane.h"
#include "tests/process.h"
#include "tests/tls_certs.h"

namespace weir::testing {

using namespace std::chrono_literals;

// Polls `done` every 20 ms until it holds or `deadline` passes.
inline bool eventually(const std::function<bool()>& done, std::chrono::milliseconds deadline) {
  auto until = std::chrono::steady_clock::now() + deadline;
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

// With WEIR_TEST_TLS=1 every cluster of the tests runs with TLS on every
// port (ctest runs the cluster tests both ways: the .../tls tests).
inline bool tls_mode() {
  const char* v = std::getenv("WEIR_TEST_TLS");
  return v != nullptr && std::string(v) == "1";
}

// The CA clients trust in TLS mode, else "".
inline std::string test_tls_ca() { return tls_mode() ? test_certs().ca : ""; }

// An HTTP client of `address` (HOST:PORT): HTTPS trusting the test CA in
// TLS mode.
inline std::unique_ptr<httplib::Client> http_client(const std::string& address) {
  auto hp = network::parse_address(address);
  const std::string host = hp.ok() ? hp->first : address;
  const int port = hp.ok() ? hp->second : 0;
  auto c = std::make_unique<httplib::Client>((tls_mode() ? "https://" : "http://") + host + ":" + std::to_string(port));
  if (tls_mode()) {
    c->set_ca_cert_path(test_tls_ca().c_str());
    c->enable_server_certificate_verification(true);
  }
  return c;
}

// A JobManager and TaskManagers, each a `weir` process, in one temp dir.
// In TLS mode every process (and every client the tests run) gets the test
// certificates through $WEIR_TLS_CERT, $WEIR_TLS_KEY and $WEIR_TLS_CA.
class Cluster {
 public:
  explicit Cluster(const std::string& name, std::string heartbeat_timeout = "2s")
      : dir_(name), timeout_(std::move(heartbeat_timeout)) {
    if (tls_mode()) {
      const TestCerts& certs = test_certs();
      ::setenv("WEIR_TLS_CERT", certs.cert.c_str(), 1);
      ::setenv("WEIR_TLS_KEY", certs.key.c_str(), 1);
      ::setenv("WEIR_TLS_CA", certs.ca.c_str(), 1);
    }
    secret_file_ = dir_.path("secret");
    std::ofstream(secret_file_) << "cluster-secret-" << std::random_device{}() << "\n";
  }

  const TempDir& dir() const { return dir_; }
  const std::string& secret_file() const { return secret_file_; }
  std::string secret() const {
    std::string s = slurp(secret_file_);
    return s.substr(0, s.find('\n'));
  }
  // The session port (TaskManagers) and the REST API (clients).
  const std::string& address() const { return address_; }
  const std::string& rest() const { return rest_; }
  cluster::ClusterClient client() const { return cluster::ClusterClient(rest_, secret(), client_ca_); }
  // The CA client() trusts (a cluster started with TLS flags of its own).
  void set_client_tls_ca(std::string ca) { client_ca_ = std::move(ca); }

  // More arguments for the JobManager, before it starts.
  void add_jobmanager_args(const std::vector<std::string>& args) {
    jm_args_.insert(jm_args_.end(), args.begin(), args.end());
  }

  // More arguments for every TaskManager started after this.
  void add_taskmanager_args(const std::vector<std::string>& args) {
    tm_args_.insert(tm_args_.end(), args.begin(), args.end());
  }

  // SIGKILLs the JobManager and starts a new one on the same ports.
  void restart_jobmanager() {
    jm_->kill9();
    jm_->wait();
    std::string rest_port = rest_.substr(rest_.rfind(':') + 1);
    std::remove(dir_.path("jm.out").c_str());
    start_jobmanager(address_, rest_port);
  }

  // Starts the JobManager (on free ports unless given) and waits until it
  // listens.
  // `launcher` runs the process elsewhere (e.g. `ip netns exec NS`).
  void start_jobmanager(const std::string& bind = "127.0.0.1:0", const std::string& rest_port = "0",
                        std::vector<std::string> launcher = {}) {
    for (const std::string& a : {testing::weir_bin(), std::string("jobmanager"), std::string("--bind"), bind,
                                 std::string("--rest-port"), rest_port, std::string("--secret-file"), secret_file_,
                                 std::string("--verbose"), std::string("--heartbeat-interval"), std::string("100ms"),
                                 std::string("--heartbeat-timeout"), timeout_, std::string("--library-dir"),
                                 dir_.path("jm-libraries")}) {
      launcher.push_back(a);
    }
    launcher.insert(launcher.end(), jm_args_.begin(), jm_args_.end());
    jm_ = std::make_unique<Child>(launcher, dir_.path("jm"));
    if (!eventually([&] { return slurp(dir_.path("jm.out")).find("listening on") != std::string::npos; }, 20s)) {
      ok_ = false;
      return;
    }
    std::string out = slurp(dir_.path("jm.out"));  // "listening on H:P, rest H:R"
    address_ = out.substr(out.find("listening on ") + 13);
    address_ = address_.substr(0, address_.find(','));
    rest_ = out.substr(out.find("rest ") + 5);
    rest_ = rest_.substr(0, rest_.find('\n'));
  }

  // Starts a TaskManager and waits until the JobManager lists it.
  // `bind`: the host of its data port; `launcher` as for the JobManager.
  // `env`: NAME=VALUE settings for its environment (for example WEIR_CRASH_AT).
  Child* start_taskmanager(const std::string& id, int slots, const std::string& bind = "127.0.0.1",
                           std::vector<std::string> launcher = {}, const std::vector<std::string>& env = {}) {
    for (const std::string& a :
         {testing::weir_bin(), std::string("taskmanager"), std::string("--jobmanager"), address_,
          std::string("--slots"), std::to_string(slots), std::string("--id"), id, std::string("--bind"), bind,
          std::string("--secret-file"), secret_file_, std::string("--verbose"), std::string("--state-dir"),
          dir_.path("state"), std::string("--tmp-dir"), dir_.path("tmp"), std::string("--library-dir"),
          dir_.path(id + "-libraries")}) {
      launcher.push_back(a);
    }
    launcher.insert(launcher.end(), tm_args_.begin(), tm_args_.end());
    tms_[id] = std::make_unique<Child>(launcher, dir_.path(id), /*pipe_stderr=*/false, env);
    bool listed = eventually(
        [&] {
          auto o = client().overview();
          if (!o.ok()) return false;
          for (const auto& t : (*o)["taskmanagers"]) {
            if (t["id"] == id) return true;
          }
          return false;
        },
        20s);
    if (!listed) ok_ = false;
    return tms_[id].get();
  }
  // A JobManager on free ports and TaskManagers (id, slots), each waited
  // for; false when one did not come up (the JobManager's log says why).
  bool start(const std::vector<std::pair<std::string, int>>& taskmanagers) {
    start_jobmanager();
    for (const auto& [id, slots] : taskmanagers) {
      if (ok_) start_taskmanager(id, slots);
    }
    return ok_;
  }
  Child* taskmanager(const std::string& id) { return tms_.at(id).get(); }
  std::string jm_log() const { return slurp(dir_.path("jm.err")); }
  // False once a process did not come up in time (its log says why).
  bool ok() const { return ok_; }
  Child* jobmanager() { return jm_.get(); }

 private:
  TempDir dir_;
  std::string timeout_;
  std::string secret_file_;
  bool ok_ = true;
  std::vector<std::string> jm_args_;
  std::vector<std::string> tm_args_;
  std::string address_, rest_;
  std::string client_ca_ = test_tls_ca();
  std::unique_ptr<Child> jm_;
  std::map<std::string, std::unique_ptr<Child>> tms_;  // destroyed (killed) before jm_
};

}  // namespace weir::testing

#endif  // WEIR_TESTS_CLUSTER_H_
