// One TaskManager's session with the JobManager: who it is, what it offers,
// and the ordered stream of messages to it. A session lives from the
// TaskManager's Register to the end of its gRPC call (or its loss); a
// TaskManager that registers again gets a new one.
#ifndef WEIR_CLUSTER_SESSION_H_
#define WEIR_CLUSTER_SESSION_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/synchronization/mutex.h"
#include "checkpoint/coordinator.h"
#include "cluster/cluster.grpc.pb.h"
#include "cluster/queued_writer.h"

namespace weir::cluster {

struct Session {
  std::string id;
  std::string data_address;  // host:port of its data plane
  std::string metrics_address;  // host:port of its /metrics, "" if none
  std::string config_json;      // its configuration, as it registered it
  int64_t registered_ms = 0;    // when (wall clock)
  int slots = 0;
  int network_buffers = 0;
  std::atomic<int64_t> last_heartbeat_ms{0};  // when anything last arrived from it
  // From its last heartbeat: resident memory and network buffers in use.
  std::atomic<int64_t> rss_bytes{0};
  std::atomic<int> network_buffers_used{0};
  std::atomic<bool> lost{false};
  // Null only in tests: messages are then dropped.
  std::unique_ptr<QueuedWriter<proto::JobManagerMessage>> writer;

  absl::Mutex mu;
  grpc::ServerContext* context ABSL_GUARDED_BY(mu) = nullptr;  // null once the call ended
  // Per job, the restore point whose metadata this TaskManager already has
  // (DeployTask.restore_as_before).
  std::map<std::string, std::shared_ptr<const checkpoint::CheckpointMetadata>> restore_sent ABSL_GUARDED_BY(mu);

  // In order with every other send.
  void send(proto::JobManagerMessage m) {
    if (writer != nullptr) writer->send(std::move(m));
  }
  // Heartbeats: ahead of queued deployments and actions.
  void send_urgent(proto::JobManagerMessage m) {
    if (writer != nullptr) writer->send_urgent(std::move(m));
  }
  // Ends the session's call (its stream reads fail), if it still runs.
  void cancel() {
    absl::MutexLock lock(&mu);
    if (context != nullptr) context->TryCancel();
  }
};
using SessionPtr = std::shared_ptr<Session>;

}  // namespace weir::cluster

#endif  // WEIR_CLUSTER_SESSION_H_
