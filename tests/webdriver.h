// Headless Chromium driven through ChromeDriver's WebDriver protocol (JSON
// over HTTP on loopback), for the web UI's tests: Debian's chromium and
// chromium-driver, as scripts/install-deps.sh installs them. One browser
// per object; every wait has a deadline. Not thread-safe.
#ifndef WEIR_TESTS_WEBDRIVER_H_
#define WEIR_TESTS_WEBDRIVER_H_

#include <httplib.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/escaping.h"
#include "tests/cluster.h"
#include "tests/process.h"

namespace weir::testing {

class WebDriver {
 public:
  static constexpr const char* kChromium = "/usr/bin/chromium";
  static constexpr const char* kChromeDriver = "/usr/bin/chromedriver";

  // Starts ChromeDriver (its output under `log_prefix`) and a browser with
  // a window of `width` x `height`; error() says why when it did not.
  WebDriver(const std::string& log_prefix, int width = 1500, int height = 1000) {
    driver_ = std::make_unique<Child>(std::vector<std::string>{kChromeDriver, "--port=0"}, log_prefix);
    const std::string mark = "started successfully on port ";
    if (!eventually([&] { return slurp(log_prefix + ".out").find(mark) != std::string::npos; }, 20s)) {
      error_ = "chromedriver did not start: " + slurp(log_prefix + ".out") + slurp(log_prefix + ".err");
      return;
    }
    const std::string out = slurp(log_prefix + ".out");
    port_ = std::stoi(out.substr(out.find(mark) + mark.size()));
    nlohmann::json args = {"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                           "--disable-background-networking", "--disable-component-update", "--disable-sync",
                           "--disable-dev-shm-usage",
                           // The test CA is not the system's (TLS mode).
                           "--ignore-certificate-errors",
                           "--window-size=" + std::to_string(width) + "," + std::to_string(height)};
    nlohmann::json caps = {
        {"capabilities",
         {{"alwaysMatch",
           {{"goog:chromeOptions", {{"binary", kChromium}, {"args", args}}},
            {"goog:loggingPrefs", {{"browser", "ALL"}}}}}}}};
    nlohmann::json session = value(call("POST", "/session", caps));
    if (!session.is_object() || !session.contains("sessionId")) {
      error_ = std::string("chromium (") + kChromium + ") did not start: " + session.dump();
      return;
    }
    session_ = "/session/" + session["sessionId"].get<std::string>();
  }
  ~WebDriver() {
    if (!session_.empty()) call("DELETE", session_, nullptr);
    if (port_ > 0) call("GET", "/shutdown", nullptr);
  }

  const std::string& error() const { return error_; }

  void go(const std::string& url) { call("POST", session_ + "/url", {{"url", url}}); }
  std::string url() { return value(call("GET", session_ + "/url", nullptr)).get<std::string>(); }
  // Runs `script` (a function body; `arguments` holds `args`) in the page;
  // its return value.
  nlohmann::json run(const std::string& script, nlohmann::json args = nlohmann::json::array()) {
    return value(call("POST", session_ + "/execute/sync", {{"script", script}, {"args", args}}));
  }
  // The id of the first element matching `css`, or "" if none.
  std::string find(const std::string& css) {
    nlohmann::json r = value(call("POST", session_ + "/element", {{"using", "css selector"}, {"value", css}}));
    if (!r.is_object() || r.empty() || r.contains("error")) return "";
    return r.begin().value().get<std::string>();
  }
  // Waits until an element matches `css`; its id, or "" at the deadline.
  std::string await(const std::string& css, std::chrono::milliseconds deadline = 20s) {
    std::string id;
    eventually([&] { return !(id = find(css)).empty(); }, deadline);
    return id;
  }
  // Clicks the first element matching `css` (found again if the page
  // redrew it); false if none appeared before the deadline.
  bool click(const std::string& css, std::chrono::milliseconds deadline = 20s) {
    return eventually(
        [&] {
          std::string id = find(css);
          if (id.empty()) return false;
          nlohmann::json r = call("POST", session_ + "/element/" + id + "/click", nlohmann::json::object());
          return !(r.contains("value") && r["value"].is_object() && r["value"].contains("error"));
        },
        deadline);
  }
  void type(const std::string& css, const std::string& text) {
    std::string id = await(css);
    call("POST", session_ + "/element/" + id + "/value", {{"text", text}});
  }
  // The text of the first element matching `css` ("" if none).
  std::string text(const std::string& css) {
    nlohmann::json t = run("const e = document.querySelector(arguments[0]); return e ? e.textContent : '';", {css});
    return t.is_string() ? t.get<std::string>() : "";
  }
  // The browser's console and network log since the last call: entries
  // {level, message, source}.
  nlohmann::json log() { return value(call("POST", session_ + "/se/log", {{"type", "browser"}})); }
  // The cookie `name` of the page's site, or "".
  std::string cookie(const std::string& name) {
    nlohmann::json c = value(call("GET", session_ + "/cookie/" + name, nullptr));
    return c.is_object() && c.contains("value") && c["value"].is_string() ? c["value"].get<std::string>() : "";
  }
  // A PNG of the window (or of the whole page, grown to `height` pixels
  // first, when height > 0) written to `path`.
  bool screenshot(const std::string& path, int height = 0) {
    if (height > 0) call("POST", session_ + "/window/rect", {{"width", 1500}, {"height", height}});
    nlohmann::json png = value(call("GET", session_ + "/screenshot", nullptr));
    std::string bytes;
    if (!png.is_string() || !absl::Base64Unescape(png.get<std::string>(), &bytes)) return false;
    std::ofstream(path, std::ios::binary) << bytes;
    return true;
  }

 private:
  static nlohmann::json value(const nlohmann::json& r) { return r.contains("value") ? r["value"] : r; }

  nlohmann::json call(const std::string& method, const std::string& path, const nlohmann::json& body) {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(60, 0);
    httplib::Result r = method == "GET"      ? c.Get(path)
                        : method == "DELETE" ? c.Delete(path)
                                             : c.Post(path, body.dump(), "application/json");
    if (!r) return {{"error", "chromedriver did not answer " + method + " " + path}};
    auto j = nlohmann::json::parse(r->body, nullptr, /*allow_exceptions=*/false);
    return j.is_discarded() ? nlohmann::json{{"error", r->body}} : j;
  }

  std::unique_ptr<Child> driver_;
  int port_ = 0;
  std::string session_;
  std::string error_;
};

}  // namespace weir::testing

#endif  // WEIR_TESTS_WEBDRIVER_H_
