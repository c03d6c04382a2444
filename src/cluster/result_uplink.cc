#include "cluster/result_uplink.h"

#include <grpcpp/grpcpp.h>

#include <chrono>

#include "absl/synchronization/mutex.h"
#include "cluster/protocol.h"

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

void JobManagerUplink::connect(std::shared_ptr<grpc::Channel> channel) {
  absl::MutexLock lock(&mu_);
  channel_ = std::move(channel);
}

absl::StatusOr<bool> JobManagerUplink::push(const ResultBatch& b) {
  std::shared_ptr<grpc::Channel> channel;
  {
    absl::MutexLock lock(&mu_);
    channel = channel_;
  }
  if (channel == nullptr) return absl::UnavailableError("this TaskManager has no JobManager to send query results to");
  auto stub = proto::JobManagerService::NewStub(channel);
  grpc::ClientContext ctx;
  add_secret(&ctx, secret_);
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  proto::ResultBatch req;
  req.set_result_id(b.result_id);
  req.set_subtask(b.subtask);
  req.set_subtasks(b.subtasks);
  req.set_seq(b.seq);
  req.set_rows(b.rows);
  req.set_end(b.end);
  proto::ResultReply reply;
  auto writer = stub->PushResults(&ctx, &reply);
  writer->Write(req);  // on failure, Finish says why
  writer->WritesDone();
  absl::Status s = from_grpc(writer->Finish());
  if (!s.ok()) return s;
  return reply.accepted();
}

std::shared_ptr<ResultUplink> result_uplink() {
  absl::MutexLock lock(&hook().mu);
  return hook().uplink;
}

void set_result_uplink(std::shared_ptr<ResultUplink> uplink) {
  absl::MutexLock lock(&hook().mu);
  hook().uplink = std::move(uplink);
}

}  // namespace weir::cluster
