// Network namespaces joined by a bridge, as separate hosts on a /24 of
// 10.77.0.0/16 of their own (this process's preferred one, else the next no
// interface of this host uses, so two sets of hosts can exist at once); this
// process gets .254 on it. A host's cable can be pulled at the switch: a network partition that
// leaves its connections open but silent. Needs root and `ip`; everything is
// removed with the object.
#ifndef WEIR_TESTS_NETNS_HOSTS_H_
#define WEIR_TESTS_NETNS_HOSTS_H_

#include <unistd.h>

#include <map>
#include <string>
#include <vector>

#include "tests/process.h"

namespace weir::testing {

// The first three parts ("10.77.N.") of the subnet this process's hosts
// prefer; the k-th alternative after it.
inline std::string netns_subnet(int k = 0) { return "10.77." + std::to_string((::getpid() + k) % 250) + "."; }

class Hosts {
 public:
  explicit Hosts(const std::vector<std::string>& names) {
    tag_ = std::to_string(::getpid() % 100000);
    if (::access("/usr/sbin/ip", X_OK) != 0) {
      error_ = "no /usr/sbin/ip: cannot create network namespaces";
      return;
    }
    if (!pick_subnet()) {
      error_ = "cannot list this host's addresses or no free 10.77.N.0/24: " + last_;
      return;
    }
    sw_ = "wsw" + tag_;
    if (!run({"netns", "add", sw_})) {
      error_ = "cannot create network namespaces (needs root and ip netns): " + last_;
      return;
    }
    ok_ = run({"-n", sw_, "link", "add", "br0", "type", "bridge"}) && run({"-n", sw_, "link", "set", "br0", "up"});
    for (size_t i = 0; ok_ && i < names.size(); ++i) {
      std::string ns = "w" + names[i] + tag_;
      std::string ip = subnet_ + std::to_string(i + 1);
      ok_ = run({"netns", "add", ns}) && plug(ns, "v" + std::to_string(i) + "-" + tag_, ip);
      namespaces_.push_back(ns);
      ips_[names[i]] = ip;
      links_[names[i]] = "e" + std::to_string(i) + "-" + tag_;
    }
    // This process's leg, so it reaches the hosts (and they reach servers
    // it runs).
    ok_ = ok_ && run({"link", "add", "r-" + tag_, "type", "veth", "peer", "name", "er-" + tag_}) &&
          run({"link", "set", "er-" + tag_, "netns", sw_}) &&
          run({"-n", sw_, "link", "set", "er-" + tag_, "master", "br0"}) &&
          run({"-n", sw_, "link", "set", "er-" + tag_, "up"}) &&
          run({"addr", "add", own_ip() + "/24", "dev", "r-" + tag_}) && run({"link", "set", "r-" + tag_, "up"});
    if (!ok_) error_ = "cannot set up the namespaces' network: " + last_;
  }
  ~Hosts() {
    if (sw_.empty()) return;
    run({"link", "del", "r-" + tag_});
    for (const auto& ns : namespaces_) run({"netns", "del", ns});
    run({"netns", "del", sw_});
  }
  Hosts(const Hosts&) = delete;
  Hosts& operator=(const Hosts&) = delete;

  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  std::string ip(const std::string& host) const { return ips_.at(host); }
  // This process's address on the hosts' network.
  std::string own_ip() const { return subnet_ + "254"; }
  // The command prefix that runs a program on `host`.
  std::vector<std::string> launcher(const std::string& host) const {
    return {"/usr/sbin/ip", "netns", "exec", "w" + host + tag_};
  }
  // Unplugs (or plugs back) a host's cable at the switch: its connections
  // stay open but nothing passes.
  bool set_cable(const std::string& host, bool up) {
    return run({"-n", sw_, "link", "set", links_.at(host), up ? "up" : "down"});
  }

 private:
  bool pick_subnet() {
    TempDir log("ip-" + tag_);
    Child c({"/usr/sbin/ip", "-o", "-4", "addr", "show"}, log.path("ip"));
    if (c.wait() != 0) {
      last_ = c.err();
      return false;
    }
    const std::string used = slurp(log.path("ip.out"));
    for (int k = 0; k < 250; ++k) {
      const std::string s = netns_subnet(k);
      if (used.find(" " + s) == std::string::npos) {
        subnet_ = s;
        return true;
      }
    }
    return false;
  }
  bool plug(const std::string& ns, const std::string& veth, const std::string& ip) {
    std::string peer = "e" + veth.substr(1);
    return run({"link", "add", veth, "type", "veth", "peer", "name", peer}) && run({"link", "set", veth, "netns", ns}) &&
           run({"link", "set", peer, "netns", sw_}) && run({"-n", sw_, "link", "set", peer, "master", "br0"}) &&
           run({"-n", sw_, "link", "set", peer, "up"}) && run({"-n", ns, "addr", "add", ip + "/24", "dev", veth}) &&
           run({"-n", ns, "link", "set", veth, "up"}) && run({"-n", ns, "link", "set", "lo", "up"});
  }
  bool run(std::vector<std::string> args) {
    args.insert(args.begin(), "/usr/sbin/ip");
    TempDir log("ip-" + tag_);
    Child c(args, log.path("ip"));
    int code = c.wait();
    last_ = c.err();
    return code == 0;
  }

  std::string tag_, sw_, subnet_, error_, last_;
  bool ok_ = false;
  std::vector<std::string> namespaces_;
  std::map<std::string, std::string> ips_, links_;
};

}  // namespace weir::testing

#endif  // WEIR_TESTS_NETNS_HOSTS_H_
