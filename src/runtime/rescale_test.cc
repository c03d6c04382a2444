// Rescaling, in the style of Flink's RescalingITCase: a keyed running sum
// and an event-time windowed job are stopped and resumed at parallelism
// 4 -> 2 -> 8 -> 3, through savepoints (stop-with-savepoint) and through
// retained checkpoints (the job fails for good, the next run restores the
// latest checkpoint), on the heap backend, on RocksDB, and alternating
// between them (every snapshot crosses backends); with RocksDB's incremental
// checkpoints and with the heap's changelog checkpoints. The final committed
// output must be exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <thread>
#include <random>
#include <tuple>

#include "testing/committing_sink.h"
#include "tests/process.h"
#include "weir/connectors.h"
#include "weir/weir.h"
#include "testing/seed.h"

namespace weir {
namespace rescale_test {

using Clock = std::chrono::steady_clock;

constexpr int64_t kEvents = 600000;
constexpr int64_t kKeys = 61;
constexpr int64_t kWindow = 1000;  // ms of event time; event i is at time i / 4

struct Event {
  int64_t key = 0;
  int64_t value = 0;
  int64_t ts = 0;
  auto weir_fields() { return std::tie(key, value, ts); }
};

Event event_at(int64_t i) { return Event{i % kKeys, (i * 7) % 11 - 5, i / 4}; }

// Row of either job: (key, a, b) = running sum: (key, count, sum);
// windowed: (key, window start, count * 1000000 + sum + 500000).
struct Row {
  int64_t key = 0, a = 0, b = 0;
  auto weir_fields() { return std::tie(key, a, b); }
  bool operator<(const Row& o) const { return std::tie(key, a, b) < std::tie(o.key, o.a, o.b); }
  bool operator==(const Row& o) const { return std::tie(key, a, b) == std::tie(o.key, o.a, o.b); }
};

class RunningSum final : public KeyedProcessFunction<int64_t, Event, Row> {
 public:
  absl::Status open(KeyedRuntimeContext<int64_t>& ctx) override {
    count_ = &ctx.get_state(ValueStateDescriptor<int64_t>{"count"});
    sum_ = &ctx.get_reducing_state(
        ReducingStateDescriptor<int64_t>{"sum", [](const int64_t& a, const int64_t& b) { return a + b; }});
    return absl::OkStatus();
  }
  void process_element(const Event& e, Context& ctx, Collector<Row>& out) override {
    int64_t n = count_->value_or(0) + 1;
    count_->update(n);
    sum_->add(e.value);
    out.collect(Row{e.key, n, *sum_->get()});
  }

