// A job's task metrics as the JobManager sees them: each subtask's
// counters from its TaskManager's heartbeats (the latest attempt only), its
// rates over the last second or so, and their JSON for the REST API
// (docs/rest-api.md, METRICS). Thread-safe.
#ifndef WEIR_CLUSTER_JOB_METRICS_H_
#define WEIR_CLUSTER_JOB_METRICS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

#include "absl/synchronization/mutex.h"
#include "runtime/gateways.h"
#include "common/task_metrics.h"

namespace weir::cluster {

class JobMetrics {
 public:
  // Per second.
  struct Rates {
    double records_in = 0, records_out = 0, bytes_in = 0, bytes_out = 0;
    double backpressured_ms = 0, idle_ms = 0, busy_ms = 0;
  };

  // A report of `id`'s counters since it started, received at `now_ms`.
  // Reports of an older attempt than the latest seen are ignored; a newer
  // attempt starts afresh. Rates need two reports at least a second apart.
  void report(const runtime::ExecutionId& id, const TaskMetricsSnapshot& m, int64_t now_ms);

  // One subtask's rates for `attempt`, or null before it has any.
  std::optional<Rates> rates(int vertex, int subtask, int attempt);

  // One subtask's METRICS (null when it never reported for `attempt`).
  nlohmann::json subtask_json(int vertex, int subtask, int attempt);
  // A vertex's: counts and rates summed over its subtasks, time shares the
  // worst subtask's (null when none reported).
  nlohmann::json vertex_json(int vertex);

 private:
  struct Subtask {
    int attempt = 0;
    // Records of its earlier attempts (as of their last reports).
    int64_t earlier_records_in = 0, earlier_records_out = 0;
    TaskMetricsSnapshot now, base;
    int64_t base_ms = 0;
    bool has_rates = false;
    Rates rates;
  };
  static nlohmann::json to_json(const TaskMetricsSnapshot& m, const Rates& r, bool has_rates);

  absl::Mutex mu_;
  std::map<std::pair<int, int>, Subtask> subtasks_ ABSL_GUARDED_BY(mu_);  // (vertex, subtask)
};

}  // namespace weir::cluster

#endif  // WEIR_CLUSTER_JOB_METRICS_H_
