// The tail of this process's log, kept in memory so that the REST API can
// serve it (the JobManager's log at /v1/jobmanager/log, a TaskManager's
// through its HTTP port and the JobManager's /v1/taskmanagers/ID/log) in
// bounded pieces, whether the log goes to stderr or to a file: the last
// lines up to a byte budget, each with its number since the process
// started. A line is numbered as it is logged; a reader asks for the lines
// from a number on and follows the log by asking again from `next`.
// Thread-safe.
#ifndef WEIR_CLUSTER_LOG_TAIL_H_
#define WEIR_CLUSTER_LOG_TAIL_H_

#include <nlohmann/json.hpp>
#include <spdlog/sinks/base_sink.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace weir::cluster {

class LogTail final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  // Keeps the newest lines whose bytes add up to at most `max_bytes`.
  explicit LogTail(size_t max_bytes = size_t{4} << 20) : max_bytes_(max_bytes) {}

  struct Piece {
    int64_t first = 0;  // the oldest line still kept
    int64_t next = 0;   // the number the next line logged gets
    std::vector<std::string> lines;  // from max(from, first), at most `length`
  };
  // Up to `length` lines from line `from` on (negative: the last -from
  // lines).
  Piece read(int64_t from, int length);

  // The process's tail, once logging is configured (cli/logging.h); null
  // before.
  static std::shared_ptr<LogTail> process();
  static void set_process(std::shared_ptr<LogTail> tail);

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override;
  void flush_() override {}

 private:
  const size_t max_bytes_;
  std::deque<std::string> lines_;  // guarded by base_sink's mutex_
  size_t bytes_ = 0;
  int64_t first_ = 0;
};

// The answer of GET ...log?offset=N&length=M: {"first", "next", "lines"}
// from the process's tail. `offset` (a line number; negative: that many
// from the end; default -200) and `length` (at most kMaxLogLines; default
// 200) as the request gave them, "" when it did not; InvalidArgument names
// a malformed one.
inline constexpr int kMaxLogLines = 1000;
// A request parameter that must be a whole number (`what` names it in the
// InvalidArgument error); `fallback` when the request did not give it.
absl::StatusOr<int64_t> whole_number_param(const std::string& text, const char* what, int64_t fallback);
absl::StatusOr<nlohmann::json> log_piece_json(const std::string& offset, const std::string& length);

}  // namespace weir::cluster

#endif  // WEIR_CLUSTER_LOG_TAIL_H_
