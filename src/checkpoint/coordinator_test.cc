#include "checkpoint/coordinator.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "checkpoint/storage.h"
#include "checkpoint/memory_storage.h"
#include "checkpoint/file_storage.h"

namespace weir::checkpoint {
namespace {

struct RecordingActions : CoordinatorActions {
  std::vector<int64_t> triggered, completed, aborted, finals;
  std::vector<std::string> failures;
  void trigger_sources(int64_t id, int64_t, bool, bool) override { triggered.push_back(id); }
  void notify_complete(int64_t id) override { completed.push_back(id); }
  void notify_aborted(int64_t id) override { aborted.push_back(id); }
  void final_checkpoint_complete(int64_t id) override { finals.push_back(id); }
  void fail_job(const absl::Status& why) override { failures.emplace_back(why.message()); }
  void savepoint_done(int64_t id, const std::string& location, const absl::Status& s) override {
    savepoints.push_back({id, location, s.ok() ? "" : std::string(s.message())});
  }
  std::vector<SavepointResult> savepoints;
};

class CoordinatorTest : public ::testing::Test {
 protected:
  void make(CheckpointConfig c, int tasks = 2) {
    config_ = c;
    store_ = std::make_unique<CompletedCheckpointStore>(c.retained, &storage_);
    coord_ = std::make_unique<CheckpointCoordinator>(c, "job", &clock_, &storage_, store_.get(),
                                                     &actions_);
    coord_->start(tasks);
  }
  // Each task writes one state file and acknowledges.
  void ack_all(int64_t id, int tasks = 2) {
    for (int t = 0; t < tasks; ++t) {
      AckedOperatorState s;
      s.uid = "op";
      s.parallelism = tasks;
      s.max_parallelism = 128;
      s.handle.subtask = t;
      s.handle.file = "op-" + std::to_string(t) + ".state";
      detail::OperatorSnapshot snap;
      std::string bytes = encode_state_file(snap, &s.handle);
      ASSERT_TRUE(storage_.write_state_file(id, s.handle.file, bytes).ok());
      TaskAck ack;
      ack.states.push_back(s);
      coord_->on_ack(t, id, ack);
    }
  }
  void advance(int64_t ms) {
    clock_.advance(ms);
    coord_->tick();
  }

