#include "cluster/jobmanager.h"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "cli/jobs.h"
#include "cluster/http_server.h"
#include "cluster/job_library.h"
#include "cluster/json_body.h"
#include "cluster/protocol.h"
#include "cluster/queued_writer.h"
#include "common/clock.h"
#include "common/rate_limited_log.h"
#include "graph/job_graph.h"
#include "network/data_plane.h"
#include "runtime/job_master.h"
#include "runtime/mini_cluster.h"
#include "runtime/task_metrics.h"

namespace weir::cluster {
namespace {

using proto::JobManagerMessage;
using proto::TaskManagerMessage;
using Stream = grpc::ServerReaderWriter<JobManagerMessage, TaskManagerMessage>;



// One registered TaskManager and its session stream.
struct Session {
  std::string id;
  std::string data_address;
  int slots = 0;
  int network_buffers = 0;
  int used_slots = 0;  // JobManager::Impl::mu_
  std::atomic<int64_t> last_heartbeat_ms{0};
  std::atomic<bool> lost{false};
  std::unique_ptr<QueuedWriter<JobManagerMessage>> writer;

  absl::Mutex context_mu;
  grpc::ServerContext* context ABSL_GUARDED_BY(context_mu) = nullptr;  // null once the call ended
  // Per job, the restore point whose metadata this session's TaskManager
  // already has (DeployTask.restore_as_before).
  std::map<std::string, std::shared_ptr<const checkpoint::CheckpointMetadata>> restore_sent
      ABSL_GUARDED_BY(context_mu);

  void send(JobManagerMessage m) { writer->send(std::move(m)); }
  // Heartbeats: ahead of queued deployments and actions.
  void send_urgent(JobManagerMessage m) { writer->send_urgent(std::move(m)); }
  // Ends the session's call (its stream reads fail), if it still runs.
  void cancel() {
    absl::MutexLock lock(&context_mu);
    if (context != nullptr) context->TryCancel();
  }
};
using SessionPtr = std::shared_ptr<Session>;

}  // namespace

// The TaskExecutorGateway of one job: places its tasks into slots and sends
// each message to the TaskManager running the task.
class JobGateway final : public runtime::TaskExecutorGateway {
 public:
  JobGateway(JobManager::Impl* jm, std::string job_id, proto::JobSpec spec,
             std::shared_ptr<const graph::JobGraph> graph, int64_t buffers_needed)
      : jm_(jm), job_id_(std::move(job_id)), spec_(std::move(spec)), graph_(std::move(graph)),
        buffers_needed_(buffers_needed) {}

  void set_master(runtime::JobMasterGateway* master) { master_ = master; }

  absl::Status place(std::vector<runtime::TaskDeploymentDescriptor>& tdds) override;
  void submit_task(runtime::TaskDeploymentDescriptor tdd) override;
  void cancel_task(const runtime::ExecutionId& id) override { action(proto::TaskAction::CANCEL, id); }
  void trigger_checkpoint(const runtime::ExecutionId& id, int64_t cp, int64_t ts, bool savepoint) override {
    action(proto::TaskAction::TRIGGER_CHECKPOINT, id, cp, ts, savepoint);
  }
  void notify_checkpoint_complete(const runtime::ExecutionId& id, int64_t cp) override {
    action(proto::TaskAction::CHECKPOINT_COMPLETE, id, cp);
  }
  void notify_checkpoint_aborted(const runtime::ExecutionId& id, int64_t cp) override {
    action(proto::TaskAction::CHECKPOINT_ABORTED, id, cp);
  }
  void finish_task(const runtime::ExecutionId& id) override { action(proto::TaskAction::FINISH, id); }
  void stop_source(const runtime::ExecutionId& id) override { action(proto::TaskAction::STOP_SOURCE, id); }
  void prepare_savepoint(int64_t cp, const std::string& directory) override;

  // The tasks placed on `s` fail.
  void taskmanager_lost(const SessionPtr& s, const std::string& reason);
  // The TaskManager running the subtask now; empty when none.
  std::string taskmanager_of(const runtime::ExecutionId& id) {
    SessionPtr s = session_of(id);
    return s == nullptr ? "" : s->id;
  }
  // The job ended: its slots are free, its TaskManagers drop it.
  void release();

 private:
  void action(proto::TaskAction::Kind kind, const runtime::ExecutionId& id, int64_t cp = 0, int64_t ts = 0,
              bool savepoint = false);
  SessionPtr session_of(const runtime::ExecutionId& id);

  JobManager::Impl* const jm_;
  const std::string job_id_;
  const proto::JobSpec spec_;
  const std::shared_ptr<const graph::JobGraph> graph_;
  const int64_t buffers_needed_;
  runtime::JobMasterGateway* master_ = nullptr;

  absl::Mutex mu_;
  std::vector<SessionPtr> slots_ ABSL_GUARDED_BY(mu_);  // slot i holds subtask i of every vertex
  std::map<std::pair<int, int>, SessionPtr> placed_ ABSL_GUARDED_BY(mu_);  // (vertex, subtask)
  std::map<std::pair<int, int>, int> attempt_ ABSL_GUARDED_BY(mu_);
  std::set<SessionPtr> ran_on_ ABSL_GUARDED_BY(mu_);
  // The last restore point sent, encoded once per attempt (held, so its
  // address cannot be reused by another while cached).
  std::shared_ptr<const checkpoint::CheckpointMetadata> encoded_for_ ABSL_GUARDED_BY(mu_);
  std::string encoded_ ABSL_GUARDED_BY(mu_);
};

namespace {

// Each subtask's counters from the heartbeats of its TaskManager (latest
// attempt only), and its rates over the last second or so.
class JobMetrics {
 public:
  struct Rates {
    double records_in = 0, records_out = 0, bytes_in = 0, bytes_out = 0;
    double backpressured_ms = 0, idle_ms = 0, busy_ms = 0;  // per second
  };
  struct Subtask {
    int attempt = 0;
    runtime::TaskMetricsSnapshot now, base;
    int64_t base_ms = 0;
    bool has_rates = false;
    Rates rates;
  };

