// What the cluster's processes share: the secret every connection carries,
// and conversions between the runtime's messages and the control plane's
// protobuf messages.
#ifndef WEIR_CLUSTER_PROTOCOL_H_
#define WEIR_CLUSTER_PROTOCOL_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "network/tls.h"
#include "checkpoint/coordinator.h"
#include "cluster/cluster.grpc.pb.h"
#include "runtime/gateways.h"
#include "common/task_metrics.h"

namespace weir::cluster {

// The cluster secret: the contents of `file` when given (one trailing
// newline dropped), else $WEIR_SECRET, else the file $WEIR_SECRET_FILE.
// At least kMinSecretBytes long; the error says how to provide one.
inline constexpr size_t kMinSecretBytes = 16;
absl::StatusOr<std::string> load_secret(const std::string& file);

// The metadata key every call carries: "Bearer <secret>".
inline constexpr char kAuthMetadata[] = "authorization";

// The largest message the JobManager's gRPC port reads (a TaskManager's
// report, a query's result batch). Default: 16 MiB.
inline constexpr int kMaxJobManagerMessage = 16 << 20;
// Calls at once on one connection to the JobManager's gRPC port (a
// TaskManager's session, its result pushes and library fetches).
inline constexpr int kMaxStreamsPerConnection = 64;

// OK when the call carries the secret; UNAUTHENTICATED otherwise.
grpc::Status check_secret(const grpc::ServerContext& context, const std::string& secret);
// Adds the secret to a client call.
void add_secret(grpc::ClientContext* context, const std::string& secret);

// The session port's credentials: insecure without TLS files, else mutual
// TLS (each side shows a certificate the CA signed). Errors name the file.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> server_credentials(const network::TlsFiles& tls);
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> channel_credentials(const network::TlsFiles& tls);

std::shared_ptr<grpc::Channel> make_channel(const std::string& address,
                                            std::shared_ptr<grpc::ChannelCredentials> credentials);

proto::ExecutionId to_proto(const runtime::ExecutionId& id);
runtime::ExecutionId from_proto(const proto::ExecutionId& id);

// A task's counters as a heartbeat carries them.
void to_proto(const std::string& job_id, const runtime::ExecutionId& id, const TaskMetricsSnapshot& m,
              proto::TaskMetrics* out);
TaskMetricsSnapshot from_proto(const proto::TaskMetrics& m);

// A task's acknowledgement travels as checkpoint metadata (one operator
// entry per acknowledged operator state).
std::string encode_ack_states(int64_t checkpoint_id, const checkpoint::TaskAck& ack);
// A source operator's state (at-most-once positions), as in a state file.
std::string encode_operator_state(const detail::OperatorStateMap& state);
absl::StatusOr<std::vector<checkpoint::AckedOperatorState>> decode_ack_states(std::string_view bytes);

absl::Status from_grpc(const grpc::Status& s);

}  // namespace weir::cluster

#endif  // WEIR_CLUSTER_PROTOCOL_H_
