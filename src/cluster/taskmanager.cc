// The TaskManager process: its ports (data plane, HTTP) and its session with
// the JobManager: registering (with the leader, under high availability),
// heartbeats carrying the tasks' counters, dispatching the JobManager's
// messages, and fetching job libraries. The jobs it runs are
// task_deployments.cc's; its HTTP port is taskmanager_http.cc's.
#include "cluster/taskmanager.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "cluster/ha_jobmanager.h"
#include "cluster/job_library.h"
#include "cluster/leader_election.h"
#include "cluster/metrics_exposition.h"
#include "cluster/protocol.h"
#include "cluster/queued_writer.h"
#include "cluster/result_uplink.h"
#include "cluster/task_deployments.h"
#include "cluster/taskmanager_http.h"
#include "common/clock.h"
#include "common/file_util.h"
#include "network/buffer_pool.h"
#include "network/data_plane.h"

namespace weir::cluster {
namespace {

using proto::JobManagerMessage;
using proto::TaskManagerMessage;

}  // namespace

class TaskManagerProcess::Impl {
 public:
  explicit Impl(TaskManagerOptions o)
      : options_(std::move(o)),
        pool_(options_.network_buffers, NetworkConfig{}.buffer_size),
        data_plane_(options_.secret, &pool_, NetworkConfig{}.buffers_per_channel),
        libraries_(options_.library_dir.empty() ? LibraryStore::default_directory() : options_.library_dir) {
    char host[256] = "host";
    ::gethostname(host, sizeof(host) - 1);
    host_ = host;
    if (options_.id.empty()) options_.id = "tm-" + host_ + "-" + std::to_string(::getpid());
    jobs_ = std::make_unique<TaskDeployments>(
        TaskDeployments::Options{options_.id, host_, options_.state_dir, options_.tmp_dir, options_.catalog}, &pool_,
        &data_plane_, [this](TaskManagerMessage m) { send(std::move(m)); },
        [this](const std::string& digest) { return library(digest); });
  }
  ~Impl() {
    if (result_uplink() == uplink_) set_result_uplink(nullptr);
    shutdown();
    http_.shutdown();
    jobs_->release_all();
    data_plane_.shutdown();
  }

  absl::Status start() {
    if (!options_.catalog) return absl::FailedPreconditionError("TaskManager: no job catalog to build jobs with");
    set_result_uplink(uplink_);
    data_plane_.set_result_locator([this](const network::ChannelKey& k) { return jobs_->result_file(k); });
    if (absl::Status s = network::check_cluster_tls(options_.tls); !s.ok()) return s;
    if (absl::Status s = network::check_certificate(options_.tls, options_.bind_host); !s.ok()) return s;
    auto credentials = channel_credentials(options_.tls);
    if (!credentials.ok()) return credentials.status();
    credentials_ = *credentials;
    if (options_.tls.enabled()) {
      // Mutual TLS between TaskManagers: each shows its certificate.
      auto server = network::TlsContext::create(options_.tls, network::TlsContext::Role::kServer,
                                                /*require_client_cert=*/true);
      if (!server.ok()) return server.status();
      auto client = network::TlsContext::create(options_.tls, network::TlsContext::Role::kClient,
                                                /*require_client_cert=*/false);
      if (!client.ok()) return client.status();
      data_plane_.set_tls(*server, *client);
    }
    absl::Status listening = data_plane_.listen(options_.bind_host, options_.data_port);
    if (!listening.ok() || options_.metrics_port < 0) return listening;
    TaskManagerHttpOptions http;
    http.bind_host = options_.bind_host;
    http.first_port = options_.metrics_port;
    http.last_port = options_.metrics_port_last;
    http.secret = options_.secret;
    http.metrics_public = options_.metrics_public;
    http.tls = options_.tls;
    http.tm_id = options_.id;
    auto address = http_.start(http);
    return address.ok() ? absl::OkStatus() : address.status();
  }
  const std::string& data_address() const { return data_plane_.address(); }
  const std::string& metrics_address() const { return http_.address(); }

