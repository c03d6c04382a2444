// A throwaway S3-compatible server for a test: s3rver (from the npm
// registry, installed into tests/s3rver by scripts/install-deps.sh) on a
// loopback port, its objects in a directory of its own, one bucket made at
// start. It can be stopped and started again on the same port and
// directory, to fail requests in between.
#ifndef WEIR_TESTS_S3_SERVER_H_
#define WEIR_TESTS_S3_SERVER_H_

#include <stdlib.h>

#include <chrono>
#include <fstream>
#include <string>
#include <vector>

#include "s3/s3_client.h"
#include "tests/process.h"

namespace weir::testing {

// s3rver's command line, through tests/s3rver/serve.js (which keeps it
// running past a failed request).
inline std::string s3rver_bin() { return std::string(WEIR_SOURCE_DIR) + "/tests/s3rver/serve.js"; }

class S3Server {
 public:
  S3Server(const TempDir& dir, std::string bucket)
      : root_(dir.path("s3")), bucket_(std::move(bucket)), server_(root_) {}

  bool start() {
    return server_.start({"/usr/bin/node", s3rver_bin(), "-d", root_, "-p", std::to_string(server_.port()), "-a",
                          "127.0.0.1", "--configure-bucket", bucket_, "--silent"});
  }
  void stop() { server_.stop(); }
  std::string log() const { return server_.log(); }

  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(server_.port()); }
  const std::string& bucket() const { return bucket_; }
  std::string url(const std::string& prefix) const { return "s3://" + bucket_ + "/" + prefix; }
  // s3rver's own credentials (it checks the signature made with them).
  s3::S3Settings settings() const {
    s3::S3Settings s;
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
  // The same as flags of a weir command, the secret in `secret_file`
  // (written here).
  std::vector<std::string> flags(const std::string& secret_file) const {
    std::ofstream(secret_file) << "S3RVER\n";
    return {"--s3-endpoint", endpoint(), "--s3-region", "us-east-1", "--s3-access-key", "S3RVER",
            "--s3-secret-key-file", secret_file};
  }
  // The same as the [s3] section of a config file written to `path` (its
  // secret beside it, in PATH.secret).
  void write_config(const std::string& path) const {
    std::ofstream(path + ".secret") << "S3RVER\n";
    std::ofstream(path) << "[s3]\nendpoint = \"" << endpoint() << "\"\naccess-key = \"S3RVER\"\n"
                        << "secret-key-file = \"" << path << ".secret\"\n";
  }
  // The same in this process (for the shared client, and children).
  // Points this process's S3 client at this server (a client made for an
  // earlier server in the same process is let go).
  void set_env() const {
    for (const std::string& kv : env()) {
      const size_t eq = kv.find('=');
      ::setenv(kv.substr(0, eq).c_str(), kv.substr(eq + 1).c_str(), 1);
    }
    s3::set_s3_options({});
  }

 private:
  const std::string root_;
  const std::string bucket_;
  LoopbackServer server_;
};

}  // namespace weir::testing

#endif  // WEIR_TESTS_S3_SERVER_H_
