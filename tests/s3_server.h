// A throwaway S3-compatible server for a test: s3rver (from the npm
// registry, installed into tests/s3rver by scripts/install-deps.sh) on a
// loopback port, its objects in a directory of its own, one bucket made at
// start. It can be stopped and started again on the same port and
// directory, to fail requests in between.
#ifndef WEIR_TESTS_S3_SERVER_H_
#define WEIR_TESTS_S3_SERVER_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "checkpoint/s3_client.h"
#include "tests/process.h"

namespace weir::testing {

inline std::string s3rver_bin() { return std::string(WEIR_SOURCE_DIR) + "/tests/s3rver/node_modules/.bin/s3rver"; }

class S3Server {
 public:
  S3Server(const TempDir& dir, std::string bucket) : root_(dir.path("s3")), bucket_(std::move(bucket)) {
    port_ = free_port();
  }
  ~S3Server() { stop(); }

  // Starts the server and waits (up to 30 s) until it accepts connections.
  bool start() {
    if (child_ != nullptr) return true;
    ++starts_;
    child_ = std::make_unique<Child>(
        std::vector<std::string>{"/usr/bin/node", s3rver_bin(), "-d", root_, "-p", std::to_string(port_), "-a",
                                 "127.0.0.1", "--configure-bucket", bucket_, "--silent"},
        root_ + "-" + std::to_string(starts_));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      if (!child_->running()) return false;
      if (accepts()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // polling for the port to open
    }
    return false;
  }
  void stop() {
    if (child_ == nullptr) return;
    child_->kill9();
    child_->wait();
    child_.reset();
  }

  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  const std::string& bucket() const { return bucket_; }
  std::string url(const std::string& prefix) const { return "s3://" + bucket_ + "/" + prefix; }
  // s3rver checks no secret; these are what a client must send anyway.
  checkpoint::S3Settings settings() const {
    checkpoint::S3Settings s;
    s.endpoint = endpoint();
    s.access_key = "S3RVER";
    s.secret_key = "S3RVER";
    s.max_attempts = 3;
    s.first_backoff = std::chrono::milliseconds(20);
    return s;
  }
  // The environment a weir process reads them from.
  std::vector<std::string> env() const {
    return {"AWS_ACCESS_KEY_ID=S3RVER", "AWS_SECRET_ACCESS_KEY=S3RVER", "AWS_REGION=us-east-1",
            "AWS_ENDPOINT_URL_S3=" + endpoint()};
  }
  // The same in this process (for the shared client).
  void set_env() const {
    for (const std::string& kv : env()) {
      const size_t eq = kv.find('=');
      ::setenv(kv.substr(0, eq).c_str(), kv.substr(eq + 1).c_str(), 1);
    }
  }

 private:
  static int free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    ::close(fd);
    return ntohs(a.sin_port);
  }
  bool accepts() const {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port_));
    const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
    ::close(fd);
    return ok;
  }

  const std::string root_;
  const std::string bucket_;
  int port_ = 0;
  int starts_ = 0;
  std::unique_ptr<Child> child_;
};

}  // namespace weir::testing

#endif  // WEIR_TESTS_S3_SERVER_H_
