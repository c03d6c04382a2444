// Leadership among JobManagers through ZooKeeper (its C client), the
// recipe Flink's ZooKeeper HA services use:
//
//   ROOT/latch/n_0000000007   one ephemeral sequential node per contender,
//                             holding its address; the lowest leads
//   ROOT/epoch                a persistent counter, raised by each new
//                             leader (compare-and-set on the node's
//                             version): the fencing token every message of
//                             that leader carries, so that TaskManagers
//                             can refuse a deposed one
//
// A contender watches only the node just before its own (no herd effect
// when the leader goes). It gives up leadership (revoked) as soon as its
// connection to ZooKeeper is lost, before its session expires and the
// others may elect a new leader; when the connection comes back with the
// session alive and its node still first, it leads again under a new
// epoch. When the session expires it joins again with a new session.
//
// Thread-safe. Callbacks run on the election's own thread, one at a time.
#ifndef WEIR_CLUSTER_LEADER_ELECTION_H_
#define WEIR_CLUSTER_LEADER_ELECTION_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

typedef struct _zhandle zhandle_t;

namespace weir::cluster {

// "WHAT PATH in ZooKeeper: CAUSE" for the ZooKeeper return code `rc`.
std::string zk_error(const std::string& what, const std::string& path, int rc);

// A ZooKeeper session for plain reads and writes (no election): connected
// when made, closed when destroyed.
class ZooKeeperSession {
 public:
  static absl::StatusOr<std::unique_ptr<ZooKeeperSession>> connect(const std::string& quorum,
                                                                    std::chrono::milliseconds session_timeout,
                                                                    std::chrono::milliseconds deadline);
  ~ZooKeeperSession();
  ZooKeeperSession(const ZooKeeperSession&) = delete;
  ZooKeeperSession& operator=(const ZooKeeperSession&) = delete;

  zhandle_t* handle() const { return zh_; }

 private:
  ZooKeeperSession() = default;
  static void on_event(zhandle_t* zh, int type, int state, const char* path, void* ctx);

  std::mutex mu_;
  std::condition_variable cv_;
  int state_ = 0;
  zhandle_t* zh_ = nullptr;
};

// Creates `path` and its parents as persistent nodes; a ZooKeeper error code.
int ensure_zk_path(zhandle_t* zh, const std::string& path);

class LeaderElection {
 public:
  struct Options {
    std::string quorum;  // HOST:PORT,HOST:PORT,...
    std::string root = "/weir/default";
    std::string address;  // what the leader's node says: where to reach it
    std::chrono::milliseconds session_timeout{10000};
  };
  struct Callbacks {
    std::function<void(int64_t epoch)> granted;
    std::function<void()> revoked;
  };

  LeaderElection(Options options, Callbacks callbacks);
  // Leaves the election (its node goes with its session).
  ~LeaderElection();
  LeaderElection(const LeaderElection&) = delete;
  LeaderElection& operator=(const LeaderElection&) = delete;

  // Connects (waiting at most `deadline`) and joins.
  absl::Status start(std::chrono::milliseconds deadline);

  // Gives up leadership (or the place in line) for others to try: our
  // node is deleted and a new one joins at the end of the line. A leader
  // that cannot lead calls it; with no other contender it is granted
  // leadership again under a new epoch.
  void step_down();

  bool is_leader() const;
  int64_t epoch() const;  // of the current leadership; 0 when not leading

  // The address in the leading node under `root`, asking `quorum`;
  // NotFound while there is no leader.
  static absl::StatusOr<std::string> leader_address(const std::string& quorum, const std::string& root,
                                                    std::chrono::milliseconds deadline);

 private:
  static void on_event(zhandle_t* zh, int type, int state, const char* path, void* ctx);
  void run();
  // One pass: connect or join if needed, then lead or watch the node
  // before ours. Returns when nothing more is to be done until an event.
  void check();
  absl::Status connect_locked(std::unique_lock<std::mutex>& lock, std::chrono::milliseconds deadline);
  absl::StatusOr<int64_t> raise_epoch();
  void set_leader(bool leader, int64_t epoch);

  const Options options_;
  const Callbacks callbacks_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  zhandle_t* zh_ = nullptr;          // under mu_
  int state_ = 0;                    // the session's last state
  bool dirty_ = false;               // an event asks for a check
  bool resign_ = false;              // step_down() asked to leave the line
  bool stopping_ = false;
  bool leader_ = false;
  int64_t epoch_ = 0;
  std::string node_;                 // our latch node, once created
  std::thread thread_;
};

}  // namespace weir::cluster

#endif  // WEIR_CLUSTER_LEADER_ELECTION_H_
