// The web UI (docs/web-ui.md): the pages the JobManager serves on its REST
// port under /ui/, and the browser sessions that let them call the REST
// API.
//
// The pages are plain HTML, CSS and JavaScript from src/cluster/webui/,
// compiled into the binary (cmake/embed_files.cmake), so nothing is fetched
// at run time. A browser proves it knows the cluster secret once, on the
// login page (POST /ui/login, the secret in the form body, never in a URL),
// and gets a session: a random token in an HttpOnly, SameSite=Strict cookie.
// Requests that carry a live session's cookie pass the REST gate as if they
// carried the secret, but a state-changing request (anything but GET) must
// also carry the header X-Weir-UI, which a page of another site cannot set
// without the JobManager's consent (it gives none), so forged requests
// from other sites fail. Sessions end on logout, after kIdleTimeout unused,
// or when kMaxSessions newer ones push them out.
//
// Thread-safety: thread-safe (handlers run on the HTTP server's workers).
#ifndef WEIR_CLUSTER_WEB_UI_H_
#define WEIR_CLUSTER_WEB_UI_H_

#include <chrono>
#include <cstddef>
#include <deque>
#include <map>
#include <string>
#include <string_view>

#include "absl/synchronization/mutex.h"
#include "cluster/http_server.h"
#include "common/rate_limited_log.h"

namespace weir::cluster {

// One file of the UI, compiled in.
struct WebUiFile {
  std::string_view name;  // relative to /ui/, e.g. "app.js"
  std::string_view bytes;
};
// Every file of src/cluster/webui/ (generated at build time).
const WebUiFile* web_ui_files(size_t* count);

class WebUi {
 public:
  static constexpr std::chrono::hours kIdleTimeout{12};
  static constexpr size_t kMaxSessions = 256;
  static constexpr const char* kCookie = "weir_session";
  // Failed logins allowed from one address within kLoginWindow, and from
  // all addresses together; past either, logins are answered 429 until the
  // window has moved on.
  static constexpr int kMaxFailedLoginsPerAddress = 5;
  static constexpr int kMaxFailedLogins = 60;
  static constexpr std::chrono::seconds kLoginWindow{60};

  // `refusals` (which outlives this) logs failed logins.
  WebUi(std::string secret, RateLimitedLog* refusals) : secret_(std::move(secret)), refusals_(refusals) {}

  // Adds GET /, /ui/ and its files, POST /ui/login and /ui/logout.
  // `https`: the port speaks TLS, so the cookie is marked Secure.
  void add_routes(HttpServer* http, bool https);

  // Whether `req` needs no secret: the login page and the UI's files (they
  // hold nothing the source does not); the pages' data comes from the gated
  // REST API.
  static bool is_public(const httplib::Request& req);
  // Whether `req` carries a live session (and, unless it is a GET, the
  // X-Weir-UI header); touches the session.
  bool authorizes(const httplib::Request& req);

 private:
  void serve_file(const httplib::Request& req, httplib::Response& res, std::string_view name);
  void login(const httplib::Request& req, httplib::Response& res);
  void logout(const httplib::Request& req, httplib::Response& res);
  // The login page, with `error` shown when not empty.
  void login_page(httplib::Response& res, const std::string& error);
  // The session token the request's cookie names, or "".
  static std::string token_of(const httplib::Request& req);

  const std::string secret_;
  RateLimitedLog* const refusals_;
  bool https_ = false;  // set by add_routes, before serving
  absl::Mutex mu_;
  // token -> when last used (steady clock, ms)
  std::map<std::string, int64_t> sessions_ ABSL_GUARDED_BY(mu_);
  // When logins failed (steady clock, ms) within kLoginWindow, oldest first:
  // every one, and by address.
  std::deque<int64_t> failed_logins_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::deque<int64_t>> failed_by_address_ ABSL_GUARDED_BY(mu_);
  // Milliseconds until a login from `address` is heard again (0: now).
  int64_t login_wait_ms(const std::string& address) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
};

}  // namespace weir::cluster

#endif  // WEIR_CLUSTER_WEB_UI_H_
