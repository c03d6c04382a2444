// Incremental checkpoints on RocksDB: exactly-once under failures, restarts
// and aborted checkpoints, and a checkpoint directory that holds exactly
// what the retained checkpoints refer to (no orphans), checked by listing it.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <random>
#include <set>

#include "checkpoint/format.h"
#include "common/file_util.h"
#include "state/local_state.h"
#include "testing/committing_sink.h"
#include "tests/process.h"
#include "weir/connectors.h"
#include "weir/weir.h"
#include "testing/seed.h"

namespace weir {
namespace incremental_test {

namespace fs = std::filesystem;

struct Event {
  int64_t key = 0;
  int64_t value = 0;
  auto weir_fields() { return std::tie(key, value); }
};

struct Count {
  int64_t key = 0, count = 0, sum = 0;
  auto weir_fields() { return std::tie(key, count, sum); }
};

constexpr int64_t kKeys = 5000;
constexpr int64_t kEvents = 600000;

Event event_at(int64_t i) { return Event{(i * 7919) % kKeys, i % 13 - 6}; }

class RunningCount final : public KeyedProcessFunction<int64_t, Event, Count> {
 public:
  absl::Status open(KeyedRuntimeContext<int64_t>& ctx) override {
    state_ = &ctx.get_state(ValueStateDescriptor<std::pair<int64_t, int64_t>>{"count-sum"});
    return absl::OkStatus();
  }
  void process_element(const Event& e, Context&, Collector<Count>& out) override {
    auto [n, sum] = state_->value_or({0, 0});
    state_->update({n + 1, sum + e.value});
    out.collect(Count{e.key, n + 1, sum + e.value});
  }

 private:
  ValueState<std::pair<int64_t, int64_t>>* state_ = nullptr;
};

// Exactly once: per key, counts 1..n once each, the last with the total.
void expect_exactly_once(const testing::CommitLog<Count>& log) {
  std::map<int64_t, std::map<int64_t, int64_t>> by_key;
  for (const Count& c : log.all()) {
    ASSERT_TRUE(by_key[c.key].emplace(c.count, c.sum).second) << "duplicate: key " << c.key << " count " << c.count;
  }
  std::map<int64_t, std::pair<int64_t, int64_t>> total;
  for (int64_t i = 0; i < kEvents; ++i) {
    Event e = event_at(i);
    total[e.key].first++;
    total[e.key].second += e.value;
  }
  ASSERT_EQ(by_key.size(), total.size());
  for (const auto& [key, counts] : by_key) {
    ASSERT_EQ(static_cast<int64_t>(counts.size()), total[key].first) << "key " << key;
    EXPECT_EQ(counts.rbegin()->second, total[key].second) << "key " << key;
  }
}

TEST(IncrementalCheckpointTest, ExactlyOnceAndNoOrphansUnderFailuresAndAbortedCheckpoints) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  testing::TempDir dir("incremental");
  testing::CommitLog<Count> log;
  JobConfig config = testing::failure_test_config(3, StateBackendKind::kRocksDb);
  config.checkpoint.directory = dir.path("chk");
  config.checkpoint.incremental = true;
  config.checkpoint.retained = 2;
  // Some checkpoints time out and are aborted; the job tolerates it.
  config.checkpoint.timeout = Duration(100);
  config.checkpoint.tolerable_failed_checkpoints = 1000000;
  config.state.local_directory = dir.path("state");
  StreamEnvironment env(config);
  // One row per event: the source stays at most kAhead events ahead of the
  // committed rows. The sink's uncommitted rows grow until a checkpoint
  // completes, and each checkpoint writes them; unbounded, on a loaded
  // machine every checkpoint could miss the 100 ms timeout for good.
  constexpr int64_t kAhead = 60000;
  env.from_source<Event>([&log] {
       auto source = std::make_unique<GeneratorSource<Event>>(event_at, kEvents);
       source->hold_while([&log](int64_t i) { return i >= static_cast<int64_t>(log.rows()) + kAhead; });
       return source;
     }, "events")
      .key_by([](const Event& e) { return e.key; })
      .process<Count>([] { return std::make_unique<RunningCount>(); }, "count")
      .uid("count")
      .sink_to([&log, seed] { return std::make_unique<testing::CommittingSink<Count>>(&log, 40000, seed); })
      .uid("sink");
  auto r = env.execute("incremental");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->status, JobStatus::kFinished) << r->failure;
  EXPECT_GE(r->restarts, 1);
  std::printf("restarts %d, checkpoints completed %zu, aborted %lld\n", r->restarts, r->checkpoints.size(),
              static_cast<long long>(r->failed_checkpoints));

