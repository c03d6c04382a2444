// The cluster's task slots. Every registered TaskManager offers its slots;
// a job attempt takes `n` of them, spread over the TaskManagers with the
// most free slots first, and gives them back when its tasks move or the job
// ends. Slots of a lost TaskManager leave the pool with it (a job holding
// one gives it back harmlessly). Thread-safe.
#ifndef WEIR_CLUSTER_SLOT_POOL_H_
#define WEIR_CLUSTER_SLOT_POOL_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "cluster/session.h"

namespace weir::cluster {

class SlotPool {
 public:
  // The TaskManager of `s` offers its slots (none in use).
  void add(const SessionPtr& s);
  // Its slots are gone.
  void remove(const SessionPtr& s);

  // Gives back `release` (slots held before, possibly on lost TaskManagers)
  // and takes `n` slots on TaskManagers with at least `buffers_needed`
  // network buffers: one entry per slot, its TaskManager's session. Unavailable,
  // with the counts, when too few are free (`release` is given back even then).
  absl::StatusOr<std::vector<SessionPtr>> allocate(int n, int64_t buffers_needed,
                                                   const std::vector<SessionPtr>& release);
  // Gives slots back; null entries and slots of removed TaskManagers are
  // ignored.
  void release(const std::vector<SessionPtr>& slots);

  // Slots in use on the TaskManager of `s` (0 once removed).
  int used(const SessionPtr& s);
  struct Totals {
    int slots = 0;
    int used = 0;
  };
  Totals totals();

 private:
  struct Offer {
    SessionPtr session;
    int used = 0;
  };
  void release_locked(const std::vector<SessionPtr>& slots) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Offer* find(const SessionPtr& s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  // By TaskManager id (ties go to the first id), each its current session.
  std::map<std::string, Offer> offers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weir::cluster

#endif  // WEIR_CLUSTER_SLOT_POOL_H_
