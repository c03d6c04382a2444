// End-to-end jobs through the public API in the embedded cluster: exactly-
// once, at-least-once and no-checkpoint runs, with injected task failures.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "testing/committing_sink.h"
#include "weir/connectors.h"
#include "weir/weir.h"
#include "testing/seed.h"

namespace weir {
namespace pipeline_test {

struct Event {
  int64_t key = 0;
  int64_t value = 0;
  auto weir_fields() { return std::tie(key, value); }
};

struct Count {
  int64_t key = 0;
  int64_t count = 0;
  int64_t sum = 0;
  auto weir_fields() { return std::tie(key, count, sum); }
};


// Counts and sums per key; throws after a random number of records once a
// checkpoint has completed in the attempt (always, in the first attempt).
class CountWithFailures final : public KeyedProcessFunction<int64_t, Event, Count> {
 public:
  CountWithFailures(int64_t fail_every, uint64_t seed) : fail_every_(fail_every), seed_(seed) {}
  absl::Status open(KeyedRuntimeContext<int64_t>& ctx) override {
    count_ = &ctx.get_state(ValueStateDescriptor<int64_t>{"count"});
    sum_ = &ctx.get_reducing_state(
        ReducingStateDescriptor<int64_t>{"sum", [](const int64_t& a, const int64_t& b) { return a + b; }});
    const auto& op = ctx.operator_context();
    armed_ = op.attempt() == 0;
    std::mt19937_64 rng(seed_ + op.subtask_index() * 31 + op.attempt() * 1009);
    if (fail_every_ > 0) threshold_ = 1 + static_cast<int64_t>(rng() % (2 * fail_every_));
    return absl::OkStatus();
  }
  void process_element(const Event& e, Context& ctx, Collector<Count>& out) override {
    int64_t c = count_->value_or(0) + 1;
    count_->update(c);
    sum_->add(e.value);
    out.collect(Count{ctx.current_key(), c, *sum_->get()});
    if (fail_every_ > 0 && armed_ && ++seen_ >= threshold_) {
      armed_ = false;
      throw std::runtime_error("injected failure");
    }
  }
  void notify_checkpoint_complete(int64_t) override { armed_ = fail_every_ > 0; }

