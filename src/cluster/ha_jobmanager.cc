#include "cluster/ha_jobmanager.h"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "cluster/http_server.h"
#include "cluster/leader_election.h"
#include "network/data_plane.h"
#include "network/tls.h"

namespace weir::cluster {

class HaJobManager::Impl {
 public:
  Impl(JobManagerOptions options, HaOptions ha) : options_(std::move(options)), ha_(std::move(ha)) {}
  ~Impl() { shutdown(); }

  absl::Status start() {
    if (absl::Status s = check_ha_options(ha_); !s.ok()) return s;
    auto host = network::parse_address(options_.bind);
    if (!host.ok()) return host.status();
    if (host->second == 0 || options_.rest_port == 0) {
      return absl::InvalidArgumentError(
          "--ha zookeeper needs fixed ports (--bind HOST:PORT and --rest-port other than 0): the leader's address "
          "is published before it listens");
    }
    address_ = options_.bind + " " + (options_.tls.enabled() ? "https://" : "http://") + host->first + ":" +
               std::to_string(options_.rest_port);
    election_ = std::make_unique<LeaderElection>(
        LeaderElection::Options{ha_.quorum, ha_.root(), address_, ha_.session_timeout},
        LeaderElection::Callbacks{[this](int64_t epoch) { want(epoch); }, [this] { want(0); }});
    if (absl::Status s = election_->start(std::chrono::seconds(10)); !s.ok()) return s;
    thread_ = std::thread([this] { run(); });
    spdlog::info("standing by for leadership of cluster {} (ZooKeeper {}) as {}", ha_.cluster_id, ha_.quorum,
                 address_);
    return absl::OkStatus();
  }

  const std::string& address() const { return address_; }

  void shutdown() {
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
      stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    stop_standby();
    // Out of the election last: leadership passes on only once this
    // JobManager stopped acting.
    election_.reset();
  }

 private:
  void want(int64_t epoch) {
    std::lock_guard lock(mu_);
    wanted_ = epoch;
    cv_.notify_all();
  }

  // The leader's REST base URL ("http://HOST:PORT") from ZooKeeper, asked
  // at most once a second; "" while none leads (or it is this one).
  std::string leader_url() {
    std::lock_guard lock(leader_mu_);
    const auto now = std::chrono::steady_clock::now();
    if (now - leader_asked_ >= std::chrono::seconds(1)) {
      leader_asked_ = now;
      auto a = LeaderElection::leader_address(ha_.quorum, ha_.root(), std::chrono::seconds(2));
      leader_url_.clear();
      if (a.ok() && *a != address_ && a->find(' ') != std::string::npos) leader_url_ = a->substr(a->find(' ') + 1);
    }
    return leader_url_;
  }

