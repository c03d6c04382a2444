// Event time end to end: watermarks through exchanges, event-time timers
// that survive failures, processing-time timers, idleness.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <random>

#include "testing/committing_sink.h"
#include "weir/connectors.h"
#include "weir/weir.h"
#include "testing/seed.h"

namespace weir {
namespace event_time_test {

struct Ev {
  int64_t key = 0;
  int64_t ts = 0;
  auto weir_fields() { return std::tie(key, ts); }
};

struct WindowCount {
  int64_t key = 0;
  int64_t window_end = 0;
  int64_t count = 0;
  int64_t watermark_at_fire = 0;
  auto weir_fields() { return std::tie(key, window_end, count, watermark_at_fire); }
};


constexpr int64_t kWindow = 1000;

// Counts per key and tumbling window with an event-time timer at the end of
// each window; throws after a random number of records (armed as in
// pipeline_test: at once in the first attempt, after a checkpoint later).
class TimerWindow final : public KeyedProcessFunction<int64_t, Ev, WindowCount> {
 public:
  TimerWindow(int64_t fail_every, uint64_t seed) : fail_every_(fail_every), seed_(seed) {}
  absl::Status open(KeyedRuntimeContext<int64_t>& ctx) override {
    counts_ = &ctx.get_map_state(MapStateDescriptor<int64_t, int64_t>{"counts"});
    const auto& op = ctx.operator_context();
    armed_ = op.attempt() == 0;
    std::mt19937_64 rng(seed_ + op.subtask_index() * 13 + op.attempt() * 7);
    if (fail_every_ > 0) threshold_ = 1 + static_cast<int64_t>(rng() % (2 * fail_every_));
    return absl::OkStatus();
  }
  void process_element(const Ev& e, Context& ctx, Collector<WindowCount>&) override {
    EXPECT_EQ(ctx.timestamp(), e.ts);
    EXPECT_GT(e.ts, ctx.timer_service().current_watermark()) << "a record behind the watermark";
    int64_t end = (e.ts / kWindow + 1) * kWindow;
    counts_->put(end, counts_->get(end).value_or(0) + 1);
    ctx.timer_service().register_event_time_timer(end - 1);
    if (fail_every_ > 0 && armed_ && ++seen_ >= threshold_) {
      armed_ = false;
      throw std::runtime_error("injected failure");
    }
  }
  void on_timer(int64_t ts, OnTimerContext& ctx, Collector<WindowCount>& out) override {
    EXPECT_EQ(ctx.time_domain(), TimeDomain::kEventTime);
    EXPECT_EQ(ctx.timestamp(), ts);
    int64_t end = ts + 1;
    out.collect({ctx.current_key(), end, counts_->get(end).value_or(-1),
                 ctx.timer_service().current_watermark()});
    counts_->remove(end);
  }
  void notify_checkpoint_complete(int64_t) override { armed_ = fail_every_ > 0; }

