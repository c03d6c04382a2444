// The gated acceptor under a descriptor limit: when accept() meets EMFILE
// the oldest waiting connection gives its descriptor up, and the port keeps
// serving.
#include "network/gated_acceptor.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <sys/resource.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
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

  // The clients live in a child process, so that only the acceptor is
  // short of descriptors; it connects once the limit is low.
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::close(go[1]);  // so that the parent closing it ends the read below
    char c;
    if (::read(go[0], &c, 1) != 1) ::_exit(1);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(*port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int last = -1;
    for (int i = 0; i < 30; ++i) {
      last = ::socket(AF_INET, SOCK_STREAM, 0);
      if (last < 0 || ::connect(last, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) ::_exit(2);
    }
    if (::send(last, "x", 1, MSG_NOSIGNAL) != 1) ::_exit(3);
    (void)::read(go[0], &c, 1);  // holds the connections until the parent closes the pipe
    ::_exit(0);
  }
  ::close(go[0]);
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &old), 0);
  rlimit low = old;
  // Room for about 10 more: the 30 connections cannot all be held, so
  // accept() meets EMFILE.
  low.rlim_cur = static_cast<rlim_t>(open_descriptors() + 10);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  ASSERT_EQ(::write(go[1], "g", 1), 1);
  // The newest speaks: it is served although descriptors ran out.
  bool got;
  {
    absl::MutexLock lock(&mu);
    got = mu.AwaitWithTimeout(absl::Condition(+[](std::vector<int>* s) { return !s->empty(); }, &served),
                              absl::Seconds(10));
  }
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &old), 0);
  EXPECT_TRUE(got) << "the port stopped serving after EMFILE";
  ::close(go[1]);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "client process status " << status;
  acceptor.shutdown();
  absl::MutexLock lock(&mu);
  for (int fd : served) ::close(fd);
}

}  // namespace
}  // namespace weir::network
