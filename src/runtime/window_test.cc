// Windows end to end, in the style of Flink's EventTimeWindowCheckpointingITCase:
// every window's aggregate equals the exact arithmetic value for its time
// range and each key gets exactly the expected windows, under failures.
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <random>
#include <thread>

#include "testing/committing_sink.h"
#include "tests/process.h"
#include "weir/connectors.h"
#include "weir/weir.h"
#include "testing/seed.h"

namespace weir {
namespace window_test {

struct Ev {
  int64_t key = 0;
  int64_t value = 0;
  int64_t ts = 0;
  auto weir_fields() { return std::tie(key, value, ts); }
};

struct Result {
  int64_t key = 0;
  int64_t start = 0;
  int64_t end = 0;
  int64_t count = 0;
  int64_t sum = 0;
  auto weir_fields() { return std::tie(key, start, end, count, sum); }
  auto tie() const { return std::tie(key, start, end, count, sum); }
  bool operator<(const Result& o) const { return tie() < o.tie(); }
  bool operator==(const Result& o) const { return tie() == o.tie(); }
};


struct CountSum {
  int64_t count = 0;
  int64_t sum = 0;
  auto weir_fields() { return std::tie(count, sum); }
};

AggregateFunction<Ev, CountSum, CountSum> count_sum() {
  return {[] { return CountSum{}; },
          [](CountSum& a, const Ev& e) {
            a.count++;
            a.sum += e.value;
          },
          [](const CountSum& a) { return a; },
          [](const CountSum& a, const CountSum& b) { return CountSum{a.count + b.count, a.sum + b.sum}; }};
}

class ToResult final : public ProcessWindowFunction<int64_t, CountSum, Result> {
 public:
  void process(const int64_t& key, const Context& ctx, const std::vector<CountSum>& in,
               Collector<Result>& out) override {
    out.collect({key, ctx.window.start, ctx.window.end, in[0].count, in[0].sum});
  }
};

constexpr int64_t kKeys = 13;

struct Scenario {
  WindowAssigner assigner;
  std::function<Ev(int64_t)> event;
  int64_t events = 300000;
  int64_t fail_every = 0;
  uint64_t seed = 0;
  StateBackendKind backend = StateBackendKind::kHeap;
  // The watermark's bound on how late an event comes (none is later).
  int64_t out_of_orderness = 0;
};

JobResult run(const Scenario& sc, testing::CommitLog<Result>* out) {
  StreamEnvironment env(testing::failure_test_config(3, sc.backend));
  auto wm = WatermarkStrategy<Ev>::for_bounded_out_of_orderness(Duration(sc.out_of_orderness), [](const Ev& e) {
              return e.ts;
            }).with_interval(Duration(1));
  auto fn = sc.event;
  int64_t n = sc.events;
  int64_t fail_every = sc.fail_every;
  uint64_t seed = sc.seed;
  env.from_source<Ev>([fn, n] { return std::make_unique<GeneratorSource<Ev>>(fn, n); }, "events", wm)
      .parallelism(2)
      .key_by([](const Ev& e) { return e.key; })
      .window(sc.assigner)
      .aggregate<CountSum, CountSum, Result>(count_sum(), [] { return std::make_unique<ToResult>(); })
      .uid("window")
      .sink_to([out, fail_every, seed] { return std::make_unique<testing::CommittingSink<Result>>(out, fail_every, seed); })
      .uid("sink");
  auto r = env.execute("windows");
  EXPECT_TRUE(r.ok()) << r.status();
  return r.value_or(JobResult{});
}

// The reference: windows computed directly from the events.
std::vector<Result> reference(const Scenario& sc) {
  std::map<std::tuple<int64_t, int64_t, int64_t>, CountSum> acc;
  if (sc.assigner.kind == WindowAssigner::Kind::kSession) {
    // Per key, events sorted by time; a gap of at least `gap` splits sessions.
    std::map<int64_t, std::vector<Ev>> by_key;
    for (int64_t i = 0; i < sc.events; ++i) {
      Ev e = sc.event(i);
      by_key[e.key].push_back(e);
    }
    std::vector<Result> out;
    for (auto& [k, evs] : by_key) {
      std::sort(evs.begin(), evs.end(), [](const Ev& a, const Ev& b) { return a.ts < b.ts; });
      Result cur{k, evs[0].ts, evs[0].ts + sc.assigner.gap, 0, 0};
      for (const Ev& e : evs) {
        if (e.ts > cur.end) {
          out.push_back(cur);
          cur = Result{k, e.ts, e.ts + sc.assigner.gap, 0, 0};
        }
        cur.end = std::max(cur.end, e.ts + sc.assigner.gap);
        cur.count++;
        cur.sum += e.value;
      }
      out.push_back(cur);
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  for (int64_t i = 0; i < sc.events; ++i) {
    Ev e = sc.event(i);
    for (const TimeWindow& w : sc.assigner.assign(e.ts)) {
      CountSum& a = acc[{e.key, w.start, w.end}];
      a.count++;
      a.sum += e.value;
    }
  }
  std::vector<Result> out;
  for (auto& [k, a] : acc) out.push_back({std::get<0>(k), std::get<1>(k), std::get<2>(k), a.count, a.sum});
  return out;
}

Ev simple_event(int64_t i) { return Ev{i % kKeys, i, i}; }

// Bursts of 5000 ms of events, then 3000 ms of silence.
Ev bursty_event(int64_t i) { return Ev{i % kKeys, i, i + (i / 5000) * 3000}; }

// bursty_event's times, each later by 0 to `bound` - 1 ms (a hash of the
// seed and i): a key's events (13 ms apart) arrive out of order, so slices
// are made before older ones, and sessions of a short gap begin apart and
// merge when an event between them arrives.
std::function<Ev(int64_t)> jittered_event(uint64_t seed, int64_t bound) {
  return [seed, bound](int64_t i) {
    uint64_t h = (seed ^ static_cast<uint64_t>(i)) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
    Ev e = bursty_event(i);
    e.ts += static_cast<int64_t>(h % static_cast<uint64_t>(bound));
    return e;
  };
}

// Parameters: with injected failures or not; the state backend.
class WindowTest : public ::testing::TestWithParam<std::tuple<bool, StateBackendKind>> {
 protected:
  bool failures() const { return std::get<0>(GetParam()); }
  Scenario with_failures(Scenario sc) {
    sc.backend = std::get<1>(GetParam());
    if (failures()) {
      // Several failures per run whatever the number of windows.
      sc.fail_every = std::max<int64_t>(1, static_cast<int64_t>(reference(sc).size()) / 30);
      if (sc.seed == 0) sc.seed = testing::test_seed();
    }
    return sc;
  }
  void check(const Scenario& sc) {
    SCOPED_TRACE("seed " + std::to_string(sc.seed));
    testing::CommitLog<Result> out;
    JobResult r = run(sc, &out);
    ASSERT_EQ(r.status, JobStatus::kFinished) << r.failure;
    if (failures()) {
      EXPECT_GE(r.restarts, 1);
    }
    std::vector<Result> got = out.all();
    std::sort(got.begin(), got.end());
    std::vector<Result> want = reference(sc);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i], want[i]) << "window " << i << ": key " << got[i].key << " [" << got[i].start
                                 << "," << got[i].end << ") count " << got[i].count;
    }
  }
};

TEST_P(WindowTest, TumblingEventTimeWindowsAreExact) {
  check(with_failures({TumblingEventTimeWindows::of(Duration(1000)), simple_event}));
}

TEST_P(WindowTest, SlidingEventTimeWindowsAreExact) {
  check(with_failures({SlidingEventTimeWindows::of(Duration(1000), Duration(250)), simple_event}));
}

TEST_P(WindowTest, SessionWindowsAreExact) {
  check(with_failures({EventTimeSessionWindows::with_gap(Duration(1000)), bursty_event}));
}

// Out-of-order events with a watermark that lets none be late. Sessions of
// 20 ms over a key's events 13 ms apart, 60 ms out of order: many begin
// apart and merge later (the lazy timers of grown and merged sessions).
TEST_P(WindowTest, SessionWindowsMergeOutOfOrderEventsExactly) {
  Scenario sc{EventTimeSessionWindows::with_gap(Duration(20)), nullptr, 100000};
  sc.seed = testing::test_seed();
  sc.event = jittered_event(sc.seed, 60);
  sc.out_of_orderness = 60;
  check(with_failures(sc));
}

// Sliding windows (sliced: one timer per key at its next due time) over
// events up to 700 ms out of order: slices are made before older ones.
TEST_P(WindowTest, SlidingWindowsOverOutOfOrderEventsAreExact) {
  Scenario sc{SlidingEventTimeWindows::of(Duration(1000), Duration(250)), nullptr, 100000};
  sc.seed = testing::test_seed();
  sc.event = jittered_event(sc.seed, 700);
  sc.out_of_orderness = 700;
  check(with_failures(sc));
}

INSTANTIATE_TEST_SUITE_P(Runs, WindowTest, ::testing::Combine(::testing::Bool(), testing::kBothBackends),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param) ? "WithFailures_" : "NoFailures_") +
                                  std::string(to_string(std::get<1>(info.param)));
                         });

