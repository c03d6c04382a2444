#include "network/tls.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <fcntl.h>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>
#include <sstream>

namespace weir::network {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

// A BIO over a socket that writes with MSG_NOSIGNAL: a peer that went away
// is an error, not SIGPIPE (OpenSSL's own socket BIO calls write()).
int bio_write(BIO* b, const char* data, int n) {
  BIO_clear_retry_flags(b);
  ssize_t w;
  do {
    w = ::send(static_cast<int>(reinterpret_cast<intptr_t>(BIO_get_data(b))), data, static_cast<size_t>(n),
               MSG_NOSIGNAL);
  } while (w < 0 && errno == EINTR);
  if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) BIO_set_retry_write(b);
  return static_cast<int>(w);
}

int bio_read(BIO* b, char* data, int n) {
  BIO_clear_retry_flags(b);
  ssize_t r;
  do {
    r = ::recv(static_cast<int>(reinterpret_cast<intptr_t>(BIO_get_data(b))), data, static_cast<size_t>(n), 0);
  } while (r < 0 && errno == EINTR);
  if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) BIO_set_retry_read(b);
  return static_cast<int>(r);
}

int bio_puts(BIO* b, const char* s) { return bio_write(b, s, static_cast<int>(std::strlen(s))); }

long bio_ctrl(BIO*, int cmd, long, void*) {
  return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

const BIO_METHOD* socket_method() {
  static BIO_METHOD* method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "weir socket");
    BIO_meth_set_write(m, bio_write);
    BIO_meth_set_read(m, bio_read);
    BIO_meth_set_puts(m, bio_puts);
    BIO_meth_set_ctrl(m, bio_ctrl);
    BIO_meth_set_create(m, [](BIO* b) {
      BIO_set_init(b, 1);
      return 1;
    });
    return m;
  }();
  return method;
}

// Reads and writes of `ssl` go to `fd` (not closed with it).
bool attach(SSL* ssl, int fd) {
  BIO* bio = BIO_new(socket_method());
  if (bio == nullptr) return false;
  BIO_set_data(bio, reinterpret_cast<void*>(static_cast<intptr_t>(fd)));
  SSL_set_bio(ssl, bio, bio);
  return true;
}

}  // namespace

TlsFiles tls_files_or_env(TlsFiles flags) {
  if (flags.cert.empty()) flags.cert = env("WEIR_TLS_CERT");
  if (flags.key.empty()) flags.key = env("WEIR_TLS_KEY");
  if (flags.ca.empty()) flags.ca = env("WEIR_TLS_CA");
  return flags;
}

