// The gated acceptor under a descriptor limit: when accept() meets EMFILE
// the oldest waiting connection gives its descriptor up, and the port keeps
// serving.
#include "network/gated_acceptor.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "network/data_plane.h"

namespace weir::network {
namespace {

using namespace std::chrono_literals;

int open_descriptors() {
  int n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

TEST(GatedAcceptorTest, OutOfDescriptorsDropsTheOldestWaitingAndKeepsServing) {
  absl::Mutex mu;
  std::vector<int> served;
  GatedAcceptor acceptor(
      GatedAcceptor::Options{"test port", std::chrono::milliseconds(60000), 1000, 1000},
      [](GatedAcceptor::Connection& c, std::string* why) {
        char b;
        ssize_t r = ::recv(c.fd, &b, 1, 0);
        if (r <= 0) {
          *why = "closed";
          return GatedAcceptor::Verdict::kDrop;
        }
        return GatedAcceptor::Verdict::kServe;
      },
      [&](GatedAcceptor::Connection c) {
        absl::MutexLock lock(&mu);
        served.push_back(c.fd);
      });
  auto port = acceptor.listen("127.0.0.1", 0);
  ASSERT_TRUE(port.ok()) << port.status();
  const std::string address = "127.0.0.1:" + std::to_string(*port);

  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &old), 0);
  rlimit low = old;
  low.rlim_cur = static_cast<rlim_t>(open_descriptors() + 40);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  // 30 silent clients: with their accepted ends that is more than the
  // limit allows, so accept() meets EMFILE.
  std::vector<int> clients;
  for (int i = 0; i < 30; ++i) {
    auto fd = connect_tcp(address, 5000);
    ASSERT_TRUE(fd.ok()) << "client " << i << ": " << fd.status();
    clients.push_back(*fd);
  }
  // The newest speaks: it is served although descriptors ran out.
  ASSERT_EQ(::send(clients.back(), "x", 1, MSG_NOSIGNAL), 1);
  bool got;
  {
    absl::MutexLock lock(&mu);
    got = mu.AwaitWithTimeout(absl::Condition(+[](std::vector<int>* s) { return !s->empty(); }, &served),
                              absl::Seconds(10));
  }
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &old), 0);
  EXPECT_TRUE(got) << "the port stopped serving after EMFILE";
  // The oldest waiting client was dropped to make room.
  pollfd p{clients.front(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 5000), 1);
  char b;
  EXPECT_EQ(::recv(clients.front(), &b, 1, 0), 0);
  for (int fd : clients) ::close(fd);
  acceptor.shutdown();
  absl::MutexLock lock(&mu);
  for (int fd : served) ::close(fd);
}

}  // namespace
}  // namespace weir::network