TEST(WindowValidationTest, BadWindowsAreRejectedWhenTheJobIsBuilt) {
  auto try_window = [](WindowAssigner a) {
    StreamEnvironment env;
    env.from_source<int64_t>([] {
         return std::make_unique<GeneratorSource<int64_t>>([](int64_t i) { return i; }, 10);
       })
        .key_by([](const int64_t& v) { return v; })
        .window(a)
        .reduce([](const int64_t& x, const int64_t& y) { return x + y; });
    auto r = env.execute("bad-window");
    return r.ok() ? std::string("ok") : std::string(r.status().message());
  };
  EXPECT_NE(try_window(TumblingEventTimeWindows::of(Duration(0))).find("size must be positive"),
            std::string::npos);
  EXPECT_NE(try_window(SlidingEventTimeWindows::of(Duration(100), Duration(200)))
                .find("slide 200 ms is larger than its size 100 ms"),
            std::string::npos);
  EXPECT_NE(try_window(EventTimeSessionWindows::with_gap(Duration(-1))).find("gap"), std::string::npos);
}

// One record per poll, so the watermark (interval 0) follows the data exactly.
class ScriptedSource final : public Source<Ev> {
 public:
  explicit ScriptedSource(std::vector<int64_t> ts) : ts_(std::move(ts)) {}
  absl::Status open(OperatorContext&) override { return absl::OkStatus(); }
  PollStatus poll(SourceOutput<Ev>& out, int) override {
    if (next_ >= ts_.size()) return PollStatus::kEndOfInput;
    out.collect(Ev{1, ts_[next_], ts_[next_]});
    ++next_;
    return PollStatus::kMore;
  }