 private:
  ValueState<int64_t>* count_ = nullptr;
  ReducingState<int64_t>* sum_ = nullptr;
};

enum class JobKind { kRunningSum, kWindowed };
enum class Via { kSavepoint, kCheckpoint };

struct Stage {
  int parallelism;
  StateBackendKind backend;
};

class RescaleTest : public ::testing::TestWithParam<std::tuple<JobKind, Via, std::string>> {
 protected:
  void SetUp() override {
    seed_ = testing::test_seed();
    dir_ = std::make_unique<testing::TempDir>(
        std::string("rescale-") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
  }

  std::vector<Stage> stages() const {
    const std::string& backends = std::get<2>(GetParam());
    std::vector<Stage> out;
    int i = 0;
    for (int p : {4, 2, 8, 3}) {
      StateBackendKind b = StateBackendKind::kHeap;
      bool alternating = backends.find("alternating") != std::string::npos;
      if (!alternating && backends != "heap" && backends != "changelog") b = StateBackendKind::kRocksDb;
      if (alternating && i % 2 == 1) b = StateBackendKind::kRocksDb;
      out.push_back({p, b});
      ++i;
    }
    return out;
  }

  // Runs one stage. Unless it is the last, it ends part-way: stopped with a
  // savepoint, or failed for good by an injected failure. Returns the path
  // of the savepoint it stopped with (empty otherwise).
  std::string run_stage(const Stage& st, bool last, const std::string& restore, int index) {
    const JobKind kind = std::get<0>(GetParam());
    const Via via = std::get<1>(GetParam());
    JobConfig config = testing::failure_test_config(st.parallelism, st.backend);
    config.checkpoint.directory = dir_->path("chk");
    config.state.local_directory = dir_->path("state");
    config.restore = restore;
    config.restart.kind = RestartStrategyKind::kNone;
    // "incremental...": RocksDB stages take incremental checkpoints, which
    // later stages restore at another parallelism or into the heap.
    config.checkpoint.incremental = std::get<2>(GetParam()).rfind("incremental", 0) == 0;
    // "changelog...": heap stages checkpoint as a changelog (a base and
    // deltas), which later stages restore at another parallelism or into
    // RocksDB.
    config.checkpoint.changelog = std::get<2>(GetParam()).rfind("changelog", 0) == 0;
    const bool fail = !last && via == Via::kCheckpoint;
    StreamEnvironment env(config);
    // Rescaled sources interleave their progressions; the bound covers
    // their distance in event time.
    // 100 events per millisecond per subtask, so a stage is usually stopped
    // while records flow. A stage before the last holds its sources at its
    // quarter's end until it is stopped or records are needed to fail it,
    // so it cannot run out of input first, however slow its checkpoints.
    const int64_t hold = last ? kEvents : kEvents / 4 * (index + 1);
    auto fail_now = std::make_shared<std::atomic<bool>>(false);
    auto events = env.from_source<Event>([hold, fail_now] {
                                           auto source = std::make_unique<GeneratorSource<Event>>(event_at, kEvents, 100000);
                                           source->hold_while([hold, fail_now](int64_t i) { return i >= hold && !fail_now->load(); });
                                           return source;
                                         },
                                         "events",
                                         WatermarkStrategy<Event>::for_bounded_out_of_orderness(
                                             Duration(3 * kWindow), [](const Event& e) { return e.ts; }));
    events.uid("events");
    DataStream<Row> rows = [&] {
      auto keyed = events.key_by([](const Event& e) { return e.key; });
      if (kind == JobKind::kRunningSum) {
        return keyed.process<Row>([] { return std::make_unique<RunningSum>(); }, "running-sum");
      }
      AggregateFunction<Event, std::pair<int64_t, int64_t>, std::pair<int64_t, int64_t>> agg;
      agg.create_accumulator = [] { return std::make_pair(int64_t{0}, int64_t{0}); };
      agg.add = [](std::pair<int64_t, int64_t>& acc, const Event& e) {
        acc.first++;
        acc.second += e.value;
      };
      agg.merge = [](const auto& a, const auto& b) { return std::make_pair(a.first + b.first, a.second + b.second); };
      agg.get_result = [](const std::pair<int64_t, int64_t>& acc) { return acc; };
      class Emit final : public ProcessWindowFunction<int64_t, std::pair<int64_t, int64_t>, Row> {
       public:
        void process(const int64_t& key, const Context& ctx, const std::vector<std::pair<int64_t, int64_t>>& in,
                     Collector<Row>& out) override {
          out.collect(Row{key, ctx.window.start, in[0].first * 1000000 + in[0].second + 500000});
        }
      };
      return keyed.window(TumblingEventTimeWindows::of(Duration(kWindow)))
          .template aggregate<std::pair<int64_t, int64_t>, std::pair<int64_t, int64_t>, Row>(
              agg, [] { return std::make_unique<Emit>(); }, "windows");
    }();
    rows.uid("state");
    // A failure on demand: the job then fails for good (no restarts).
    rows.map([fail_now](const Row& r) {
          if (fail_now->load()) throw std::runtime_error("injected failure");
          return r;
        }, "fail-on-demand")
        .sink_to([this] { return std::make_unique<testing::CommittingSink<Row>>(&log_); })
        .uid("sink");

    JobControl control;
    size_t before = log_.all().size();
    std::thread stopper;
    if (!last) {
      // End the stage once it committed some rows (so checkpoints
      // completed), or at the deadline.
      stopper = std::thread([&, fail_now] {
        log_.wait_for_rows(before + expected().size() / 20, Clock::now() + std::chrono::seconds(30));
        if (fail) {
          fail_now->store(true);
        } else {
          control.stop_with_savepoint(dir_->path("savepoints"), /*drain=*/false);
        }
      });
    }
    auto r = env.execute("rescale-" + std::to_string(index), &control);
    if (stopper.joinable()) stopper.join();
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return "";
    SCOPED_TRACE("stage " + std::to_string(index) + " at parallelism " + std::to_string(st.parallelism));
    if (!restore.empty()) {
      EXPECT_GE(r->restored_checkpoint_id, 1) << "stage did not restore";
    }
    if (last) {
      EXPECT_EQ(r->status, JobStatus::kFinished) << r->failure;
      return "";
    }
    if (via == Via::kCheckpoint) {
      EXPECT_EQ(r->status, JobStatus::kFailed) << "the injected failure never came";
      return "";
    }
    EXPECT_EQ(r->status, JobStatus::kFinished) << r->failure;
    EXPECT_FALSE(r->stopped_with_savepoint.empty()) << "the job ended before the stop request";
    return r->stopped_with_savepoint;
  }

  void run_all_and_check() {
    SCOPED_TRACE("seed " + std::to_string(seed_));
    std::string restore;
    std::vector<Stage> all = stages();
    for (size_t i = 0; i < all.size(); ++i) {
      bool last = i + 1 == all.size();
      std::string savepoint = run_stage(all[i], last, restore, static_cast<int>(i));
      if (::testing::Test::HasFatalFailure()) return;
      restore = std::get<1>(GetParam()) == Via::kSavepoint ? savepoint : "latest";
      if (!last) {
        ASSERT_FALSE(restore.empty());
      }
    }
    std::vector<Row> got = log_.all();
    std::sort(got.begin(), got.end());
    if (std::get<0>(GetParam()) == JobKind::kRunningSum) {
      // A key's records come from several source subtasks in no fixed
      // order, so only the counts and the final sum are determined: per
      // key, counts 1..n each exactly once, and the sum at n the total.
      std::map<int64_t, std::pair<int64_t, int64_t>> total;
      for (int64_t i = 0; i < kEvents; ++i) {
        Event e = event_at(i);
        total[e.key].first++;
        total[e.key].second += e.value;
      }
      std::map<int64_t, std::vector<Row>> by_key;
      for (const Row& r : got) by_key[r.key].push_back(r);
      ASSERT_EQ(by_key.size(), total.size());
      for (const auto& [key, rows] : by_key) {
        const auto& [n, sum] = total.at(key);
        ASSERT_EQ(static_cast<int64_t>(rows.size()), n) << "key " << key;
        for (int64_t c = 1; c <= n; ++c) ASSERT_EQ(rows[c - 1].a, c) << "key " << key << ": count " << c;
        EXPECT_EQ(rows.back().b, sum) << "key " << key;
      }
      return;
    }
    std::vector<Row> want = expected();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i], want[i]) << "row " << i << ": key " << got[i].key << " a " << got[i].a << " b " << got[i].b;
    }
  }