  // Its configuration for the REST API (the secret and key paths left out).
  std::string config_json() const {
    return nlohmann::json{{"id", options_.id},
                          {"slots", options_.slots},
                          {"network_buffers", options_.network_buffers},
                          {"network_buffer_bytes", options_.network_buffers * int64_t{32 * 1024}},
                          {"bind_host", options_.bind_host},
                          {"data_address", data_plane_.address()},
                          {"metrics_address", http_.address()},
                          {"metrics_public", options_.metrics_public},
                          {"tls", options_.tls.enabled()},
                          {"high_availability", options_.ha_quorum.empty() ? "none" : "zookeeper"},
                          {"jobmanager", options_.ha_quorum.empty() ? options_.jobmanager : options_.ha_quorum},
                          {"state_dir", options_.state_dir},
                          {"tmp_dir", options_.tmp_dir},
                          {"library_dir", options_.library_dir},
                          {"host", host_},
                          {"pid", static_cast<int64_t>(::getpid())}}
        .dump();
  }

  absl::Status run() {
    while (!stopping()) {
      absl::Status s = session();
      jobs_->release_all();  // the JobManager failed every task of this session
      if (absl::IsUnauthenticated(s) || absl::IsPermissionDenied(s)) return s;
      absl::MutexLock lock(&mu_);
      mu_.AwaitWithTimeout(absl::Condition(&stopping_), absl::Milliseconds(500));
    }
    return absl::OkStatus();
  }

  void shutdown() {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    if (context_ != nullptr) context_->TryCancel();
  }

  // From task threads (through a job's JobMasterGateway).
  void send(TaskManagerMessage m) {
    absl::MutexLock lock(&mu_);
    if (writer_ != nullptr) writer_->send(std::move(m));
  }
  // Heartbeats: ahead of queued task reports.
  void send_urgent(TaskManagerMessage m) {
    absl::MutexLock lock(&mu_);
    if (writer_ != nullptr) writer_->send_urgent(std::move(m));
  }

 private:
  bool stopping() {
    absl::MutexLock lock(&mu_);
    return stopping_;
  }

  // The JobManager to register with: under high availability the leader
  // ZooKeeper names.
  absl::StatusOr<std::string> jobmanager_address() {
    if (options_.ha_quorum.empty()) return options_.jobmanager;
    HaOptions ha;
    ha.quorum = options_.ha_quorum;
    ha.cluster_id = options_.ha_cluster_id;
    auto leader = LeaderElection::leader_address(ha.quorum, ha.root(), std::chrono::seconds(5));
    if (!leader.ok()) return leader.status();
    return HaJobManager::session_address(*leader);
  }

