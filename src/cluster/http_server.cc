#include "cluster/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

namespace weir::cluster {
namespace {

using Clock = std::chrono::steady_clock;

// A connected socket as httplib's Stream, with a read buffer (httplib reads
// request lines a byte at a time) and a timeout on each read and write.
class SocketStream final : public httplib::Stream {
 public:
  SocketStream(int fd, std::string ip, int port, std::chrono::seconds timeout)
      : fd_(fd), ip_(std::move(ip)), port_(port), timeout_ms_(static_cast<int>(timeout.count() * 1000)) {}

  bool is_readable() const override { return begin_ < end_ || wait(POLLIN); }
  bool is_writable() const override { return wait(POLLOUT); }
  ssize_t read(char* ptr, size_t size) override {
    if (begin_ == end_) {
      if (!wait(POLLIN)) return -1;
      ssize_t n;
      do {
        n = ::recv(fd_, buf_, sizeof(buf_), 0);
      } while (n < 0 && errno == EINTR);
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

  const int fd_;
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

// A whole response written on a socket about to be closed; best effort.
void answer_and_close(int fd, int status, const std::string& reason, const std::string& message) {
  std::string body = "{\"error\": \"" + message + "\"}";
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + reason +
                    "\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: " +
                    std::to_string(body.size()) + "\r\n\r\n" + body;
  ssize_t w = ::send(fd, out.data(), out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  (void)w;
  ::close(fd);
}

}  // namespace

HttpServer::HttpServer(HttpServerOptions options)
    : options_(options), wake_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  set_keep_alive_max_count(1);  // every request passes the gate
}

HttpServer::~HttpServer() {
  shutdown();
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

absl::StatusOr<int> HttpServer::listen_on(const std::string& host, int port) {
  const std::string where = host + ":" + std::to_string(port);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    return absl::InvalidArgumentError("REST port: '" + host + "' is not an IPv4 address");
  }
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return absl::UnavailableError("REST port socket: " + std::string(std::strerror(errno)));
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd, 128) != 0) {
    std::string why = std::strerror(errno);
    ::close(fd);
    return absl::UnavailableError("cannot listen on " + where + " (REST): " + why);
  }
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  listen_fd_ = fd;
  for (int i = 0; i < options_.workers; ++i) workers_.emplace_back([this] { worker_loop(); });
  acceptor_ = std::thread([this] { accept_loop(); });
  return ntohs(addr.sin_port);
}

void HttpServer::shutdown() {
  if (stopping_.exchange(true)) return;
  uint64_t one = 1;
  ssize_t w = ::write(wake_fd_, &one, sizeof(one));
  (void)w;
  if (acceptor_.joinable()) acceptor_.join();
  {
    absl::MutexLock lock(&mu_);
    for (Pending& p : queue_) ::close(p.fd);
    queue_.clear();
    work_cv_.SignalAll();
  }
  for (auto& t : workers_) t.join();
  workers_.clear();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
}

void HttpServer::accept_loop() {
  std::deque<Pending> pending;
  Clock::time_point resume_accepting{};
  bool accept_failing = false;
  while (!stopping_) {
    const Clock::time_point now = Clock::now();
    const bool accepting = now >= resume_accepting;
    std::vector<pollfd> fds;
    fds.push_back({wake_fd_, POLLIN, 0});
    fds.push_back({accepting ? listen_fd_ : -1, POLLIN, 0});
    Clock::time_point next = accepting ? now + std::chrono::seconds(1) : resume_accepting;
    for (const Pending& p : pending) {
      fds.push_back({p.fd, POLLIN, 0});
      next = std::min(next, p.deadline);
    }
    const int timeout_ms = static_cast<int>(
        std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count() + 1));
    if (::poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) {
      resume_accepting = Clock::now() + std::chrono::milliseconds(200);
      continue;
    }
    if (stopping_) break;
    // Heads that arrived, peers that left, deadlines that passed.
    for (size_t i = 0; i < pending.size(); ++i) {
      Pending& p = pending[i];
      if (fds[2 + i].revents != 0) {
        int st = head_state(p.fd, options_.max_head_bytes);
        if (st == 1) {
          dispatch(p);
          p.fd = -1;
          continue;
        }
        if (st == -1) {
          ::close(p.fd);
          p.fd = -1;
          continue;
        }
        if (st == 2) {
          answer_and_close(p.fd, 431, "Request Header Fields Too Large",
                           "request head longer than " + std::to_string(options_.max_head_bytes) + " bytes");
          p.fd = -1;
          continue;
        }
      }
      if (Clock::now() >= p.deadline) {
        ::close(p.fd);  // no whole request in time: nothing to answer
        p.fd = -1;
      }
    }
    std::erase_if(pending, [](const Pending& p) { return p.fd < 0; });
    if (!accepting || !(fds[1].revents & POLLIN)) continue;
    while (!stopping_) {
      sockaddr_in peer{};
      socklen_t len = sizeof(peer);
      int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        if ((errno == EMFILE || errno == ENFILE) && !pending.empty()) {
          ::close(pending.front().fd);  // the oldest waiting peer gives its descriptor up
          pending.pop_front();
          continue;
        }
        if (!accept_failing) spdlog::error("REST port: cannot accept connections: {}; retrying", std::strerror(errno));
        accept_failing = true;
        resume_accepting = Clock::now() + std::chrono::milliseconds(200);
        break;
      }
      if (accept_failing) spdlog::info("REST port: accepting connections again");
      accept_failing = false;
      char ip[INET_ADDRSTRLEN] = "?";
      ::inet_ntop(AF_INET, &peer.sin_addr, ip, sizeof(ip));
      Pending p{fd, ip, ntohs(peer.sin_port), Clock::now() + options_.head_timeout};
      // Bound what one address, and everyone, may keep waiting.
      size_t same = std::count_if(pending.begin(), pending.end(), [&](const Pending& x) { return x.ip == p.ip; });
      if (same >= options_.max_pending_per_address) {
        auto oldest = std::find_if(pending.begin(), pending.end(), [&](const Pending& x) { return x.ip == p.ip; });
        ::close(oldest->fd);
        pending.erase(oldest);
      } else if (pending.size() >= options_.max_pending) {
        ::close(pending.front().fd);
        pending.pop_front();
      }
      pending.push_back(std::move(p));
    }
  }
  for (Pending& p : pending) ::close(p.fd);
}

