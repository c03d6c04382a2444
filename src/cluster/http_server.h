// The REST port's HTTP server: cpp-httplib's routing and request parsing
// behind an accept path of our own that peers cannot starve.
//
// httplib's own server gives each connection a worker thread from its first
// byte, and each read 5 s: a dozen peers sending a header byte every few
// seconds (slowloris) hold every worker before any of them has shown the
// secret. Here one thread accepts and waits, without blocking, until a
// connection's whole request head is in its socket buffer (peeked, not
// read), within a deadline for the whole head; only then does a worker take
// it and run httplib's request processing. So slow or silent peers hold a
// descriptor for at most the deadline and never a worker, a client whose
// request arrives at once is served at once, and handlers registered on the
// server (pre-routing, routes, error handler) work as with httplib::Server.
// One request per connection (no keep-alive), so every request passes the
// gate.
//
// With TLS (set_tls) the waiting covers the handshake too: the
// accepting thread runs it without blocking and reads the request head
// through it, so a peer that stalls its handshake holds no worker either.
// A connection whose first byte is not a TLS handshake is answered 400
// ("this port speaks TLS") in plain HTTP and closed.
//
// Before a route runs (and before any body is read) the server calls the
// gate set with set_gate (the secret), then checks the body's declared size
// against its limit: `max_body_bytes`, or a larger one allowed for a route
// with allow_body. Bodies without a Content-Length are refused (411). Every
// error the server answers itself has a JSON body {"error": ...}.
//
// Thread-safety: set_gate, set_tls, allow_body, routes and listen_on() before
// serving, from one owner thread; shutdown() from it too; handlers run on
// the worker threads.
#ifndef WEIR_CLUSTER_HTTP_SERVER_H_
#define WEIR_CLUSTER_HTTP_SERVER_H_

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/rate_limited_log.h"
#include "network/gated_acceptor.h"
#include "network/tls.h"

namespace weir::cluster {

struct HttpServerOptions {
  // Time from accepting a connection to having its whole request head.
  // Default: 10 s.
  std::chrono::milliseconds head_timeout{10000};
  // Longest request head (request line and headers). Default: 16 KiB.
  size_t max_head_bytes = 16 * 1024;
  // Connections waiting for their head, in all and per peer address; beyond
  // either the oldest is closed. Defaults: 256, 32.
  size_t max_pending = 256;
  size_t max_pending_per_address = 32;
  // Threads that process requests, and requests queued for them; a request
  // beyond both is answered 503. Defaults: 16, 64.
  int workers = 16;
  size_t max_queued = 64;
  // The same for long polls (set_long_poll): requests that may wait for an
  // event before they answer, kept apart so that they never hold the
  // workers of other requests. Defaults: 64, 64.
  int long_poll_workers = 64;
  size_t max_queued_long_polls = 64;
  // Connections in their lingering close (answered, the peer's unread
  // bytes discarded for up to a second) at once; beyond it one is closed
  // at once. Default: 1024.
  size_t max_lingering = 1024;
  // Each read or write of a request being processed. Default: 5 s.
  std::chrono::seconds io_timeout{5};
  // Largest request body, unless allow_body says otherwise for a route.
  // Default: 1 MiB.
  size_t max_body_bytes = size_t{1} << 20;
  // What the port is, in errors ("cannot listen on ...:8081 (REST port)").
  std::string name = "REST port";
};

class HttpServer : public httplib::Server {
 public:
  explicit HttpServer(HttpServerOptions options = {});
  ~HttpServer() override;

  // Binds host:port (0: any free port) and starts serving; the port, or an
  // error naming the address.
  absl::StatusOr<int> listen_on(const std::string& host, int port);
  // The first free port of first..last (as Flink's reporter takes
  // "9250-9260"); an error names the range when none is free.
  absl::StatusOr<int> listen_on(const std::string& host, int first, int last);

  // Runs first for every request: true lets it through; false means the
  // gate has written the response (e.g. 401).
  using Gate = std::function<bool(const httplib::Request&, httplib::Response&)>;
  void set_gate(Gate gate) { gate_ = std::move(gate); }
  // Serves HTTPS with this server context (before listen_on).
  void set_tls(std::shared_ptr<const network::TlsContext> tls) { tls_ = std::move(tls); }
  // Requests `method` to paths starting with `path_prefix` may carry bodies
  // up to `max_bytes`.
  void allow_body(std::string method, std::string path_prefix, size_t max_bytes);
  // Which requests are long polls, by their request line ("GET /x HTTP/1.1").
  void set_long_poll(std::function<bool(std::string_view request_line)> is_long_poll) {
    is_long_poll_ = std::move(is_long_poll);
  }
  // Which requests go before the others waiting for a worker, by their
  // whole head (e.g. those carrying the cluster's secret).
  void set_priority(std::function<bool(std::string_view head)> first) { first_ = std::move(first); }
  // Stops accepting, closes waiting connections, lets requests in progress
  // end, and joins every thread. Idempotent.
  void shutdown();

 private:
  using Connection = network::GatedAcceptor::Connection;
  // 0 when the declared body is acceptable, else the HTTP status to refuse
  // with and `why`.
  int check_body_size(const httplib::Request& req, std::string* why) const;
  network::GatedAcceptor::Verdict head_arrived(Connection& c, std::string* why);
  network::GatedAcceptor::Verdict tls_head_arrived(Connection& c, std::string* why);
  // Hands a connection whose head has arrived to the workers, or answers
  // 503 when they are saturated.
  void dispatch(Connection c);
  struct Lane;
  void worker_loop(Lane* lane);
  void serve(const Connection& c);
  // The lingering close of answered connections, on a thread of its own.
  void linger(int fd);
  void linger_loop();

  struct BodyLimit {
    std::string method, path_prefix;
    size_t max_bytes;
  };

  const HttpServerOptions options_;
  Gate gate_;
  std::shared_ptr<const network::TlsContext> tls_;  // null: plain HTTP
  std::vector<BodyLimit> body_limits_;
  std::function<bool(std::string_view)> is_long_poll_;
  std::function<bool(std::string_view)> first_;
  std::atomic<bool> stopping_{false};
  absl::Mutex mu_;
  // Requests waiting for a worker of their lane, the worker threads.
  // `queue` and `active` are guarded by the server's mu_ (which clang's
  // analysis cannot name from inside this struct); `max_queued` and
  // `threads` are set before serving.
  struct Lane {
    size_t max_queued = 0;
    absl::CondVar cv;
    std::deque<Connection> queue;
    int active = 0;  // requests its workers are serving
    std::vector<std::thread> threads;
  };
  Lane requests_;
  Lane long_polls_;
  // Lingering connections: fd and when to close it at the latest.
  std::vector<std::pair<int, std::chrono::steady_clock::time_point>> lingering_ ABSL_GUARDED_BY(mu_);
  absl::CondVar linger_cv_;
  std::thread linger_thread_;
  network::GatedAcceptor acceptor_;  // last: its thread calls the members above
};

// The cluster's gate: lets through requests that carry `secret` as
// "Authorization: Bearer <secret>" and, when `public_metrics`, GET
// /metrics without it; answers the rest 401 with the reason, and logs them
// through `refusals` (which outlives the gate), naming `server`.
HttpServer::Gate secret_gate(std::string secret, bool public_metrics, std::string server, RateLimitedLog* refusals);

}  // namespace weir::cluster

#endif  // WEIR_CLUSTER_HTTP_SERVER_H_
