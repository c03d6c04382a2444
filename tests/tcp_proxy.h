// A TCP proxy on a loopback port to another loopback port, which a test can
// cut (every connection closed, new ones closed as soon as accepted) and
// heal: a network partition between one process and a server, without
// privileges. It can also break a fraction of connections part-way (after
// a random number of bytes either way): requests and answers cut short.
#ifndef WEIR_TESTS_TCP_PROXY_H_
#define WEIR_TESTS_TCP_PROXY_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <random>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace weir::testing {

class TcpProxy {
 public:
  explicit TcpProxy(int target_port) : target_port_(target_port) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in a = loopback(0);
    ::bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    ::listen(listener_, 64);
    socklen_t len = sizeof(a);
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~TcpProxy() {
    stopping_ = true;
    acceptor_.join();
    ::close(listener_);
    std::lock_guard lock(mu_);
    for (auto& t : pumps_) t.join();
  }
  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;

  int port() const { return port_; }
  // Closes every connection through the proxy and every later one.
  void cut() {
    cut_ = true;
    ++generation_;
  }
  void heal() { cut_ = false; }
  // From now on each new connection breaks with probability `fraction`
  // after up to `max_bytes` bytes (drawn from `seed`).
  void break_connections(double fraction, int max_bytes, uint64_t seed) {
    std::lock_guard lock(mu_);
    break_fraction_ = fraction;
    break_max_bytes_ = max_bytes;
    rng_.seed(seed);
  }
  // Connections broken so far.
  int broken() const { return broken_; }

 private:
  static sockaddr_in loopback(int port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    return a;
  }

  void accept_loop() {
    while (!stopping_) {
      pollfd p{listener_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      const int client = ::accept(listener_, nullptr, nullptr);
      if (client < 0) continue;
      if (cut_) {
        ::close(client);
        continue;
      }
      const int server = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a = loopback(target_port_);
      if (::connect(server, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
        ::close(server);
        ::close(client);
        continue;
      }
      std::lock_guard lock(mu_);
      int64_t break_after = -1;
      if (break_fraction_ > 0 && std::uniform_real_distribution<double>(0, 1)(rng_) < break_fraction_) {
        break_after = static_cast<int64_t>(rng_() % static_cast<uint64_t>(break_max_bytes_ + 1));
      }
      pumps_.emplace_back([this, client, server, generation = generation_.load(), break_after] {
        pump(client, server, generation, break_after);
      });
    }
  }

  // Copies both ways until either side closes, the proxy is cut (a newer
  // generation), `break_after` bytes went through (-1: no limit) or it stops.
  void pump(int a, int b, int generation, int64_t break_after) {
    char buf[16384];
    int64_t through = 0;
    while (!stopping_ && generation_ == generation) {
      if (break_after >= 0 && through >= break_after) {
        ++broken_;
        break;
      }
      pollfd p[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
      if (::poll(p, 2, 50) <= 0) continue;
      bool closed = false;
      for (int i = 0; i < 2 && !closed; ++i) {
        if ((p[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
        size_t want = sizeof(buf);
        if (break_after >= 0) want = static_cast<size_t>(std::min<int64_t>(want, std::max<int64_t>(break_after - through, 1)));
        const ssize_t n = ::read(p[i].fd, buf, want);
        if (n <= 0 || ::send(p[1 - i].fd, buf, static_cast<size_t>(n), MSG_NOSIGNAL) != n) closed = true;
        through += n > 0 ? n : 0;
      }
      if (closed) break;
    }
    ::close(a);
    ::close(b);
  }

  const int target_port_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> cut_{false};
  std::atomic<int> generation_{0};
  std::atomic<int> broken_{0};
  double break_fraction_ = 0;  // under mu_
  int break_max_bytes_ = 0;    // under mu_
  std::mt19937_64 rng_;        // under mu_
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<std::thread> pumps_;
};

}  // namespace weir::testing

#endif  // WEIR_TESTS_TCP_PROXY_H_
