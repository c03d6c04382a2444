#include "cluster/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <map>

#include <nlohmann/json.hpp>

#include "network/data_plane.h"

namespace weir::cluster {
namespace {

using SteadyClock = std::chrono::steady_clock;

// A connected socket (or a TLS session over it) as httplib's Stream, with
// a read buffer (httplib reads request lines a byte at a time), first
// holding what was read while the connection waited, and a timeout on each
// read and write.
class SocketStream final : public httplib::Stream {
 public:
  SocketStream(int fd, SSL* tls, std::string read_ahead, std::string ip, int port, std::chrono::seconds timeout)
      : fd_(fd),
        tls_(tls),
        ahead_(std::move(read_ahead)),
        ip_(std::move(ip)),
        port_(port),
        timeout_ms_(static_cast<int>(timeout.count() * 1000)) {}

  bool is_readable() const override {
    return begin_ < end_ || !ahead_.empty() || (tls_ != nullptr && SSL_pending(tls_) > 0) || wait(POLLIN);
  }
  bool is_writable() const override { return wait(POLLOUT); }
  ssize_t read(char* ptr, size_t size) override {
    if (!ahead_.empty()) {
      size_t n = std::min(size, ahead_.size());
      std::memcpy(ptr, ahead_.data(), n);
      ahead_.erase(0, n);
      return static_cast<ssize_t>(n);
    }
    if (begin_ == end_) {
      ssize_t n = receive(buf_, sizeof(buf_));
      if (n <= 0) return n;
      begin_ = 0;
      end_ = static_cast<size_t>(n);
    }
    size_t n = std::min(size, end_ - begin_);
    std::memcpy(ptr, buf_ + begin_, n);
    begin_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    if (!wait(POLLOUT)) return -1;
    if (tls_ != nullptr) {
      // The socket is blocking with a send timeout (serve()).
      int n = SSL_write(tls_, ptr, static_cast<int>(std::min<size_t>(size, 1 << 30)));
      return n > 0 ? n : -1;
    }
    ssize_t n;
    do {
      n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n;
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = ip_;
    port = port_;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_in addr{};
    socklen_t len = sizeof(addr);
    char text[INET_ADDRSTRLEN] = "";
    if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      ::inet_ntop(AF_INET, &addr.sin_addr, text, sizeof(text));
      port = ntohs(addr.sin_port);
    }
    ip = text;
  }
  socket_t socket() const override { return fd_; }

 private:
  bool wait(short events) const {
    pollfd p{fd_, events, 0};
    int n;
    do {
      n = ::poll(&p, 1, timeout_ms_);
    } while (n < 0 && errno == EINTR);
    return n > 0 && (p.revents & (events | POLLHUP | POLLERR)) != 0;
  }

  ssize_t receive(char* out, size_t size) {
    if (tls_ != nullptr) {
      if (SSL_pending(tls_) == 0 && !wait(POLLIN)) return -1;
      int n = SSL_read(tls_, out, static_cast<int>(size));
      if (n > 0) return n;
      return SSL_get_error(tls_, n) == SSL_ERROR_ZERO_RETURN ? 0 : -1;
    }
    if (!wait(POLLIN)) return -1;
    ssize_t n;
    do {
      n = ::recv(fd_, out, size, 0);
    } while (n < 0 && errno == EINTR);
    return n;
  }