  void report(const runtime::ExecutionId& id, const runtime::TaskMetricsSnapshot& m, int64_t now_ms) {
    absl::MutexLock lock(&mu_);
    auto [it, fresh] = subtasks_.try_emplace({id.vertex, id.subtask});
    Subtask& s = it->second;
    if (!fresh && id.attempt < s.attempt) return;  // a late report of an older attempt
    if (fresh || id.attempt > s.attempt) {
      s = Subtask{};
      s.attempt = id.attempt;
      s.now = s.base = m;
      s.base_ms = now_ms;
      return;
    }
    s.now = m;
    const int64_t dt = now_ms - s.base_ms;
    if (dt < 1000) return;
    auto per_s = [dt](int64_t a, int64_t b) { return static_cast<double>(a - b) * 1000.0 / static_cast<double>(dt); };
    s.rates.records_in = per_s(m.records_in, s.base.records_in);
    s.rates.records_out = per_s(m.records_out, s.base.records_out);
    s.rates.bytes_in = per_s(m.bytes_in, s.base.bytes_in);
    s.rates.bytes_out = per_s(m.bytes_out, s.base.bytes_out);
    s.rates.backpressured_ms = std::clamp(per_s(m.backpressured_ms, s.base.backpressured_ms), 0.0, 1000.0);
    s.rates.idle_ms = std::clamp(per_s(m.idle_ms, s.base.idle_ms), 0.0, 1000.0 - s.rates.backpressured_ms);
    s.rates.busy_ms = 1000.0 - s.rates.backpressured_ms - s.rates.idle_ms;
    s.has_rates = true;
    s.base = m;
    s.base_ms = now_ms;
  }

  // docs/rest-api.md: METRICS of one subtask (null when it never reported
  // for `attempt`), and of a vertex (counts and rates summed, time shares
  // the worst subtask's).
  nlohmann::json subtask_json(int vertex, int subtask, int attempt) {
    absl::MutexLock lock(&mu_);
    auto it = subtasks_.find({vertex, subtask});
    if (it == subtasks_.end() || it->second.attempt != attempt) return nullptr;
    return to_json(it->second.now, it->second.rates, it->second.has_rates);
  }
  nlohmann::json vertex_json(int vertex) {
    absl::MutexLock lock(&mu_);
    runtime::TaskMetricsSnapshot sum;
    Rates rates;
    bool any = false, has_rates = false;
    for (const auto& [key, s] : subtasks_) {
      if (key.first != vertex) continue;
      any = true;
      sum += s.now;
      if (!s.has_rates) continue;
      has_rates = true;
      rates.records_in += s.rates.records_in;
      rates.records_out += s.rates.records_out;
      rates.bytes_in += s.rates.bytes_in;
      rates.bytes_out += s.rates.bytes_out;
      rates.backpressured_ms = std::max(rates.backpressured_ms, s.rates.backpressured_ms);
      rates.busy_ms = std::max(rates.busy_ms, s.rates.busy_ms);
      rates.idle_ms = std::max(rates.idle_ms, s.rates.idle_ms);
    }
    if (!any) return nullptr;
    return to_json(sum, rates, has_rates);
  }

 private:
  static nlohmann::json to_json(const runtime::TaskMetricsSnapshot& m, const Rates& r, bool has_rates) {
    nlohmann::json out = {{"records_in", m.records_in},     {"records_out", m.records_out},
                          {"bytes_in", m.bytes_in},         {"bytes_out", m.bytes_out},
                          {"backpressured_ms", m.backpressured_ms}, {"idle_ms", m.idle_ms}};
    if (!has_rates) return out;  // one report so far: no rates yet
    out["records_in_per_s"] = std::llround(r.records_in);
    out["records_out_per_s"] = std::llround(r.records_out);
    out["bytes_in_per_s"] = std::llround(r.bytes_in);
    out["bytes_out_per_s"] = std::llround(r.bytes_out);
    out["backpressured_ms_per_s"] = std::llround(r.backpressured_ms);
    out["idle_ms_per_s"] = std::llround(r.idle_ms);
    out["busy_ms_per_s"] = std::llround(r.busy_ms);
    // The levels of Flink's web UI: up to 10% ok, up to 50% low, else high.
    out["backpressure"] = r.backpressured_ms <= 100 ? "ok" : r.backpressured_ms <= 500 ? "low" : "high";
    return out;
  }

  absl::Mutex mu_;
  std::map<std::pair<int, int>, Subtask> subtasks_ ABSL_GUARDED_BY(mu_);  // (vertex, subtask)
};

struct Job {
  std::string id;
  proto::JobSpec spec;
  std::shared_ptr<const graph::JobGraph> graph;
  std::string savepoint_dir;  // for requests that name none; "" if the job has none
  int64_t start_ms = 0;
  JobControl control;
  std::unique_ptr<JobGateway> gateway;
  std::unique_ptr<runtime::JobMaster> master;  // after gateway and control: destroyed first
  std::thread waiter;
  JobMetrics metrics;

  absl::Mutex mu;
  std::optional<JobResult> result ABSL_GUARDED_BY(mu);
  std::vector<SavepointResult> savepoints ABSL_GUARDED_BY(mu);
  absl::Mutex savepoint_mu;  // one savepoint request at a time
};
using JobPtr = std::shared_ptr<Job>;

}  // namespace

class JobManager::Impl final : public proto::JobManagerService::Service {
 public:
  explicit Impl(JobManagerOptions o)
      : options_(std::move(o)),
        libraries_(options_.library_dir.empty() ? LibraryStore::default_directory() : options_.library_dir) {}
  ~Impl() override { shutdown(); }

  absl::Status start() {
    grpc::ServerBuilder builder;
    builder.AddListeningPort(options_.bind, grpc::InsecureServerCredentials(), &port_);
    builder.SetMaxReceiveMessageSize(256 << 20);
    // A connection that does not finish its HTTP/2 handshake in time is
    // dropped; gRPC serves connections without a thread each.
    builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, 5000);
    builder.RegisterService(this);
    server_ = builder.BuildAndStart();
    if (server_ == nullptr || port_ == 0) {
      return absl::UnavailableError("cannot listen on " + options_.bind + " (address in use or not local?)");
    }
    heartbeat_ = std::thread([this] { heartbeat_loop(); });
    auto host = network::parse_address(options_.bind);
    if (!host.ok()) return host.status();
    return start_rest(host->first, options_.rest_port);
  }
  int port() const { return port_; }