 private:
  const int64_t fail_every_;
  const uint64_t seed_;
  ValueState<int64_t>* count_ = nullptr;
  ReducingState<int64_t>* sum_ = nullptr;
  bool armed_ = false;
  int64_t seen_ = 0, threshold_ = 0;
};

constexpr int64_t kKeys = 53;

Event event_at(int64_t i) { return Event{i % kKeys, i % 7 - 3}; }

struct RunSpec {
  CheckpointingMode mode = CheckpointingMode::kExactlyOnce;
  int64_t events_per_source = 200000;
  int parallelism = 4;
  int64_t fail_every = 0;
  uint64_t seed = 1;
  StateBackendKind backend = StateBackendKind::kHeap;
};

// Two generator sources (the second offset by events_per_source), unioned,
// keyed, counted, committed.
JobResult run_job(const RunSpec& spec, testing::CommitLog<Count>* log) {
  JobConfig config = testing::failure_test_config(spec.parallelism, spec.backend);
  config.checkpoint.mode = spec.mode;
  StreamEnvironment env(config);
  int64_t n = spec.events_per_source;
  auto a = env.from_source<Event>(
      [n] { return std::make_unique<GeneratorSource<Event>>(event_at, n); }, "a");
  auto b = env.from_source<Event>(
      [n] {
        return std::make_unique<GeneratorSource<Event>>([n](int64_t i) { return event_at(i + n); }, n);
      },
      "b");
  int64_t fail_every = spec.fail_every;
  uint64_t seed = spec.seed;
  a.union_with(b)
      .key_by([](const Event& e) { return e.key; })
      .process<Count>([fail_every, seed] { return std::make_unique<CountWithFailures>(fail_every, seed); },
                      "count")
      .uid("count")
      .sink_to([log] { return std::make_unique<testing::CommittingSink<Count>>(log); }, "sink")
      .uid("sink");
  auto result = env.execute("pipeline-test");
  EXPECT_TRUE(result.ok()) << result.status();
  return result.value_or(JobResult{});
}

struct Expected {
  std::map<int64_t, int64_t> count, sum;
};

Expected expected_for(int64_t events_per_source) {
  Expected e;
  for (int64_t i = 0; i < 2 * events_per_source; ++i) {
    Event ev = event_at(i);
    e.count[ev.key]++;
    e.sum[ev.key] += ev.value;
  }
  return e;
}

// Exactly once: per key, counts 1..n each exactly once, the last with the
// total sum.
void expect_exactly_once(const std::vector<Count>& out, const Expected& exp) {
  std::map<int64_t, std::map<int64_t, int64_t>> by_key;  // key -> count -> sum
  for (const Count& c : out) {
    ASSERT_TRUE(by_key[c.key].emplace(c.count, c.sum).second)
        << "duplicate: key " << c.key << " count " << c.count;
  }
  ASSERT_EQ(by_key.size(), exp.count.size());
  for (const auto& [key, counts] : by_key) {
    ASSERT_EQ(static_cast<int64_t>(counts.size()), exp.count.at(key)) << "key " << key;
    EXPECT_EQ(counts.begin()->first, 1);
    EXPECT_EQ(counts.rbegin()->first, exp.count.at(key));
    EXPECT_EQ(counts.rbegin()->second, exp.sum.at(key)) << "key " << key;
  }
}

class ExactlyOncePipelineTest : public ::testing::TestWithParam<StateBackendKind> {};

TEST_P(ExactlyOncePipelineTest, ExactlyOnceWithoutFailures) {
  testing::CommitLog<Count> log;
  RunSpec spec;
  spec.backend = GetParam();
  JobResult r = run_job(spec, &log);
  ASSERT_EQ(r.status, JobStatus::kFinished) << r.failure;
  EXPECT_EQ(r.restarts, 0);
  EXPECT_TRUE(!r.checkpoints.empty() && r.checkpoints.back().is_final);
  expect_exactly_once(log.all(), expected_for(spec.events_per_source));
}

TEST_P(ExactlyOncePipelineTest, ExactlyOnceUnderRepeatedTaskFailures) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  testing::CommitLog<Count> log;
  RunSpec spec;
  spec.backend = GetParam();
  spec.events_per_source = 600000;
  spec.fail_every = 30000;
  spec.seed = seed;
  JobResult r = run_job(spec, &log);
  ASSERT_EQ(r.status, JobStatus::kFinished) << r.failure;
  EXPECT_GE(r.restarts, 2);
  expect_exactly_once(log.all(), expected_for(spec.events_per_source));
}

INSTANTIATE_TEST_SUITE_P(Backends, ExactlyOncePipelineTest, testing::kBothBackends, testing::backend_name);

TEST(PipelineTest, AtLeastOnceLosesNothingUnderFailures) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  testing::CommitLog<Count> log;
  RunSpec spec;
  spec.mode = CheckpointingMode::kAtLeastOnce;
  spec.events_per_source = 600000;
  spec.fail_every = 30000;
  spec.seed = seed;
  JobResult r = run_job(spec, &log);
  ASSERT_EQ(r.status, JobStatus::kFinished) << r.failure;
  EXPECT_GE(r.restarts, 2);
  Expected exp = expected_for(spec.events_per_source);
  std::map<int64_t, int64_t> max_count, lines;
  for (const Count& c : log.all()) {
    max_count[c.key] = std::max(max_count[c.key], c.count);
    ++lines[c.key];
  }
  for (const auto& [key, n] : exp.count) {
    EXPECT_GE(max_count[key], n) << "key " << key;
    EXPECT_GE(lines[key], n) << "key " << key;
  }
}

TEST(PipelineTest, NoCheckpointsModeStillCommitsAtTheEnd) {
  testing::CommitLog<Count> log;
  RunSpec spec;
  spec.mode = CheckpointingMode::kNone;
  spec.events_per_source = 50000;
  JobResult r = run_job(spec, &log);
  ASSERT_EQ(r.status, JobStatus::kFinished) << r.failure;
  ASSERT_EQ(r.checkpoints.size(), 1u);  // only the final one
  expect_exactly_once(log.all(), expected_for(spec.events_per_source));
}