  const int fd_;
  SSL* const tls_;
  std::string ahead_;
  const std::string ip_;
  const int port_;
  const int timeout_ms_;
  char buf_[4096];
  size_t begin_ = 0, end_ = 0;
};

// Whether the request head has arrived: peeks (without consuming) at what
// the socket holds. -1: the peer closed or failed; 0: not yet; 1: complete;
// 2: longer than `max` without an end.
int head_state(int fd, size_t max) {
  std::string buf(max, '\0');
  ssize_t n = ::recv(fd, buf.data(), buf.size(), MSG_PEEK | MSG_DONTWAIT);
  if (n == 0) return -1;
  if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
  std::string_view got(buf.data(), static_cast<size_t>(n));
  if (got.find("\r\n\r\n") != std::string_view::npos) return 1;
  return static_cast<size_t>(n) >= max ? 2 : 0;
}

// A whole response, for a connection about to be closed.
std::string response(int status, const std::string& reason, const std::string& message) {
  std::string body = "{\"error\": \"" + message + "\"}";
  return "HTTP/1.1 " + std::to_string(status) + " " + reason +
         "\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

// The same written on a plain socket; best effort.
void answer(int fd, int status, const std::string& reason, const std::string& message) {
  const std::string out = response(status, reason, message);
  ssize_t w = ::send(fd, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  (void)w;
}

}  // namespace

HttpServer::HttpServer(HttpServerOptions options)
    : options_(options),
      acceptor_(network::GatedAcceptor::Options{options.name, options.head_timeout, options.max_pending,
                                                options.max_pending_per_address},
                [this](network::GatedAcceptor::Connection& c, std::string* why) { return head_arrived(c, why); },
                [this](network::GatedAcceptor::Connection c) { dispatch(std::move(c)); }) {
  set_keep_alive_max_count(1);  // every request passes the gate
  set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (gate_ && !gate_(req, res)) return HandlerResponse::Handled;
    std::string why;
    if (int status = check_body_size(req, &why); status != 0) {
      res.status = status;
      res.set_content(nlohmann::json{{"error", why}}.dump(), "application/json");
      return HandlerResponse::Handled;
    }
    return HandlerResponse::Unhandled;
  });
  // Errors httplib answers itself (no route, unreadable request) get a JSON
  // body too.
  set_error_handler(HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return HandlerResponse::Unhandled;
    std::string what = res.status == 404 ? "no such resource: " + req.method + " " + req.path
                                         : "the request could not be served (HTTP " + std::to_string(res.status) + ")";
    res.set_content(nlohmann::json{{"error", what}}.dump(), "application/json");
    return HandlerResponse::Handled;
  }));
}

void HttpServer::allow_body(std::string method, std::string path_prefix, size_t max_bytes) {
  body_limits_.push_back(BodyLimit{std::move(method), std::move(path_prefix), max_bytes});
}

