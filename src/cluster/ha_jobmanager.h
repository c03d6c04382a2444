// `weir jobmanager --ha zookeeper`: one of several JobManagers, of which
// the one ZooKeeper elects leads (LeaderElection). A standing-by
// JobManager's REST port redirects every request to the leader's (307),
// and it takes no sessions; when granted leadership it starts a
// JobManager (ports, REST API, jobs) under the new epoch, which resumes
// every job recorded in the HA store from its newest committed checkpoint.
// When leadership is revoked (its ZooKeeper connection lost, or its session
// expired while it was frozen), that JobManager shuts down at once without
// ending its jobs in the store, and it stands by again. TaskManagers find
// the leader through ZooKeeper; clients try each JobManager's REST address
// in turn and follow a standby's redirect.
#ifndef WEIR_CLUSTER_HA_JOBMANAGER_H_
#define WEIR_CLUSTER_HA_JOBMANAGER_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "cluster/ha_store.h"
#include "cluster/jobmanager.h"

namespace weir::cluster {

class HaJobManager {
 public:
  HaJobManager(JobManagerOptions options, HaOptions ha);
  ~HaJobManager();
  HaJobManager(const HaJobManager&) = delete;
  HaJobManager& operator=(const HaJobManager&) = delete;

  // Checks the options (fixed ports: the leader's address is published
  // before it listens), connects to ZooKeeper and joins the election.
  absl::Status start();
  // What the leader publishes in ZooKeeper: "HOST:PORT URL", its session
  // address and its REST API's base URL.
  const std::string& address() const;
  void shutdown();

  // The session address in a published leader address.
  static std::string session_address(const std::string& published);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace weir::cluster

#endif  // WEIR_CLUSTER_HA_JOBMANAGER_H_
