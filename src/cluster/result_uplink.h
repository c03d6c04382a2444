// How a query's result sink, running in a TaskManager, sends its batches to
// the JobManager's ResultBuffers (cluster/result_buffers.h): over the
// TaskManager process's connection to its JobManager. A process-wide hook,
// because the sink is built by a job (cli/sql_collect.h) that knows nothing
// of the process it runs in.
#ifndef WEIR_CLUSTER_RESULT_UPLINK_H_
#define WEIR_CLUSTER_RESULT_UPLINK_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "cluster/result_buffers.h"

namespace grpc {
class Channel;
}  // namespace grpc

namespace weir::cluster {

class ResultUplink {
 public:
  virtual ~ResultUplink() = default;
  // ResultBuffers::push at the JobManager: true when taken, false when the
  // result's queue stayed full for a while (send it again). NotFound: no
  // client reads the result any more; Unavailable: no JobManager to send to.
  virtual absl::StatusOr<bool> push(const ResultBatch& batch) = 0;
};

// A TaskManager's uplink: PushResults over the connection of its current
// session with the JobManager.
class JobManagerUplink final : public ResultUplink {
 public:
  explicit JobManagerUplink(std::string secret) : secret_(std::move(secret)) {}
  // The channel of a new session (null: none).
  void connect(std::shared_ptr<grpc::Channel> channel);
  absl::StatusOr<bool> push(const ResultBatch& batch) override;

 private:
  const std::string secret_;
  absl::Mutex mu_;
  std::shared_ptr<grpc::Channel> channel_ ABSL_GUARDED_BY(mu_);
};

// The uplink of this process's TaskManager; null in a process that runs
// none (an embedded job has no JobManager to send results to).
std::shared_ptr<ResultUplink> result_uplink();
// Set by a TaskManager when it starts, reset (null) when it goes.
void set_result_uplink(std::shared_ptr<ResultUplink> uplink);

}  // namespace weir::cluster

#endif  // WEIR_CLUSTER_RESULT_UPLINK_H_