 private:
  const int64_t fail_every_;
  const uint64_t seed_;
  MapState<int64_t, int64_t>* counts_ = nullptr;
  bool armed_ = false;
  int64_t seen_ = 0, threshold_ = 0;
};

constexpr int64_t kKeys = 17;

JobResult run_timer_windows(int64_t events, int64_t fail_every, uint64_t seed, testing::CommitLog<WindowCount>* out,
                            StateBackendKind backend = StateBackendKind::kHeap) {
  StreamEnvironment env(testing::failure_test_config(3, backend));
  auto wm = WatermarkStrategy<Ev>::for_bounded_out_of_orderness(Duration(0), [](const Ev& e) {
              return e.ts;
            }).with_interval(Duration(1));
  env.from_source<Ev>(
         [events] {
           return std::make_unique<GeneratorSource<Ev>>(
               [](int64_t i) { return Ev{i % kKeys, i}; }, events);
         },
         "events", wm)
      .parallelism(2)
      .key_by([](const Ev& e) { return e.key; })
      .process<WindowCount>([fail_every, seed] { return std::make_unique<TimerWindow>(fail_every, seed); },
                            "windows")
      .uid("windows")
      .sink_to([out] { return std::make_unique<testing::CommittingSink<WindowCount>>(out); })
      .uid("sink");
  auto r = env.execute("timer-windows");
  EXPECT_TRUE(r.ok()) << r.status();
  return r.value_or(JobResult{});
}

void expect_exact_windows(const std::vector<WindowCount>& rows, int64_t events) {
  std::map<std::pair<int64_t, int64_t>, int64_t> expected, got;
  for (int64_t i = 0; i < events; ++i) expected[{i % kKeys, (i / kWindow + 1) * kWindow}]++;
  for (const auto& r : rows) {
    ASSERT_TRUE(got.emplace(std::make_pair(r.key, r.window_end), r.count).second)
        << "window fired twice: key " << r.key << " end " << r.window_end;
    // Fired only once the watermark passed the window's last millisecond.
    EXPECT_GE(r.watermark_at_fire, r.window_end - 1);
  }
  EXPECT_EQ(got, expected);
}

TEST(EventTimeTest, EventTimeTimersFireOncePerWindowWithExactCounts) {
  testing::CommitLog<WindowCount> out;
  const int64_t events = 200000;
  JobResult r = run_timer_windows(events, 0, 0, &out);
  ASSERT_EQ(r.status, JobStatus::kFinished) << r.failure;
  expect_exact_windows(out.all(), events);
}

class TimerBackendTest : public ::testing::TestWithParam<StateBackendKind> {};

TEST_P(TimerBackendTest, TimersAndWindowStateAreExactlyOnceUnderFailures) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  testing::CommitLog<WindowCount> out;
  const int64_t events = 600000;
  JobResult r = run_timer_windows(events, 40000, seed, &out, GetParam());
  ASSERT_EQ(r.status, JobStatus::kFinished) << r.failure;
  EXPECT_GE(r.restarts, 1);
  expect_exact_windows(out.all(), events);
}

INSTANTIATE_TEST_SUITE_P(Backends, TimerBackendTest, testing::kBothBackends, testing::backend_name);

// A processing-time timer registered for the past fires at once; one for
// the near future fires once the clock gets there.
class ProcTimer final : public KeyedProcessFunction<int64_t, int64_t, int64_t> {
 public:
  void process_element(const int64_t& v, Context& ctx, Collector<int64_t>&) override {
    int64_t now = ctx.timer_service().current_processing_time();
    ctx.timer_service().register_processing_time_timer(v == 0 ? now - 1000 : now + 30);
    ctx.timer_service().register_processing_time_timer(now + 1000000);  // deleted below
    ctx.timer_service().delete_processing_time_timer(now + 1000000);
  }
  void on_timer(int64_t ts, OnTimerContext& ctx, Collector<int64_t>& out) override {
    EXPECT_EQ(ctx.time_domain(), TimeDomain::kProcessingTime);
    EXPECT_GE(ctx.timer_service().current_processing_time(), ts);
    out.collect(ctx.current_key());
  }
};

// Emits a few records, then nothing for a while, then ends.
class SlowSource final : public Source<int64_t> {
 public:
  absl::Status open(OperatorContext& ctx) override {
    clock_ = &ctx.processing_time();
    return absl::OkStatus();
  }
  PollStatus poll(SourceOutput<int64_t>& out, int) override {
    if (next_ < 2) {
      out.collect(next_++);
      start_ = clock_->now_ms();
      return PollStatus::kMore;
    }
    return clock_->now_ms() - start_ > 300 ? PollStatus::kEndOfInput : PollStatus::kIdle;
  }

 private:
  detail::ProcessingTimeService* clock_ = nullptr;
  int64_t next_ = 0;
  int64_t start_ = 0;
};

TEST(EventTimeTest, ProcessingTimeTimersFire) {
  testing::CollectingSink<int64_t>::Rows collected;
  std::vector<int64_t>& fired = collected.rows;
  StreamEnvironment env;
  env.from_source<int64_t>([] { return std::make_unique<SlowSource>(); })
      .key_by([](const int64_t& v) { return v; })
      .process<int64_t>([] { return std::make_unique<ProcTimer>(); })
      .sink_to([&] { return std::make_unique<testing::CollectingSink<int64_t>>(&collected); });
  auto r = env.execute("proc-timers");
  ASSERT_TRUE(r.ok() && r->status == JobStatus::kFinished);
  std::sort(fired.begin(), fired.end());
  EXPECT_EQ(fired, (std::vector<int64_t>{0, 1}));
}

TEST(EventTimeTest, NegativeOutOfOrdernessIsRejectedWhenTheJobIsBuilt) {
  StreamEnvironment env;
  auto wm = WatermarkStrategy<int64_t>::for_bounded_out_of_orderness(
      Duration(-5), [](const int64_t& v) { return v; });
  env.from_source<int64_t>(
      [] { return std::make_unique<GeneratorSource<int64_t>>([](int64_t i) { return i; }, 10); },
      "numbers", wm);
  auto r = env.execute("bad-watermarks");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("negative out-of-orderness"), std::string::npos);
  EXPECT_NE(r.status().message().find("numbers"), std::string::npos);
}

}  // namespace event_time_test
}  // namespace weir