TEST(PipelineTest, ExhaustedRestartStrategyFailsTheJobWithTheCause) {
  JobConfig config;
  config.restart.kind = RestartStrategyKind::kFixedDelay;
  config.restart.max_attempts = 2;
  config.restart.delay = Duration(1);
  StreamEnvironment env(config);
  env.from_source<int64_t>([] {
       return std::make_unique<GeneratorSource<int64_t>>([](int64_t i) { return i; }, 1000);
     })
      .map([](const int64_t& i) -> int64_t {
        if (i == 500) throw std::runtime_error("bad record 500");
        return i;
      });
  auto r = env.execute("always-fails");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, JobStatus::kFailed);
  EXPECT_EQ(r->restarts, 2);
  EXPECT_NE(r->failure.find("bad record 500"), std::string::npos) << r->failure;
}

// JobControl::progress() while the job runs: its state, the records its
// sources emitted, its checkpoints; empty before it runs and after it ended.
TEST(PipelineTest, ProgressShowsTheRunningJobsRecordsAndCheckpoints) {
  constexpr int64_t kHoldAt = 5000;
  JobConfig config;
  config.checkpoint.interval = Duration(20);
  StreamEnvironment env(config);
  std::atomic<bool> released{false};
  env.from_source<int64_t>([&released] {
       auto source = std::make_unique<GeneratorSource<int64_t>>([](int64_t i) { return i; }, 2 * kHoldAt);
       source->hold_while([&released](int64_t i) { return i == kHoldAt && !released.load(); });
       return source;
     })
      .map([](const int64_t& i) { return i * 2; });
  JobControl control;
  EXPECT_FALSE(control.progress().has_value());

  std::optional<JobProgress> seen;
  std::thread watcher([&] {
    // Until the source holds at kHoldAt with two checkpoints since, or a
    // minute passed; then let it finish.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
    while (std::chrono::steady_clock::now() < deadline) {
      std::optional<JobProgress> p = control.progress();
      if (p && p->source_records == kHoldAt && p->completed_checkpoints >= 2) {
        seen = p;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));  // polling, not synchronisation
    }
    released = true;
  });
  auto r = env.execute("progress", &control);
  watcher.join();
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, JobStatus::kFinished) << r->failure;
  ASSERT_TRUE(seen.has_value()) << "progress() never showed the held source's " << kHoldAt << " records";
  EXPECT_EQ(seen->status, JobStatus::kRunning);
  EXPECT_EQ(seen->restarts, 0);
  EXPECT_FALSE(control.progress().has_value()) << "progress() after the job ended";
}

TEST(PipelineTest, TooFewNetworkBuffersIsAClearError) {
  JobConfig config;
  config.network.total_buffers = 4;
  config.default_parallelism = 4;
  StreamEnvironment env(config);
  env.from_source<int64_t>([] {
       return std::make_unique<GeneratorSource<int64_t>>([](int64_t i) { return i; }, 10);
     })
      .rebalance()
      .map([](const int64_t& i) { return i; });
  auto r = env.execute("starved");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("network buffers"), std::string::npos);
}

}  // namespace pipeline_test
}  // namespace weir