  void wait() {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(&stopping_));
  }

  void shutdown() {
    std::vector<JobPtr> jobs;
    std::vector<SessionPtr> sessions;
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
      stopping_ = true;
      for (auto& [id, j] : jobs_) jobs.push_back(j);
      for (auto& [id, s] : sessions_) sessions.push_back(s);
    }
    for (auto& j : jobs) j->master->cancel();
    for (auto& j : jobs) {
      if (j->waiter.joinable()) j->waiter.join();
    }
    for (auto& s : sessions) s->cancel();
    if (heartbeat_.joinable()) heartbeat_.join();
    http_.shutdown();
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  }

  // Slots for a job attempt: `n` slots, spread over the TaskManagers with
  // the most free slots first.
  absl::StatusOr<std::vector<SessionPtr>> allocate(int n, int64_t buffers_needed,
                                                   std::vector<SessionPtr> release) {
    absl::MutexLock lock(&mu_);
    for (auto& s : release) --s->used_slots;
    std::vector<SessionPtr> live;
    int free = 0, total = 0;
    for (auto& [id, s] : sessions_) {
      if (s->lost) continue;
      total += s->slots;
      if (s->network_buffers < buffers_needed) continue;
      free += s->slots - s->used_slots;
      live.push_back(s);
    }
    if (free < n) {
      return absl::UnavailableError("needs " + std::to_string(n) + " slots, " + std::to_string(free) +
                                    " free of " + std::to_string(total) + " on " +
                                    std::to_string(sessions_.size()) + " TaskManagers (" +
                                    std::to_string(buffers_needed) + " network buffers each)");
    }
    std::vector<SessionPtr> out;
    while (static_cast<int>(out.size()) < n) {
      // Spread: the TaskManager with the most free slots takes the next one.
      auto best = std::max_element(live.begin(), live.end(), [](const SessionPtr& a, const SessionPtr& b) {
        return a->slots - a->used_slots < b->slots - b->used_slots;
      });
      ++(*best)->used_slots;
      out.push_back(*best);
    }
    return out;
  }

  void free_slots(const std::vector<SessionPtr>& slots) {
    absl::MutexLock lock(&mu_);
    for (auto& s : slots) {
      if (s != nullptr) --s->used_slots;
    }
  }

  std::vector<SessionPtr> live_sessions() {
    absl::MutexLock lock(&mu_);
    std::vector<SessionPtr> out;
    for (auto& [id, s] : sessions_) out.push_back(s);
    return out;
  }

  // ---- TaskManager sessions ----------------------------------------------------

  grpc::Status Connect(grpc::ServerContext* ctx, Stream* stream) override {
    grpc::Status auth = check_secret(*ctx, options_.secret);
    if (!auth.ok()) {
      spdlog::warn("refused a TaskManager session from {}: {}", ctx->peer(), auth.error_message());
      return auth;
    }
    TaskManagerMessage first;
    if (!stream->Read(&first) || !first.has_register_()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "a session starts with Register");
    }
    auto s = std::make_shared<Session>();
    s->id = first.register_().taskmanager_id();
    s->data_address = first.register_().data_address();
    s->slots = first.register_().slots();
    s->network_buffers = first.register_().network_buffers();
    s->last_heartbeat_ms = SystemClock::instance()->now_ms();
    {
      absl::MutexLock lock(&s->context_mu);
      s->context = ctx;
    }
    s->writer = std::make_unique<QueuedWriter<JobManagerMessage>>(
        [stream](const JobManagerMessage& m) { return stream->Write(m); });
    SessionPtr old;
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the JobManager is shutting down");
      auto& slot = sessions_[s->id];
      old = slot;
      slot = s;
    }
    if (old != nullptr) lose(old, "it registered again");
    JobManagerMessage reply;
    reply.mutable_registered()->set_heartbeat_interval_ms(options_.heartbeat_interval.count());
    reply.mutable_registered()->set_heartbeat_timeout_ms(options_.heartbeat_timeout.count());
    s->send(std::move(reply));
    spdlog::info("TaskManager {} registered (data {}, {} slots)", s->id, s->data_address, s->slots);

    TaskManagerMessage m;
    while (stream->Read(&m)) {
      s->last_heartbeat_ms = SystemClock::instance()->now_ms();
      dispatch(m);
    }
    lose(s, "its connection closed");
    {
      absl::MutexLock lock(&s->context_mu);
      s->context = nullptr;
    }
    s->writer->close();
    return grpc::Status::OK;
  }

  grpc::Status FetchLibrary(grpc::ServerContext* ctx, const proto::LibraryRequest* req,
                            grpc::ServerWriter<proto::LibraryChunk>* writer) override {
    grpc::Status auth = check_secret(*ctx, options_.secret);
    if (!auth.ok()) {
      spdlog::warn("refused a library request from {}: {}", ctx->peer(), auth.error_message());
      return auth;
    }
    auto bytes = libraries_.read(req->digest());
    if (!bytes.ok()) {
      return grpc::Status(absl::IsNotFound(bytes.status()) ? grpc::StatusCode::NOT_FOUND : grpc::StatusCode::INTERNAL,
                          std::string(bytes.status().message()));
    }
    constexpr size_t kChunk = 1 << 20;
    proto::LibraryChunk chunk;
    for (size_t at = 0; at < bytes->size(); at += kChunk) {
      chunk.set_data(bytes->substr(at, kChunk));
      if (!writer->Write(chunk)) return grpc::Status(grpc::StatusCode::CANCELLED, "the TaskManager went away");
    }
    return grpc::Status::OK;
  }

  // ---- REST (docs/rest-api.md) ---------------------------------------------------

  absl::Status start_rest(const std::string& host, int port) {
    // Runs once the request head is in and before any body is read: the
    // secret, then the body's size.
    http_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      const std::string given = req.get_header_value("Authorization");
      if (!network::secrets_equal(given, "Bearer " + options_.secret)) {
        refusals_.log([&] {
          return fmt::format("refused a REST request {} {} from {}: {}", req.method, req.path, req.remote_addr,
                             given.empty() ? "no cluster secret" : "wrong cluster secret");
        });
        reply_error(res,
                    absl::UnauthenticatedError(given.empty() ? "no cluster secret given" : "wrong cluster secret"));
        return httplib::Server::HandlerResponse::Handled;
      }
      std::string why;
      if (int status = check_body_size(req, &why); status != 0) {
        res.status = status;
        res.set_content(nlohmann::json{{"error", why}}.dump(), "application/json");
        return httplib::Server::HandlerResponse::Handled;
      }
      return httplib::Server::HandlerResponse::Unhandled;
    });
    // Errors httplib answers itself (no route, unreadable request) get a
    // JSON body too.
    http_.set_error_handler(httplib::Server::HandlerWithResponse(
        [](const httplib::Request& req, httplib::Response& res) {
          if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
          std::string what = res.status == 404 ? "no such resource: " + req.method + " " + req.path
                                               : "the request could not be served (HTTP " +
                                                     std::to_string(res.status) + ")";
          res.set_content(nlohmann::json{{"error", what}}.dump(), "application/json");
          return httplib::Server::HandlerResponse::Handled;
        }));
    http_.Get("/v1/overview", [this](const httplib::Request&, httplib::Response& res) {
      reply(res, overview_json());
    });
    http_.Get("/v1/jobs", [this](const httplib::Request&, httplib::Response& res) {
      std::vector<JobPtr> jobs;
      {
        absl::MutexLock lock(&mu_);
        for (const auto& id : job_order_) jobs.push_back(jobs_[id]);
      }
      nlohmann::json out = {{"jobs", nlohmann::json::array()}};
      for (auto& j : jobs) out["jobs"].push_back(job_json(*j, false));
      reply(res, out);
    });
    // Job libraries, by the SHA-256 of their bytes.
    http_.set_payload_max_length(kMaxLibraryBytes);
    http_.Put(R"(/v1/libraries/([0-9a-f]{64}))", [this](const httplib::Request& req, httplib::Response& res) {
      const std::string digest = req.matches[1];
      auto stored = libraries_.put(digest, req.body);
      if (!stored.ok()) return reply_error(res, stored.status());
      spdlog::info("job library {} stored ({} bytes)", digest, req.body.size());
      reply(res, {{"library", digest}, {"bytes", req.body.size()}});
    });
    http_.Get(R"(/v1/libraries/([0-9a-f]{64}))", [this](const httplib::Request& req, httplib::Response& res) {
      const std::string digest = req.matches[1];
      auto bytes = libraries_.read(digest);
      if (!bytes.ok()) return reply_error(res, absl::IsDataLoss(bytes.status()) ? absl::NotFoundError(bytes.status().message()) : bytes.status());
      reply(res, {{"library", digest}, {"bytes", bytes->size()}});
    });
    http_.Post("/v1/jobs", [this](const httplib::Request& req, httplib::Response& res) {
      auto body = parse_json_body(req.body, kMaxJsonDepth);
      if (!body.is_object() || !body.contains("name") || !body["name"].is_string()) {
        return reply_error(res, absl::InvalidArgumentError("the body must be {\"name\": JOB, \"args\": [...]}"));
      }
      std::string library;
      if (body.contains("library")) {
        if (!body["library"].is_string()) return reply_error(res, absl::InvalidArgumentError("\"library\" must be a digest"));
        library = body["library"].get<std::string>();
      }
      std::vector<std::string> args;
      if (body.contains("args")) {
        if (!body["args"].is_array()) return reply_error(res, absl::InvalidArgumentError("\"args\" must be a list"));
        size_t bytes = 0;
        for (const auto& a : body["args"]) {
          if (!a.is_string()) return reply_error(res, absl::InvalidArgumentError("\"args\" must hold strings"));
          args.push_back(a.get<std::string>());
          bytes += args.back().size();
        }
        // Arguments travel in every deployment: they are kept small.
        if (args.size() > kMaxJobArgs || bytes > kMaxJobArgBytes) {
          return reply_error(res, absl::InvalidArgumentError(
                                      "job arguments too large: " + std::to_string(args.size()) + " arguments, " +
                                      std::to_string(bytes) + " bytes (at most " + std::to_string(kMaxJobArgs) +
                                      " arguments, " + std::to_string(kMaxJobArgBytes) + " bytes)"));
        }
      }
      auto id = submit(body["name"].get<std::string>(), args, library);
      if (!id.ok()) return reply_error(res, id.status());
      reply(res, {{"job_id", *id}});
    });
    http_.Get(R"(/v1/jobs/([0-9a-f]+))", [this](const httplib::Request& req, httplib::Response& res) {
      with_job(req, res, [&](Job& j) { reply(res, job_json(j, true)); });
    });
    http_.Get(R"(/v1/jobs/([0-9a-f]+)/wait)", [this](const httplib::Request& req, httplib::Response& res) {
      with_job(req, res, [&](Job& j) {
        int64_t timeout = 0;
        if (req.has_param("timeout_ms")) timeout = std::atoll(req.get_param_value("timeout_ms").c_str());
        {
          absl::MutexLock lock(&j.mu);
          j.mu.AwaitWithTimeout(absl::Condition(&Impl::job_ended, &j),
                                absl::Milliseconds(std::clamp<int64_t>(timeout, 0, 60000)));
        }
        reply(res, job_json(j, false));
      });
    });
    http_.Get(R"(/v1/jobs/([0-9a-f]+)/checkpoints)", [this](const httplib::Request& req, httplib::Response& res) {
      with_job(req, res, [&](Job& j) { reply(res, checkpoints_json(j)); });
    });
    http_.Post(R"(/v1/jobs/([0-9a-f]+)/cancel)", [this](const httplib::Request& req, httplib::Response& res) {
      with_job(req, res, [&](Job& j) {
        j.master->cancel();
        {
          absl::MutexLock lock(&j.mu);
          j.mu.AwaitWithTimeout(absl::Condition(&Impl::job_ended, &j), absl::Seconds(30));
        }
        reply(res, job_json(j, false));
      });
    });
    auto savepoint_handler = [this](bool stop) {
      return [this, stop](const httplib::Request& req, httplib::Response& res) {
        with_job(req, res, [&](Job& j) {
          auto body = parse_json_body(req.body.empty() ? "{}" : req.body, kMaxJsonDepth);
          if (!body.is_object() || (body.contains("directory") && !body["directory"].is_string())) {
            return reply_error(res, absl::InvalidArgumentError("the body must be {\"directory\": DIR} or {}"));
          }
          std::string directory = body.value("directory", j.savepoint_dir);
          if (directory.empty()) {
            return reply_error(res, absl::InvalidArgumentError(
                                        "no savepoint directory: name one, or start the job with --savepoint-dir "
                                        "or --checkpoint-dir"));
          }
          bool drain = stop && body.value("drain", false);
          auto r = savepoint(j, directory, stop, drain);
          if (!r.ok()) return reply_error(res, r.status());
          reply(res, {{"checkpoint_id", r->id}, {"path", r->path}});
        });
      };
    };
    http_.Post(R"(/v1/jobs/([0-9a-f]+)/savepoints)", savepoint_handler(false));
    http_.Post(R"(/v1/jobs/([0-9a-f]+)/stop)", savepoint_handler(true));

    auto bound = http_.listen_on(host, port);
    if (!bound.ok()) return bound.status();
    rest_port_ = *bound;
    return absl::OkStatus();
  }
  int rest_port() const { return rest_port_; }

 private:
  static bool job_ended(Job* j) ABSL_EXCLUSIVE_LOCKS_REQUIRED(j->mu) { return j->result.has_value(); }
  static int http_status(const absl::Status& s) {
    switch (s.code()) {
      case absl::StatusCode::kInvalidArgument: return 400;
      case absl::StatusCode::kUnauthenticated: return 401;
      case absl::StatusCode::kPermissionDenied: return 403;
      case absl::StatusCode::kNotFound: return 404;
      case absl::StatusCode::kFailedPrecondition:
      case absl::StatusCode::kAborted: return 409;
      case absl::StatusCode::kUnavailable: return 503;
      default: return 500;
    }
  }
  // Request bodies: a job library may be large, everything else is small
  // JSON. Refused before it is read, and so are bodies of unknown length.
  // Request bodies: a job library may be large, everything else is small
  // JSON. Checked from the head, before the body is read. 0 when
  // acceptable, else the HTTP status to refuse with and `why`.
  static int check_body_size(const httplib::Request& req, std::string* why) {
    if (req.method != "POST" && req.method != "PUT") return 0;
    if (req.has_header("Transfer-Encoding")) {
      *why = "chunked request bodies are not accepted; send Content-Length";
      return 411;
    }
    const std::string length = req.get_header_value("Content-Length");
    if (length.empty()) {
      *why = req.method + " " + req.path + " needs a Content-Length header (0 for an empty body)";
      return 411;
    }
    const size_t limit = req.method == "PUT" && req.path.rfind("/v1/libraries/", 0) == 0 ? kMaxLibraryBytes
                                                                                          : kMaxJsonBodyBytes;
    char* end = nullptr;
    errno = 0;
    unsigned long long n = std::strtoull(length.c_str(), &end, 10);
    if (errno != 0 || end == length.c_str() || *end != '\0') {
      *why = "bad Content-Length '" + length + "'";
      return 400;
    }
    if (n > limit) {
      *why = "request body of " + std::to_string(n) + " bytes exceeds the limit of " + std::to_string(limit) +
             " bytes for " + req.method + " " + req.path;
      return 413;
    }
    return 0;
  }
  static void reply(httplib::Response& res, const nlohmann::json& body) {
    res.set_content(body.dump(), "application/json");
  }
  static void reply_error(httplib::Response& res, const absl::Status& s) {
    res.status = http_status(s);
    res.set_content(nlohmann::json{{"error", std::string(s.message())}}.dump(), "application/json");
  }
  void with_job(const httplib::Request& req, httplib::Response& res, const std::function<void(Job&)>& fn) {
    JobPtr j = find_job(req.matches[1]);
    if (j == nullptr) return reply_error(res, absl::NotFoundError("no job " + std::string(req.matches[1])));
    fn(*j);
  }

  JobPtr find_job(const std::string& id) {
    absl::MutexLock lock(&mu_);
    auto it = jobs_.find(id);
    return it == jobs_.end() ? nullptr : it->second;
  }

  // A job by name, or, given `library` (a digest), the job of that library.
  absl::StatusOr<std::string> submit(const std::string& name, const std::vector<std::string>& args,
                                     const std::string& library) {
    proto::JobSpec spec;
    spec.set_name(name);
    for (const auto& a : args) spec.add_args(a);
    const JobLibrary* lib = nullptr;
    if (!library.empty()) {
      auto path = libraries_.verified_path(library);
      if (absl::IsNotFound(path.status())) {
        return absl::NotFoundError("no job library " + library + " here: upload it first (PUT /v1/libraries/" +
                                   library + ")");
      }
      if (!path.ok()) return path.status();
      // The library's code runs first in a child process: a build that
      // crashes or hangs is refused there instead of taking this process down.
      if (absl::Status s = build_in_child(*path, args, std::chrono::seconds(60)); !s.ok()) return s;
      auto l = JobLibrary::load(*path);  // verified above
      if (!l.ok()) return l.status();
      lib = *l;
      spec.set_name(lib->name());
      spec.set_library(library);
    }
    cli::JobFlags flags;
    auto env = cli::build_job(spec.name(), args, lib, &flags);
    if (!env.ok()) return env.status();
    const JobConfig& config = (*env)->config();
    if (config.checkpoint.mode != CheckpointingMode::kNone && config.checkpoint.directory.empty()) {
      return absl::InvalidArgumentError(
          "a cluster job needs --checkpoint-dir, on storage every TaskManager and the JobManager reach");
    }
    auto graph = graph::build_job_graph((*env)->graph(), config);
    if (!graph.ok()) return graph.status();
    auto restored = runtime::find_restore(**graph, config);
    if (!restored.ok()) return restored.status();

    auto job = std::make_shared<Job>();
    job->id = runtime::new_job_id();
    job->spec = spec;
    job->savepoint_dir = flags.default_savepoint_dir();
    job->start_ms = SystemClock::instance()->wall_ms();
    job->graph = *graph;
    auto storage = runtime::make_job_storage(config, job->id);
    job->gateway = std::make_unique<JobGateway>(this, job->id, spec, *graph,
                                                runtime::buffers_needed(**graph, config.network));
    job->master = std::make_unique<runtime::JobMaster>(job->id, *graph, config, job->gateway.get(), storage,
                                                       SystemClock::instance(), &job->control);
    job->gateway->set_master(job->master.get());
    Job* raw = job.get();
    job->control.on_savepoint([raw](const SavepointResult& r) {
      absl::MutexLock lock(&raw->mu);
      raw->savepoints.push_back(r);
    });
    job->control.attach([raw](JobControl::Request r) { raw->master->handle_request(std::move(r)); });
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return absl::UnavailableError("the JobManager is shutting down");
      jobs_[job->id] = job;
      job_order_.push_back(job->id);
    }
    spdlog::info("job {} ({}) submitted", job->id, spec.name());
    job->master->start(std::move(*restored));
    job->waiter = std::thread([this, raw] {
      JobResult r = raw->master->wait();
      raw->control.detach();
      raw->gateway->release();
      spdlog::log(r.status == JobStatus::kFailed ? spdlog::level::err : spdlog::level::info, "job {} {}{}", raw->id,
                  std::string(to_string(r.status)), r.failure.empty() ? "" : ": " + r.failure);
      {
        absl::MutexLock lock(&raw->mu);
        raw->result = std::move(r);
      }
      forget_old_jobs(raw);
    });
    return job->id;
  }

  // Drops the oldest ended jobs beyond keep_ended_jobs (never `current`,
  // whose waiter thread this runs on).
  void forget_old_jobs(Job* current) {
    std::vector<JobPtr> forgotten;
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
      std::vector<std::string> ended;
      for (const auto& id : job_order_) {
        absl::MutexLock jl(&jobs_[id]->mu);
        if (jobs_[id]->result.has_value()) ended.push_back(id);
      }
      for (size_t i = 0; i + static_cast<size_t>(options_.keep_ended_jobs) < ended.size(); ++i) {
        auto it = jobs_.find(ended[i]);
        if (it->second.get() == current) continue;
        forgotten.push_back(it->second);
        jobs_.erase(it);
        job_order_.erase(std::find(job_order_.begin(), job_order_.end(), ended[i]));
      }
    }
    for (auto& j : forgotten) {
      if (j->waiter.joinable()) j->waiter.join();  // ended: it set the result
    }
  }

  // A savepoint (or stop with one) of `j`, once it completed. One at a time
  // per job.
  absl::StatusOr<SavepointResult> savepoint(Job& j, const std::string& directory, bool stop, bool drain) {
    absl::MutexLock one(&j.savepoint_mu);
    size_t seen;
    {
      absl::MutexLock lock(&j.mu);
      if (j.result.has_value()) return absl::FailedPreconditionError("the job is not running");
      seen = j.savepoints.size();
    }
    if (stop) {
      j.control.stop_with_savepoint(directory, drain);
    } else {
      j.control.trigger_savepoint(directory);
    }
    absl::MutexLock lock(&j.mu);
    auto done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(j.mu) { return j.savepoints.size() > seen || j.result.has_value(); };
    j.mu.Await(absl::Condition(&done));
    if (j.savepoints.size() <= seen) return absl::AbortedError("the job ended before the savepoint completed");
    SavepointResult r = j.savepoints[seen];
    if (!r.error.empty()) return absl::AbortedError("savepoint failed: " + r.error);
    return r;
  }

  // The job's state; with `detail` also its vertices and their subtasks.
  nlohmann::json job_json(Job& j, bool detail) {
    nlohmann::json out = {{"job_id", j.id}, {"name", j.spec.name()}, {"start_time_ms", j.start_ms}};
    if (!j.spec.library().empty()) out["library"] = j.spec.library();
    std::optional<runtime::JobMaster::Status> st;
    {
      absl::MutexLock lock(&j.mu);
      if (j.result) {
        out["status"] = std::string(to_string(j.result->status));
        // The last failure: why it failed, else why it last restarted.
        out["failure"] = j.result->failure.empty() ? j.result->last_failure : j.result->failure;
        out["restarts"] = j.result->restarts;
        out["completed_checkpoints"] = j.result->checkpoints.size();
        out["stopped_with_savepoint"] = j.result->stopped_with_savepoint;
        out["duration_ms"] = j.result->wall_time.count();
      }
    }
    if (!out.contains("status")) {
      st = j.master->status();
      out["status"] = std::string(to_string(st->status));
      out["failure"] = st->failure;
      out["restarts"] = st->restarts;
      out["attempt"] = st->attempt;
      out["completed_checkpoints"] = st->checkpoints.size();
    }
    if (!detail) return out;
    nlohmann::json vertices = nlohmann::json::array();
    for (const auto& v : j.graph->vertices) {
      nlohmann::json subtasks = nlohmann::json::array();
      std::set<std::string> states;
      if (st) {
        for (const auto& e : st->executions) {
          if (e.id.vertex != v.id) continue;
          std::string state = execution_state_name(e.state, e.terminal);
          states.insert(state);
          subtasks.push_back({{"subtask", e.id.subtask},
                              {"attempt", e.id.attempt},
                              {"state", state},
                              {"taskmanager", j.gateway->taskmanager_of(e.id)},
                              {"metrics", j.metrics.subtask_json(e.id.vertex, e.id.subtask, e.id.attempt)}});
        }
      }
      // The vertex as a whole: failed if any subtask failed, running while
      // any runs, else the one state they share (once the job ended: its own).
      std::string state = !st ? out["status"].get<std::string>()
                          : states.count("FAILED") ? "FAILED"
                          : states.count("RUNNING") ? "RUNNING"
                          : states.size() == 1 ? *states.begin()
                                               : "ENDED";
      vertices.push_back({{"id", v.id},
                          {"name", v.name},
                          {"parallelism", v.parallelism},
                          {"state", state},
                          {"metrics", j.metrics.vertex_json(v.id)},
                          {"subtasks", subtasks}});
    }
    out["vertices"] = vertices;
    out["max_parallelism"] = j.graph->max_parallelism;
    return out;
  }

  static std::string execution_state_name(runtime::ExecutionState s, bool terminal) {
    switch (s) {
      case runtime::ExecutionState::kRunning: return terminal ? "ENDED" : "RUNNING";
      case runtime::ExecutionState::kFinished: return "FINISHED";
      case runtime::ExecutionState::kCanceled: return "CANCELED";
      case runtime::ExecutionState::kFailed: return "FAILED";
    }
    return "?";
  }

  nlohmann::json checkpoints_json(Job& j) {
    std::vector<CompletedCheckpointStats> stats;
    int64_t failed = 0;
    bool ended = false;
    {
      absl::MutexLock lock(&j.mu);
      if (j.result) {
        ended = true;
        stats = j.result->checkpoints;
        failed = j.result->failed_checkpoints;
      }
    }
    if (!ended) {
      auto st = j.master->status();
      stats = st.checkpoints;
      failed = st.failed_checkpoints;
    }
    nlohmann::json completed = nlohmann::json::array();
    for (const auto& c : stats) {
      nlohmann::json subtasks = nlohmann::json::array();
      for (const auto& t : c.subtasks) {
        subtasks.push_back({{"task", t.task}, {"sync_ms", t.sync_ms}, {"async_ms", t.async_ms},
                            {"alignment_ms", t.alignment_ms}});
      }
      completed.push_back({{"id", c.id},
                           {"trigger_time_ms", c.trigger_time_ms},
                           {"duration_ms", c.duration.count()},
                           {"state_bytes", c.state_bytes},
                           {"new_bytes", c.new_bytes},
                           {"savepoint", c.is_savepoint},
                           {"final", c.is_final},
                           {"subtasks", subtasks}});
    }
    return {{"completed", completed}, {"failed", failed}};
  }

  nlohmann::json overview_json() {
    absl::MutexLock lock(&mu_);
    nlohmann::json tms = nlohmann::json::array();
    int total = 0, used = 0;
    for (auto& [id, s] : sessions_) {
      tms.push_back({{"id", s->id},
                     {"data_address", s->data_address},
                     {"slots", s->slots},
                     {"slots_used", s->used_slots},
                     {"last_heartbeat_ms_ago", SystemClock::instance()->now_ms() - s->last_heartbeat_ms}});
      total += s->slots;
      used += s->used_slots;
    }
    int running = 0;
    for (auto& [id, j] : jobs_) {
      absl::MutexLock jl(&j->mu);
      running += j->result.has_value() ? 0 : 1;
    }
    return {{"taskmanagers", tms}, {"slots_total", total}, {"slots_free", total - used}, {"jobs_running", running}};
  }

  void dispatch(const TaskManagerMessage& m) {
    switch (m.msg_case()) {
      case TaskManagerMessage::kTaskState: {
        const auto& t = m.task_state();
        if (JobPtr j = find_job(t.job_id())) {
          j->master->update_task_state(from_proto(t.id()), static_cast<runtime::ExecutionState>(t.state()),
                                       t.error());
        }
        break;
      }
      case TaskManagerMessage::kAck: {
        const auto& a = m.ack();
        JobPtr j = find_job(a.job_id());
        if (j == nullptr) break;
        checkpoint::TaskAck ack;
        auto states = decode_ack_states(a.states());
        if (!states.ok()) {
          j->master->decline_checkpoint(from_proto(a.id()), a.checkpoint_id(), std::string(states.status().message()));
          break;
        }
        ack.states = std::move(*states);
        ack.sync_ms = a.sync_ms();
        ack.async_ms = a.async_ms();
        ack.alignment_ms = a.alignment_ms();
        j->master->acknowledge_checkpoint(from_proto(a.id()), a.checkpoint_id(), std::move(ack));
        break;
      }
      case TaskManagerMessage::kDecline: {
        const auto& d = m.decline();
        if (JobPtr j = find_job(d.job_id())) {
          j->master->decline_checkpoint(from_proto(d.id()), d.checkpoint_id(), d.reason());
        }
        break;
      }
      case TaskManagerMessage::kEndOfData: {
        const auto& e = m.end_of_data();
        if (JobPtr j = find_job(e.job_id())) j->master->end_of_data(from_proto(e.id()));
        break;
      }
      case TaskManagerMessage::kHeartbeat: {
        const int64_t now = SystemClock::instance()->now_ms();
        for (const auto& t : m.heartbeat().metrics()) {
          if (JobPtr j = find_job(t.job_id())) j->metrics.report(from_proto(t.id()), from_proto(t), now);
        }
        break;
      }
      default:
        break;
    }
  }

  // The TaskManager is gone: its tasks fail now, not at the next timeout.
  void lose(const SessionPtr& s, const std::string& reason) {
    if (s->lost.exchange(true)) return;
    std::vector<JobPtr> jobs;
    {
      absl::MutexLock lock(&mu_);
      auto it = sessions_.find(s->id);
      if (it != sessions_.end() && it->second == s) sessions_.erase(it);
      for (auto& [id, j] : jobs_) jobs.push_back(j);
    }
    if (!stopping_flag()) spdlog::warn("TaskManager {} ({}) lost: {}", s->id, s->data_address, reason);
    s->cancel();
    for (auto& j : jobs) j->gateway->taskmanager_lost(s, "TaskManager " + s->id + " (" + s->data_address + ") lost: " + reason);
  }

  bool stopping_flag() {
    absl::MutexLock lock(&mu_);
    return stopping_;
  }

  void heartbeat_loop() {
    while (true) {
      {
        absl::MutexLock lock(&mu_);
        if (mu_.AwaitWithTimeout(absl::Condition(&stopping_), absl::FromChrono(options_.heartbeat_interval))) return;
      }
      const int64_t now = SystemClock::instance()->now_ms();
      for (auto& s : live_sessions()) {
        int64_t silent = now - s->last_heartbeat_ms;
        if (silent > options_.heartbeat_timeout.count()) {
          lose(s, "no heartbeat for " + std::to_string(silent) + " ms");
          continue;
        }
        JobManagerMessage hb;
        hb.mutable_heartbeat()->set_sent_ms(now);
        s->send_urgent(std::move(hb));
      }
    }
  }

  // The largest job library a client may upload.
  static constexpr size_t kMaxLibraryBytes = size_t{512} << 20;
  static constexpr size_t kMaxJsonBodyBytes = size_t{1} << 20;
  static constexpr int kMaxJsonDepth = 32;
  static constexpr size_t kMaxJobArgs = 1024;
  static constexpr size_t kMaxJobArgBytes = 64 * 1024;

  const JobManagerOptions options_;
  LibraryStore libraries_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  HttpServer http_;
  RateLimitedLog refusals_;  // of REST requests without the secret
  int rest_port_ = -1;
  std::thread heartbeat_;

  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::map<std::string, SessionPtr> sessions_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, JobPtr> jobs_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> job_order_ ABSL_GUARDED_BY(mu_);
};

