// TLS for the cluster's ports (docs/cli.md, "TLS"): certificates and keys
// from PEM files, OpenSSL contexts made from them once per process, and the
// errors named as a user can act on them.
//
// A JobManager or TaskManager with TLS has all three files: its
// certificate, its key, and the CA that signed every cluster process's
// certificate. Between cluster processes TLS is mutual (each side proves
// itself with its certificate); clients of the REST API need only the CA
// (they prove themselves with the secret, as without TLS).
//
// Thread-safety: a TlsContext is immutable once made and may be shared.
#ifndef WEIR_NETWORK_TLS_H_
#define WEIR_NETWORK_TLS_H_

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;

namespace weir::network {

struct TlsFiles {
  std::string cert;  // PEM: this process's certificate (chain)
  std::string key;   // PEM: its private key
  std::string ca;    // PEM: the CA certificates peers are checked against
  bool enabled() const { return !cert.empty() || !key.empty() || !ca.empty(); }
};

// The files from the flags, else from $WEIR_TLS_CERT, $WEIR_TLS_KEY,
// $WEIR_TLS_CA.
TlsFiles tls_files_or_env(TlsFiles flags);

// For a cluster process: none of the files or all three; an error naming
// what is missing otherwise.
absl::Status check_cluster_tls(const TlsFiles& files);

// Whether the certificate of `files` (when TLS is on) serves a process
// listening on `host`: valid now (not expired, not before its start), and
// naming `host` (an IP address or a DNS name) unless `host` is a wildcard
// ("", "0.0.0.0", "::"). A peer checks both; a process that starts without
// them would only fail every connection later. InvalidArgument naming
// --tls-cert, the file and what is wrong.
absl::Status check_certificate(const TlsFiles& files, const std::string& host);

// A PEM file's text, or an error naming `flag` and the file.
absl::StatusOr<std::string> read_pem(const std::string& path, const std::string& flag);

class TlsContext {
 public:
  enum class Role { kServer, kClient };
  // A context that presents files.cert/key (when given) and checks peers
  // against files.ca (when given). A server with `require_client_cert`
  // refuses peers without a certificate the CA signed. Errors name the
  // flag and the file (unreadable, not PEM, key not matching).
  static absl::StatusOr<std::shared_ptr<const TlsContext>> create(const TlsFiles& files, Role role,
                                                                   bool require_client_cert);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  SSL_CTX* get() const { return ctx_; }
  const TlsFiles& files() const { return files_; }

 private:
  TlsContext(SSL_CTX* ctx, TlsFiles files) : ctx_(ctx), files_(std::move(files)) {}
  SSL_CTX* const ctx_;
  const TlsFiles files_;
};

// The server side of a handshake on a non-blocking socket, a step at a
// time (for ports that accept without a thread per connection). The first
// call makes *ssl. kPlain: the peer's first byte is not a TLS handshake
// (nothing was read; the caller may answer in plain text).
enum class TlsAccept { kWait, kReady, kPlain, kFailed };
TlsAccept tls_accept_step(int fd, const TlsContext& ctx, std::shared_ptr<SSL>* ssl, std::string* why);

// Reads what has arrived through `ssl` on a non-blocking socket, up to
// `max` bytes in `out` in all: 1 when something was read, 0 when nothing
// more is there yet, -1 when the peer closed or failed (`why`).
int tls_read_available(SSL* ssl, std::string* out, size_t max, std::string* why);

// The client side of a handshake on a connected blocking socket, checking
// the server's certificate names `host` (a name or an IP address); within
// `timeout`.
absl::StatusOr<std::shared_ptr<SSL>> tls_connect(int fd, const TlsContext& ctx, const std::string& host,
                                                 std::chrono::milliseconds timeout);

// A connected socket, plain or TLS, that one thread reads while another
// writes (TLS allows no concurrent calls on one session: they take turns
// under a lock, and wait for the socket outside it). Owns the descriptor.
class Socket {
 public:
  // `fd`: blocking; `ssl`: its TLS session after the handshake, or null.
  Socket(int fd, std::shared_ptr<SSL> ssl);
  ~Socket();
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  int fd() const { return fd_; }
  bool tls() const { return ssl_ != nullptr; }
  // False when the connection ended or failed (errno tells, for plain
  // sockets) or the read timeout passed.
  bool read_all(char* p, size_t n);
  bool write_all(const char* p, size_t n);
  // A limit on each wait for data; zero: none. Default: none.
  void set_read_timeout(std::chrono::milliseconds timeout);
  // Ends both directions: blocked reads and writes return false.
  void shutdown();

 private:
  // Waits until the socket is ready for `events`; false on timeout.
  bool wait(short events, int timeout_ms) const;
  // Reads or writes n bytes through the TLS session.
  bool transfer(bool reading, char* p, size_t n);

  const int fd_;
  const std::shared_ptr<SSL> ssl_;
  std::mutex mu_;  // TLS calls on ssl_ take turns
  std::atomic<int> read_timeout_ms_{-1};
};

// The first byte of a TLS connection (a handshake record): what a port that
// speaks TLS expects to see first.
inline constexpr unsigned char kTlsHandshakeByte = 0x16;

// OpenSSL's queued errors as one line (and clears them); `fallback` when
// there are none.
std::string tls_error_text(const std::string& fallback = "unknown TLS error");

}  // namespace weir::network

#endif  // WEIR_NETWORK_TLS_H_
