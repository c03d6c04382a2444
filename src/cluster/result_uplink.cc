#include "cluster/result_uplink.h"

#include "absl/synchronization/mutex.h"

namespace weir::cluster {
namespace {

struct Hook {
  absl::Mutex mu;
  std::shared_ptr<ResultUplink> uplink ABSL_GUARDED_BY(mu);
};

Hook& hook() {
  static Hook* h = new Hook;  // never destroyed: tasks may outlive static destruction
  return *h;
}

}  // namespace

std::shared_ptr<ResultUplink> result_uplink() {
  absl::MutexLock lock(&hook().mu);
  return hook().uplink;
}

void set_result_uplink(std::shared_ptr<ResultUplink> uplink) {
  absl::MutexLock lock(&hook().mu);
  hook().uplink = std::move(uplink);
}

}  // namespace weir::cluster