  // While standing by, the REST port answers every request with a redirect
  // to the leader's (307: same method, same body), so that browsers,
  // clients and scrapers pointed at any JobManager reach the leader; 503
  // while no leader is elected. The secret is not asked for: a redirect
  // says only where the leader is, which ZooKeeper tells anyone.
  void serve_standby() {
    if (standby_ != nullptr) return;
    auto host = network::parse_address(options_.bind);
    if (!host.ok()) return;
    HttpServerOptions o;
    o.workers = 2;
    o.long_poll_workers = 1;
    auto server = std::make_unique<HttpServer>(o);
    if (options_.tls.enabled()) {
      auto ctx = network::TlsContext::create(options_.tls, network::TlsContext::Role::kServer,
                                             /*require_client_cert=*/false);
      if (!ctx.ok()) {
        spdlog::warn("standby REST port: {}", std::string(ctx.status().message()));
        return;
      }
      server->set_tls(*ctx);
    }
    server->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      const std::string leader = leader_url();
      if (leader.empty()) {
        res.status = 503;
        res.set_header("Retry-After", "1");
        res.set_content(R"({"error": "this JobManager stands by and no leader is elected yet"})", "application/json");
      } else {
        res.status = 307;
        res.set_header("Location", leader + req.target);
        res.set_content(nlohmann::json{{"error", "this JobManager stands by; the leader is " + leader},
                                       {"leader", leader}}
                            .dump(),
                        "application/json");
      }
      return httplib::Server::HandlerResponse::Handled;
    });
    auto port = server->listen_on(host->first, options_.rest_port);
    if (!port.ok()) {
      spdlog::warn("standby REST port: {}", std::string(port.status().message()));
      return;
    }
    standby_ = std::move(server);
  }
  void stop_standby() {
    if (standby_ == nullptr) return;
    standby_->shutdown();
    standby_.reset();
  }

  // Starts and stops a JobManager as leadership comes and goes. A term
  // that cannot start (ZooKeeper or HA storage unreachable, a port still
  // taken) steps down, so that the next JobManager in line leads; alone,
  // this one is granted leadership again and retries a second later.
  void run() {
    std::unique_ptr<JobManager> term;
    int64_t running = 0;
    std::unique_lock lock(mu_);
    while (true) {
      if (running == 0 && !stopping_ && wanted_ == 0) {
        lock.unlock();
        serve_standby();  // retried each second until the port is free
        lock.lock();
      }
      cv_.wait_for(lock, std::chrono::seconds(1), [&] { return stopping_ || wanted_ != running; });
      const int64_t wanted = stopping_ ? 0 : wanted_;
      if (wanted == running) {
        if (stopping_) break;
        continue;
      }
      lock.unlock();
      if (wanted != 0 || stopping_) stop_standby();
      if (term != nullptr) {
        spdlog::warn("leadership of epoch {} is over: stopping its jobs here (they stay recorded for the next "
                     "leader)",
                     running);
        term->shutdown(/*suspend=*/true);
        term.reset();
        running = 0;
      }
      bool failed = false;
      if (wanted != 0) {
        term = lead(wanted);
        if (term != nullptr) running = wanted;
        failed = term == nullptr;
      }
      // A leader that cannot lead gives another JobManager its turn (with
      // none in line, it is granted leadership again and retries).
      if (failed) election_->step_down();
      lock.lock();
      if (stopping_ && term == nullptr) break;
      if (failed) cv_.wait_for(lock, std::chrono::seconds(1), [&] { return stopping_ || wanted_ != wanted; });
    }
  }

  std::unique_ptr<JobManager> lead(int64_t epoch) {
    auto store = HaStore::open(ha_, epoch, std::chrono::seconds(5));
    if (!store.ok()) {
      spdlog::error("cannot lead under epoch {}: {}", epoch, std::string(store.status().message()));
      return nullptr;
    }
    JobManagerOptions o = options_;
    o.epoch = epoch;
    o.ha = *std::move(store);
    auto jm = std::make_unique<JobManager>(std::move(o));
    if (absl::Status s = jm->start(); !s.ok()) {
      spdlog::error("cannot lead under epoch {}: {}", epoch, std::string(s.message()));
      jm->shutdown(/*suspend=*/true);
      return nullptr;
    }
    spdlog::info("leading (epoch {}): sessions on {}, REST API on port {}", epoch, options_.bind, jm->rest_port());
    return jm;
  }

  const JobManagerOptions options_;
  const HaOptions ha_;
  std::string address_;
  std::unique_ptr<LeaderElection> election_;
  std::thread thread_;

  std::mutex mu_;
  std::condition_variable cv_;
  int64_t wanted_ = 0;  // the epoch to lead under; 0: stand by
  bool stopping_ = false;
  std::unique_ptr<HttpServer> standby_;  // the REST port while standing by; run()'s thread

  std::mutex leader_mu_;  // leader_url()'s cache
  std::chrono::steady_clock::time_point leader_asked_;
  std::string leader_url_;
};

HaJobManager::HaJobManager(JobManagerOptions options, HaOptions ha)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(ha))) {}
HaJobManager::~HaJobManager() = default;
absl::Status HaJobManager::start() { return impl_->start(); }
const std::string& HaJobManager::address() const { return impl_->address(); }
void HaJobManager::shutdown() { impl_->shutdown(); }

std::string HaJobManager::session_address(const std::string& published) {
  return published.substr(0, published.find(' '));
}

}  // namespace weir::cluster