void HttpServer::dispatch(Pending p) {
  ::fcntl(p.fd, F_SETFL, ::fcntl(p.fd, F_GETFL) & ~O_NONBLOCK);
  absl::MutexLock lock(&mu_);
  if (queue_.size() >= options_.max_queued) {
    answer_and_close(p.fd, 503, "Service Unavailable", "the server is busy; try again");
    return;
  }
  queue_.push_back(std::move(p));
  work_cv_.Signal();
}

void HttpServer::worker_loop() {
  while (true) {
    Pending p;
    {
      absl::MutexLock lock(&mu_);
      while (queue_.empty() && !stopping_) work_cv_.Wait(&mu_);
      if (queue_.empty()) return;
      p = std::move(queue_.front());
      queue_.pop_front();
    }
    serve(p);
  }
}

void HttpServer::serve(const Pending& p) {
  SocketStream stream(p.fd, p.ip, p.port, options_.io_timeout);
  bool closed = false;
  process_request(stream, /*close_connection=*/true, closed, [&](httplib::Request& req) {
    req.remote_addr = p.ip;
    req.remote_port = p.port;
  });
  // A lingering close: a request refused before its body was read still
  // has that body coming, and closing on unread data would reset the
  // connection and could destroy the answer before the client reads it.
  // So stop writing, then discard what arrives for a moment (bounded).
  ::shutdown(p.fd, SHUT_WR);
  const auto until = Clock::now() + std::chrono::seconds(1);
  size_t discarded = 0;
  char buf[16384];
  while (discarded < (size_t{1} << 20) && Clock::now() < until) {
    pollfd pf{p.fd, POLLIN, 0};
    if (::poll(&pf, 1, 200) <= 0) break;  // nothing more in flight
    ssize_t n = ::recv(p.fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    discarded += static_cast<size_t>(n);
  }
  ::close(p.fd);
}

}  // namespace weir::cluster