  absl::Status session() {
    auto address = jobmanager_address();
    if (!address.ok()) {
      spdlog::warn("no JobManager to register with: {}", std::string(address.status().message()));
      return address.status();
    }
    jobmanager_ = *address;
    // A fresh channel each time: one that failed to connect would wait out
    // gRPC's reconnect backoff (up to 20 s) before trying again.
    channel_ = make_channel(jobmanager_, credentials_);
    stub_ = proto::JobManagerService::NewStub(channel_);
    uplink_->connect(channel_);
    grpc::ClientContext ctx;
    add_secret(&ctx, options_.secret);
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return absl::OkStatus();
      context_ = &ctx;
    }
    auto stream = stub_->Connect(&ctx);
    TaskManagerMessage reg;
    reg.mutable_register_()->set_taskmanager_id(options_.id);
    reg.mutable_register_()->set_data_address(data_plane_.address());
    reg.mutable_register_()->set_slots(options_.slots);
    reg.mutable_register_()->set_network_buffers(options_.network_buffers);
    reg.mutable_register_()->set_metrics_address(http_.address());
    reg.mutable_register_()->set_known_epoch(max_epoch_);
    reg.mutable_register_()->set_config_json(config_json());
    JobManagerMessage m;
    // Registered is the JobManager's first message; anything before it is
    // skipped. On failure the stream has nothing left to read, so Finish
    // (which waits for unread messages) returns.
    bool ok = stream->Write(reg);
    while (ok && (ok = stream->Read(&m)) && !m.has_registered()) {
    }
    if (!ok) {
      stream->WritesDone();
      absl::Status s = from_grpc(stream->Finish());
      {
        absl::MutexLock lock(&mu_);
        context_ = nullptr;
      }
      if (s.ok()) s = absl::UnavailableError("the JobManager ended the session");
      if (absl::IsUnauthenticated(s)) {
        return absl::UnauthenticatedError("the JobManager at " + jobmanager_ +
                                          " refused this TaskManager: " + std::string(s.message()));
      }
      spdlog::warn("cannot register at the JobManager {}: {}", jobmanager_, std::string(s.message()));
      return s;
    }
    if (m.epoch() < max_epoch_) {
      // A deposed leader that has not noticed yet.
      spdlog::warn("refusing the JobManager {}: it leads epoch {}, older than epoch {} seen before", jobmanager_,
                   m.epoch(), max_epoch_);
      ctx.TryCancel();
      stream->WritesDone();
      (void)stream->Finish();
      absl::MutexLock lock(&mu_);
      context_ = nullptr;
      return absl::FailedPreconditionError("JobManager of an older epoch");
    }
    max_epoch_ = m.epoch();
    const int64_t interval = std::max<int64_t>(m.registered().heartbeat_interval_ms(), 10);
    const int64_t timeout = std::max<int64_t>(m.registered().heartbeat_timeout_ms(), interval);
    spdlog::info("registered at the JobManager {}{} as {} ({} slots, data {}{})", jobmanager_,
                 m.epoch() > 0 ? " (leader epoch " + std::to_string(m.epoch()) + ")" : "", options_.id,
                 options_.slots, data_plane_.address(),
                 http_.address().empty() ? "" : ", metrics " + http_.address());
    auto writer = std::make_unique<QueuedWriter<TaskManagerMessage>>(
        [&stream](const TaskManagerMessage& msg) { return stream->Write(msg); });
    {
      absl::MutexLock lock(&mu_);
      writer_ = writer.get();
    }
    last_heard_ = SystemClock::instance()->now_ms();
    std::atomic<bool> session_over{false};
    absl::Mutex hb_mu;
    std::thread heartbeats([&] {
      while (!session_over) {
        {
          absl::MutexLock lock(&hb_mu);
          hb_mu.AwaitWithTimeout(absl::Condition(
                                     +[](std::atomic<bool>* b) { return b->load(); }, &session_over),
                                 absl::Milliseconds(interval));
        }
        if (session_over) return;
        int64_t silent = SystemClock::instance()->now_ms() - last_heard_;
        if (silent > timeout) {
          spdlog::warn("no heartbeat from the JobManager for {} ms; ending the session", silent);
          ctx.TryCancel();
          return;
        }
        TaskManagerMessage hb;
        hb.mutable_heartbeat()->set_sent_ms(SystemClock::instance()->now_ms());
        add_metrics(hb.mutable_heartbeat());
        send_urgent(std::move(hb));
      }
    });
    while (stream->Read(&m)) {
      last_heard_ = SystemClock::instance()->now_ms();
      if (m.epoch() < max_epoch_) {
        spdlog::warn("ignoring a message of leader epoch {} (epoch {} seen)", m.epoch(), max_epoch_);
        continue;
      }
      handle(m);
    }
    {
      absl::MutexLock lock(&hb_mu);
      session_over = true;
    }
    heartbeats.join();
    {
      absl::MutexLock lock(&mu_);
      writer_ = nullptr;
      context_ = nullptr;
    }
    writer->close();
    stream->WritesDone();
    absl::Status s = from_grpc(stream->Finish());
    if (!stopping()) {
      spdlog::warn("session with the JobManager {} ended: {}", jobmanager_,
                   s.ok() ? "closed" : std::string(s.message()));
    }
    return absl::OkStatus();
  }

  void handle(const JobManagerMessage& m) {
    switch (m.msg_case()) {
      case JobManagerMessage::kDeploy:
        jobs_->deploy(m.deploy());
        break;
      case JobManagerMessage::kAction:
        jobs_->act(m.action());
        break;
      case JobManagerMessage::kPrepareSavepoint:
        jobs_->route_savepoint(m.prepare_savepoint().job_id(), m.prepare_savepoint().checkpoint_id(),
                               m.prepare_savepoint().directory());
        break;
      case JobManagerMessage::kRelease:
        jobs_->release(m.release().job_id());
        break;
      default:
        break;  // heartbeats only refresh last_heard_
    }
  }

  // A heartbeat: the process's memory and buffers, every task's counters.
  void add_metrics(proto::Heartbeat* hb) {
    hb->set_rss_bytes(resident_bytes());
    hb->set_network_buffers_used(pool_.total() - pool_.available());
    jobs_->add_heartbeat_metrics(hb);
  }

