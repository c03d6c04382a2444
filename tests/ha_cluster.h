// Several `weir jobmanager --ha zookeeper` processes on a real ZooKeeper,
// and TaskManagers that find the leader through it, for the HA tests and the
// chaos soak: started, restarted on the same ports, frozen and killed.
#ifndef WEIR_TESTS_HA_CLUSTER_H_
#define WEIR_TESTS_HA_CLUSTER_H_

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cluster/client.h"
#include "cluster/leader_election.h"
#include "tests/cluster.h"
#include "tests/netns_hosts.h"
#include "tests/process.h"
#include "tests/zk_server.h"

namespace weir::testing {

// Two or more JobManagers under --ha zookeeper, TaskManagers finding the
// leader through ZooKeeper, in one temp dir. On loopback, or each JobManager
// and TaskManager on a host of its own (network namespaces, `use_hosts`)
// with ZooKeeper on this one.
class HaCluster {
 public:
  explicit HaCluster(const std::string& name) : dir_(name), zk_(dir_), ha_storage_(dir_.path("ha")) {
    secret_file_ = dir_.path("secret");
    std::ofstream(secret_file_) << "ha-cluster-secret-" << std::random_device{}() << "\n";
  }
  // Runs each JobManager and TaskManager on the host of its name (call
  // before starting anything); ZooKeeper stays here, reached at
  // hosts->own_ip().
  void use_hosts(const Hosts* hosts) {
    hosts_ = hosts;
    zk_.listen_on_every_address();
  }
  bool start_zookeeper() { return zk_.start(); }
  // How the JobManagers and TaskManagers reach ZooKeeper directly.
  std::string quorum() const {
    return hosts_ != nullptr ? hosts_->own_ip() + ":" + std::to_string(zk_.port()) : zk_.quorum();
  }
  // Where the JobManagers keep job records (default: a directory).
  void set_ha_storage(std::string s) { ha_storage_ = std::move(s); }
  ZkServer& zookeeper() { return zk_; }
  const TempDir& dir() const { return dir_; }

  // JobManager `name` on fixed free ports; returns once it runs (standing
  // by or leading). `quorum`: how it reaches ZooKeeper (default: directly).
  bool start_jobmanager(const std::string& name, std::string quorum = "") {
    if (quorum.empty()) quorum = this->quorum();
    auto& jm = jms_[name];
    if (jm.session_port == 0) {
      jm.session_port = free_loopback_port();
      jm.rest_port = free_loopback_port();
    }
    std::remove(dir_.path(name + ".out").c_str());
    jm.process = std::make_unique<Child>(
        launched_on(name, {weir_bin(), "jobmanager", "--bind", address(name) + ":" + std::to_string(jm.session_port),
                           "--rest-port", std::to_string(jm.rest_port), "--secret-file", secret_file_, "--verbose",
                           "--heartbeat-interval", "100ms", "--heartbeat-timeout", "2s", "--library-dir",
                           dir_.path(name + "-libraries"), "--ha", "zookeeper", "--ha-quorum", quorum,
                           "--ha-storage", ha_storage_, "--ha-session-timeout", "2s"}),
        dir_.path(name));
    return eventually([&] { return slurp(dir_.path(name + ".out")).find("standing by") != std::string::npos; },
                      20s);
  }

  bool start_taskmanager(const std::string& id, int slots) {
    tms_[id] = std::make_unique<Child>(
        launched_on(id, {weir_bin(), "taskmanager", "--ha", "zookeeper", "--ha-quorum", quorum(), "--slots",
                         std::to_string(slots), "--id", id, "--bind", address(id), "--secret-file", secret_file_,
                         "--verbose", "--state-dir", dir_.path("state"), "--tmp-dir", dir_.path("tmp"),
                         "--library-dir", dir_.path(id + "-libraries")}),
        dir_.path(id));
    return eventually([&] { return taskmanagers() >= static_cast<int>(tms_.size()); }, 30s);
  }

