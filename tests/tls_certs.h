// Test certificates for TLS: a CA and a certificate for localhost and
// 127.0.0.1 signed by it, made with scripts/tls-test-certs.sh (openssl).
#ifndef WEIR_TESTS_TLS_CERTS_H_
#define WEIR_TESTS_TLS_CERTS_H_

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "network/tls.h"
#include "tests/netns_hosts.h"

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
// tests' network namespaces on this process's preferred subnet
// (tests/netns_hosts.h).
inline const TestCerts& test_certs() {
  // Removed when the process exits.
  struct Made {
    std::string dir = (std::filesystem::temp_directory_path() /
                       ("weir-test-certs-" + std::to_string(::getpid())))
                          .string();
    TestCerts certs = make_test_certs(dir, hosts());
    static std::string hosts() {
      std::string all;
      for (const char* h : {"1", "2", "3", "4", "5", "6", "254"}) all += netns_subnet() + h + " ";
      return all;
    }
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
