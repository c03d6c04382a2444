// Accepts TCP connections for a port that peers must not be able to starve:
// one thread accepts and keeps every new connection, without blocking and
// without a thread of its own, until it has shown enough to be served (the
// data plane's hello with the secret, an HTTP request's whole head), within
// a deadline. Connections waiting are bounded, in all and per peer address
// (the oldest is closed for a new one); running out of descriptors closes
// the oldest waiting connection, or pauses accepting for a moment, and never
// ends the loop. Only shutdown() does.
//
// Thread-safety: listen(), shutdown() from the owner; wake() from any
// thread; the callbacks run on the accepting thread.
#ifndef WEIR_NETWORK_GATED_ACCEPTOR_H_
#define WEIR_NETWORK_GATED_ACCEPTOR_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "network/tls.h"

namespace weir::network {

class GatedAcceptor {
 public:
  // A connection waiting to be served.
  struct Connection {
    int fd = -1;  // non-blocking while it waits
    std::string ip;
    int port = 0;
    std::string bytes;  // what `ready` chose to read so far
    std::shared_ptr<SSL> tls;  // a TLS port's session with it, once begun
    std::chrono::steady_clock::time_point deadline;
    std::string peer() const { return ip + ":" + std::to_string(port); }
  };
  enum class Verdict { kWait, kServe, kDrop };

  struct Options {
    // What the port is, in log lines ("data port", "REST port").
    std::string name;
    // From accepting a connection to it being ready.
    std::chrono::milliseconds deadline{5000};
    // Connections waiting at once, in all and per peer address.
    size_t max_waiting = 64;
    size_t max_waiting_per_address = 64;
  };

  // `ready` is called when a waiting connection has something to read (or
  // was closed); it may read from or peek at the socket, or write a refusal,
  // and says whether to keep waiting, serve it, or drop it (naming `why`).
  // `serve` takes over a ready connection (its descriptor, still
  // non-blocking). `woken` (may be empty) runs after every wake().
  GatedAcceptor(Options options, std::function<Verdict(Connection&, std::string* why)> ready,
                std::function<void(Connection)> serve, std::function<void()> woken = {});
  ~GatedAcceptor();
  GatedAcceptor(const GatedAcceptor&) = delete;
  GatedAcceptor& operator=(const GatedAcceptor&) = delete;

  // Binds host (an IPv4 address):port (0: any free port) and starts
  // accepting; the port bound, or an error naming the address.
  absl::StatusOr<int> listen(const std::string& host, int port);
  // Runs `woken` on the accepting thread soon.
  void wake();
  // Stops accepting, closes waiting connections, joins. Idempotent.
  void shutdown();

 private:
  void loop();

  const Options options_;
  const std::function<Verdict(Connection&, std::string*)> ready_;
  const std::function<void(Connection)> serve_;
  const std::function<void()> woken_;
  const int wake_fd_;
  int listen_fd_ = -1;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace weir::network

#endif  // WEIR_NETWORK_GATED_ACCEPTOR_H_
