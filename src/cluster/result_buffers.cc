#include "cluster/result_buffers.h"

#include <random>

namespace weir::cluster {

ResultBuffers::ResultBuffers(Options options, const Clock* clock) : options_(options), clock_(clock) {}

absl::StatusOr<std::string> ResultBuffers::open() {
  std::random_device rd;
  std::mt19937_64 rng((static_cast<uint64_t>(rd()) << 32) ^ rd());
  char id[33];
  std::snprintf(id, sizeof(id), "%016llx%016llx", static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(rng()));
  absl::MutexLock lock(&mu_);
  drop_idle();
  if (results_.size() >= options_.max_results) {
    return absl::ResourceExhaustedError("the JobManager holds " + std::to_string(results_.size()) +
                                        " query results already (their clients still read them)");
  }
  results_[id].last_fetch_ms = clock_->now_ms();
  return std::string(id);
}

void ResultBuffers::close(const std::string& id) {
  absl::MutexLock lock(&mu_);
  results_.erase(id);
}

size_t ResultBuffers::open_results() const {
  absl::MutexLock lock(&mu_);
  return results_.size();
}

void ResultBuffers::drop_idle() {
  const int64_t now = clock_->now_ms();
  for (auto it = results_.begin(); it != results_.end();) {
    if (now - it->second.last_fetch_ms >= absl::ToInt64Milliseconds(options_.idle)) {
      it = results_.erase(it);
    } else {
      ++it;
    }
  }
}

namespace {
absl::Status not_open(const std::string& id) {
  return absl::NotFoundError("no query result " + id +
                             " is open at this JobManager (its client closed it or stopped reading it)");
}
}  // namespace

absl::StatusOr<bool> ResultBuffers::push(const ResultBatch& b, absl::Duration wait) {
  absl::MutexLock lock(&mu_);
  drop_idle();
  auto it = results_.find(b.result_id);
  if (it == results_.end()) return not_open(b.result_id);
  Result* r = &it->second;
  if (b.subtasks < 1 || b.subtask < 0 || b.subtask >= b.subtasks ||
      (!r->next_seq.empty() && r->next_seq.size() != static_cast<size_t>(b.subtasks))) {
    return absl::InvalidArgumentError("result " + b.result_id + ": batch of subtask " + std::to_string(b.subtask) +
                                      " of " + std::to_string(b.subtasks) + " does not fit the sink");
  }
  if (r->next_seq.empty()) r->next_seq.assign(b.subtasks, 0);
  const int64_t expected = r->next_seq[b.subtask];
  if (b.seq < expected) return true;  // taken before; its reply was lost
  if (b.seq > expected) {
    return absl::InvalidArgumentError("result " + b.result_id + ": subtask " + std::to_string(b.subtask) +
                                      " pushed batch " + std::to_string(b.seq) + " before batch " +
                                      std::to_string(expected));
  }
  const std::string id = b.result_id;
  auto gone_or_room = [this, &id, size = b.rows.size()]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto at = results_.find(id);
    return at == results_.end() || at->second.batches.empty() || at->second.bytes + size <= options_.max_bytes;
  };
  if (!mu_.AwaitWithTimeout(absl::Condition(&gone_or_room), wait)) return false;
  it = results_.find(id);
  if (it == results_.end()) return not_open(id);
  r = &it->second;
  r->batches.push_back(b.rows);
  r->bytes += b.rows.size();
  r->next_seq[b.subtask] = b.seq + 1;
  if (b.end) ++r->ended;
  return true;
}

absl::StatusOr<ResultBuffers::Fetched> ResultBuffers::fetch(const std::string& id, int64_t from,
                                                              absl::Duration wait) {
  absl::MutexLock lock(&mu_);
  drop_idle();
  auto it = results_.find(id);
  if (it == results_.end()) return not_open(id);
  Result* r = &it->second;
  r->last_fetch_ms = clock_->now_ms();
  const int64_t last = r->first + static_cast<int64_t>(r->batches.size());
  if (from < r->first || from > last) {
    return absl::InvalidArgumentError("result " + id + ": fetch from batch " + std::to_string(from) +
                                      ", but batches " + std::to_string(r->first) + ".." + std::to_string(last) +
                                      " are the ones not fetched yet");
  }
  while (r->first < from) {
    r->bytes -= r->batches.front().size();
    r->batches.pop_front();
    ++r->first;
  }
  auto ready = [this, &id]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto at = results_.find(id);
    if (at == results_.end() || !at->second.batches.empty()) return true;
    const Result& x = at->second;
    return !x.next_seq.empty() && x.ended == static_cast<int>(x.next_seq.size());
  };
  mu_.AwaitWithTimeout(absl::Condition(&ready), wait);
  it = results_.find(id);
  if (it == results_.end()) return not_open(id);
  r = &it->second;
  Fetched out;
  size_t bytes = 0;
  for (const std::string& batch : r->batches) {
    if (!out.batches.empty() && bytes + batch.size() > options_.max_bytes) break;
    bytes += batch.size();
    out.batches.push_back(batch);
  }
  out.next = r->first + static_cast<int64_t>(out.batches.size());
  out.end = !r->next_seq.empty() && r->ended == static_cast<int>(r->next_seq.size()) &&
            out.batches.size() == r->batches.size();
  return out;
}

}  // namespace weir::cluster