namespace weir {
namespace event_time_test {

// Shared by the idleness test's functions (one job at a time).
std::atomic<bool> g_timer_fired{false};
std::atomic<bool> g_sources_done{false};

// Emits keys 1 at times 100..1000, then waits (idle) until the timer fired
// or 2 s passed, then ends.
class ThenWait final : public Source<Ev> {
 public:
  absl::Status open(OperatorContext& ctx) override {
    clock_ = &ctx.processing_time();
    return absl::OkStatus();
  }
  PollStatus poll(SourceOutput<Ev>& out, int) override {
    if (next_ <= 1000) {
      out.collect(Ev{1, next_});
      next_ += 100;
      deadline_ = clock_->now_ms() + 2000;
      return PollStatus::kMore;
    }
    if (!g_timer_fired && clock_->now_ms() < deadline_) return PollStatus::kIdle;
    g_sources_done = true;
    return PollStatus::kEndOfInput;
  }

 private:
  detail::ProcessingTimeService* clock_ = nullptr;
  int64_t next_ = 100;
  int64_t deadline_ = 0;
};

// Never has data until the other source is done.
class Silent final : public Source<Ev> {
 public:
  absl::Status open(OperatorContext&) override { return absl::OkStatus(); }
  PollStatus poll(SourceOutput<Ev>&, int) override {
    return g_sources_done ? PollStatus::kEndOfInput : PollStatus::kIdle;
  }
};

class FireAt500 final : public KeyedProcessFunction<int64_t, Ev, int64_t> {
 public:
  void process_element(const Ev&, Context& ctx, Collector<int64_t>&) override {
    ctx.timer_service().register_event_time_timer(500);
  }
  void on_timer(int64_t, OnTimerContext&, Collector<int64_t>& out) override {
    out.collect(g_sources_done ? 0 : 1);  // 1: fired while the sources still ran
    g_timer_fired = true;
  }
};

// Runs the two sources, the silent one with or without an idleness timeout;
// returns whether the timer fired while the sources were still running.
bool fired_before_end(bool silent_source_idles) {
  g_timer_fired = false;
  g_sources_done = false;
  testing::CollectingSink<int64_t>::Rows collected;
  std::vector<int64_t>& fired = collected.rows;
  StreamEnvironment env;
  auto ts = [](const Ev& e) { return e.ts; };
  auto active = WatermarkStrategy<Ev>::for_monotonous_timestamps(ts).with_interval(Duration(5));
  auto silent = WatermarkStrategy<Ev>::for_monotonous_timestamps(ts).with_interval(Duration(5));
  if (silent_source_idles) silent.with_idleness(Duration(50));
  auto a = env.from_source<Ev>([] { return std::make_unique<ThenWait>(); }, "active", active);
  auto b = env.from_source<Ev>([] { return std::make_unique<Silent>(); }, "silent", silent);
  a.union_with(b)
      .key_by([](const Ev& e) { return e.key; })
      .process<int64_t>([] { return std::make_unique<FireAt500>(); })
      .sink_to([&] { return std::make_unique<testing::CollectingSink<int64_t>>(&collected); });
  auto r = env.execute("idleness");
  EXPECT_TRUE(r.ok() && r->status == JobStatus::kFinished);
  EXPECT_EQ(fired.size(), 1u);
  return fired.size() == 1 && fired[0] == 1;
}

TEST(IdlenessTest, AnIdleSourceStopsHoldingTheWatermarkBack) {
  EXPECT_TRUE(fired_before_end(true));
}

TEST(IdlenessTest, WithoutIdlenessASilentSourceHoldsTheWatermarkUntilTheEnd) {
  EXPECT_FALSE(fired_before_end(false));
}

}  // namespace event_time_test
}  // namespace weir