 private:
  std::vector<int64_t> ts_;
  size_t next_ = 0;
};


// Count and sum of a window's records, from all of them (never sliced).
class CountAll final : public ProcessWindowFunction<int64_t, Ev, Result> {
 public:
  void process(const int64_t& key, const Context& ctx, const std::vector<Ev>& in,
               Collector<Result>& out) override {
    Result r{key, ctx.window.start, ctx.window.end, 0, 0};
    for (const Ev& e : in) {
      r.count++;
      r.sum += e.value;
    }
    out.collect(r);
  }
};

// Runs key 1's records at `script` (timestamp = value; the watermark
// follows each record) through `assigner` with 100 ms of allowed lateness,
// counted by an aggregate or by a process function. Returns the firings
// and the records sent to the late side output (as {key, ts, 0, 0, value}).
std::pair<std::vector<Result>, std::vector<Result>> run_late_script(WindowAssigner assigner,
                                                                    std::vector<int64_t> script, bool aggregate) {
  testing::CollectingSink<Result>::Rows fired;
  testing::CollectingSink<Result>::Rows late;
  StreamEnvironment env;
  auto wm = WatermarkStrategy<Ev>::for_monotonous_timestamps([](const Ev& e) { return e.ts; })
                .with_interval(Duration(0));
  OutputTag<Ev> too_late{"too-late"};
  auto windowed = env.from_source<Ev>([script] { return std::make_unique<ScriptedSource>(script); }, "scripted", wm)
                      .key_by([](const Ev& e) { return e.key; })
                      .window(assigner)
                      .allowed_lateness(Duration(100))
                      .side_output_late_data(too_late);
  auto windows = aggregate ? windowed.aggregate<CountSum, CountSum, Result>(
                                 count_sum(), [] { return std::make_unique<ToResult>(); })
                           : windowed.process<Result>([] { return std::make_unique<CountAll>(); });
  windows.sink_to([&] { return std::make_unique<testing::CollectingSink<Result>>(&fired); });
  windows.get_side_output(too_late)
      .map([](const Ev& e) { return Result{e.key, e.ts, 0, 0, e.value}; })
      .sink_to([&] { return std::make_unique<testing::CollectingSink<Result>>(&late); });
  auto r = env.execute("lateness");
  EXPECT_TRUE(r.ok() && r->status == JobStatus::kFinished);
  return {fired.rows, late.rows};
}

