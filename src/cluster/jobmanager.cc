#include "cluster/jobmanager.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "absl/synchronization/mutex.h"
#include "cluster/job_library.h"
#include "cluster/job_registry.h"
#include "cluster/protocol.h"
#include "cluster/queued_writer.h"
#include "cluster/rest_api.h"
#include "cluster/result_buffers.h"
#include "cluster/session.h"
#include "cluster/session_registry.h"
#include "cluster/slot_pool.h"
#include "common/clock.h"
#include "network/data_plane.h"

namespace weir::cluster {

using proto::JobManagerMessage;
using proto::TaskManagerMessage;

// The wiring: the gRPC service that TaskManager sessions and library
// fetches arrive on, over the parts that do the work.
class JobManager::Impl final : public proto::JobManagerService::Service {
 public:
  explicit Impl(JobManagerOptions o)
      : options_(std::move(o)),
        libraries_(options_.library_dir.empty() ? LibraryStore::default_directory() : options_.library_dir),
        jobs_(&slots_, &libraries_, options_.catalog, options_.keep_ended_jobs),
        sessions_(options_.heartbeat_interval, options_.heartbeat_timeout,
                  [this](const SessionPtr& s, const std::string& reason) {
                    slots_.remove(s);
                    jobs_.taskmanager_lost(s, "TaskManager " + s->id + " (" + s->data_address + ") lost: " + reason);
                  }),
        results_(ResultBuffers::Options{}),
        rest_(options_.secret, options_.metrics_public, &jobs_, &sessions_, &slots_, &libraries_, &results_) {}
  ~Impl() override { shutdown(/*suspend=*/false); }