// ---- JobGateway ----------------------------------------------------------------------

absl::Status JobGateway::place(std::vector<runtime::TaskDeploymentDescriptor>& tdds) {
  // Slot i holds subtask i of every vertex. Slots on live TaskManagers stay
  // where they are (a region restart redeploys beside the running regions);
  // the others are allocated anew.
  int width = 0;
  for (const auto& v : graph_->vertices) width = std::max(width, v.parallelism);
  std::set<int> needed;
  for (const auto& t : tdds) needed.insert(t.execution.subtask);
  std::vector<int> missing;
  std::vector<SessionPtr> gone;
  {
    absl::MutexLock lock(&mu_);
    slots_.resize(width);
    for (int i : needed) {
      if (slots_[i] != nullptr && !slots_[i]->lost) continue;
      missing.push_back(i);
      if (slots_[i] != nullptr) gone.push_back(slots_[i]);
    }
  }
  std::vector<SessionPtr> fresh;
  if (!missing.empty() || !gone.empty()) {
    auto slots = jm_->allocate(static_cast<int>(missing.size()), buffers_needed_, gone);
    if (!slots.ok()) {
      absl::MutexLock lock(&mu_);
      for (int i : missing) slots_[i] = nullptr;  // released above
      return slots.status();
    }
    fresh = std::move(*slots);
  }
  absl::MutexLock lock(&mu_);
  for (size_t k = 0; k < missing.size(); ++k) slots_[missing[k]] = fresh[k];
  auto locations = std::make_shared<std::vector<std::string>>(graph_->total_subtasks());
  for (const auto& v : graph_->vertices) {
    for (int s = 0; s < v.parallelism; ++s) {
      if (slots_[s] != nullptr) (*locations)[graph_->task_index(v.id, s)] = slots_[s]->data_address;
    }
  }
  for (auto& t : tdds) {
    const SessionPtr& s = slots_[t.execution.subtask];
    placed_[{t.execution.vertex, t.execution.subtask}] = s;
    attempt_[{t.execution.vertex, t.execution.subtask}] = t.execution.attempt;
    ran_on_.insert(s);
    t.task_locations = locations;
    t.location = s->data_address;
  }
  return absl::OkStatus();
}