TEST(WindowLatenessTest, LateRecordsRefireWithinLatenessAndAreDroppedAfter) {
  // Window [0,100) fires at watermark 149 (record 150) with {10, 20}; 30 is
  // late but within 100 ms of lateness, so it fires again with {10, 20, 30};
  // record 260 moves the watermark past 199, the cleanup time of [0,100);
  // 40 is then dropped.
  auto [fired, late] = run_late_script(TumblingEventTimeWindows::of(Duration(100)), {10, 20, 150, 30, 260, 40}, true);
  std::vector<Result> want = {{1, 0, 100, 2, 30}, {1, 0, 100, 3, 60}, {1, 100, 200, 1, 150},
                              {1, 200, 300, 1, 260}};
  EXPECT_EQ(fired, want);
  EXPECT_EQ(late, (std::vector<Result>{{1, 40, 0, 0, 40}}));
}

// Sliding windows with lateness, through the sliced path (an aggregate with
// merge) and the per-window path (a process function): both must fire and
// refire the same windows.
TEST(WindowLatenessTest, SlidingWindowsRefireWithinLatenessSlicedOrNot) {
  // Windows of 100 ms every 50 ms. Record 150 (watermark 149) fires
  // [-50,50) and [0,100) with {10, 20}; 30 is too late for [-50,50)
  // (cleanup at 149) but not for [0,100), which fires again; 260 (watermark
  // 259) fires [100,200) and [150,250) with {150} and passes 199, the
  // cleanup time of [0,100) and so of slice [0,50): 40 is dropped. The end
  // of input fires [200,300) and [250,350) with {260}.
  const std::vector<Result> want = {{1, -50, 50, 2, 30},   {1, 0, 100, 2, 30},    {1, 0, 100, 3, 60},
                                    {1, 100, 200, 1, 150}, {1, 150, 250, 1, 150}, {1, 200, 300, 1, 260},
                                    {1, 250, 350, 1, 260}};
  for (bool sliced : {true, false}) {
    SCOPED_TRACE(sliced ? "sliced" : "per window");
    auto [fired, late] = run_late_script(SlidingEventTimeWindows::of(Duration(100), Duration(50)),
                                         {10, 20, 150, 30, 260, 40}, sliced);
    EXPECT_EQ(fired, want);
    EXPECT_EQ(late, (std::vector<Result>{{1, 40, 0, 0, 40}}));
  }
}