namespace weir {
namespace pipeline_test {


TEST(PartitioningTest, BroadcastReachesEverySubtaskAndRebalanceSpreads) {
  testing::CollectingSink<int64_t>::Rows broadcast_out, rebalance_out;
  JobConfig config;
  StreamEnvironment env(config);
  auto src = env.from_source<int64_t>([] {
    return std::make_unique<GeneratorSource<int64_t>>([](int64_t i) { return i; }, 1000);
  });
  src.broadcast()
      .map([](const int64_t& i) { return i; }, "b")
      .parallelism(3)
      .sink_to([&] { return std::make_unique<testing::CollectingSink<int64_t>>(&broadcast_out); })
      .parallelism(3);
  src.rebalance()
      .map([](const int64_t& i) { return i; }, "r")
      .parallelism(4)
      .sink_to([&] { return std::make_unique<testing::CollectingSink<int64_t>>(&rebalance_out); })
      .parallelism(4);
  auto r = env.execute("partitioning");
  ASSERT_TRUE(r.ok() && r->status == JobStatus::kFinished);
  ASSERT_EQ(broadcast_out.rows.size(), 3000u);
  std::map<int, int> per_subtask;
  for (int s : broadcast_out.subtasks) per_subtask[s]++;
  EXPECT_EQ(per_subtask, (std::map<int, int>{{0, 1000}, {1, 1000}, {2, 1000}}));
  ASSERT_EQ(rebalance_out.rows.size(), 1000u);
  per_subtask.clear();
  for (int s : rebalance_out.subtasks) per_subtask[s]++;
  EXPECT_EQ(per_subtask, (std::map<int, int>{{0, 250}, {1, 250}, {2, 250}, {3, 250}}));
  // What each vertex sent and received: every number once on each of the 3
  // broadcast channels and once on a rebalance channel.
  ASSERT_EQ(r->vertices.size(), 3u);
  std::map<std::string, VertexStats> by_name;
  for (const auto& v : r->vertices) by_name[v.name] = v;
  ASSERT_EQ(by_name.count("source"), 1u);
  ASSERT_EQ(by_name.count("b -> sink"), 1u);
  ASSERT_EQ(by_name.count("r -> sink"), 1u);
  EXPECT_EQ(by_name["source"].records_in, 0);
  EXPECT_EQ(by_name["source"].records_out, 4000);
  EXPECT_EQ(by_name["b -> sink"].records_in, 3000);
  EXPECT_EQ(by_name["b -> sink"].parallelism, 3);
  EXPECT_EQ(by_name["r -> sink"].records_in, 1000);
  EXPECT_EQ(by_name["r -> sink"].records_out, 0);
  EXPECT_EQ(by_name["source"].bytes_out, by_name["b -> sink"].bytes_in + by_name["r -> sink"].bytes_in);
  EXPECT_GT(by_name["source"].bytes_out, 4000);
}

// Runs a job with a stateful operator "extra" (when `with_extra`) and a
// stateful keyed counter, checkpointing into `dir`, restoring from `restore`.
absl::StatusOr<JobResult> run_with_uids(const std::string& dir, bool with_extra,
                                        const std::string& restore, bool allow_non_restored) {
  JobConfig config;
  config.checkpoint.directory = dir;
  config.restore = restore;
  config.allow_non_restored_state = allow_non_restored;
  StreamEnvironment env(config);
  auto src = env.from_source<int64_t>([] {
    return std::make_unique<GeneratorSource<int64_t>>([](int64_t i) { return i; }, 100);
  });
  src.uid("numbers");
  auto keyed = src.map([](const int64_t& i) { return Event{i % 5, 1}; });
  keyed.key_by([](const Event& e) { return e.key; })
      .process<Count>([] { return std::make_unique<CountWithFailures>(0, 0); })
      .uid("counter");
  if (with_extra) {
    keyed.key_by([](const Event& e) { return e.key; })
        .process<Count>([] { return std::make_unique<CountWithFailures>(0, 0); })
        .uid("extra");
  }
  return env.execute("uids");
}

TEST(RestoreTest, StateOfAMissingOperatorIsRefusedUnlessAllowed) {
  std::string dir = ::testing::TempDir() + "/weir-uids-" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  auto first = run_with_uids(dir, true, "", false);
  ASSERT_TRUE(first.ok() && first->status == JobStatus::kFinished);
  auto refused = run_with_uids(dir, false, "latest", false);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("extra"), std::string::npos) << refused.status();
  EXPECT_NE(refused.status().message().find("--allow-non-restored-state"), std::string::npos);
  auto allowed = run_with_uids(dir, false, "latest", true);
  ASSERT_TRUE(allowed.ok()) << allowed.status();
  EXPECT_EQ(allowed->status, JobStatus::kFinished);
  EXPECT_GE(allowed->restored_checkpoint_id, 1);
  std::filesystem::remove_all(dir);
}

TEST(RestoreTest, ChangedMaxParallelismIsRefused) {
  std::string dir = ::testing::TempDir() + "/weir-maxp-" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(run_with_uids(dir, false, "", false).ok());
  JobConfig config;
  config.checkpoint.directory = dir;
  config.restore = "latest";
  config.max_parallelism = 64;
  StreamEnvironment env(config);
  env.from_source<int64_t>([] {
       return std::make_unique<GeneratorSource<int64_t>>([](int64_t i) { return i; }, 100);
     })
      .uid("numbers")
      .map([](const int64_t& i) { return Event{i % 5, 1}; })
      .key_by([](const Event& e) { return e.key; })
      .process<Count>([] { return std::make_unique<CountWithFailures>(0, 0); })
      .uid("counter");
  auto r = env.execute("maxp");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("max parallelism"), std::string::npos) << r.status();
  std::filesystem::remove_all(dir);
}

}  // namespace pipeline_test
}  // namespace weir
