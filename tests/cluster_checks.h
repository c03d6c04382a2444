// Checks the cluster tests share: a job's progress and restarts through the
// REST API, and its committed output.
#ifndef WEIR_TESTS_CLUSTER_CHECKS_H_
#define WEIR_TESTS_CLUSTER_CHECKS_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "examples/running_sum/running_sum.h"
#include "tests/cluster.h"

namespace weir::testing {

// Completed checkpoints of `job` so far; -1 when the REST API does not answer.
inline int64_t completed_checkpoints(Cluster& c, const std::string& job) {
  auto r = c.client().checkpoints(job);
  return r.ok() ? static_cast<int64_t>((*r)["completed"].size()) : -1;
}

// Waits (up to 60 s) until the job restarted `restarts` times and every
// subtask of its first vertex runs again; its detail then.
inline bool running_after_restarts(Cluster& c, const std::string& job, int restarts, nlohmann::json* detail) {
  return eventually(
      [&] {
        auto d = c.client().job(job);
        if (!d.ok() || (*d)["restarts"] != restarts || !d->contains("vertices")) return false;
        for (const auto& s : (*d)["vertices"][0]["subtasks"]) {
          if (s["state"] != "RUNNING") return false;
        }
        *detail = *d;
        return true;
      },
      std::chrono::seconds(60));
}

// The running-sum output committed in `out` is exactly-once for `inputs`.
inline void expect_exactly_once(const std::vector<std::string>& inputs, const std::string& out) {
  auto check = examples::check_running_sum(inputs, out);
  ASSERT_TRUE(check.ok()) << check.status();
  for (const auto& p : check->problems) ADD_FAILURE() << p;
  EXPECT_TRUE(check->exactly_once);
}

}  // namespace weir::testing

#endif  // WEIR_TESTS_CLUSTER_CHECKS_H_
