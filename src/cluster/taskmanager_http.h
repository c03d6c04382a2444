// A TaskManager's HTTP port: GET /metrics for Prometheus (docs/metrics.md)
// and, always behind the cluster secret (--metrics-public or not), the
// process's log (GET /v1/log, cluster/log_tail.h) and standard output (GET
// /v1/stdout), which the JobManager's REST API fetches for its
// /v1/taskmanagers/ID/log and /v1/taskmanagers/ID/stdout. Both come in
// bounded pieces, never whole.
//
// Standard output is served when it is a regular file (the process was
// started with `> FILE`, as Flink's scripts write taskmanager.out): read
// from the file itself, so nothing a task printed is held in memory or
// lost. On a terminal or a pipe there is nothing to read back, and
// /v1/stdout says so.
#ifndef WEIR_CLUSTER_TASKMANAGER_HTTP_H_
#define WEIR_CLUSTER_TASKMANAGER_HTTP_H_

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "network/tls.h"

namespace weir::cluster {

// A port ("9250", 0 or -1) or a range of them ("9250-9260") as --metrics-port
// takes it: the first and the last (equal for one port); an error says what
// is wrong.
absl::StatusOr<std::pair<int, int>> parse_port_range(std::string_view text);

// The answer of GET /v1/stdout?offset=N&length=M over the regular file open
// for reading at `fd`: {"size", "offset", "end", "lines"}, the whole lines
// of the file's bytes from `offset` (bytes; negative: that many before the
// end, and then from the start of the next line; default -65536) up to
// `length` bytes (1 to kMaxStdoutPiece; default 65536). `end` is where the
// next piece starts: after the last whole line, or after `length` bytes of
// a line longer than that (so a reader always moves on). An offset past
// the end of a file that shrank (rotated) reads from its start.
// InvalidArgument names a malformed offset or length.
inline constexpr int64_t kMaxStdoutPiece = int64_t{1} << 20;
absl::StatusOr<nlohmann::json> stdout_piece_json(int fd, const std::string& offset, const std::string& length);

struct TaskManagerHttpOptions {
  std::string bind_host;
  int first_port = 0;  // 0: any free port
  int last_port = 0;   // > first_port: the first free port of the range
  std::string secret;
  bool metrics_public = false;  // /metrics answers without the secret
  network::TlsFiles tls;        // HTTPS when enabled
  std::string tm_id;            // for errors
};

class TaskManagerHttp {
 public:
  // `metrics_text` renders GET /metrics (on the server's threads).
  explicit TaskManagerHttp(std::function<std::string()> metrics_text);
  ~TaskManagerHttp();
  TaskManagerHttp(const TaskManagerHttp&) = delete;
  TaskManagerHttp& operator=(const TaskManagerHttp&) = delete;

  // Listens; its host:port, as address() gives it afterwards.
  absl::StatusOr<std::string> start(const TaskManagerHttpOptions& options);
  const std::string& address() const { return address_; }
  void shutdown();

 private:
  class Server;
  std::unique_ptr<Server> server_;
  std::string address_;
};

}  // namespace weir::cluster

#endif  // WEIR_CLUSTER_TASKMANAGER_HTTP_H_