  CheckpointConfig config_;
  ManualClock clock_;
  MemoryCheckpointStorage storage_{"job"};
  RecordingActions actions_;
  std::unique_ptr<CompletedCheckpointStore> store_;
  std::unique_ptr<CheckpointCoordinator> coord_;
};

CheckpointConfig config(int64_t interval_ms = 100) {
  CheckpointConfig c;
  c.interval = Duration(interval_ms);
  return c;
}

TEST_F(CoordinatorTest, TriggersAfterTheIntervalAndCompletesWhenAllAcked) {
  make(config());
  advance(99);
  EXPECT_TRUE(actions_.triggered.empty());
  advance(1);
  ASSERT_EQ(actions_.triggered, std::vector<int64_t>{1});
  AckedOperatorState s;
  ack_all(1);
  EXPECT_EQ(actions_.completed, std::vector<int64_t>{1});
  ASSERT_NE(store_->latest(), nullptr);
  EXPECT_EQ(store_->latest()->id, 1);
  EXPECT_EQ(store_->latest()->metadata->operators.size(), 1u);
  EXPECT_EQ(store_->latest()->metadata->operators[0].subtasks.size(), 2u);
  EXPECT_EQ(coord_->completed_stats().size(), 1u);
}

// A long-running job keeps the details of its last kCheckpointHistory
// checkpoints only (its memory does not grow with its age); the counts
// cover every one, and an earlier JobManager's counts carry over.
TEST_F(CoordinatorTest, KeepsABoundedHistoryAndCountsEveryCheckpoint) {
  make(config(10));
  const int n = static_cast<int>(kCheckpointHistory) + 7;
  for (int i = 1; i <= n; ++i) {
    advance(10);
    ASSERT_EQ(actions_.triggered.size(), static_cast<size_t>(i));
    advance(3);  // each takes 3 ms
    ack_all(actions_.triggered.back());
  }
  ASSERT_EQ(coord_->completed_stats().size(), kCheckpointHistory);
  EXPECT_EQ(coord_->completed_stats().front().id, n - static_cast<int>(kCheckpointHistory) + 1);
  EXPECT_EQ(coord_->completed_stats().back().id, n);
  CheckpointCounts c = coord_->counts();
  EXPECT_EQ(c.completed, n);
  EXPECT_EQ(c.failed, 0);
  EXPECT_EQ(c.in_progress, 0);
  EXPECT_EQ(c.duration_sum_ms, 3 * n);
  EXPECT_EQ(c.duration_max_ms, 3);
  advance(10);  // one more triggered, not acknowledged
  c = coord_->counts();
  EXPECT_EQ(c.in_progress, 1);
  EXPECT_EQ(c.total(), n + 1);
  coord_->carry_counts(40, 2);
  c = coord_->counts();
  EXPECT_EQ(c.completed, n + 40);
  EXPECT_EQ(c.failed, 2);
}

// Ids from an external counter (ZooKeeper under high availability): they
// jump past ids another leader reserved, and a counter that cannot answer
// triggers nothing until one interval later.
struct ScriptedIds : CheckpointIdCounter {
  std::vector<absl::StatusOr<int64_t>> answers;
  std::vector<int64_t> asked;  // the at_least of each call
  absl::StatusOr<int64_t> next(int64_t at_least) override {
    asked.push_back(at_least);
    auto a = answers.front();
    answers.erase(answers.begin());
    return a;
  }
};

TEST_F(CoordinatorTest, IdsComeFromTheCounterAndAFailedReservationTriggersNothing) {
  ScriptedIds ids;
  ids.answers = {int64_t{7}, absl::UnavailableError("ZooKeeper did not answer"), int64_t{9}};
  make(config());
  coord_->set_id_counter(&ids);
  advance(100);
  ASSERT_EQ(actions_.triggered, std::vector<int64_t>{7});
  ack_all(7);
  EXPECT_EQ(actions_.completed, std::vector<int64_t>{7});
  advance(100);  // the counter fails: nothing triggered, nothing aborted
  EXPECT_EQ(actions_.triggered, std::vector<int64_t>{7});
  EXPECT_TRUE(actions_.aborted.empty());
  EXPECT_TRUE(actions_.failures.empty());
  advance(50);
  EXPECT_EQ(ids.asked.size(), 2u) << "no retry before the interval";
  advance(50);
  EXPECT_EQ(actions_.triggered, (std::vector<int64_t>{7, 9}));
  EXPECT_EQ(ids.asked, (std::vector<int64_t>{1, 8, 8}));
}

TEST_F(CoordinatorTest, OneMissingAckKeepsItPending) {
  make(config());
  advance(100);
  TaskAck ack;
  coord_->on_ack(0, 1, ack);
  coord_->on_ack(0, 1, ack);  // a duplicate does not count twice
  EXPECT_TRUE(actions_.completed.empty());
  EXPECT_EQ(coord_->num_pending(), 1u);
}

TEST_F(CoordinatorTest, MaxConcurrentHoldsBackTheNextTrigger) {
  make(config());
  advance(100);
  advance(100);
  advance(100);
  EXPECT_EQ(actions_.triggered.size(), 1u);
  ack_all(1);
  advance(100);
  EXPECT_EQ(actions_.triggered.size(), 2u);
}

TEST_F(CoordinatorTest, DeclineAbortsAndFailsTheJobWhenNoFailureIsTolerated) {
  make(config());
  advance(100);
  coord_->on_decline(1, 1, "disk full");
  EXPECT_EQ(actions_.aborted, std::vector<int64_t>{1});
  ASSERT_EQ(actions_.failures.size(), 1u);
  EXPECT_EQ(actions_.failures[0],
            "checkpoint 1 failed (declined by task 1: disk full); tolerable failed checkpoints: 0");
  EXPECT_EQ(storage_.num_checkpoints(), 0u);
}

// Checkpoint 2 triggered while 1 is pending (a savepoint's barrier, or
// concurrent checkpoints): a task that gives 1 up for 2's barrier does not
// fail the job. Without a newer one pending, a decline is the checkpoint's
// failure.
TEST_F(CoordinatorTest, ADeclineForANewerPendingCheckpointIsSubsumedNotAFailure) {
  CheckpointConfig c = config();
  c.max_concurrent = 2;
  make(c);
  advance(100);
  advance(100);
  ASSERT_EQ(actions_.triggered, (std::vector<int64_t>{1, 2}));
  coord_->on_decline(0, 1, "subsumed by a newer barrier during alignment");
  EXPECT_EQ(actions_.aborted, std::vector<int64_t>{1});
  EXPECT_TRUE(actions_.failures.empty());
  coord_->on_decline(0, 2, "disk full");
  ASSERT_EQ(actions_.failures.size(), 1u);
}

TEST(CheckpointFailureReasonTest, AnEndedAttemptOrASubsumedCheckpointIsNotTheCheckpointsFailure) {
  struct Row {
    CheckpointFailureReason reason;
    std::string_view name;
    bool counts;
  };
  for (const Row& row : {Row{CheckpointFailureReason::kAttemptEnded, "job attempt ended", false},
                         Row{CheckpointFailureReason::kExpired, "expired", true},
                         Row{CheckpointFailureReason::kDeclined, "declined", true},
                         Row{CheckpointFailureReason::kFinalizeFailed, "writing metadata failed", true},
                         Row{CheckpointFailureReason::kSubsumed, "subsumed", false}}) {
    EXPECT_EQ(to_string(row.reason), row.name);
    EXPECT_EQ(counts_as_failure(row.reason), row.counts) << row.name;
  }
}

TEST_F(CoordinatorTest, TolerableFailuresResetAfterASuccess) {
  CheckpointConfig c = config();
  c.tolerable_failed_checkpoints = 1;
  make(c);
  advance(100);
  coord_->on_decline(0, 1, "x");
  EXPECT_TRUE(actions_.failures.empty());
  advance(100);
  ack_all(2);
  advance(100);
  coord_->on_decline(0, 3, "y");
  EXPECT_TRUE(actions_.failures.empty());
  advance(100);
  coord_->on_decline(0, 4, "z");
  EXPECT_EQ(actions_.failures.size(), 1u);
}

TEST_F(CoordinatorTest, ExpiresAfterTheTimeout) {
  CheckpointConfig c = config();
  c.timeout = Duration(1000);
  c.tolerable_failed_checkpoints = 5;
  make(c);
  advance(100);
  advance(999);
  EXPECT_TRUE(actions_.aborted.empty());
  advance(1);
  EXPECT_EQ(actions_.aborted, std::vector<int64_t>{1});
  EXPECT_EQ(coord_->failed_checkpoints(), 1);
  // With none tolerated, the job fails naming the timeout.
  c.tolerable_failed_checkpoints = 0;
  make(c);
  advance(100);
  advance(1000);
  ASSERT_EQ(actions_.failures.size(), 1u);
  EXPECT_EQ(actions_.failures[0],
            "checkpoint 1 failed (expired after 1000 ms); tolerable failed checkpoints: 0");
}

TEST_F(CoordinatorTest, RetainsTheNewestAndDeletesSubsumedCheckpoints) {
  CheckpointConfig c = config();
  c.retained = 2;
  make(c);
  for (int64_t id = 1; id <= 4; ++id) {
    advance(100);
    ack_all(id);
  }
  ASSERT_EQ(store_->entries().size(), 2u);
  EXPECT_EQ(store_->entries().front().id, 3);
  EXPECT_EQ(store_->entries().back().id, 4);
  EXPECT_EQ(storage_.num_checkpoints(), 2u);
}

// Savepoints never push checkpoints out of the retained window (a task may
// still refer again to the shared files of the checkpoint it last heard of).
TEST_F(CoordinatorTest, SavepointsDoNotSubsumeCheckpoints) {
  CheckpointConfig c = config();
  c.retained = 1;
  make(c);
  advance(100);
  ack_all(1);
  // A savepoint completes (in its own directory; this storage takes none).
  store_->add({1000, "/elsewhere/savepoint-job-1000", store_->latest()->metadata, /*owned=*/false,
               /*savepoint=*/true});
  ASSERT_EQ(store_->entries().size(), 2u);
  EXPECT_EQ(store_->entries().front().id, 1);  // still retained, files kept
  EXPECT_EQ(store_->latest()->id, 1000);       // the restore point
  EXPECT_EQ(storage_.num_checkpoints(), 1u);
  advance(100);
  ack_all(2);
  ASSERT_EQ(store_->entries().size(), 1u);  // checkpoint 1 subsumed, the savepoint behind
  EXPECT_EQ(store_->latest()->id, 2);
  EXPECT_EQ(storage_.num_checkpoints(), 1u);
}

TEST_F(CoordinatorTest, MinPauseSpacesCheckpoints) {
  CheckpointConfig c = config(100);
  c.min_pause = Duration(500);
  make(c);
  advance(100);
  ack_all(1);
  advance(100);
  advance(300);
  EXPECT_EQ(actions_.triggered.size(), 1u);
  advance(100);
  EXPECT_EQ(actions_.triggered.size(), 2u);
}

TEST_F(CoordinatorTest, FinalCheckpointWaitsForThePendingOneAndReportsCompletion) {
  make(config());
  advance(100);
  coord_->request_final_checkpoint();
  EXPECT_EQ(actions_.triggered.size(), 1u);  // 1 still pending
  ack_all(1);
  coord_->tick();
  ASSERT_EQ(actions_.triggered.size(), 2u);
  ack_all(2);
  EXPECT_EQ(actions_.finals, std::vector<int64_t>{2});
  EXPECT_TRUE(coord_->completed_stats().back().is_final);
}

TEST_F(CoordinatorTest, NoPeriodicCheckpointsInModeNoneButAFinalOne) {
  CheckpointConfig c = config();
  c.mode = CheckpointingMode::kNone;
  make(c);
  advance(1000);
  EXPECT_TRUE(actions_.triggered.empty());
  coord_->request_final_checkpoint();
  EXPECT_EQ(actions_.triggered.size(), 1u);
}

TEST_F(CoordinatorTest, StopAbortsWithoutCountingFailures) {
  make(config());
  advance(100);
  coord_->stop();
  EXPECT_EQ(actions_.aborted, std::vector<int64_t>{1});
  EXPECT_TRUE(actions_.failures.empty());
  EXPECT_EQ(coord_->failed_checkpoints(), 0);
}

TEST_F(CoordinatorTest, LateAckOfAnAbortedCheckpointRemovesItsFiles) {
  CheckpointConfig c = config();
  c.tolerable_failed_checkpoints = 5;
  make(c);
  advance(100);
  coord_->on_decline(0, 1, "x");
  ack_all(1);  // task 1 wrote its file after the abort
  EXPECT_EQ(storage_.num_checkpoints(), 0u);
  EXPECT_TRUE(actions_.completed.empty());
}

}  // namespace
}  // namespace weir::checkpoint