absl::Status check_cluster_tls(const TlsFiles& files) {
  if (!files.enabled()) return absl::OkStatus();
  std::string missing;
  if (files.cert.empty()) missing += " --tls-cert";
  if (files.key.empty()) missing += " --tls-key";
  if (files.ca.empty()) missing += " --tls-ca";
  if (missing.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError("TLS needs --tls-cert, --tls-key and --tls-ca together; missing:" + missing);
}

namespace {

// "2026-12-05 22:49:00 UTC" for an ASN1_TIME.
std::string time_text(const ASN1_TIME* t) {
  std::tm tm{};
  if (ASN1_TIME_to_tm(t, &tm) != 1) return "an unreadable date";
  char buf[64];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

}  // namespace

absl::Status check_certificate(const TlsFiles& files, const std::string& host) {
  if (!files.enabled() || files.cert.empty()) return absl::OkStatus();
  auto pem = read_pem(files.cert, "--tls-cert");
  if (!pem.ok()) return pem.status();
  BIO* bio = BIO_new_mem_buf(pem->data(), static_cast<int>(pem->size()));
  X509* cert = bio != nullptr ? PEM_read_bio_X509(bio, nullptr, nullptr, nullptr) : nullptr;
  BIO_free(bio);
  if (cert == nullptr) return absl::InvalidArgumentError("--tls-cert " + files.cert + ": no certificate in it");
  std::unique_ptr<X509, decltype(&X509_free)> owned(cert, &X509_free);
  const std::string prefix = "--tls-cert " + files.cert + ": ";
  if (X509_cmp_current_time(X509_get0_notAfter(cert)) <= 0) {
    return absl::InvalidArgumentError(prefix + "the certificate expired on " + time_text(X509_get0_notAfter(cert)));
  }
  if (X509_cmp_current_time(X509_get0_notBefore(cert)) >= 0) {
    return absl::InvalidArgumentError(prefix + "the certificate is not valid before " +
                                      time_text(X509_get0_notBefore(cert)));
  }
  if (host.empty() || host == "0.0.0.0" || host == "::" || host == "[::]") return absl::OkStatus();
  std::string bare = host;
  if (bare.size() > 2 && bare.front() == '[' && bare.back() == ']') bare = bare.substr(1, bare.size() - 2);
  in6_addr ip6{};
  in_addr ip4{};
  const bool ip = ::inet_pton(AF_INET, bare.c_str(), &ip4) == 1 || ::inet_pton(AF_INET6, bare.c_str(), &ip6) == 1;
  const int named = ip ? X509_check_ip_asc(cert, bare.c_str(), 0) : X509_check_host(cert, bare.c_str(), bare.size(), 0, nullptr);
  if (named != 1) {
    return absl::InvalidArgumentError(prefix + "the certificate does not name " + bare +
                                      " (the address this process listens on): peers would refuse it; make one "
                                      "whose subjectAltName has " + (ip ? "IP:" : "DNS:") + bare);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> read_pem(const std::string& path, const std::string& flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(flag + " " + path + ": cannot read: " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  if (text.find("-----BEGIN ") == std::string::npos) {
    return absl::InvalidArgumentError(flag + " " + path + ": not a PEM file (no -----BEGIN line)");
  }
  return text;
}

std::string tls_error_text(const std::string& fallback) {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    // "error:0A000086:SSL routines::certificate verify failed" -> the reason.
    std::string text = buf;
    size_t at = text.rfind(':');
    if (at != std::string::npos) text = text.substr(at + 1);
    if (out.find(text) == std::string::npos) out += (out.empty() ? "" : "; ") + text;
  }
  return out.empty() ? fallback : out;
}

absl::StatusOr<std::shared_ptr<const TlsContext>> TlsContext::create(const TlsFiles& files, Role role,
                                                                    bool require_client_cert) {
  SSL_CTX* ctx = SSL_CTX_new(role == Role::kServer ? TLS_server_method() : TLS_client_method());
  if (ctx == nullptr) return absl::InternalError("TLS: " + tls_error_text());
  std::shared_ptr<const TlsContext> out(new TlsContext(ctx, files));
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  // Each check names the flag and the file; the files are read first so a
  // missing one says so rather than OpenSSL's "system lib".
  for (const auto& [path, flag] : {std::pair{files.cert, "--tls-cert"}, std::pair{files.key, "--tls-key"},
                                   std::pair{files.ca, "--tls-ca"}}) {
    if (path.empty()) continue;
    auto pem = read_pem(path, flag);
    if (!pem.ok()) return pem.status();
  }
  if (!files.cert.empty() && SSL_CTX_use_certificate_chain_file(ctx, files.cert.c_str()) != 1) {
    return absl::InvalidArgumentError("--tls-cert " + files.cert + ": " + tls_error_text("not a certificate"));
  }
  if (!files.key.empty()) {
    if (SSL_CTX_use_PrivateKey_file(ctx, files.key.c_str(), SSL_FILETYPE_PEM) != 1) {
      const std::string why = tls_error_text("not a private key");
      if (why.find("key values mismatch") != std::string::npos) {
        return absl::InvalidArgumentError("--tls-key " + files.key + " does not match --tls-cert " + files.cert);
      }
      return absl::InvalidArgumentError("--tls-key " + files.key + ": " + why);
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
      return absl::InvalidArgumentError("--tls-key " + files.key + " does not match --tls-cert " + files.cert);
    }
  }
  if (!files.ca.empty()) {
    if (SSL_CTX_load_verify_locations(ctx, files.ca.c_str(), nullptr) != 1) {
      return absl::InvalidArgumentError("--tls-ca " + files.ca + ": " + tls_error_text("no CA certificate"));
    }
    int mode = SSL_VERIFY_PEER;
    if (role == Role::kServer && require_client_cert) mode |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
    if (role == Role::kClient || require_client_cert) SSL_CTX_set_verify(ctx, mode, nullptr);
  } else if (role == Role::kClient || require_client_cert) {
    return absl::InvalidArgumentError("TLS needs --tls-ca: the CA that signed the cluster's certificates");
  }
  return out;
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

TlsAccept tls_accept_step(int fd, const TlsContext& ctx, std::shared_ptr<SSL>* ssl, std::string* why) {
  if (*ssl == nullptr) {
    unsigned char first = 0;
    ssize_t n = ::recv(fd, &first, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0) {
      *why = "closed before its TLS handshake";
      return TlsAccept::kFailed;
    }
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return TlsAccept::kWait;
      *why = std::string("closed before its TLS handshake: ") + std::strerror(errno);
      return TlsAccept::kFailed;
    }
    if (first != kTlsHandshakeByte) {
      *why = "not TLS (plain text on a TLS port)";
      return TlsAccept::kPlain;
    }
    SSL* s = SSL_new(ctx.get());
    if (s == nullptr || !attach(s, fd)) {
      if (s != nullptr) SSL_free(s);
      *why = "TLS: " + tls_error_text();
      return TlsAccept::kFailed;
    }
    SSL_set_accept_state(s);
    SSL_set_mode(s, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    *ssl = std::shared_ptr<SSL>(s, SSL_free);
  }
  if (SSL_is_init_finished(ssl->get())) return TlsAccept::kReady;
  int r = SSL_do_handshake(ssl->get());
  if (r == 1) return TlsAccept::kReady;
  int e = SSL_get_error(ssl->get(), r);
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return TlsAccept::kWait;
  *why = "TLS handshake failed: " + tls_error_text(e == SSL_ERROR_SYSCALL ? "the peer went away" : "refused");
  return TlsAccept::kFailed;
}

int tls_read_available(SSL* ssl, std::string* out, size_t max, std::string* why) {
  bool got = false;
  char buf[4096];
  while (out->size() < max) {
    int n = SSL_read(ssl, buf, static_cast<int>(std::min(sizeof(buf), max - out->size())));
    if (n > 0) {
      out->append(buf, static_cast<size_t>(n));
      got = true;
      continue;
    }
    int e = SSL_get_error(ssl, n);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return got ? 1 : 0;
    *why = e == SSL_ERROR_ZERO_RETURN ? "closed" : "TLS: " + tls_error_text("the peer went away");
    return -1;
  }
  return 1;
}

absl::StatusOr<std::shared_ptr<SSL>> tls_connect(int fd, const TlsContext& ctx, const std::string& host,
                                                 std::chrono::milliseconds timeout) {
  SSL* s = SSL_new(ctx.get());
  if (s == nullptr) return absl::InternalError("TLS: " + tls_error_text());
  std::shared_ptr<SSL> ssl(s, SSL_free);
  if (!attach(s, fd)) return absl::InternalError("TLS: " + tls_error_text());
  SSL_set_mode(s, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  // The certificate must name the host dialled.
  X509_VERIFY_PARAM* param = SSL_get0_param(s);
  in_addr ip{};
  if (::inet_pton(AF_INET, host.c_str(), &ip) == 1) {
    X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str());
  } else {
    X509_VERIFY_PARAM_set1_host(param, host.c_str(), 0);
    SSL_set_tlsext_host_name(s, host.c_str());
  }
  timeval tv{static_cast<time_t>(timeout.count() / 1000), static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  const int r = SSL_connect(s);
  timeval none{0, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof(none));
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &none, sizeof(none));
  if (r != 1) {
    const long verify = SSL_get_verify_result(s);
    std::string why = verify != X509_V_OK ? std::string("its certificate: ") + X509_verify_cert_error_string(verify)
                                          : tls_error_text("no TLS answer (is the peer started with TLS?)");
    return absl::UnavailableError("TLS handshake failed: " + why);
  }
  return ssl;
}

Socket::Socket(int fd, std::shared_ptr<SSL> ssl) : fd_(fd), ssl_(std::move(ssl)) {
  // TLS waits for the socket itself (outside the lock).
  if (ssl_ != nullptr) ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) | O_NONBLOCK);
}

Socket::~Socket() { ::close(fd_); }

void Socket::shutdown() { ::shutdown(fd_, SHUT_RDWR); }

void Socket::set_read_timeout(std::chrono::milliseconds timeout) {
  const int ms = timeout.count() > 0 ? static_cast<int>(timeout.count()) : -1;
  read_timeout_ms_ = ms;
  if (ssl_ == nullptr) {
    timeval tv{static_cast<time_t>(timeout.count() / 1000), static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
}

bool Socket::wait(short events, int timeout_ms) const {
  pollfd p{fd_, events, 0};
  int n;
  do {
    n = ::poll(&p, 1, timeout_ms);
  } while (n < 0 && errno == EINTR);
  if (n == 0) errno = EAGAIN;
  return n > 0;
}

bool Socket::read_all(char* p, size_t n) {
  if (ssl_ == nullptr) {
    while (n > 0) {
      ssize_t r = ::recv(fd_, p, n, 0);
      if (r == 0) return false;
      if (r < 0) {
        if (errno == EINTR) continue;
        return false;
      }
      p += r;
      n -= static_cast<size_t>(r);
    }
    return true;
  }
  return transfer(/*reading=*/true, p, n);
}

bool Socket::write_all(const char* p, size_t n) {
  if (ssl_ == nullptr) {
    while (n > 0) {
      ssize_t w = ::send(fd_, p, n, MSG_NOSIGNAL);
      if (w < 0) {
        if (errno == EINTR) continue;
        return false;
      }
      p += w;
      n -= static_cast<size_t>(w);
    }
    return true;
  }
  return transfer(/*reading=*/false, const_cast<char*>(p), n);
}

bool Socket::transfer(bool reading, char* p, size_t n) {
  // Writes wait as long as it takes (as a blocking send would); reads up to
  // the read timeout.
  const int timeout_ms = reading ? read_timeout_ms_.load() : -1;
  while (n > 0) {
    int r, e;
    {
      std::lock_guard<std::mutex> lock(mu_);
      const int len = static_cast<int>(std::min<size_t>(n, 1 << 30));
      r = reading ? SSL_read(ssl_.get(), p, len) : SSL_write(ssl_.get(), p, len);
      e = r > 0 ? SSL_ERROR_NONE : SSL_get_error(ssl_.get(), r);
      if (r <= 0) ERR_clear_error();
    }
    if (r > 0) {
      p += r;
      n -= static_cast<size_t>(r);
    } else if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
      if (!wait(e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, timeout_ms)) return false;
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace weir::network
