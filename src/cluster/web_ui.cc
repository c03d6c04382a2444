#include "cluster/web_ui.h"

#include <openssl/rand.h>

#include <algorithm>

#include "network/data_plane.h"

namespace weir::cluster {
namespace {

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string_view content_type(std::string_view name) {
  auto ends = [&](std::string_view ext) {
    return name.size() >= ext.size() && name.substr(name.size() - ext.size()) == ext;
  };
  if (ends(".html")) return "text/html; charset=utf-8";
  if (ends(".css")) return "text/css; charset=utf-8";
  if (ends(".js")) return "text/javascript; charset=utf-8";
  if (ends(".svg")) return "image/svg+xml";
  if (ends(".png")) return "image/png";
  return "application/octet-stream";
}

const WebUiFile* find_file(std::string_view name) {
  size_t n = 0;
  const WebUiFile* files = web_ui_files(&n);
  for (size_t i = 0; i < n; ++i) {
    if (files[i].name == name) return &files[i];
  }
  return nullptr;
}

// Headers every page gets: nothing from elsewhere runs or frames it.
void secure_headers(httplib::Response& res) {
  res.set_header("Content-Security-Policy",
                 "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; frame-ancestors 'none'; "
                 "form-action 'self'");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("X-Frame-Options", "DENY");
  res.set_header("Referrer-Policy", "no-referrer");
}

void redirect(httplib::Response& res, const std::string& to) {
  res.status = 303;
  res.set_header("Location", to);
}

std::string html_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace

void WebUi::add_routes(HttpServer* http, bool https) {
  https_ = https;
  http->Get("/", [](const httplib::Request&, httplib::Response& res) { redirect(res, "/ui/"); });
  http->Get("/ui", [](const httplib::Request&, httplib::Response& res) { redirect(res, "/ui/"); });
  http->Get("/ui/", [this](const httplib::Request& req, httplib::Response& res) {
    if (!authorizes(req)) return redirect(res, "/ui/login");
    serve_file(req, res, "index.html");
  });
  http->Get("/ui/login", [this](const httplib::Request&, httplib::Response& res) { login_page(res, ""); });
  http->Post("/ui/login", [this](const httplib::Request& req, httplib::Response& res) { login(req, res); });
  http->Post("/ui/logout", [this](const httplib::Request& req, httplib::Response& res) { logout(req, res); });
  http->Get(R"(/ui/([a-z0-9_-]+\.(?:js|css|svg|png)))", [this](const httplib::Request& req, httplib::Response& res) {
    serve_file(req, res, std::string(req.matches[1]));
  });
}

bool WebUi::is_public(const httplib::Request& req) {
  if (req.method == "POST") return req.path == "/ui/login";
  if (req.method != "GET") return false;
  return req.path == "/" || req.path == "/ui" || req.path.rfind("/ui/", 0) == 0;
}

std::string WebUi::token_of(const httplib::Request& req) {
  const std::string cookies = req.get_header_value("Cookie");
  const std::string key = std::string(kCookie) + "=";
  size_t at = 0;
  while (at < cookies.size()) {
    while (at < cookies.size() && (cookies[at] == ' ' || cookies[at] == ';')) ++at;
    size_t end = cookies.find(';', at);
    if (end == std::string::npos) end = cookies.size();
    if (cookies.compare(at, key.size(), key) == 0) return cookies.substr(at + key.size(), end - at - key.size());
    at = end;
  }
  return "";
}

bool WebUi::authorizes(const httplib::Request& req) {
  const std::string token = token_of(req);
  if (token.empty()) return false;
  if (req.method != "GET" && !req.has_header("X-Weir-UI")) return false;
  const int64_t now = steady_ms();
  absl::MutexLock lock(&mu_);
  auto it = sessions_.find(token);
  if (it == sessions_.end()) return false;
  if (now - it->second > std::chrono::duration_cast<std::chrono::milliseconds>(kIdleTimeout).count()) {
    sessions_.erase(it);
    return false;
  }
  it->second = now;
  return true;
}

void WebUi::serve_file(const httplib::Request&, httplib::Response& res, std::string_view name) {
  const WebUiFile* f = find_file(name);
  if (f == nullptr) {
    res.status = 404;
    res.set_content("{\"error\": \"no such file of the web UI: " + std::string(name) + "\"}", "application/json");
    return;
  }
  secure_headers(res);
  res.set_header("Cache-Control", "no-cache");
  res.set_content(std::string(f->bytes), std::string(content_type(name)));
}

void WebUi::login_page(httplib::Response& res, const std::string& error) {
  const WebUiFile* f = find_file("login.html");
  std::string page = f != nullptr ? std::string(f->bytes) : "";
  const std::string mark = "<!--error-->";
  if (size_t at = page.find(mark); at != std::string::npos && !error.empty()) {
    page.replace(at, mark.size(), "<p class=\"error\" id=\"login-error\">" + html_escape(error) + "</p>");
  }
  secure_headers(res);
  res.set_header("Cache-Control", "no-store");
  res.set_content(page, "text/html; charset=utf-8");
}

int64_t WebUi::login_wait_ms(const std::string& address) {
  const int64_t now = steady_ms();
  const int64_t window = std::chrono::duration_cast<std::chrono::milliseconds>(kLoginWindow).count();
  while (!failed_logins_.empty() && failed_logins_.front() <= now - window) failed_logins_.pop_front();
  for (auto it = failed_by_address_.begin(); it != failed_by_address_.end();) {
    while (!it->second.empty() && it->second.front() <= now - window) it->second.pop_front();
    it = it->second.empty() ? failed_by_address_.erase(it) : std::next(it);
  }
  int64_t wait = 0;
  if (failed_logins_.size() >= static_cast<size_t>(kMaxFailedLogins)) wait = failed_logins_.front() + window - now;
  auto mine = failed_by_address_.find(address);
  if (mine != failed_by_address_.end() && mine->second.size() >= static_cast<size_t>(kMaxFailedLoginsPerAddress)) {
    wait = std::max(wait, mine->second.front() + window - now);
  }
  return wait;
}

void WebUi::login(const httplib::Request& req, httplib::Response& res) {
  // The secret comes in the form's body only: a URL is logged, kept in
  // history and sent on as a referrer.
  if (req.target.find('?') != std::string::npos) {
    res.status = 400;
    return login_page(res, "The secret goes in the form's body, never in the URL: use the form below.");
  }
  httplib::Params form;
  httplib::detail::parse_query_text(req.body, form);
  auto field = form.find("secret");
  const std::string given = field == form.end() ? "" : field->second;
  {
    absl::MutexLock lock(&mu_);
    if (const int64_t wait = login_wait_ms(req.remote_addr); wait > 0) {
      res.status = 429;
      res.set_header("Retry-After", std::to_string((wait + 999) / 1000));
      return login_page(res, "Too many failed logins: try again in " + std::to_string((wait + 999) / 1000) + " s.");
    }
  }
  if (!network::secrets_equal(given, secret_)) {
    refusals_->log([&] {
      return "refused a web UI login from " + req.remote_addr + ": " +
             (given.empty() ? std::string("no cluster secret") : std::string("wrong cluster secret"));
    });
    {
      absl::MutexLock lock(&mu_);
      const int64_t now = steady_ms();
      failed_logins_.push_back(now);
      if (failed_by_address_.size() < 4096 || failed_by_address_.count(req.remote_addr) != 0) {
        failed_by_address_[req.remote_addr].push_back(now);
      }
    }
    res.status = 401;
    return login_page(res, given.empty() ? "Enter the cluster secret." : "That is not the cluster secret.");
  }
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) {
    res.status = 500;
    return login_page(res, "The JobManager could not make a session (no random bytes); try again.");
  }
  static const char* kHex = "0123456789abcdef";
  std::string token;
  for (unsigned char b : bytes) {
    token += kHex[b >> 4];
    token += kHex[b & 15];
  }
  {
    absl::MutexLock lock(&mu_);
    while (sessions_.size() >= kMaxSessions) {
      auto oldest = std::min_element(sessions_.begin(), sessions_.end(),
                                     [](const auto& a, const auto& b) { return a.second < b.second; });
      sessions_.erase(oldest);
    }
    sessions_[token] = steady_ms();
  }
  res.set_header("Set-Cookie", std::string(kCookie) + "=" + token + "; Path=/; HttpOnly; SameSite=Strict" +
                                   (https_ ? "; Secure" : ""));
  redirect(res, "/ui/");
}

void WebUi::logout(const httplib::Request& req, httplib::Response& res) {
  {
    absl::MutexLock lock(&mu_);
    sessions_.erase(token_of(req));
  }
  res.set_header("Set-Cookie", std::string(kCookie) + "=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0");
  res.set_content("{}", "application/json");
}

}  // namespace weir::cluster