  expect_exactly_once(log);

  // The directory holds the retained checkpoints and exactly the shared
  // files they refer to.
  std::vector<fs::path> jobs;
  for (const auto& e : fs::directory_iterator(dir.path("chk"))) jobs.push_back(e.path());
  ASSERT_EQ(jobs.size(), 1u);
  std::set<std::string> referenced, present;
  int checkpoints = 0;
  for (const auto& e : fs::directory_iterator(jobs[0])) {
    std::string name = e.path().filename().string();
    if (name == "shared") continue;
    ASSERT_EQ(name.rfind("chk-", 0), 0u) << "unexpected entry " << e.path();
    ++checkpoints;
    auto bytes = read_file((e.path() / "_metadata").string());
    ASSERT_TRUE(bytes.ok()) << e.path() << ": " << bytes.status();
    auto meta = checkpoint::decode_metadata(*bytes, e.path().string());
    ASSERT_TRUE(meta.ok()) << meta.status();
    for (const auto& op : meta->operators) {
      for (const auto& s : op.subtasks) {
        for (const auto& f : s.native_files) {
          fs::path p = (e.path() / f.path).lexically_normal();
          ASSERT_TRUE(fs::exists(p)) << "referenced but missing: " << p;
          if (f.shared) referenced.insert(p.string());
        }
      }
    }
  }
  EXPECT_LE(checkpoints, config.checkpoint.retained);
  EXPECT_FALSE(referenced.empty()) << "no incremental checkpoint was retained";
  if (fs::exists(jobs[0] / "shared")) {
    for (auto it = fs::recursive_directory_iterator(jobs[0] / "shared"); it != fs::recursive_directory_iterator();
         ++it) {
      if (it->is_directory()) {
        EXPECT_FALSE(fs::is_empty(it->path())) << "empty upload directory left: " << it->path();
        continue;
      }
      present.insert(it->path().lexically_normal().string());
    }
  }
  EXPECT_EQ(present, referenced) << r->failed_checkpoints << " checkpoints were aborted";
  // The working copies are gone with the job.
  EXPECT_TRUE(!fs::exists(dir.path("state")) || fs::is_empty(dir.path("state")));
}

// Local recovery: one failure after checkpoints completed; each keyed
// subtask restores from its local copy (or, with local recovery off, from
// the checkpoint), and the output is exactly-once either way.
class LocalRecoveryTest : public ::testing::TestWithParam<bool> {};

TEST_P(LocalRecoveryTest, RestoresFromTheLocalCopyAfterAFailure) {
  const bool local_recovery = GetParam();
  testing::TempDir dir("local-recovery");
  testing::CommitLog<Count> log;
  JobConfig config = testing::failure_test_config(2, StateBackendKind::kRocksDb);
  config.checkpoint.directory = dir.path("chk");
  config.checkpoint.incremental = true;
  config.state.local_directory = dir.path("state");
  config.state.local_recovery = local_recovery;
  StreamEnvironment env(config);
  auto fail_now = std::make_shared<std::atomic<bool>>(false);
  env.from_source<Event>([] { return std::make_unique<GeneratorSource<Event>>(event_at, kEvents, 100000); },
                         "events")
      .uid("events")
      .key_by([](const Event& e) { return e.key; })
      .process<Count>([] { return std::make_unique<RunningCount>(); }, "count")
      .uid("count")
      .map([fail_now](const Count& c) {
            if (fail_now->exchange(false)) throw std::runtime_error("injected failure");
            return c;
          }, "fail-once")
      .sink_to([&log] { return std::make_unique<testing::CommittingSink<Count>>(&log); })
      .uid("sink");
  // Fail once, after some output was committed (so checkpoints completed).
  std::thread failer([&] {
    if (log.wait_for_rows(kEvents / 10, std::chrono::steady_clock::now() + std::chrono::seconds(60))) {
      fail_now->store(true);
    }
  });
  const int64_t before = state::LocalStateStore::restores_total();
  auto r = env.execute("local-recovery");
  failer.join();
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->status, JobStatus::kFinished) << r->failure;
  ASSERT_EQ(r->restarts, 1);
  // Both subtasks of "count" restored from their local copies.
  EXPECT_EQ(state::LocalStateStore::restores_total() - before, local_recovery ? 2 : 0);
  expect_exactly_once(log);
  EXPECT_TRUE(!fs::exists(dir.path("state")) || fs::is_empty(dir.path("state")));
}