SessionPtr JobGateway::session_of(const runtime::ExecutionId& id) {
  absl::MutexLock lock(&mu_);
  auto it = placed_.find({id.vertex, id.subtask});
  return it == placed_.end() ? nullptr : it->second;
}

void JobGateway::submit_task(runtime::TaskDeploymentDescriptor tdd) {
  SessionPtr s = session_of(tdd.execution);
  if (s == nullptr) return;
  JobManagerMessage m;
  auto* d = m.mutable_deploy();
  d->set_job_id(job_id_);
  *d->mutable_spec() = spec_;
  *d->mutable_id() = to_proto(tdd.execution);
  d->set_task_index(tdd.task_index);
  d->set_key_group_start(tdd.key_groups.start);
  d->set_key_group_end(tdd.key_groups.end);
  d->set_restore_location(tdd.restore_location);
  if (tdd.restore != nullptr) {
    bool as_before;
    {
      absl::MutexLock lock(&s->context_mu);
      auto& sent = s->restore_sent[job_id_];
      as_before = sent == tdd.restore;
      sent = tdd.restore;
    }
    if (as_before) {
      d->set_restore_as_before(true);
    } else {
      absl::MutexLock lock(&mu_);
      if (encoded_for_ != tdd.restore) {
        encoded_ = checkpoint::encode_metadata(*tdd.restore);
        encoded_for_ = tdd.restore;
      }
      d->set_restore_metadata(encoded_);
    }
  }
  if (tdd.task_locations != nullptr) {
    for (const auto& l : *tdd.task_locations) d->add_task_locations(l);
  }
  s->send(std::move(m));
}

