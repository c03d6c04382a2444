// A throwaway ZooKeeper 3.8 server for a test (Debian's zookeeper package,
// standalone), on a loopback port, its data in a directory of its own; it
// can be stopped and started again on the same port and data.
#ifndef WEIR_TESTS_ZK_SERVER_H_
#define WEIR_TESTS_ZK_SERVER_H_

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/process.h"

namespace weir::testing {

class ZkServer {
 public:
  explicit ZkServer(const TempDir& dir) : dir_(dir.path("zk")), server_(dir_) {
    std::filesystem::create_directories(dir_ + "/data");
    configure("127.0.0.1");
  }

  // Listens on every address of this host (before start()), for clients in
  // other network namespaces; quorum() stays loopback.
  void listen_on_every_address() { configure("0.0.0.0"); }

  bool start() {
    return server_.start({"/usr/bin/java", "-Xmx128m", "-cp", "/usr/share/java/*:/etc/zookeeper/conf",
                          "org.apache.zookeeper.server.quorum.QuorumPeerMain", dir_ + "/zoo.cfg"});
  }
  void stop() { server_.stop(); }
  std::string quorum() const { return "127.0.0.1:" + std::to_string(server_.port()); }
  int port() const { return server_.port(); }
  std::string log() const { return server_.log(); }

 private:
  void configure(const std::string& address) {
    // tickTime 200 ms: sessions may time out after 0.4 s to 4 s.
    std::ofstream(dir_ + "/zoo.cfg") << "tickTime=200\ndataDir=" << dir_ << "/data\nclientPort=" << server_.port()
                                     << "\nclientPortAddress=" << address << "\nadmin.enableServer=false\n";
  }

  const std::string dir_;
  LoopbackServer server_;
};

}  // namespace weir::testing

#endif  // WEIR_TESTS_ZK_SERVER_H_
