// Test support: a transactional sink whose commits land in a shared,
// in-memory log, and that can inject failures.
//
// A transaction is (subtask, checkpoint id): the sink pre-commits what it
// received since the last checkpoint in snapshot_state() (kept in operator
// state), and commits it on notify_checkpoint_complete() or, after a
// restore, in open(). Committing a transaction twice replaces it, so commits
// are idempotent, as a real transactional sink's must be; the log therefore
// holds exactly-once output whenever the engine is exactly-once.
//
// With fail_every > 0 the sink throws after a random number of rows in
// [1, 2 * fail_every], at once in the first attempt and afterwards only once
// a checkpoint completed in the attempt, so a job always makes progress.
#ifndef WEIR_TESTING_COMMITTING_SINK_H_
#define WEIR_TESTING_COMMITTING_SINK_H_

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "weir/weir.h"

namespace weir::testing {

// The state backends every exactly-once test runs on, for
// INSTANTIATE_TEST_SUITE_P(..., kBothBackends, backend_name).
inline const auto kBothBackends = ::testing::Values(StateBackendKind::kHeap, StateBackendKind::kRocksDb);
inline std::string backend_name(const ::testing::TestParamInfo<StateBackendKind>& info) {
  return std::string(to_string(info.param));
}

// Which attempts of each subtask of each stage opened (a stage is what a
// test calls its operators): how a failure test tells which subtasks a
// restart reached and which never stopped. Operators call opened() from
// open(); thread-safe.
class AttemptLog {
 public:
  void opened(const std::string& stage, const OperatorContext& ctx) {
    std::lock_guard lock(mu_);
    attempts_[stage][ctx.subtask_index()].insert(ctx.attempt());
  }
  std::set<int> of(const std::string& stage, int subtask) {
    std::lock_guard lock(mu_);
    return attempts_[stage][subtask];
  }

 private:
  std::mutex mu_;
  std::map<std::string, std::map<int, std::set<int>>> attempts_;  // stage -> subtask -> attempts
};

// The configuration of the failure tests: parallelism `p`, checkpoints
// every 20 ms and restarts after 5 ms, so injected failures recover fast.
inline JobConfig failure_test_config(int p, StateBackendKind backend = StateBackendKind::kHeap) {
  JobConfig config;
  config.default_parallelism = p;
  config.state.kind = backend;
  config.checkpoint.interval = Duration(20);
  config.restart.delay = Duration(5);
  return config;
}

template <typename T>
class CommitLog {
 public:
  void commit(int subtask, int64_t checkpoint, std::vector<T> rows) {
    {
      std::lock_guard lock(mu_);
      auto& slot = txns_[{subtask, checkpoint}];
      rows_ += rows.size();
      rows_ -= slot.size();
      slot = std::move(rows);
    }
    cv_.notify_all();
  }
  // Waits until at least `n` rows are committed; false at the deadline.
  bool wait_for_rows(size_t n, std::chrono::steady_clock::time_point deadline) const {
    std::unique_lock lock(mu_);
    return cv_.wait_until(lock, deadline, [&] { return rows_ >= n; });
  }
  size_t rows() const {
    std::lock_guard lock(mu_);
    return rows_;
  }
  std::vector<T> all() const {
    std::lock_guard lock(mu_);
    std::vector<T> out;
    for (const auto& [k, v] : txns_) out.insert(out.end(), v.begin(), v.end());
    return out;
  }

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::map<std::pair<int, int64_t>, std::vector<T>> txns_;
  size_t rows_ = 0;
};

template <typename T>
struct PendingCommit {
  int32_t subtask = 0;  // the writer's, which names the transaction
  int64_t checkpoint = 0;
  std::vector<T> rows;
  auto weir_fields() { return std::tie(subtask, checkpoint, rows); }
};

template <typename T>
class CommittingSink final : public Sink<T> {
 public:
  explicit CommittingSink(CommitLog<T>* log, int64_t fail_every = 0, uint64_t seed = 0)
      : log_(log), fail_every_(fail_every), seed_(seed) {}

  absl::Status open(OperatorContext& ctx) override {
    subtask_ = ctx.subtask_index();
    state_ = std::make_unique<OperatorListState<PendingCommit<T>>>(ctx, "pending-commits");
    for (auto& p : state_->get()) log_->commit(p.subtask, p.checkpoint, p.rows);
    state_->clear();
    armed_ = ctx.attempt() == 0;
    std::mt19937_64 rng(seed_ + subtask_ * 101 + ctx.attempt() * 7919);
    if (fail_every_ > 0) threshold_ = 1 + static_cast<int64_t>(rng() % (2 * fail_every_));
    return absl::OkStatus();
  }
  absl::Status write(const T& row) override {
    current_.push_back(row);
    if (fail_every_ > 0 && armed_ && ++seen_ >= threshold_) {
      armed_ = false;
      return absl::InternalError("injected failure");
    }
    return absl::OkStatus();
  }
  absl::Status snapshot_state(int64_t checkpoint) override {
    pending_.push_back({subtask_, checkpoint, std::move(current_)});
    current_.clear();
    state_->update(pending_);
    return absl::OkStatus();
  }
  void notify_checkpoint_complete(int64_t checkpoint) override {
    while (!pending_.empty() && pending_.front().checkpoint <= checkpoint) {
      log_->commit(pending_.front().subtask, pending_.front().checkpoint, pending_.front().rows);
      pending_.erase(pending_.begin());
    }
    armed_ = fail_every_ > 0;
  }

 private:
  CommitLog<T>* log_;
  const int64_t fail_every_;
  const uint64_t seed_;
  int subtask_ = 0;
  bool armed_ = false;
  int64_t seen_ = 0;
  int64_t threshold_ = 0;
  std::vector<T> current_;
  std::vector<PendingCommit<T>> pending_;
  std::unique_ptr<OperatorListState<PendingCommit<T>>> state_;
};

// Appends every row it receives, with its subtask, to a shared vector, as
// it comes: no transactions (at-least-once). For tests without failures.
template <typename T>
class CollectingSink final : public Sink<T> {
 public:
  struct Rows {
    std::mutex mu;
    std::vector<T> rows;
    std::vector<int> subtasks;  // of each row
  };
  explicit CollectingSink(Rows* out) : out_(out) {}
  absl::Status open(OperatorContext& ctx) override {
    subtask_ = ctx.subtask_index();
    return absl::OkStatus();
  }
  absl::Status write(const T& row) override {
    std::lock_guard lock(out_->mu);
    out_->rows.push_back(row);
    out_->subtasks.push_back(subtask_);
    return absl::OkStatus();
  }

 private:
  Rows* out_;
  int subtask_ = 0;
};

}  // namespace weir::testing

#endif  // WEIR_TESTING_COMMITTING_SINK_H_
