// The embedded cluster: a JobManager and a TaskManager in this process,
// talking through the same gateway interfaces a multi-process cluster uses.
#ifndef WEIR_RUNTIME_MINI_CLUSTER_H_
#define WEIR_RUNTIME_MINI_CLUSTER_H_

#include <memory>
#include <optional>
#include <string>

#include "checkpoint/storage.h"
#include "graph/job_graph.h"

#include "absl/status/statusor.h"
#include "weir/config.h"
#include "weir/detail/graph.h"
#include "weir/job_control.h"
#include "weir/job_result.h"

namespace weir::runtime {

// Builds the job graph, finds the checkpoint to restore (config.restore),
// runs the job to its end. Errors in the job's definition, its restore
// point or its configuration come back as a status; the job's own fate is
// in JobResult::status.
// The parts of starting a job the embedded cluster and the JobManager share.
std::string new_job_id();
// Network buffers the job needs at most at once.
int64_t buffers_needed(const graph::JobGraph& g, const NetworkConfig& net);
// The checkpoint config.restore names (null when it is empty), checked
// against the job: known operators, same max parallelism.
absl::StatusOr<std::optional<checkpoint::RestoredCheckpoint>> find_restore(const graph::JobGraph& g,
                                                                          const JobConfig& config);
// Where the job's checkpoints go: its checkpoint directory, a directory or
// s3://BUCKET/PREFIX (in memory when none), savepoints to their own
// directories. Fails when s3:// storage has no credentials.
absl::StatusOr<std::shared_ptr<checkpoint::RoutingCheckpointStorage>> make_job_storage(const JobConfig& config,
                                                                                       const std::string& job_id);

absl::StatusOr<JobResult> run_embedded(const detail::StreamGraph& graph, const JobConfig& config,
                                       const std::string& job_name, JobControl* control = nullptr);

}  // namespace weir::runtime

#endif  // WEIR_RUNTIME_MINI_CLUSTER_H_