namespace weir::checkpoint {
namespace {

// What other checkpoints left in the job's directory below a completed one
// (an aborted checkpoint a late task wrote into, a completed one a deposed
// leader could not record) goes when a checkpoint completes; retained ones
// and those above it stay.
TEST(CoordinatorLeftoverTest, CheckpointsNeitherRetainedNorPendingBelowACompletedOneAreRemoved) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("weir-leftovers-" + std::to_string(::getpid()));
  fs::remove_all(root);
  FileCheckpointStorage storage(root.string(), "job");
  auto finished = [&](int64_t id) {
    OperatorSubtaskState h;
    h.file = "op-0.state";
    detail::OperatorSnapshot snap;
    ASSERT_TRUE(storage.write_state_file(id, h.file, encode_state_file(snap, &h)).ok());
    CheckpointMetadata m;
    m.checkpoint_id = id;
    m.job_id = "job";
    ASSERT_TRUE(storage.finalize(m).ok());
  };
  finished(1);                                                // completed, never recorded
  ASSERT_TRUE(storage.write_state_file(2, "late.state", "x").ok());  // aborted, written late
  ASSERT_TRUE(storage.write_state_file(9, "ahead.state", "x").ok());  // above: not touched
  ASSERT_EQ(storage.stored_checkpoints()->size(), 3u);

