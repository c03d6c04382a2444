// The jobs a cluster process can build. The engine knows no job itself: the
// program that runs a JobManager or TaskManager (the weir executable, with
// its built-in jobs of cli/jobs.h) hands it a JobCatalog, and every process
// builds the same job graph from a job's spec (a name, its arguments, and a
// job library when the job comes from one) through it.
#ifndef WEIR_CLUSTER_JOB_CATALOG_H_
#define WEIR_CLUSTER_JOB_CATALOG_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "weir/stream.h"

namespace weir::cluster {

class JobLibrary;

// A job as built from its spec.
struct BuiltJob {
  std::unique_ptr<StreamEnvironment> env;
  // Where a savepoint of the job goes when its request names no directory
  // ("" for nowhere).
  std::string savepoint_dir;
};

// Builds the job `name` with `args`, or, given `library`, that library's
// job. InvalidArgument for an unknown job or bad arguments.
using JobCatalog = std::function<absl::StatusOr<BuiltJob>(
    const std::string& name, const std::vector<std::string>& args, const JobLibrary* library)>;

// A SQL script's plan as text (`weir sql FILE --explain`), or the error
// that keeps it from running.
using SqlExplainer = std::function<absl::StatusOr<std::string>(const std::string& script)>;

}  // namespace weir::cluster

#endif  // WEIR_CLUSTER_JOB_CATALOG_H_