int HttpServer::check_body_size(const httplib::Request& req, std::string* why) const {
  if (req.method != "POST" && req.method != "PUT" && req.method != "PATCH") return 0;
  if (req.has_header("Transfer-Encoding")) {
    *why = "chunked request bodies are not accepted; send Content-Length";
    return 411;
  }
  const std::string length = req.get_header_value("Content-Length");
  if (length.empty()) {
    *why = req.method + " " + req.path + " needs a Content-Length header (0 for an empty body)";
    return 411;
  }
  size_t limit = options_.max_body_bytes;
  for (const auto& l : body_limits_) {
    if (req.method == l.method && req.path.rfind(l.path_prefix, 0) == 0) limit = l.max_bytes;
  }
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

HttpServer::~HttpServer() { shutdown(); }

absl::StatusOr<int> HttpServer::listen_on(const std::string& host, int port) { return listen_on(host, port, port); }

absl::StatusOr<int> HttpServer::listen_on(const std::string& host, int first, int last) {
  // The port first: the workers start only once there is one.
  absl::StatusOr<int> bound = absl::InvalidArgumentError(options_.name + ": an empty port range");
  for (int port = first; port <= last; ++port) {
    bound = acceptor_.listen(host, port);
    if (bound.ok() || absl::IsInvalidArgument(bound.status())) break;
  }
  if (!bound.ok()) {
    if (first == last) return bound.status();
    return absl::UnavailableError("no free port in " + std::to_string(first) + "-" + std::to_string(last) + " on " +
                                  host + " (" + options_.name + "); the last: " + std::string(bound.status().message()));
  }
  size_t largest = options_.max_body_bytes;
  for (const auto& l : body_limits_) largest = std::max(largest, l.max_bytes);
  set_payload_max_length(largest);
  requests_.max_queued = options_.max_queued;
  long_polls_.max_queued = options_.max_queued_long_polls;
  for (int i = 0; i < options_.workers; ++i) requests_.threads.emplace_back([this] { worker_loop(&requests_); });
  if (is_long_poll_) {
    for (int i = 0; i < options_.long_poll_workers; ++i) {
      long_polls_.threads.emplace_back([this] { worker_loop(&long_polls_); });
    }
  }
  linger_thread_ = std::thread([this] { linger_loop(); });
  return bound;
}

void HttpServer::shutdown() {
  if (stopping_.exchange(true)) return;
  acceptor_.shutdown();
  {
    absl::MutexLock lock(&mu_);
    for (Lane* lane : {&requests_, &long_polls_}) {
      for (Connection& c : lane->queue) ::close(c.fd);
      lane->queue.clear();
      lane->cv.SignalAll();
    }
    linger_cv_.SignalAll();
  }
  for (Lane* lane : {&requests_, &long_polls_}) {
    for (auto& t : lane->threads) t.join();
    lane->threads.clear();
  }
  if (linger_thread_.joinable()) linger_thread_.join();
  absl::MutexLock lock(&mu_);
  for (auto& [fd, until] : lingering_) ::close(fd);
  lingering_.clear();
}

network::GatedAcceptor::Verdict HttpServer::head_arrived(Connection& c, std::string* why) {
  if (tls_ != nullptr) return tls_head_arrived(c, why);
  switch (head_state(c.fd, options_.max_head_bytes)) {
    case 1:
      return network::GatedAcceptor::Verdict::kServe;
    case -1:
      *why = "closed before its request was complete";
      return network::GatedAcceptor::Verdict::kDrop;
    case 2:
      answer(c.fd, 431, "Request Header Fields Too Large",
             "request head longer than " + std::to_string(options_.max_head_bytes) + " bytes");
      *why = "request head too large";
      return network::GatedAcceptor::Verdict::kDrop;
    default:
      return network::GatedAcceptor::Verdict::kWait;
  }
}

network::GatedAcceptor::Verdict HttpServer::tls_head_arrived(Connection& c, std::string* why) {
  using Verdict = network::GatedAcceptor::Verdict;
  switch (network::tls_accept_step(c.fd, *tls_, &c.tls, why)) {
    case network::TlsAccept::kWait:
      return Verdict::kWait;
    case network::TlsAccept::kPlain:
      answer(c.fd, 400, "Bad Request", "this port speaks TLS (HTTPS): use https:// and the cluster's CA (--tls-ca)");
      return Verdict::kDrop;
    case network::TlsAccept::kFailed:
      return Verdict::kDrop;
    case network::TlsAccept::kReady:
      break;
  }
  // The request head, read through TLS (it cannot be peeked at); the
  // worker's stream starts with what was read.
  const int got = network::tls_read_available(c.tls.get(), &c.bytes, options_.max_head_bytes, why);
  if (got < 0) return Verdict::kDrop;
  if (c.bytes.find("\r\n\r\n") != std::string::npos) return Verdict::kServe;
  if (c.bytes.size() >= options_.max_head_bytes) {
    const std::string out = response(431, "Request Header Fields Too Large",
                                     "request head longer than " + std::to_string(options_.max_head_bytes) + " bytes");
    SSL_write(c.tls.get(), out.data(), static_cast<int>(out.size()));
    *why = "request head too large";
    return Verdict::kDrop;
  }
  return Verdict::kWait;
}

void HttpServer::dispatch(Connection c) {
  ::fcntl(c.fd, F_SETFL, ::fcntl(c.fd, F_GETFL) & ~O_NONBLOCK);
  // The head is all there (read through TLS, else in the socket buffer).
  std::string peeked;
  std::string_view head = c.bytes;
  if (c.tls == nullptr && (is_long_poll_ || first_)) {
    peeked.resize(options_.max_head_bytes);
    const ssize_t n = ::recv(c.fd, peeked.data(), peeked.size(), MSG_PEEK | MSG_DONTWAIT);
    peeked.resize(n > 0 ? static_cast<size_t>(n) : 0);
    head = peeked;
  }
  const bool long_poll = is_long_poll_ && is_long_poll_(head.substr(0, head.find("\r\n")));
  const bool first = first_ && first_(head);
  absl::MutexLock lock(&mu_);
  Lane& lane = long_poll ? long_polls_ : requests_;
  // Its workers and its queue, whether or not the workers have woken up
  // yet to take what is queued (a burst can arrive faster).
  if (lane.queue.size() + static_cast<size_t>(lane.active) >= lane.threads.size() + lane.max_queued || stopping_) {
    answer(c.fd, 503, "Service Unavailable", "the server is busy; try again");
    ::close(c.fd);
    return;
  }
  if (first) {
    lane.queue.push_front(std::move(c));
  } else {
    lane.queue.push_back(std::move(c));
  }
  lane.cv.Signal();
}

void HttpServer::worker_loop(Lane* lane) {
  while (true) {
    Connection p;
    {
      absl::MutexLock lock(&mu_);
      while (lane->queue.empty() && !stopping_) lane->cv.Wait(&mu_);
      if (lane->queue.empty()) return;
      p = std::move(lane->queue.front());
      lane->queue.pop_front();
      ++lane->active;
    }
    serve(p);
    absl::MutexLock lock(&mu_);
    --lane->active;
  }
}

void HttpServer::linger(int fd) {
  absl::MutexLock lock(&mu_);
  if (stopping_ || lingering_.size() >= options_.max_lingering) {
    ::close(fd);
    return;
  }
  lingering_.emplace_back(fd, SteadyClock::now() + std::chrono::seconds(1));
  linger_cv_.Signal();
}

void HttpServer::linger_loop() {
  std::vector<pollfd> polled;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      while (lingering_.empty() && !stopping_) linger_cv_.Wait(&mu_);
      if (stopping_) return;
      polled.clear();
      for (auto& [fd, until] : lingering_) polled.push_back({fd, POLLIN, 0});
    }
    ::poll(polled.data(), polled.size(), 100);
    char buf[16384];
    std::vector<int> done;
    for (const pollfd& pf : polled) {
      if ((pf.revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      // What arrived since the last pass, at most a buffer's worth.
      const ssize_t n = ::recv(pf.fd, buf, sizeof(buf), MSG_DONTWAIT);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) done.push_back(pf.fd);
    }
    // Closed once the peer is done, or its second is over.
    absl::MutexLock lock(&mu_);
    const auto now = SteadyClock::now();
    auto it = std::remove_if(lingering_.begin(), lingering_.end(), [&](const auto& l) {
      const bool over = l.second <= now || std::find(done.begin(), done.end(), l.first) != done.end();
      if (over) ::close(l.first);
      return over;
    });
    lingering_.erase(it, lingering_.end());
  }
}