// Sessions of 50 ms with 100 ms of lateness. 10 and 20 make [10,70); 150
// (watermark 149) fires it with {10, 20}. 65 is late but within the
// lateness: it merges into [10,115), which fires at once with {10, 20, 65}.
// 260 (watermark 259) fires [150,200) and passes 214, the cleanup time of
// [10,115): 60 is then dropped. The end of input fires [260,310).
TEST(WindowLatenessTest, SessionsGrowFireAndRefireWithinLateness) {
  const std::vector<Result> want = {{1, 10, 70, 2, 30}, {1, 10, 115, 3, 95}, {1, 150, 200, 1, 150},
                                    {1, 260, 310, 1, 260}};
  for (bool aggregate : {true, false}) {
    SCOPED_TRACE(aggregate ? "aggregate" : "process function");
    auto [fired, late] =
        run_late_script(EventTimeSessionWindows::with_gap(Duration(50)), {10, 20, 150, 65, 260, 60}, aggregate);
    EXPECT_EQ(fired, want);
    EXPECT_EQ(late, (std::vector<Result>{{1, 60, 0, 0, 60}}));
  }
}

// A savepoint of sliding windows kept per window (as before slicing)
// restores into a job whose aggregate would slice: that job stays per
// window, so no restored window is lost.
TEST(SlicedWindowTest, PerWindowSavepointRestoresExactly) {
  testing::TempDir dir("sliced-window-restore");
  const Scenario sc{SlidingEventTimeWindows::of(Duration(1000), Duration(250)), simple_event, 200000};
  testing::CommitLog<Result> log;
  auto run_stage = [&](bool per_window, const std::string& restore) -> JobResult {
    JobConfig config = testing::failure_test_config(2, StateBackendKind::kHeap);
    config.checkpoint.directory = dir.path("chk");
    config.restore = restore;
    StreamEnvironment env(config);
    auto wm = WatermarkStrategy<Ev>::for_bounded_out_of_orderness(Duration(0), [](const Ev& e) { return e.ts; });
    const int64_t hold = per_window ? sc.events / 2 : sc.events;
    auto keyed = env.from_source<Ev>([&sc, hold] {
                      auto source = std::make_unique<GeneratorSource<Ev>>(sc.event, sc.events, 100000);
                      source->hold_while([hold](int64_t i) { return i >= hold; });
                      return source;
                    }, "events", wm)
                     .key_by([](const Ev& e) { return e.key; });
    DataStream<Result> windows = [&] {
      if (!per_window) {
        return keyed.window(sc.assigner).aggregate<CountSum, CountSum, Result>(
            count_sum(), [] { return std::make_unique<ToResult>(); }, "window");
      }
      using Op = detail::WindowOperator<int64_t, Ev, CountSum, Result>;
      Op::Spec spec;
      AggregateFunction<Ev, CountSum, CountSum> f = count_sum();
      spec.assigner = sc.assigner;
      spec.create = f.create_accumulator;
      spec.add = f.add;
      spec.merge = f.merge;
      spec.slice = false;
      spec.make_emit = [] {
        return [](const int64_t& key, const TimeWindow& w, const CountSum& acc, int64_t, int64_t,
                  Collector<Result>& out) { out.collect({key, w.start, w.end, acc.count, acc.sum}); };
      };
      return detail::GraphBuilder::transform<Result>(keyed, "window", [spec](std::function<int64_t(const Ev&)> key_of) {
        return std::unique_ptr<detail::OperatorBase>(std::make_unique<Op>(std::move(key_of), spec));
      });
    }();
    windows.uid("window");
    windows.sink_to([&] { return std::make_unique<testing::CommittingSink<Result>>(&log); }).uid("sink");
    JobControl control;
    std::thread stopper;
    if (per_window) {
      stopper = std::thread([&] {
        log.wait_for_rows(reference(sc).size() / 10, std::chrono::steady_clock::now() + std::chrono::seconds(60));
        control.stop_with_savepoint(dir.path("savepoints"), /*drain=*/false);
      });
    }
    auto r = env.execute(per_window ? "per-window" : "sliced", &control);
    if (stopper.joinable()) stopper.join();
    EXPECT_TRUE(r.ok()) << r.status();
    return r.value_or(JobResult{});
  };
  JobResult first = run_stage(/*per_window=*/true, "");
  ASSERT_EQ(first.status, JobStatus::kFinished) << first.failure;
  ASSERT_FALSE(first.stopped_with_savepoint.empty()) << "the first job ended before the stop request";
  JobResult second = run_stage(/*per_window=*/false, first.stopped_with_savepoint);
  ASSERT_EQ(second.status, JobStatus::kFinished) << second.failure;
  EXPECT_GE(second.restored_checkpoint_id, 1);
  std::vector<Result> got = log.all();
  std::sort(got.begin(), got.end());
  std::vector<Result> want = reference(sc);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i], want[i]) << "window " << i << ": key " << got[i].key << " [" << got[i].start << ","
                               << got[i].end << ") count " << got[i].count;
  }
}