void JobGateway::action(proto::TaskAction::Kind kind, const runtime::ExecutionId& id, int64_t cp, int64_t ts,
                        bool savepoint) {
  SessionPtr s = session_of(id);
  if (s == nullptr || s->lost) return;
  JobManagerMessage m;
  auto* a = m.mutable_action();
  a->set_kind(kind);
  a->set_job_id(job_id_);
  *a->mutable_id() = to_proto(id);
  a->set_checkpoint_id(cp);
  a->set_timestamp_ms(ts);
  a->set_savepoint(savepoint);
  s->send(std::move(m));
}

void JobGateway::prepare_savepoint(int64_t cp, const std::string& directory) {
  std::set<SessionPtr> sessions;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& s : slots_) {
      if (s != nullptr) sessions.insert(s);
    }
  }
  for (const auto& s : sessions) {
    JobManagerMessage m;
    m.mutable_prepare_savepoint()->set_job_id(job_id_);
    m.mutable_prepare_savepoint()->set_checkpoint_id(cp);
    m.mutable_prepare_savepoint()->set_directory(directory);
    s->send(std::move(m));
  }
}

void JobGateway::taskmanager_lost(const SessionPtr& s, const std::string& reason) {
  std::vector<runtime::ExecutionId> failed;
  {
    absl::MutexLock lock(&mu_);
    for (auto& [key, session] : placed_) {
      if (session == s) failed.push_back(runtime::ExecutionId{key.first, key.second, attempt_[key]});
    }
  }
  for (const auto& id : failed) master_->update_task_state(id, runtime::ExecutionState::kFailed, reason);
}

void JobGateway::release() {
  std::vector<SessionPtr> slots;
  std::set<SessionPtr> ran_on;
  {
    absl::MutexLock lock(&mu_);
    slots.swap(slots_);
    ran_on.swap(ran_on_);
    placed_.clear();
  }
  jm_->free_slots(slots);
  for (const auto& s : ran_on) {
    {
      absl::MutexLock lock(&s->context_mu);
      s->restore_sent.erase(job_id_);
    }
    if (s->lost) continue;
    JobManagerMessage m;
    m.mutable_release()->set_job_id(job_id_);
    s->send(std::move(m));
  }
}

JobManager::JobManager(JobManagerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
JobManager::~JobManager() = default;
absl::Status JobManager::start() { return impl_->start(); }
int JobManager::port() const { return impl_->port(); }
int JobManager::rest_port() const { return impl_->rest_port(); }
void JobManager::wait() { impl_->wait(); }
void JobManager::shutdown() { impl_->shutdown(); }

}  // namespace weir::cluster
