// Test certificates for TLS: a CA and a certificate for localhost and
// 127.0.0.1 signed by it, made with scripts/tls-test-certs.sh (openssl).
#ifndef WEIR_TESTS_TLS_CERTS_H_
#define WEIR_TESTS_TLS_CERTS_H_

#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <cstdio>
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

// A self-signed certificate for 127.0.0.1 that expired yesterday, and its
// key, written to `dir`/expired.pem and `dir`/expired.key.
inline TestCerts make_expired_cert(const std::string& dir) {
  std::filesystem::create_directories(dir);
  TestCerts c{dir + "/expired.pem", dir + "/expired.pem", dir + "/expired.key", ""};
  EVP_PKEY* key = EVP_RSA_gen(2048);
  X509* x = X509_new();
  if (key == nullptr || x == nullptr) {
    c.error = "cannot make a key";
  } else {
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), 7);
    X509_gmtime_adj(X509_getm_notBefore(x), -2 * 86400);
    X509_gmtime_adj(X509_getm_notAfter(x), -86400);
    X509_set_pubkey(x, key);
    X509_NAME* name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("expired"), -1, -1, 0);
    X509_set_issuer_name(x, name);
    X509_EXTENSION* san = X509V3_EXT_conf_nid(nullptr, nullptr, NID_subject_alt_name, "IP:127.0.0.1");
    X509_add_ext(x, san, -1);
    X509_EXTENSION_free(san);
    X509_sign(x, key, EVP_sha256());
    FILE* cert = std::fopen(c.cert.c_str(), "w");
    FILE* k = std::fopen(c.key.c_str(), "w");
    if (cert == nullptr || k == nullptr || PEM_write_X509(cert, x) != 1 ||
        PEM_write_PrivateKey(k, key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
      c.error = "cannot write " + dir;
    }
    if (cert != nullptr) std::fclose(cert);
    if (k != nullptr) std::fclose(k);
  }
  X509_free(x);
  EVP_PKEY_free(key);
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
