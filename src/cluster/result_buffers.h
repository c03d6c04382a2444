// The results of queries whose client reads their rows through the
// JobManager (the SQL shell on a cluster), on their way from the query's
// result sinks in TaskManagers (gRPC PushResults) to the client
// (GET /v1/results/ID). Flink's SQL client gets a SELECT's rows the same way,
// through its JobManager (the collect sink and its coordinator), so a
// client needs to reach only the REST API.
//
// A result is a bounded queue of batches of encoded rows. A sink's push
// waits while the queue is full, and a fetch from sequence number N drops
// the batches before N (the client has them), so a slow reader holds the
// query back instead of the JobManager's memory growing. Each sink subtask
// numbers its batches; a batch pushed again (its reply was lost) is taken
// once. The result is complete when every subtask pushed its last batch
// (`end`) and the client fetched them all. A result no client fetched for
// `idle` is dropped (its client is gone): pushes to it then answer
// NotFound, which fails the query.
#ifndef WEIR_CLUSTER_RESULT_BUFFERS_H_
#define WEIR_CLUSTER_RESULT_BUFFERS_H_

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/clock.h"

namespace weir::cluster {

// One push of a result sink subtask.
struct ResultBatch {
  std::string result_id;
  int subtask = 0;
  int subtasks = 1;  // the sink's parallelism
  int64_t seq = 0;   // 0, 1, ... per subtask
  std::string rows;  // encoded rows (their encoding is the sink's and the client's)
  bool end = false;  // the subtask's last batch
};

class ResultBuffers {
 public:
  struct Options {
    size_t max_bytes = size_t{4} << 20;  // queued per result (a larger batch goes alone)
    size_t max_results = 64;             // open at once
    absl::Duration idle = absl::Seconds(60);
  };
  struct Fetched {
    std::vector<std::string> batches;  // rows of batches from..next-1, in the order they came
    int64_t next = 0;                  // fetch from here next
    bool end = false;                  // every subtask ended and nothing is left after `next`
  };

  explicit ResultBuffers(Options options, const Clock* clock = SystemClock::instance());
  ResultBuffers(const ResultBuffers&) = delete;
  ResultBuffers& operator=(const ResultBuffers&) = delete;

  // A new result's id; ResourceExhausted when max_results are open.
  absl::StatusOr<std::string> open();
  // Forgets the result (its client is done); a waiting push answers NotFound.
  void close(const std::string& id);
  // Queues `b` once there is room, waiting at most `wait`: true when taken
  // (or taken before), false when the queue stayed full. NotFound for a
  // result not open (closed, idle too long, or never opened here: another
  // JobManager's); InvalidArgument for a batch out of order.
  absl::StatusOr<bool> push(const ResultBatch& b, absl::Duration wait);
  // The batches from `from` on (at most max_bytes of them but at least
  // one), waiting at most `wait` for one if there is none yet; drops those
  // before `from`. NotFound for a result not open.
  absl::StatusOr<Fetched> fetch(const std::string& id, int64_t from, absl::Duration wait);

  // Results open now.
  size_t open_results() const;

 private:
  struct Result {
    std::deque<std::string> batches;  // batches first .. first+size-1
    int64_t first = 0;
    size_t bytes = 0;
    std::vector<int64_t> next_seq;  // per sink subtask; empty until the first push
    int ended = 0;
    int64_t last_fetch_ms = 0;
  };
  // Drops the results no client fetched for `idle`.
  void drop_idle() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  const Clock* const clock_;
  mutable absl::Mutex mu_;
  std::map<std::string, Result> results_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weir::cluster

#endif  // WEIR_CLUSTER_RESULT_BUFFERS_H_
