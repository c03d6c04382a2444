#include "network/gated_acceptor.h"

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
#include <deque>
#include <vector>

#include "common/rate_limited_log.h"

namespace weir::network {
namespace {

using SteadyClock = std::chrono::steady_clock;

// How long accepting pauses after an error that is not the peer's.
constexpr auto kAcceptBackoff = std::chrono::milliseconds(200);

}  // namespace

GatedAcceptor::GatedAcceptor(Options options, std::function<Verdict(Connection&, std::string*)> ready,
                             std::function<void(Connection)> serve, std::function<void()> woken)
    : options_(std::move(options)),
      ready_(std::move(ready)),
      serve_(std::move(serve)),
      woken_(std::move(woken)),
      wake_fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

GatedAcceptor::~GatedAcceptor() {
  shutdown();
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

absl::StatusOr<int> GatedAcceptor::listen(const std::string& host, int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    return absl::InvalidArgumentError(options_.name + ": '" + host + "' is not an IPv4 address");
  }
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return absl::UnavailableError(options_.name + " socket: " + std::strerror(errno));
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd, 128) != 0) {
    std::string why = std::strerror(errno);
    ::close(fd);
    return absl::UnavailableError("cannot listen on " + host + ":" + std::to_string(port) + " (" + options_.name +
                                  "): " + why);
  }
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  listen_fd_ = fd;
  thread_ = std::thread([this] { loop(); });
  return ntohs(addr.sin_port);
}

void GatedAcceptor::wake() {
  uint64_t one = 1;
  ssize_t w = ::write(wake_fd_, &one, sizeof(one));
  (void)w;  // a full counter wakes it all the same
}

void GatedAcceptor::shutdown() {
  if (stopping_.exchange(true)) return;
  wake();
  if (thread_.joinable()) thread_.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  listen_fd_ = -1;
}

void GatedAcceptor::loop() {
  std::deque<Connection> waiting;
  RateLimitedLog refusals;
  SteadyClock::time_point resume_accepting{};
  bool accept_failing = false;
  auto drop = [&](Connection& c, const std::string& why) {
    refusals.log([&] { return "refused a connection to the " + options_.name + " from " + c.peer() + ": " + why; });
    ::close(c.fd);
    c.fd = -1;
  };
  const std::string too_slow = "not ready within " + std::to_string(options_.deadline.count()) + " ms";
  while (!stopping_) {
    const SteadyClock::time_point now = SteadyClock::now();
    const bool accepting = now >= resume_accepting;
    std::vector<pollfd> fds;
    fds.push_back({wake_fd_, POLLIN, 0});
    fds.push_back({accepting ? listen_fd_ : -1, POLLIN, 0});
    SteadyClock::time_point next = accepting ? now + std::chrono::seconds(1) : resume_accepting;
    for (const Connection& c : waiting) {
      fds.push_back({c.fd, POLLIN, 0});
      next = std::min(next, c.deadline);
    }
    const int timeout_ms = static_cast<int>(
        std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count() + 1));
    if (::poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) {
      spdlog::error("{}: poll failed: {}", options_.name, std::strerror(errno));
      resume_accepting = SteadyClock::now() + kAcceptBackoff;
      continue;
    }
    if (stopping_) break;
    if (fds[0].revents & POLLIN) {
      uint64_t count;
      ssize_t r = ::read(wake_fd_, &count, sizeof(count));
      (void)r;
      if (woken_) woken_();
    }
    // Connections that showed something, or ran out of time.
    for (size_t i = 0; i < waiting.size(); ++i) {
      Connection& c = waiting[i];
      if (fds[2 + i].revents != 0) {
        std::string why;
        switch (ready_(c, &why)) {
          case Verdict::kWait:
            break;
          case Verdict::kServe:
            serve_(std::move(c));
            c.fd = -1;
            continue;
          case Verdict::kDrop:
            drop(c, why);
            continue;
        }
      }
      if (SteadyClock::now() >= c.deadline) drop(c, too_slow);
    }
    std::erase_if(waiting, [](const Connection& c) { return c.fd < 0; });
    if (!accepting || !(fds[1].revents & POLLIN)) continue;
    // New connections, as many as are queued.
    while (!stopping_) {
      sockaddr_in peer{};
      socklen_t len = sizeof(peer);
      int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        if ((errno == EMFILE || errno == ENFILE) && !waiting.empty()) {
          // Out of descriptors: the oldest waiting peer gives its up.
          drop(waiting.front(), "out of file descriptors");
          waiting.pop_front();
          continue;
        }
        if (!accept_failing) {
          spdlog::error("{}: cannot accept connections: {}; retrying", options_.name, std::strerror(errno));
        }
        accept_failing = true;
        resume_accepting = SteadyClock::now() + kAcceptBackoff;
        break;
      }
      if (accept_failing) spdlog::info("{}: accepting connections again", options_.name);
      accept_failing = false;
      char ip[INET_ADDRSTRLEN] = "?";
      ::inet_ntop(AF_INET, &peer.sin_addr, ip, sizeof(ip));
      Connection c;
      c.fd = fd;
      c.ip = ip;
      c.port = ntohs(peer.sin_port);
      c.deadline = SteadyClock::now() + options_.deadline;
      auto same = [&](const Connection& x) { return x.ip == c.ip; };
      if (static_cast<size_t>(std::count_if(waiting.begin(), waiting.end(), same)) >=
          options_.max_waiting_per_address) {
        auto oldest = std::find_if(waiting.begin(), waiting.end(), same);
        drop(*oldest, "too many connections from its address waiting");
        waiting.erase(oldest);
      } else if (waiting.size() >= options_.max_waiting) {
        drop(waiting.front(), "too many connections waiting");
        waiting.pop_front();
      }
      waiting.push_back(std::move(c));
    }
  }
  for (Connection& c : waiting) ::close(c.fd);
}

}  // namespace weir::network