  ManualClock clock;
  RecordingActions actions;
  CheckpointConfig c;
  c.interval = Duration(100);
  c.retained = 1;
  CompletedCheckpointStore store(c.retained, &storage);
  CheckpointCoordinator coord(c, "job", &clock, &storage, &store, &actions);
  coord.set_next_checkpoint_id(5);
  coord.start(1);
  clock.advance(100);
  coord.tick();
  ASSERT_EQ(actions.triggered, std::vector<int64_t>{5});
  AckedOperatorState s;
  s.uid = "op";
  s.parallelism = 1;
  s.max_parallelism = 128;
  s.handle.file = "op-0.state";
  detail::OperatorSnapshot snap;
  ASSERT_TRUE(storage.write_state_file(5, s.handle.file, encode_state_file(snap, &s.handle)).ok());
  TaskAck ack;
  ack.states.push_back(s);
  coord.on_ack(0, 5, ack);
  ASSERT_EQ(actions.completed, std::vector<int64_t>{5});
  auto left = storage.stored_checkpoints();
  ASSERT_TRUE(left.ok());
  std::sort(left->begin(), left->end());
  EXPECT_EQ(*left, (std::vector<int64_t>{5, 9}));
  EXPECT_TRUE(fs::exists(root / "job" / "chk-5" / "_metadata"));
  fs::remove_all(root);
}

}  // namespace
}  // namespace weir::checkpoint
