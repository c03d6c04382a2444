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
// Thread-safety: listen() and stop() from one owner thread; handlers run on
// the worker threads.
#ifndef WEIR_CLUSTER_HTTP_SERVER_H_
#define WEIR_CLUSTER_HTTP_SERVER_H_

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <deque>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "network/gated_acceptor.h"

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
  // Each read or write of a request being processed. Default: 5 s.
  std::chrono::seconds io_timeout{5};
};

class HttpServer : public httplib::Server {
 public:
  explicit HttpServer(HttpServerOptions options = {});
  ~HttpServer() override;

  // Binds host:port (0: any free port) and starts serving; the port, or an
  // error naming the address.
  absl::StatusOr<int> listen_on(const std::string& host, int port);
  // Stops accepting, closes waiting connections, lets requests in progress
  // end, and joins every thread. Idempotent.
  void shutdown();

 private:
  using Connection = network::GatedAcceptor::Connection;
  network::GatedAcceptor::Verdict head_arrived(Connection& c, std::string* why);
  // Hands a connection whose head has arrived to the workers, or answers
  // 503 when they are saturated.
  void dispatch(Connection c);
  void worker_loop();
  void serve(const Connection& c);

  const HttpServerOptions options_;
  std::atomic<bool> stopping_{false};
  absl::Mutex mu_;
  absl::CondVar work_cv_;
  std::deque<Connection> queue_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> workers_;
  network::GatedAcceptor acceptor_;  // last: its thread calls the members above
};

}  // namespace weir::cluster

#endif  // WEIR_CLUSTER_HTTP_SERVER_H_