INSTANTIATE_TEST_SUITE_P(OnOff, LocalRecoveryTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "local" : "from_checkpoint"; });

// The running count with its state declared as another type.
class RunningCountAsDoubles final : public KeyedProcessFunction<int64_t, Event, Count> {
 public:
  absl::Status open(KeyedRuntimeContext<int64_t>& ctx) override {
    state_ = &ctx.get_state(ValueStateDescriptor<std::pair<int64_t, double>>{"count-sum"});
    return absl::OkStatus();
  }
  void process_element(const Event& e, Context&, Collector<Count>& out) override {
    auto [n, sum] = state_->value_or({0, 0});
    state_->update({n + 1, sum + e.value});
    out.collect(Count{e.key, n + 1, static_cast<int64_t>(sum + e.value)});
  }

 private:
  ValueState<std::pair<int64_t, double>>* state_ = nullptr;
};

// Restoring a state whose type changed incompatibly fails the job with a
// message naming the state, from native (incremental) and canonical
// checkpoints, into either backend. Both pairs are 16 bytes, so the old
// bytes would decode silently without the stored type signature.
class ChangedStateTypeTest : public ::testing::TestWithParam<std::tuple<bool, StateBackendKind>> {};

TEST_P(ChangedStateTypeTest, RestoreFailsNamingTheState) {
  // Not a structured binding: clang 14 cannot capture one in a lambda.
  const bool incremental = std::get<0>(GetParam());
  const StateBackendKind target = std::get<1>(GetParam());
  testing::TempDir dir("changed-type");
  testing::CollectingSink<Count>::Rows rows;
  auto run = [&](bool changed, StateBackendKind backend, const std::string& restore) {
    JobConfig config = testing::failure_test_config(2, backend);
    config.checkpoint.directory = dir.path("chk");
    config.checkpoint.incremental = incremental && backend == StateBackendKind::kRocksDb;
    config.state.local_directory = dir.path("state");
    config.restore = restore;
    config.restart.kind = RestartStrategyKind::kNone;
    StreamEnvironment env(config);
    auto keyed = env.from_source<Event>([] { return std::make_unique<GeneratorSource<Event>>(event_at, 20000); },
                                        "events")
                     .key_by([](const Event& e) { return e.key; });
    auto counts = changed ? keyed.process<Count>([] { return std::make_unique<RunningCountAsDoubles>(); }, "count")
                          : keyed.process<Count>([] { return std::make_unique<RunningCount>(); }, "count");
    counts.uid("count").sink_to([&rows] { return std::make_unique<testing::CollectingSink<Count>>(&rows); }).uid("sink");
    return env.execute("changed-type");
  };
  auto first = run(false, StateBackendKind::kRocksDb, "");
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ(first->status, JobStatus::kFinished) << first->failure;
  ASSERT_FALSE(first->checkpoints.empty());

  // The unchanged job restores; the changed one is refused.
  auto same = run(false, target, "latest");
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_EQ(same->status, JobStatus::kFinished) << same->failure;
  EXPECT_GE(same->restored_checkpoint_id, 1);
  auto changed = run(true, target, "latest");
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_EQ(changed->status, JobStatus::kFailed);
  EXPECT_NE(changed->failure.find("'count-sum'"), std::string::npos) << changed->failure;
  EXPECT_NE(changed->failure.find("changed type"), std::string::npos) << changed->failure;
}

INSTANTIATE_TEST_SUITE_P(Snapshots, ChangedStateTypeTest,
                         ::testing::Combine(::testing::Bool(),
                                            ::testing::Values(StateBackendKind::kHeap, StateBackendKind::kRocksDb)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param) ? "incremental_to_" : "full_to_") +
                                  std::string(to_string(std::get<1>(info.param)));
                         });

}  // namespace incremental_test
}  // namespace weir
