#include "cluster/taskmanager_http.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/numbers.h"
#include "cluster/http_server.h"
#include "cluster/log_tail.h"
#include "cluster/metrics_exposition.h"
#include "cluster/rest_reply.h"
#include "common/rate_limited_log.h"

namespace weir::cluster {
namespace {

// This process's standard output opened for reading, when it is a regular
// file; -1 else, with why in `why`.
int open_stdout(std::string* why) {
  struct stat st {};
  if (::fstat(STDOUT_FILENO, &st) != 0) {
    *why = std::string("its standard output is closed: ") + std::strerror(errno);
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    *why = std::string("its standard output is ") + (S_ISFIFO(st.st_mode) ? "a pipe" : S_ISCHR(st.st_mode) ? "a terminal or device" : "not a file") +
           ", not a file: start it with its output redirected to a file (weir taskmanager ... > taskmanager.out) to read it here";
    return -1;
  }
  const int fd = ::open("/proc/self/fd/1", O_RDONLY | O_CLOEXEC);
  if (fd < 0) *why = std::string("its standard output cannot be opened for reading: ") + std::strerror(errno);
  return fd;
}

}  // namespace

absl::StatusOr<std::pair<int, int>> parse_port_range(std::string_view text) {
  auto bad = [&] {
    return absl::InvalidArgumentError("'" + std::string(text) +
                                      "' is no port (0 to 65535, 0: any free one, -1: none) or range of ports (9250-9260)");
  };
  const std::string t(text);
  const size_t dash = t.find('-', 1);
  int first = 0, last = 0;
  if (dash == std::string::npos) {
    if (!absl::SimpleAtoi(t, &first) || first < -1 || first > 65535) return bad();
    return std::make_pair(first, first);
  }
  if (!absl::SimpleAtoi(t.substr(0, dash), &first) || !absl::SimpleAtoi(t.substr(dash + 1), &last) || first < 1 ||
      last > 65535 || first > last) {
    return bad();
  }
  return std::make_pair(first, last);
}

absl::StatusOr<nlohmann::json> stdout_piece_json(int fd, const std::string& offset_text,
                                                 const std::string& length_text) {
  auto offset = whole_number_param(offset_text, "offset", -65536);
  if (!offset.ok()) return offset.status();
  auto length = whole_number_param(length_text, "length", 65536);
  if (!length.ok()) return length.status();
  if (*length < 1 || *length > kMaxStdoutPiece) {
    return absl::InvalidArgumentError("length " + length_text + " is not between 1 and " +
                                      std::to_string(kMaxStdoutPiece));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    return absl::InternalError(std::string("cannot read the size of its standard output: ") + std::strerror(errno));
  }
  const int64_t size = st.st_size;
  int64_t from = *offset;
  bool align = false;  // start after the first line break (a tail)
  if (from < 0) {
    from = std::max<int64_t>(0, size + from);
    align = from > 0;
  } else if (from > size) {
    from = 0;  // the file shrank under the reader: it was rotated or truncated
  }
  std::string bytes(static_cast<size_t>(std::min(*length, size - from)), '\0');
  size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n = ::pread(fd, bytes.data() + got, bytes.size() - got, from + static_cast<int64_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::InternalError(std::string("cannot read its standard output: ") + std::strerror(errno));
    if (n == 0) break;  // shrank meanwhile
    got += static_cast<size_t>(n);
  }
  bytes.resize(got);
  size_t begin = 0;
  if (align) {
    const size_t nl = bytes.find('\n');
    if (nl != std::string::npos) begin = nl + 1;
  }
  // Whole lines only, unless one line is longer than the piece: then all of
  // it, so that a reader moves on.
  const size_t last = bytes.rfind('\n');
  size_t stop = begin;
  if (last != std::string::npos && last >= begin) {
    stop = last + 1;
  } else if (static_cast<int64_t>(bytes.size()) == *length) {
    stop = bytes.size();
  }
  nlohmann::json lines = nlohmann::json::array();
  for (size_t at = begin; at < stop;) {
    size_t nl = bytes.find('\n', at);
    if (nl == std::string::npos || nl >= stop) nl = stop;
    lines.push_back(bytes.substr(at, nl - at));
    at = nl + 1;
  }
  return nlohmann::json{{"size", size}, {"offset", from + static_cast<int64_t>(begin)},
                        {"end", from + static_cast<int64_t>(stop)}, {"lines", std::move(lines)}};
}

class TaskManagerHttp::Server {
 public:
  explicit Server(std::function<std::string()> metrics_text) : metrics_text_(std::move(metrics_text)) {
    stdout_fd_ = open_stdout(&no_stdout_);
  }
  ~Server() {
    http_.shutdown();
    if (stdout_fd_ >= 0) ::close(stdout_fd_);
  }

  absl::StatusOr<std::string> start(const TaskManagerHttpOptions& o) {
    if (o.tls.enabled()) {
      auto https = network::TlsContext::create(o.tls, network::TlsContext::Role::kServer,
                                               /*require_client_cert=*/false);
      if (!https.ok()) return https.status();
      http_.set_tls(*https);
    }
    http_.set_gate(secret_gate(o.secret, o.metrics_public, "metrics", &refusals_));
    http_.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(metrics_text_(), kPrometheusContentType);
    });
    http_.Get("/v1/log", [](const httplib::Request& req, httplib::Response& res) {
      auto piece = log_piece_json(req.get_param_value("offset"), req.get_param_value("length"));
      if (!piece.ok()) return reply_error(res, piece.status());
      reply(res, *piece);
    });
    const std::string tm = o.tm_id;
    http_.Get("/v1/stdout", [this, tm](const httplib::Request& req, httplib::Response& res) {
      if (stdout_fd_ < 0) return reply_error(res, absl::NotFoundError("TaskManager " + tm + ": " + no_stdout_));
      std::fflush(stdout);  // what print sinks wrote into stdio's buffer
      auto piece = stdout_piece_json(stdout_fd_, req.get_param_value("offset"), req.get_param_value("length"));
      if (!piece.ok()) return reply_error(res, piece.status());
      reply(res, *piece);
    });
    auto port = http_.listen_on(o.bind_host, o.first_port, std::max(o.first_port, o.last_port));
    if (!port.ok()) return port.status();
    return o.bind_host + ":" + std::to_string(*port);
  }
  void shutdown() { http_.shutdown(); }

 private:
  // Its errors name the metrics port.
  static HttpServerOptions server_options() {
    HttpServerOptions o;
    o.name = "metrics port";
    return o;
  }

  const std::function<std::string()> metrics_text_;
  int stdout_fd_ = -1;
  std::string no_stdout_;    // why there is no stdout_fd_
  RateLimitedLog refusals_;  // of requests without the secret
  HttpServer http_{server_options()};
};

TaskManagerHttp::TaskManagerHttp(std::function<std::string()> metrics_text)
    : server_(std::make_unique<Server>(std::move(metrics_text))) {}
TaskManagerHttp::~TaskManagerHttp() = default;

absl::StatusOr<std::string> TaskManagerHttp::start(const TaskManagerHttpOptions& options) {
  auto address = server_->start(options);
  if (address.ok()) address_ = *address;
  return address;
}

void TaskManagerHttp::shutdown() { server_->shutdown(); }

}  // namespace weir::cluster
