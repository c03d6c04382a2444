// Peers without the cluster secret that push large query-result batches at
// a JobManager's gRPC port, for the cluster tests and the chaos soak.
#ifndef WEIR_TESTS_HOSTILE_GRPC_H_
#define WEIR_TESTS_HOSTILE_GRPC_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cluster/cluster.grpc.pb.h"

namespace weir::testing {

// `peers` at once, each on a connection of its own, offering up to
// `messages` batches of `bytes` each on one PushResults call; how many of
// the calls were refused UNAUTHENTICATED.
inline int push_without_the_secret(const std::string& address,
                                   const std::shared_ptr<grpc::ChannelCredentials>& credentials, int peers,
                                   int messages, size_t bytes) {
  std::atomic<int> refused{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < peers; ++i) {
    threads.emplace_back([&, i] {
      grpc::ChannelArguments args;
      args.SetInt(GRPC_ARG_MAX_SEND_MESSAGE_LENGTH, -1);
      args.SetInt("weir.hostile_peer", i);  // a connection per peer, not one shared
      auto stub = cluster::proto::JobManagerService::NewStub(grpc::CreateCustomChannel(address, credentials, args));
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
      cluster::proto::ResultReply reply;
      auto writer = stub->PushResults(&ctx, &reply);
      cluster::proto::ResultBatch batch;
      batch.set_result_id(std::string(32, 'a'));
      batch.set_rows(std::string(bytes, 'x'));
      for (int m = 0; m < messages && writer->Write(batch); ++m) {
      }
      writer->WritesDone();
      if (writer->Finish().error_code() == grpc::StatusCode::UNAUTHENTICATED) ++refused;
    });
  }
  for (auto& t : threads) t.join();
  return refused.load();
}

}  // namespace weir::testing

#endif  // WEIR_TESTS_HOSTILE_GRPC_H_