  // GET /metrics: every task's metrics (with rates from the heartbeats),
  // and the process's network buffers and memory.
  std::string metrics_text() {
    MetricFamilies out;
    const MetricLabels tm = {{"tm_id", options_.id}};
    const int total = pool_.total(), available = pool_.available();
    const std::string netty = "weir_taskmanager_Status_Shuffle_Netty_";
    out.gauge(netty + "TotalMemorySegments", "Network buffers in the process's pool.", tm, total);
    out.gauge(netty + "AvailableMemorySegments", "Network buffers free.", tm, available);
    out.gauge(netty + "UsedMemorySegments", "Network buffers in use.", tm, total - available);
    out.gauge(netty + "TotalMemory", "Bytes of the network buffer pool.", tm,
              static_cast<double>(total) * pool_.buffer_size());
    out.gauge("weir_taskmanager_Status_ProcessMemoryRSS", "Resident bytes of the TaskManager process.", tm,
              static_cast<double>(resident_bytes()));
    out.gauge("weir_taskmanager_taskSlotsTotal", "Slots this TaskManager offers.", tm, options_.slots);
    jobs_->add_exposition(out);
    return out.text();
  }

  // The job library `digest`, from the local store or else fetched from the
  // JobManager (on the session's thread; each chunk counts as hearing from
  // the JobManager).
  absl::StatusOr<const JobLibrary*> library(const std::string& digest) {
    auto local = libraries_.load(digest);
    if (local.ok() || !(absl::IsNotFound(local.status()) || absl::IsDataLoss(local.status()))) return local;
    grpc::ClientContext ctx;
    add_secret(&ctx, options_.secret);
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(5));
    proto::LibraryRequest req;
    req.set_digest(digest);
    auto reader = stub_->FetchLibrary(&ctx);
    reader->Write(req);  // on failure, Finish says why
    reader->WritesDone();
    std::string bytes;
    proto::LibraryChunk chunk;
    while (reader->Read(&chunk)) {
      bytes += chunk.data();
      last_heard_ = SystemClock::instance()->now_ms();
    }
    absl::Status s = from_grpc(reader->Finish());
    if (!s.ok()) {
      return absl::Status(s.code(), "cannot fetch job library " + digest + " from the JobManager: " +
                                        std::string(s.message()));
    }
    auto stored = libraries_.put(digest, bytes);  // checks the digest
    if (!stored.ok()) return stored.status();
    spdlog::info("fetched job library {} ({} bytes)", digest, bytes.size());
    return JobLibrary::load(*stored);
  }

  TaskManagerOptions options_;
  std::string host_;  // this machine's name: the host label of the metrics
  network::NetworkBufferPool pool_;
  network::DataPlane data_plane_;
  LibraryStore libraries_;
  TaskManagerHttp http_{[this] { return metrics_text(); }};  // GET /metrics, /v1/log, /v1/stdout
  std::shared_ptr<grpc::ChannelCredentials> credentials_;  // the session's, set by start()
  // Query results' way to the JobManager, for this process's result sinks.
  const std::shared_ptr<JobManagerUplink> uplink_ = std::make_shared<JobManagerUplink>(options_.secret);
  std::atomic<int64_t> last_heard_{0};                    // the session's last message from the JobManager
  std::unique_ptr<TaskDeployments> jobs_;                 // set in the constructor
  std::string jobmanager_;                                // of the current session; run() thread only
  int64_t max_epoch_ = 0;                                 // newest leader epoch seen; run() thread only
  std::shared_ptr<grpc::Channel> channel_;                // run() thread only
  std::unique_ptr<proto::JobManagerService::Stub> stub_;  // run() thread only

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;
  QueuedWriter<TaskManagerMessage>* writer_ ABSL_GUARDED_BY(mu_) = nullptr;
};

TaskManagerProcess::TaskManagerProcess(TaskManagerOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}
TaskManagerProcess::~TaskManagerProcess() = default;
absl::Status TaskManagerProcess::start() { return impl_->start(); }
const std::string& TaskManagerProcess::data_address() const { return impl_->data_address(); }
const std::string& TaskManagerProcess::metrics_address() const { return impl_->metrics_address(); }
absl::Status TaskManagerProcess::run() { return impl_->run(); }
void TaskManagerProcess::shutdown() { impl_->shutdown(); }

}  // namespace weir::cluster
