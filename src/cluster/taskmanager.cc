// The TaskManager process's side of its session with the JobManager:
// registering (with the leader, under high availability), deploying and
// releasing jobs' tasks, relaying their states, acknowledgements and
// counters, heartbeats, and fetching job libraries. Its HTTP port is
// taskmanager_http.cc's.
#include "cluster/taskmanager.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "cluster/ha_jobmanager.h"
#include "cluster/leader_election.h"
#include "cluster/job_library.h"
#include "cluster/job_metrics.h"
#include "cluster/metrics_exposition.h"
#include "cluster/protocol.h"
#include "cluster/taskmanager_http.h"
#include "common/clock.h"
#include "common/file_util.h"
#include "cluster/queued_writer.h"
#include "cluster/result_uplink.h"
#include "graph/job_graph.h"
#include "network/buffer_pool.h"
#include "network/data_plane.h"
#include "network/result_file.h"
#include "absl/strings/numbers.h"
#include "runtime/mini_cluster.h"
#include "runtime/task_manager.h"

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
  }
  ~Impl() {
    if (result_uplink() == uplink_) set_result_uplink(nullptr);
    shutdown();
    http_.shutdown();
    release_all();
    data_plane_.shutdown();
  }

  absl::Status start() {
    if (!options_.catalog) return absl::FailedPreconditionError("TaskManager: no job catalog to build jobs with");
    set_result_uplink(uplink_);
    data_plane_.set_result_locator([this](const network::ChannelKey& k) -> absl::StatusOr<std::string> {
      absl::MutexLock lock(&mu_);
      auto it = jobs_.find(k.job_id);
      if (it == jobs_.end()) {
        return absl::NotFoundError("job " + k.job_id + " does not run on TaskManager " + options_.id);
      }
      return network::result_file_path(it->second->result_dir, k.job_edge, k.producer, k.consumer);
    });
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
      release_all();  // the JobManager failed every task of this session
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
  // Forwards a job's task reports to the JobManager.
  class MasterProxy final : public runtime::JobMasterGateway {
   public:
    MasterProxy(Impl* tm, std::string job_id) : tm_(tm), job_id_(std::move(job_id)) {}
    void update_task_state(const runtime::ExecutionId& id, runtime::ExecutionState state,
                           const std::string& error, bool unrecoverable) override {
      spdlog::info("job {}: {} {}{}", job_id_, id.to_string(), runtime::to_string(state),
                   error.empty() ? "" : ": " + error);
      TaskManagerMessage m;
      auto* t = m.mutable_task_state();
      t->set_job_id(job_id_);
      *t->mutable_id() = to_proto(id);
      t->set_state(static_cast<int>(state));
      t->set_error(error);
      t->set_unrecoverable(unrecoverable);
      if (state == runtime::ExecutionState::kFinished || state == runtime::ExecutionState::kCanceled ||
          state == runtime::ExecutionState::kFailed) {
        tm_->add_final_metrics(job_id_, id, t->mutable_final_metrics());
      }
      tm_->send(std::move(m));
    }
    void acknowledge_checkpoint(const runtime::ExecutionId& id, int64_t cp, checkpoint::TaskAck ack) override {
      TaskManagerMessage m;
      auto* a = m.mutable_ack();
      a->set_job_id(job_id_);
      *a->mutable_id() = to_proto(id);
      a->set_checkpoint_id(cp);
      a->set_states(encode_ack_states(cp, ack));
      a->set_sync_ms(ack.sync_ms);
      a->set_async_ms(ack.async_ms);
      a->set_alignment_ms(ack.alignment_ms);
      tm_->send(std::move(m));
    }
    void decline_checkpoint(const runtime::ExecutionId& id, int64_t cp, const std::string& reason) override {
      TaskManagerMessage m;
      auto* d = m.mutable_decline();
      d->set_job_id(job_id_);
      *d->mutable_id() = to_proto(id);
      d->set_checkpoint_id(cp);
      d->set_reason(reason);
      tm_->send(std::move(m));
    }
    void end_of_data(const runtime::ExecutionId& id) override {
      TaskManagerMessage m;
      m.mutable_end_of_data()->set_job_id(job_id_);
      *m.mutable_end_of_data()->mutable_id() = to_proto(id);
      tm_->send(std::move(m));
    }
    void report_source_positions(const runtime::ExecutionId& id, runtime::SourcePositions r) override {
      TaskManagerMessage m;
      auto* p = m.mutable_source_positions();
      p->set_job_id(job_id_);
      *p->mutable_id() = to_proto(id);
      p->set_seq(r.seq);
      p->set_positions(encode_operator_state(r.positions));
      p->set_records(r.records);
      p->set_released_records(r.released_records);
      tm_->send(std::move(m));
    }
    void report_dropped_records(const runtime::ExecutionId& id, int64_t records) override {
      TaskManagerMessage m;
      auto* d = m.mutable_dropped_records();
      d->set_job_id(job_id_);
      *d->mutable_id() = to_proto(id);
      d->set_records(records);
      tm_->send(std::move(m));
    }

   private:
    Impl* const tm_;
    const std::string job_id_;
  };

  struct Job {
    std::string name;        // as submitted
    JobMetrics metrics;      // its tasks' rates, from the heartbeats
    std::string result_dir;  // its blocking results on this TaskManager
    std::shared_ptr<checkpoint::RoutingCheckpointStorage> storage;
    std::unique_ptr<MasterProxy> proxy;
    std::unique_ptr<runtime::TaskManager> tasks;  // after proxy: destroyed first
  };

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
        deploy(m.deploy());
        break;
      case JobManagerMessage::kAction: {
        const auto& a = m.action();
        runtime::TaskManager* t = find(a.job_id());
        if (t == nullptr) break;
        const runtime::ExecutionId id = from_proto(a.id());
        switch (a.kind()) {
          case proto::TaskAction::CANCEL: t->cancel_task(id); break;
          case proto::TaskAction::TRIGGER_CHECKPOINT:
            t->trigger_checkpoint(id, a.checkpoint_id(), a.timestamp_ms(), a.savepoint());
            break;
          case proto::TaskAction::CHECKPOINT_COMPLETE: t->notify_checkpoint_complete(id, a.checkpoint_id()); break;
          case proto::TaskAction::CHECKPOINT_ABORTED: t->notify_checkpoint_aborted(id, a.checkpoint_id()); break;
          case proto::TaskAction::FINISH: t->finish_task(id); break;
          case proto::TaskAction::STOP_SOURCE: t->stop_source(id); break;
          case proto::TaskAction::CONFIRM_SOURCE_POSITIONS: t->confirm_source_positions(id, a.checkpoint_id()); break;
          default: break;
        }
        break;
      }
      case JobManagerMessage::kPrepareSavepoint: {
        const auto& p = m.prepare_savepoint();
        absl::MutexLock lock(&mu_);
        auto it = jobs_.find(p.job_id());
        if (it != jobs_.end()) it->second->storage->route_savepoint(p.checkpoint_id(), p.directory());
        break;
      }
      case JobManagerMessage::kRelease:
        release(m.release().job_id());
        break;
      default:
        break;  // heartbeats only refresh last_heard_
    }
  }

  // The counters of the task `id` of `job_id` (from its thread, as it ends;
  // the runtime::TaskManager's lock is not held then).
  void add_final_metrics(const std::string& job_id, const runtime::ExecutionId& id, proto::TaskMetrics* out) {
    runtime::TaskManager* tasks = find(job_id);
    if (tasks == nullptr) return;
    for (const auto& e : tasks->task_metrics()) {
      if (e.id == id) to_proto(e.job_id, e.id, e.metrics, out);
    }
  }

  // Every task's counters, for a heartbeat. Under mu_, so no job is
  // released meanwhile (a runtime::TaskManager never calls back into this
  // object under its own lock).
  // They also feed the rates /metrics shows.
  void add_metrics(proto::Heartbeat* hb) {
    const int64_t now = SystemClock::instance()->now_ms();
    hb->set_rss_bytes(resident_bytes());
    hb->set_network_buffers_used(pool_.total() - pool_.available());
    absl::MutexLock lock(&mu_);
    for (auto& [id, job] : jobs_) {
      for (const auto& e : job->tasks->task_metrics()) {
        to_proto(e.job_id, e.id, e.metrics, hb->add_metrics());
        job->metrics.report(e.id, e.metrics, now);
      }
    }
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
    absl::MutexLock lock(&mu_);
    for (auto& [job_id, job] : jobs_) {
      for (const auto& e : job->tasks->task_metrics(/*with_operators=*/true)) {
        const MetricLabels labels =
            task_labels({host_, options_.id, job_id, job->name, e.task_name, e.id.vertex, e.id.subtask, e.id.attempt});
        auto rates = job->metrics.rates(e.id.vertex, e.id.subtask, e.id.attempt);
        add_task_metrics(out, labels, e.metrics, rates ? &*rates : nullptr);
      }
    }
    return out.text();
  }

  runtime::TaskManager* find(const std::string& job_id) {
    absl::MutexLock lock(&mu_);
    auto it = jobs_.find(job_id);
    return it == jobs_.end() ? nullptr : it->second->tasks.get();
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

  // Builds the job from its spec on first sight, as the JobManager did.
  absl::StatusOr<runtime::TaskManager*> job_for(const proto::DeployTask& d) {
    if (runtime::TaskManager* t = find(d.job_id())) return t;
    std::vector<std::string> args(d.spec().args().begin(), d.spec().args().end());
    const JobLibrary* lib = nullptr;
    if (!d.spec().library().empty()) {
      auto l = library(d.spec().library());
      if (!l.ok()) return l.status();
      lib = *l;
    }
    auto built = options_.catalog(d.spec().name(), args, lib);
    if (!built.ok()) return built.status();
    JobConfig config = built->env->config();
    // Working copies of this process apart from other TaskManagers' on the host.
    std::filesystem::path base = config.state.local_directory.empty()
                                     ? std::filesystem::temp_directory_path() / "weir-rocksdb"
                                     : std::filesystem::path(config.state.local_directory);
    if (!options_.state_dir.empty()) base = options_.state_dir;
    config.state.local_directory = (base / options_.id).string();
    std::filesystem::path tmp = !options_.tmp_dir.empty()         ? std::filesystem::path(options_.tmp_dir)
                                : !config.result_directory.empty() ? std::filesystem::path(config.result_directory)
                                                                   : std::filesystem::temp_directory_path() /
                                                                         "weir-results";
    config.result_directory = (tmp / options_.id).string();
    auto graph = graph::build_job_graph(built->env->graph(), config);
    if (!graph.ok()) return graph.status();
    data_plane_.admit_job(d.job_id());
    data_plane_.registry(d.job_id())->set_reopen_closed(config.failover == FailoverStrategy::kTask);
    auto job = std::make_unique<Job>();
    job->name = d.spec().name();
    job->result_dir = network::result_directory(config, d.job_id(), ExchangeMode::kBlocking);
    auto storage = runtime::make_job_storage(config, d.job_id());
    if (!storage.ok()) return storage.status();
    job->storage = *std::move(storage);
    job->proxy = std::make_unique<MasterProxy>(this, d.job_id());
    job->tasks = std::make_unique<runtime::TaskManager>(&pool_, &data_plane_, /*snapshot_threads=*/2);
    job->tasks->register_job(d.job_id(),
                             runtime::TaskManager::JobContext{*graph, job->storage, job->proxy.get(), config, nullptr, nullptr});
    absl::MutexLock lock(&mu_);
    auto& slot = jobs_[d.job_id()];
    slot = std::move(job);
    return slot->tasks.get();
  }

  void deploy(const proto::DeployTask& d) {
    runtime::TaskDeploymentDescriptor tdd;
    tdd.job_id = d.job_id();
    tdd.execution = from_proto(d.id());
    tdd.task_index = d.task_index();
    tdd.key_groups = KeyGroupRange{d.key_group_start(), d.key_group_end()};
    tdd.restore_location = d.restore_location();
    tdd.location = data_plane_.address();
    tdd.channel_generation = d.channel_generation();
    auto locations = std::make_shared<std::vector<std::string>>(d.task_locations().begin(),
                                                                d.task_locations().end());
    tdd.task_locations = std::move(locations);
    absl::Status failed;
    if (d.has_source_positions()) {
      auto positions = checkpoint::decode_operator_state(d.source_positions());
      if (positions.ok()) {
        tdd.source_positions = std::make_shared<const detail::OperatorStateMap>(std::move(*positions));
      } else {
        failed = absl::DataLossError("source positions sent by the JobManager: " +
                                     std::string(positions.status().message()));
      }
    }
    if (d.restore_as_before()) {
      auto it = restore_points_.find(d.job_id());
      if (it != restore_points_.end() && it->second.location == d.restore_location()) {
        tdd.restore = it->second.metadata;
      } else {
        failed = absl::InternalError("the JobManager referred to restore point " + d.restore_location() +
                                     " as sent before, but this TaskManager does not hold it");
      }
    } else if (!d.restore_metadata().empty()) {
      auto meta = checkpoint::decode_metadata(d.restore_metadata(), "restore point of " + d.restore_location());
      if (meta.ok()) {
        tdd.restore = std::make_shared<const checkpoint::CheckpointMetadata>(std::move(*meta));
        restore_points_[d.job_id()] = RestorePoint{d.restore_location(), tdd.restore};
      } else {
        restore_points_.erase(d.job_id());
        failed = meta.status();
      }
    }
    auto tasks = job_for(d);
    if (failed.ok() && !tasks.ok()) failed = tasks.status();
    if (!failed.ok()) {
      TaskManagerMessage m;
      auto* t = m.mutable_task_state();
      t->set_job_id(d.job_id());
      *t->mutable_id() = d.id();
      t->set_state(static_cast<int>(runtime::ExecutionState::kFailed));
      t->set_error("deploying on " + options_.id + ": " + std::string(failed.message()));
      send(std::move(m));
      return;
    }
    spdlog::info("job {}: running {} (task {}){}", d.job_id(), tdd.execution.to_string(), tdd.task_index,
                 tdd.restore_location.empty() ? "" : ", restoring " + tdd.restore_location);
    (*tasks)->submit_task(std::move(tdd));
  }

  void release(const std::string& job_id) {
    restore_points_.erase(job_id);
    std::unique_ptr<Job> job;
    {
      absl::MutexLock lock(&mu_);
      auto it = jobs_.find(job_id);
      if (it == jobs_.end()) return;
      job = std::move(it->second);
      jobs_.erase(it);
    }
    spdlog::info("job {}: released (its tasks here ended)", job_id);
    job->tasks->unregister_job(job_id);
    job->tasks->drain_snapshots();
    data_plane_.release_job(job_id);
    std::error_code ec;
    std::filesystem::remove_all(job->result_dir, ec);
    if (ec) spdlog::warn("cannot remove the results of job {} in {}: {}", job_id, job->result_dir, ec.message());
  }

  void release_all() {
    std::vector<std::string> ids;
    {
      absl::MutexLock lock(&mu_);
      for (auto& [id, j] : jobs_) ids.push_back(id);
    }
    for (const auto& id : ids) release(id);
    restore_points_.clear();
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
  // Per job, the restore point of its latest deployment in this session
  // (DeployTask.restore_as_before). The thread of run() (and the
  // destructor, after it).
  struct RestorePoint {
    std::string location;
    std::shared_ptr<const checkpoint::CheckpointMetadata> metadata;
  };
  std::map<std::string, RestorePoint> restore_points_;
  std::string jobmanager_;                                // of the current session; run() thread only
  int64_t max_epoch_ = 0;                                 // newest leader epoch seen; run() thread only
  std::shared_ptr<grpc::Channel> channel_;                // run() thread only
  std::unique_ptr<proto::JobManagerService::Stub> stub_;  // run() thread only

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;
  QueuedWriter<TaskManagerMessage>* writer_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::map<std::string, std::unique_ptr<Job>> jobs_ ABSL_GUARDED_BY(mu_);
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