TEST(CountWindowTest, FiresEveryNRecordsPerKey) {
  testing::CollectingSink<Result>::Rows collected;
  std::vector<Result>& fired = collected.rows;
  StreamEnvironment env;
  env.from_source<Ev>([] {
       return std::make_unique<GeneratorSource<Ev>>([](int64_t i) { return Ev{i % 3, i, 0}; }, 95);
     })
      .key_by([](const Ev& e) { return e.key; })
      .count_window(10)
      .reduce([](const Ev& a, const Ev& b) { return Ev{a.key, a.value + b.value, 0}; })
      .map([](const Ev& e) { return Result{e.key, 0, 0, 0, e.value}; })
      .sink_to([&] { return std::make_unique<testing::CollectingSink<Result>>(&collected); });
  auto r = env.execute("count-windows");
  ASSERT_TRUE(r.ok() && r->status == JobStatus::kFinished);
  // Key k gets i = k, k+3, ...; full windows of 10 only (95 records: keys 0
  // and 1 have 32 records, key 2 has 31: three windows each).
  std::vector<Result> want;
  for (int64_t k = 0; k < 3; ++k) {
    for (int64_t w = 0; w < 3; ++w) {
      int64_t sum = 0;
      for (int64_t j = 0; j < 10; ++j) sum += k + 3 * (w * 10 + j);
      want.push_back({k, 0, 0, 0, sum});
    }
  }
  std::sort(fired.begin(), fired.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(fired, want);
}

}  // namespace window_test
}  // namespace weir

namespace weir {
namespace window_test {

// Processing-time windows depend on the clock, but every record is counted
// once per window it falls into, and every window fires exactly once (on
// time, or at the end of input): the counts add up exactly.
int64_t total_counted(WindowAssigner assigner, int64_t records) {
  testing::CollectingSink<int64_t>::Rows counts;
  StreamEnvironment env;
  env.from_source<int64_t>([records] {
       return std::make_unique<GeneratorSource<int64_t>>([](int64_t i) { return i; }, records);
     })
      .key_by([](const int64_t& v) { return v % 7; })
      .window(assigner)
      .aggregate<int64_t, int64_t>(AggregateFunction<int64_t, int64_t, int64_t>{
          [] { return int64_t{0}; }, [](int64_t& n, const int64_t&) { ++n; },
          [](const int64_t& n) { return n; }, [](const int64_t& a, const int64_t& b) { return a + b; }})
      .sink_to([&counts] { return std::make_unique<testing::CollectingSink<int64_t>>(&counts); });
  auto r = env.execute("processing-time-windows");
  EXPECT_TRUE(r.ok() && r->status == JobStatus::kFinished);
  int64_t total = 0;
  for (int64_t c : counts.rows) total += c;
  return total;
}

TEST(ProcessingTimeWindowTest, SlidingWindowsCountEachRecordOncePerWindow) {
  EXPECT_EQ(total_counted(SlidingProcessingTimeWindows::of(Duration(40), Duration(10)), 300000), 4 * 300000);
}

TEST(ProcessingTimeWindowTest, SessionWindowsCountEachRecordOnce) {
  EXPECT_EQ(total_counted(ProcessingTimeSessionWindows::with_gap(Duration(5)), 300000), 300000);
}

}  // namespace window_test
}  // namespace weir