  absl::Status start() {
    if (!options_.catalog) return absl::FailedPreconditionError("JobManager: no job catalog to build jobs with");
    if (absl::Status s = network::check_cluster_tls(options_.tls); !s.ok()) return s;
    if (auto host = network::parse_address(options_.bind); host.ok()) {
      if (absl::Status s = network::check_certificate(options_.tls, host->first); !s.ok()) return s;
    }
    auto credentials = server_credentials(options_.tls);
    if (!credentials.ok()) return credentials.status();
    std::shared_ptr<const network::TlsContext> https;
    if (options_.tls.enabled()) {
      auto ctx = network::TlsContext::create(options_.tls, network::TlsContext::Role::kServer,
                                             /*require_client_cert=*/false);
      if (!ctx.ok()) return ctx.status();
      https = *ctx;
    }
    grpc::ServerBuilder builder;
    builder.AddListeningPort(options_.bind, *credentials, &port_);
    // Every method reads its requests from a stream after checking the
    // secret (cluster.proto), so only authenticated peers get a message
    // read; and none larger than this.
    builder.SetMaxReceiveMessageSize(kMaxJobManagerMessage);
    builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, kMaxStreamsPerConnection);
    // A connection that does not finish its HTTP/2 handshake in time is
    // dropped; gRPC serves connections without a thread each.
    builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, 5000);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
    if (server_ == nullptr || port_ == 0) {
      return absl::UnavailableError("cannot listen on " + options_.bind + " (address in use or not local?)");
    }
    sessions_.start();
    auto host = network::parse_address(options_.bind);
    if (!host.ok()) return host.status();
    jobs_.set_result_store(std::chrono::milliseconds(options_.job_expiration.count()),
                           [](Job& j) { return archived_json(j); });
    // A new leader lists and resumes the recorded jobs before its REST API
    // answers: a client that reaches it finds every job it had.
    if (options_.ha != nullptr) {
      jobs_.set_ha_store(options_.ha);
      auto results = options_.ha->results();
      if (!results.ok()) return results.status();
      jobs_.restore_results(*std::move(results));
      auto recorded = options_.ha->jobs();
      if (!recorded.ok()) return recorded.status();
      for (const auto& job : *recorded) {
        // One job that cannot resume does not keep the others from it.
        if (absl::Status s = jobs_.recover(job); !s.ok()) {
          spdlog::error("job {} ({}) cannot be recovered: {}", job.record.job_id(), job.record.spec().name(),
                        std::string(s.message()));
        }
      }
    }
    rest_.set_jobmanager_view(config_json(), options_.tls.ca);
    rest_.set_sql_explainer(options_.explain_sql);
    auto rest_port = rest_.start(host->first, options_.rest_port, https);
    if (!rest_port.ok()) return rest_port.status();
    rest_port_ = *rest_port;
    return absl::OkStatus();
  }
  // Its configuration for the REST API (no secret, no key paths).
  nlohmann::json config_json() const {
    const std::string host = options_.bind.substr(0, options_.bind.rfind(':'));
    return {{"bind", options_.bind},
            {"session_address", host + ":" + std::to_string(port_)},  // the port taken when bind says 0
            {"rest_port", options_.rest_port},
            {"metrics_public", options_.metrics_public},
            {"keep_ended_jobs", options_.keep_ended_jobs},
            {"jobstore_expiration_time_ms", options_.job_expiration.count()},
            {"heartbeat_interval_ms", options_.heartbeat_interval.count()},
            {"heartbeat_timeout_ms", options_.heartbeat_timeout.count()},
            {"library_dir", options_.library_dir},
            {"tls", options_.tls.enabled()},
            {"high_availability", options_.ha != nullptr ? "zookeeper" : "none"},
            {"leader_epoch", options_.epoch},
            {"pid", static_cast<int64_t>(::getpid())}};
  }
  int port() const { return port_; }
  int rest_port() const { return rest_port_; }

  void wait() {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(&stopping_));
  }

  void shutdown(bool suspend) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
      stopping_ = true;
    }
    jobs_.shutdown(suspend);
    sessions_.shutdown();
    rest_.shutdown();
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  }

  // A TaskManager's session: Register, then its reports until the stream
  // ends.
  grpc::Status Connect(grpc::ServerContext* ctx,
                       grpc::ServerReaderWriter<JobManagerMessage, TaskManagerMessage>* stream) override {
    grpc::Status auth = check_secret(*ctx, options_.secret);
    if (!auth.ok()) {
      spdlog::warn("refused a TaskManager session from {}: {}", ctx->peer(), auth.error_message());
      return auth;
    }
    TaskManagerMessage first;
    if (!stream->Read(&first) || !first.has_register_()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "a session starts with Register");
    }
    if (first.register_().known_epoch() > options_.epoch) {
      spdlog::warn("refused TaskManager {}: it registered with leader epoch {}, newer than this JobManager's {}",
                   first.register_().taskmanager_id(), first.register_().known_epoch(), options_.epoch);
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                          "this JobManager leads epoch " + std::to_string(options_.epoch) + ", older than epoch " +
                              std::to_string(first.register_().known_epoch()) + ": it is no longer the leader");
    }
    auto s = std::make_shared<Session>();
    s->id = first.register_().taskmanager_id();
    s->data_address = first.register_().data_address();
    s->metrics_address = first.register_().metrics_address();
    s->config_json = first.register_().config_json();
    s->registered_ms = SystemClock::instance()->wall_ms();
    s->slots = first.register_().slots();
    s->network_buffers = first.register_().network_buffers();
    s->last_heartbeat_ms = SystemClock::instance()->now_ms();
    {
      absl::MutexLock lock(&s->mu);
      s->context = ctx;
    }
    // Registered is the session's first message: written here, before the
    // writer exists and the session is published (heartbeats take the
    // writer's urgent lane and could otherwise overtake it).
    JobManagerMessage reply;
    reply.mutable_registered()->set_heartbeat_interval_ms(options_.heartbeat_interval.count());
    reply.mutable_registered()->set_heartbeat_timeout_ms(options_.heartbeat_timeout.count());
    reply.set_epoch(options_.epoch);
    if (!stream->Write(reply)) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the TaskManager went away");
    s->writer = std::make_unique<QueuedWriter<JobManagerMessage>>([stream, epoch = options_.epoch](JobManagerMessage& m) {
      m.set_epoch(epoch);
      return stream->Write(m);
    });
    if (!sessions_.add(s)) {
      s->writer->close();
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the JobManager is shutting down");
    }
    slots_.add(s);
    spdlog::info("TaskManager {} registered (data {}, {} slots, {} network buffers{})", s->id, s->data_address,
                 s->slots, s->network_buffers, s->metrics_address.empty() ? "" : ", metrics " + s->metrics_address);

    TaskManagerMessage m;
    while (stream->Read(&m)) {
      s->last_heartbeat_ms = SystemClock::instance()->now_ms();
      if (m.has_heartbeat()) {
        s->rss_bytes = m.heartbeat().rss_bytes();
        s->network_buffers_used = m.heartbeat().network_buffers_used();
      }
      jobs_.deliver(m);
    }
    sessions_.lose(s, "its connection closed");
    {
      absl::MutexLock lock(&s->mu);
      s->context = nullptr;
    }
    s->writer->close();
    return grpc::Status::OK;
  }

  grpc::Status FetchLibrary(grpc::ServerContext* ctx,
                            grpc::ServerReaderWriter<proto::LibraryChunk, proto::LibraryRequest>* stream) override {
    grpc::Status auth = check_secret(*ctx, options_.secret);
    if (!auth.ok()) {
      spdlog::warn("refused a library request from {}: {}", ctx->peer(), auth.error_message());
      return auth;
    }
    proto::LibraryRequest req;
    if (!stream->Read(&req)) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "no library request");
    auto bytes = libraries_.read(req.digest());
    if (!bytes.ok()) {
      return grpc::Status(absl::IsNotFound(bytes.status()) ? grpc::StatusCode::NOT_FOUND : grpc::StatusCode::INTERNAL,
                          std::string(bytes.status().message()));
    }
    constexpr size_t kChunk = 1 << 20;
    proto::LibraryChunk chunk;
    for (size_t at = 0; at < bytes->size(); at += kChunk) {
      chunk.set_data(bytes->substr(at, kChunk));
      if (!stream->Write(chunk)) return grpc::Status(grpc::StatusCode::CANCELLED, "the TaskManager went away");
    }
    return grpc::Status::OK;
  }

  grpc::Status PushResults(grpc::ServerContext* ctx, grpc::ServerReader<proto::ResultBatch>* reader,
                           proto::ResultReply* reply) override {
    grpc::Status auth = check_secret(*ctx, options_.secret);
    if (!auth.ok()) return auth;
    proto::ResultBatch batch;
    if (!reader->Read(&batch)) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "no result batch");
    const proto::ResultBatch* req = &batch;
    ResultBatch b{req->result_id(), req->subtask(), req->subtasks(), req->seq(), req->rows(), req->end()};
    auto taken = results_.push(b, absl::Seconds(1));
    if (!taken.ok()) {
      return grpc::Status(absl::IsNotFound(taken.status()) ? grpc::StatusCode::NOT_FOUND
                                                           : grpc::StatusCode::INVALID_ARGUMENT,
                          std::string(taken.status().message()));
    }
    reply->set_accepted(*taken);
    return grpc::Status::OK;
  }

 private:
  const JobManagerOptions options_;
  LibraryStore libraries_;
  SlotPool slots_;
  JobRegistry jobs_;           // its jobs hold slots
  SessionRegistry sessions_;   // after jobs_: a lost session fails their tasks
  ResultBuffers results_;      // queries' rows on their way to their clients
  RestApi rest_;               // after what it serves
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  int rest_port_ = -1;

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

JobManager::JobManager(JobManagerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
JobManager::~JobManager() = default;
absl::Status JobManager::start() { return impl_->start(); }
int JobManager::port() const { return impl_->port(); }
int JobManager::rest_port() const { return impl_->rest_port(); }
void JobManager::wait() { impl_->wait(); }
void JobManager::shutdown(bool suspend) { impl_->shutdown(suspend); }

}  // namespace weir::cluster