  // The JobManager ZooKeeper names as leader, by name ("" while none).
  std::string leader() {
    auto a = cluster::LeaderElection::leader_address(zk_.quorum(), "/weir/default", 2000ms);
    if (!a.ok()) return "";
    for (const auto& [name, jm] : jms_) {
      if (a->rfind(address(name) + ":" + std::to_string(jm.session_port) + " ", 0) == 0) return name;
    }
    return "";
  }
  // The leader once it answers REST requests.
  std::string wait_for_leader(const std::string& not_this = "", std::chrono::milliseconds deadline = 30s) {
    std::string l;
    eventually(
        [&] {
          l = leader();
          return !l.empty() && l != not_this && jms_[l].process->running() && client().overview().ok();
        },
        deadline);
    return l;
  }
  Child* jobmanager(const std::string& name) { return jms_.at(name).process.get(); }
  // Where JobManager `name` takes TaskManager sessions (gRPC).
  std::string session_address(const std::string& name) const {
    return address(name) + ":" + std::to_string(jms_.at(name).session_port);
  }
  // The REST port JobManager `name` serves on while it leads.
  int rest_port(const std::string& name) const { return jms_.at(name).rest_port; }
  Child* taskmanager(const std::string& id) { return tms_.at(id).get(); }
  // SIGKILLs every process (TaskManagers first).
  void stop_all() {
    tms_.clear();
    for (auto& [name, jm] : jms_) jm.process.reset();
    zk_.stop();
  }
  std::string log(const std::string& name) { return slurp(dir_.path(name + ".err")); }
  std::string logs() {
    std::string all;
    for (const auto& [name, jm] : jms_) all += "---- " + name + "\n" + log(name);
    return all;
  }

  // A client of every JobManager's REST API (tried in turn), the leader
  // ZooKeeper names first: a frozen JobManager accepts connections but
  // answers nothing, and a client trying it first would wait out its read
  // timeout.
  cluster::ClusterClient client() {
    const std::string first = leader();
    std::string addresses;
    for (const auto& [name, jm] : jms_) {
      const std::string a = address(name) + ":" + std::to_string(jm.rest_port);
      addresses = name == first ? a + (addresses.empty() ? "" : "," + addresses)
                                : addresses + (addresses.empty() ? "" : ",") + a;
    }
    std::string secret = slurp(secret_file_);
    return cluster::ClusterClient(addresses, secret.substr(0, secret.find('\n')));
  }
  int taskmanagers() {
    auto o = client().overview();
    return o.ok() ? static_cast<int>((*o)["taskmanagers"].size()) : -1;
  }

 private:
  // Where process `name` listens, and the command that runs it there.
  std::string address(const std::string& name) const {
    return hosts_ != nullptr ? hosts_->ip(name) : "127.0.0.1";
  }
  std::vector<std::string> launched_on(const std::string& name, const std::vector<std::string>& args) const {
    std::vector<std::string> all = hosts_ != nullptr ? hosts_->launcher(name) : std::vector<std::string>{};
    all.insert(all.end(), args.begin(), args.end());
    return all;
  }

  struct JobManager {
    int session_port = 0;
    int rest_port = 0;
    std::unique_ptr<Child> process;
  };
  TempDir dir_;
  const Hosts* hosts_ = nullptr;
  ZkServer zk_;
  std::string ha_storage_;
  std::string secret_file_;
  std::map<std::string, JobManager> jms_;
  std::map<std::string, std::unique_ptr<Child>> tms_;  // destroyed before jms_
};

inline std::string job_status(cluster::ClusterClient client, const std::string& id) {
  auto j = client.job(id);
  return j.ok() ? (*j)["status"].get<std::string>() : "";
}

inline int64_t restored_id(cluster::ClusterClient client, const std::string& id) {
  auto c = client.checkpoints(id);
  if (!c.ok() || !(*c)["restored"].is_object()) return -1;
  return (*c)["restored"]["id"].get<int64_t>();
}

inline int64_t newest_checkpoint(cluster::ClusterClient client, const std::string& id) {
  auto c = client.checkpoints(id);
  if (!c.ok() || (*c)["completed"].empty()) return -1;
  return (*c)["completed"].back()["id"].get<int64_t>();
}

}  // namespace weir::testing

#endif  // WEIR_TESTS_HA_CLUSTER_H_
