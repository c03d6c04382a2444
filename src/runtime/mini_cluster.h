// The embedded cluster: a JobManager and a TaskManager in this process,
// talking through the same gateway interfaces a multi-process cluster uses.
#ifndef WEIR_RUNTIME_MINI_CLUSTER_H_
#define WEIR_RUNTIME_MINI_CLUSTER_H_

#include <string>

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
absl::StatusOr<JobResult> run_embedded(const detail::StreamGraph& graph, const JobConfig& config,
                                       const std::string& job_name, JobControl* control = nullptr);

}  // namespace weir::runtime

#endif  // WEIR_RUNTIME_MINI_CLUSTER_H_