  // Rows of the windowed job, or one row per event of the running sum
  // (only their number is used).
  std::vector<Row> expected() const {
    std::vector<Row> out;
    if (std::get<0>(GetParam()) == JobKind::kRunningSum) {
      out.resize(kEvents);
    } else {
      std::map<std::pair<int64_t, int64_t>, std::pair<int64_t, int64_t>> acc;
      for (int64_t i = 0; i < kEvents; ++i) {
        Event e = event_at(i);
        auto& [n, sum] = acc[{e.key, e.ts / kWindow * kWindow}];
        ++n;
        sum += e.value;
      }
      for (const auto& [k, v] : acc) out.push_back(Row{k.first, k.second, v.first * 1000000 + v.second + 500000});
    }
    std::sort(out.begin(), out.end());
    return out;
  }

  uint64_t seed_ = 0;
  std::unique_ptr<testing::TempDir> dir_;
  testing::CommitLog<Row> log_;
};

TEST_P(RescaleTest, FourToTwoToEightToThreeIsExact) { run_all_and_check(); }

INSTANTIATE_TEST_SUITE_P(
    Runs, RescaleTest,
    ::testing::Combine(::testing::Values(JobKind::kRunningSum, JobKind::kWindowed),
                       ::testing::Values(Via::kSavepoint, Via::kCheckpoint),
                       ::testing::Values("heap", "rocksdb", "alternating", "incremental",
                                         "incremental_alternating", "changelog", "changelog_alternating")),
    [](const auto& info) {
      return std::string(std::get<0>(info.param) == JobKind::kRunningSum ? "RunningSum" : "Windowed") +
             (std::get<1>(info.param) == Via::kSavepoint ? "_Savepoints_" : "_Checkpoints_") +
             std::get<2>(info.param);
    });

}  // namespace rescale_test
}  // namespace weir