void HttpServer::serve(const Connection& p) {
  if (p.tls != nullptr) {
    // TLS reads and writes block on the socket: bound them.
    timeval tv{static_cast<time_t>(options_.io_timeout.count()), 0};
    ::setsockopt(p.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    ::setsockopt(p.fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  }
  SocketStream stream(p.fd, p.tls.get(), p.bytes, p.ip, p.port, options_.io_timeout);
  bool closed = false;
  process_request(stream, /*close_connection=*/true, closed, [&](httplib::Request& req) {
    req.remote_addr = p.ip;
    req.remote_port = p.port;
  });
  if (p.tls != nullptr) SSL_shutdown(p.tls.get());  // close_notify; the peer need not answer
  // A lingering close: a request refused before its body was read still
  // has that body coming, and closing on unread data would reset the
  // connection and could destroy the answer before the client reads it.
  // So stop writing, then discard what arrives for a moment (bounded: a
  // second, 16 KiB a pass) on the lingering thread, not on this worker.
  ::shutdown(p.fd, SHUT_WR);
  linger(p.fd);
}

}  // namespace weir::cluster

namespace weir::cluster {

HttpServer::Gate secret_gate(std::string secret, bool public_metrics, std::string server, RateLimitedLog* refusals) {
  return [secret = "Bearer " + std::move(secret), public_metrics, server = std::move(server), refusals](
             const httplib::Request& req, httplib::Response& res) {
    if (public_metrics && req.method == "GET" && req.path == "/metrics") return true;
    const std::string given = req.get_header_value("Authorization");
    if (network::secrets_equal(given, secret)) return true;
    refusals->log([&] {
      return fmt::format("refused a {} request {} {} from {}: {}", server, req.method, req.path, req.remote_addr,
                         given.empty() ? "no cluster secret" : "wrong cluster secret");
    });
    res.status = 401;
    res.set_content(
        nlohmann::json{{"error", given.empty() ? "no cluster secret given" : "wrong cluster secret"}}.dump(),
        "application/json");
    return false;
  };
}

}  // namespace weir::cluster
