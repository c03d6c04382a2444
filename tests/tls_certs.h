// Test certificates for TLS: a CA and a certificate for localhost and
// 127.0.0.1 signed by it, made with scripts/tls-test-certs.sh (openssl).
#ifndef WEIR_TESTS_TLS_CERTS_H_
#define WEIR_TESTS_TLS_CERTS_H_

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "network/tls.h"

namespace weir::testing {

struct TestCerts {
  std::string ca, cert, key;
  std::string error;  // why they could not be made
  network::TlsFiles files() const { return {cert, key, ca}; }
};

// Makes a CA and a certificate in `dir`, naming also `hosts` (space
// separated IPv4 addresses or names).
inline TestCerts make_test_certs(const std::string& dir, const std::string& hosts = "") {
  std::filesystem::create_directories(dir);
  const std::string command = std::string("bash ") + WEIR_SOURCE_DIR + "/scripts/tls-test-certs.sh '" + dir +
                              "' " + hosts + " > '" + dir + "/made' 2>&1";
  TestCerts c{dir + "/ca.pem", dir + "/node.pem", dir + "/node.key", ""};
  if (std::system(command.c_str()) != 0) c.error = "scripts/tls-test-certs.sh " + dir + " failed";
  return c;
}

// The process's test certificates, made on first use (under the system temp
// directory, named by the process id); they also name the hosts of the
// tests' network namespaces (tests/cluster_failover_test.cc).
inline const TestCerts& test_certs() {
  // Removed when the process exits.
  struct Made {
    std::string dir = (std::filesystem::temp_directory_path() /
                       ("weir-test-certs-" + std::to_string(::getpid())))
                          .string();
    TestCerts certs = make_test_certs(dir, "10.77.0.1 10.77.0.2 10.77.0.3 10.77.0.4 10.77.0.5 10.77.0.6 10.77.0.254");
    ~Made() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  };
  static const Made made;
  return made.certs;
}

}  // namespace weir::testing

#endif  // WEIR_TESTS_TLS_CERTS_H_
