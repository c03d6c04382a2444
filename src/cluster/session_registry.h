// The TaskManagers' sessions by TaskManager id, and the heartbeats that
// keep them: every interval each live session is sent a heartbeat, and a
// session that has sent nothing for longer than the timeout is lost. A lost
// session leaves the registry, its call is cancelled, and `on_lost` runs
// once for it (the JobManager fails its tasks and takes back its slots).
// Thread-safe.
#ifndef WEIR_CLUSTER_SESSION_REGISTRY_H_
#define WEIR_CLUSTER_SESSION_REGISTRY_H_

#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "cluster/session.h"
#include "weir/config.h"

namespace weir::cluster {

class SessionRegistry {
 public:
  using LostFn = std::function<void(const SessionPtr& s, const std::string& reason)>;
  SessionRegistry(Duration heartbeat_interval, Duration heartbeat_timeout, LostFn on_lost);
  ~SessionRegistry();
  SessionRegistry(const SessionRegistry&) = delete;
  SessionRegistry& operator=(const SessionRegistry&) = delete;

  // Starts the heartbeats.
  void start();
  // Stops the heartbeats and cancels every session's call; losses from now
  // on are not logged. Idempotent.
  void shutdown();

  // `s` becomes its TaskManager's session; an earlier session of the same
  // TaskManager is lost ("it registered again"). False once shut down.
  bool add(const SessionPtr& s);
  // `s` is lost for `reason` (logged, unless shutting down); a no-op when it
  // was lost before.
  void lose(const SessionPtr& s, const std::string& reason);
  std::vector<SessionPtr> live();
  // The live session of TaskManager `id`, or null.
  SessionPtr find(const std::string& id);

 private:
  void heartbeat_loop();

  const Duration interval_;
  const Duration timeout_;
  const LostFn on_lost_;
  std::thread heartbeats_;

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, SessionPtr> sessions_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weir::cluster

#endif  // WEIR_CLUSTER_SESSION_REGISTRY_H_