namespace weir {
namespace event_time_test {

// Timestamps: -5 at record 3, 10^16 (past year 9999) at record 7; the rest valid.
int64_t odd_timestamp(int64_t i) { return i == 3 ? -5 : i == 7 ? 10'000'000'000'000'000 : i; }

TEST(InvalidTimestampTest, OutOfRangeTimestampsGoToTheSideOutput) {
  testing::CollectingSink<int64_t>::Rows valid_rows, invalid_rows;
  std::vector<int64_t>& valid = valid_rows.rows;
  std::vector<int64_t>& invalid = invalid_rows.rows;
  StreamEnvironment env;
  OutputTag<int64_t> bad{"bad-timestamps"};
  auto wm = WatermarkStrategy<int64_t>::for_monotonous_timestamps(odd_timestamp).with_invalid_timestamps(bad);
  auto src = env.from_source<int64_t>(
      [] { return std::make_unique<GeneratorSource<int64_t>>([](int64_t i) { return i; }, 10); }, "numbers", wm);
  src.sink_to([&] { return std::make_unique<testing::CollectingSink<int64_t>>(&valid_rows); });
  src.get_side_output(bad).sink_to([&] { return std::make_unique<testing::CollectingSink<int64_t>>(&invalid_rows); });
  auto r = env.execute("invalid-timestamps");
  ASSERT_TRUE(r.ok() && r->status == JobStatus::kFinished);
  std::sort(valid.begin(), valid.end());
  EXPECT_EQ(valid, (std::vector<int64_t>{0, 1, 2, 4, 5, 6, 8, 9}));
  EXPECT_EQ(invalid, (std::vector<int64_t>{3, 7}));
}

TEST(InvalidTimestampTest, WithoutASideOutputTheJobFailsNamingTheTimestamp) {
  JobConfig config;
  config.restart.kind = RestartStrategyKind::kNone;
  StreamEnvironment env(config);
  auto wm = WatermarkStrategy<int64_t>::for_monotonous_timestamps(odd_timestamp);
  env.from_source<int64_t>(
         [] { return std::make_unique<GeneratorSource<int64_t>>([](int64_t i) { return i; }, 10); }, "numbers", wm)
      .map([](const int64_t& v) { return v; });
  auto r = env.execute("invalid-timestamps");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, JobStatus::kFailed);
  EXPECT_NE(r->failure.find("out-of-range timestamp -5"), std::string::npos) << r->failure;
}

}  // namespace event_time_test
}  // namespace weir

namespace weir {
namespace event_time_test {

// Two splits, both used from the first poll; split 0 delivers times
// 0..4900 first, split 1 then delivers times 0..4900 too.
class LateSecondSplit final : public Source<Ev> {
 public:
  absl::Status open(OperatorContext&) override { return absl::OkStatus(); }
  PollStatus poll(SourceOutput<Ev>& out, int) override {
    out.split(0);
    out.split(1);
    if (next_ >= 100) return PollStatus::kEndOfInput;
    out.split(next_ < 50 ? 0 : 1).collect(Ev{next_ % 7, (next_ % 50) * 100});
    ++next_;
    return PollStatus::kMore;
  }

 private:
  int64_t next_ = 0;
};

// Counts records behind the watermark.
class CountLate final : public KeyedProcessFunction<int64_t, Ev, int64_t> {
 public:
  void process_element(const Ev& e, Context& ctx, Collector<int64_t>& out) override {
    out.collect(e.ts <= ctx.timer_service().current_watermark() ? 1 : 0);
  }
};

// A split that has not delivered yet holds the watermark back until its
// idleness timeout from when it was first used, not from its first record:
// otherwise its first records would arrive late. Also when the source reads
// ahead (at-most-once).
TEST(IdlenessTest, ASplitWithoutRecordsYetHoldsTheWatermarkUntilItsTimeout) {
  for (CheckpointingMode mode : {CheckpointingMode::kExactlyOnce, CheckpointingMode::kAtMostOnce}) {
    SCOPED_TRACE(std::string(to_string(mode)));
    testing::CollectingSink<int64_t>::Rows late;
    JobConfig config;
    config.checkpoint.mode = mode;
    StreamEnvironment env(config);
    auto wm = WatermarkStrategy<Ev>::for_monotonous_timestamps([](const Ev& e) { return e.ts; })
                  .with_interval(Duration(0))
                  .with_idleness(Duration(60'000));
    env.from_source<Ev>([] { return std::make_unique<LateSecondSplit>(); }, "two-splits", wm)
        .key_by([](const Ev& e) { return e.key; })
        .process<int64_t>([] { return std::make_unique<CountLate>(); })
        .sink_to([&] { return std::make_unique<testing::CollectingSink<int64_t>>(&late); });
    auto r = env.execute("late-split");
    ASSERT_TRUE(r.ok() && r->status == JobStatus::kFinished);
    ASSERT_EQ(late.rows.size(), 100u);
    EXPECT_EQ(std::count(late.rows.begin(), late.rows.end(), 1), 0) << "records of the second split arrived late";
  }
}

}  // namespace event_time_test
}  // namespace weir
