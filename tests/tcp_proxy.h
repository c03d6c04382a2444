// A TCP proxy on a loopback port to another loopback port, which a test can
// cut (every connection closed, new ones closed as soon as accepted) and
// heal: a network partition between one process and a server, without
// privileges.
#ifndef WEIR_TESTS_TCP_PROXY_H_
#define WEIR_TESTS_TCP_PROXY_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
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
      pumps_.emplace_back([this, client, server, generation = generation_.load()] { pump(client, server, generation); });
    }
  }

  // Copies both ways until either side closes, the proxy is cut (a newer
  // generation) or it stops.
  void pump(int a, int b, int generation) {
    char buf[16384];
    while (!stopping_ && generation_ == generation) {
      pollfd p[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
      if (::poll(p, 2, 50) <= 0) continue;
      bool closed = false;
      for (int i = 0; i < 2 && !closed; ++i) {
        if ((p[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
        const ssize_t n = ::read(p[i].fd, buf, sizeof(buf));
        if (n <= 0 || ::send(p[1 - i].fd, buf, static_cast<size_t>(n), MSG_NOSIGNAL) != n) closed = true;
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
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<std::thread> pumps_;
};

}  // namespace weir::testing

#endif  // WEIR_TESTS_TCP_PROXY_H_
