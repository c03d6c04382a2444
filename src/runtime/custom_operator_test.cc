// Custom operators through the public API (weir/stream_operator.h):
// operator state restored after failures with exactly-once output, records
// held back until the watermark passes them and emitted with their own
// timestamps, and a two-input operator with a side output.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "testing/committing_sink.h"
#include "testing/seed.h"
#include "weir/connectors.h"
#include "weir/weir.h"

namespace weir {
namespace custom_operator_test {

struct Numbered {
  int64_t subtask = 0;
  int64_t seq = 0;
  int64_t value = 0;
  auto weir_fields() { return std::tie(subtask, seq, value); }
};

// Opens that found state to restore: the tests below need some.
std::atomic<int> restored_numbering{0};
std::atomic<int> restored_held{0};

// Numbers the records each subtask sees, 1, 2, 3...: the next number is
// operator state (one entry per subtask, union-redistributed, as a source
// keeps its partitions' offsets).
class Numbering final : public OneInputStreamOperator<int64_t, Numbered> {
 public:
  absl::Status open(OperatorContext& ctx) override {
    subtask_ = ctx.subtask_index();
    state_ = std::make_unique<OperatorListState<std::pair<int64_t, int64_t>>>(ctx, "last-number",
                                                                              Redistribution::kUnion);
    for (const auto& [subtask, last] : state_->get()) {
      if (subtask == subtask_) seq_ = last;
    }
    if (seq_ > 0) restored_numbering.fetch_add(1);
    return absl::OkStatus();
  }
  void process_element(const int64_t& value, int64_t) override {
    output().collect(Numbered{subtask_, ++seq_, value});
  }
  absl::Status snapshot_state(int64_t) override {
    state_->update({{subtask_, seq_}});
    return absl::OkStatus();
  }

 private:
  std::unique_ptr<OperatorListState<std::pair<int64_t, int64_t>>> state_;
  int64_t subtask_ = 0;
  int64_t seq_ = 0;
};

class CustomOperatorTest : public ::testing::TestWithParam<StateBackendKind> {};

constexpr int kParallelism = 3;
constexpr int64_t kRecords = 150000;

// Source subtask s reads s, s+p, s+2p... in order and feeds operator
// subtask s (forward), so exactly once means: every value once, and each
// subtask's numbers 1..n over its values in reading order. A restore that
// lost the operator's state would number from 1 again (duplicates); one that
// replayed too little would leave a gap.
TEST_P(CustomOperatorTest, OperatorStateSurvivesFailuresExactlyOnce) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  testing::CommitLog<Numbered> log;
  restored_numbering = 0;
  StreamEnvironment env(testing::failure_test_config(kParallelism, GetParam()));
  env.from_source<int64_t>(
         [] {
           // 50,000 a second per subtask: a second of input, many checkpoints.
           return std::make_unique<GeneratorSource<int64_t>>([](int64_t i) { return i; }, kRecords,
                                                             kRecords / kParallelism);
         },
         "numbers")
      .transform<Numbered>("numbering", [] { return std::make_unique<Numbering>(); })
      .uid("numbering")
      .sink_to([&log, seed] { return std::make_unique<testing::CommittingSink<Numbered>>(&log, 10000, seed); })
      .uid("sink");
  auto r = env.execute("custom-numbering");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->status, JobStatus::kFinished) << r->failure;
  EXPECT_GE(r->restarts, 1);

  std::vector<Numbered> rows = log.all();
  ASSERT_EQ(static_cast<int64_t>(rows.size()), kRecords);
  std::set<int64_t> values;
  std::map<int64_t, std::set<int64_t>> seqs;
  for (const Numbered& n : rows) {
    ASSERT_TRUE(values.insert(n.value).second) << "value " << n.value << " twice";
    ASSERT_EQ(n.value % kParallelism, n.subtask) << "value " << n.value;
    // The value read as this subtask's seq-th record.
    ASSERT_EQ(n.value, n.subtask + (n.seq - 1) * kParallelism) << "subtask " << n.subtask << " seq " << n.seq;
    ASSERT_TRUE(seqs[n.subtask].insert(n.seq).second);
  }
  EXPECT_EQ(*values.begin(), 0);
  EXPECT_EQ(*values.rbegin(), kRecords - 1);
  EXPECT_GT(restored_numbering.load(), 0) << "no restart restored a subtask's number";
}

INSTANTIATE_TEST_SUITE_P(Backends, CustomOperatorTest, testing::kBothBackends, testing::backend_name);

struct Reading {
  int64_t id = 0;
  int64_t ts = 0;
  auto weir_fields() { return std::tie(id, ts); }
};

struct Released {
  int64_t subtask = 0;
  int64_t id = 0;
  int64_t ts = 0;
  int64_t stamped = 0;  // the event-time timestamp the record travelled with
  auto weir_fields() { return std::tie(subtask, id, ts, stamped); }
};

// Holds readings until the watermark passes them, then emits them in
// timestamp order, each with its own timestamp; the held readings are
// operator state.
class EventTimeSorter final : public OneInputStreamOperator<Reading, Reading> {
 public:
  absl::Status open(OperatorContext& ctx) override {
    state_ = std::make_unique<OperatorListState<Reading>>(ctx, "held");
    for (const Reading& r : state_->get()) held_.emplace(r.ts, r);
    if (!held_.empty()) restored_held.fetch_add(1);
    return absl::OkStatus();
  }
  void process_element(const Reading& r, int64_t timestamp) override {
    if (timestamp != r.ts) throw UnrecoverableError("reading " + std::to_string(r.id) + " has timestamp " +
                                                    std::to_string(timestamp));
    held_.emplace(r.ts, r);
  }
  void process_watermark(int64_t watermark) override {
    auto end = held_.upper_bound(watermark);
    for (auto it = held_.begin(); it != end; ++it) output().collect(it->second, it->second.ts);
    held_.erase(held_.begin(), end);
    output().emit_watermark(watermark);
  }
  absl::Status snapshot_state(int64_t) override {
    std::vector<Reading> held;
    for (const auto& [ts, r] : held_) held.push_back(r);
    state_->update(held);
    return absl::OkStatus();
  }

 private:
  std::unique_ptr<OperatorListState<Reading>> state_;
  std::multimap<int64_t, Reading> held_;
};

// Records what reaches it: the subtask, and the timestamp each came with.
class Stamp final : public OneInputStreamOperator<Reading, Released> {
 public:
  absl::Status open(OperatorContext& ctx) override {
    subtask_ = ctx.subtask_index();
    return absl::OkStatus();
  }
  void process_element(const Reading& r, int64_t timestamp) override {
    output().collect(Released{subtask_, r.id, r.ts, timestamp});
  }

 private:
  int64_t subtask_ = 0;
};

constexpr int64_t kReadings = 60000;

// Out of order by up to 49 ms; the watermark trails by 50, so none is late.
int64_t reading_ts(int64_t i) { return 1'000'000 + i - (i * 7919) % 50; }

TEST(CustomOperatorEventTimeTest, HeldRecordsLeaveInTimestampOrderAcrossFailures) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  testing::CommitLog<Released> log;
  restored_held = 0;
  JobConfig config = testing::failure_test_config(2);
  StreamEnvironment env(config);
  auto wm = WatermarkStrategy<Reading>::for_bounded_out_of_orderness(Duration(50), [](const Reading& r) {
              return r.ts;
            }).with_interval(Duration(2));
  env.from_source<Reading>(
         [] {
           return std::make_unique<GeneratorSource<Reading>>([](int64_t i) { return Reading{i, reading_ts(i)}; },
                                                              kReadings, kReadings / 2);
         },
         "readings", wm)
      .transform<Reading>("sort", [] { return std::make_unique<EventTimeSorter>(); })
      .uid("sort")
      .transform<Released>("stamp", [] { return std::make_unique<Stamp>(); })
      .uid("stamp")
      .sink_to([&log, seed] { return std::make_unique<testing::CommittingSink<Released>>(&log, 5000, seed); })
      .uid("sink");
  auto r = env.execute("custom-sorter");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->status, JobStatus::kFinished) << r->failure;
  EXPECT_GE(r->restarts, 1);

  // CommitLog::all() lists each subtask's commits in checkpoint order.
  std::vector<Released> rows = log.all();
  ASSERT_EQ(static_cast<int64_t>(rows.size()), kReadings);
  std::set<int64_t> ids;
  std::map<int64_t, int64_t> last_ts;  // per subtask
  for (const Released& x : rows) {
    ASSERT_TRUE(ids.insert(x.id).second) << "reading " << x.id << " twice";
    ASSERT_EQ(x.ts, reading_ts(x.id));
    ASSERT_EQ(x.stamped, x.ts) << "reading " << x.id;
    auto [it, first] = last_ts.emplace(x.subtask, x.ts);
    if (!first) {
      ASSERT_GE(x.ts, it->second) << "reading " << x.id << " left after a later one on subtask " << x.subtask;
      it->second = x.ts;
    }
  }
  EXPECT_EQ(*ids.rbegin(), kReadings - 1);
  EXPECT_GT(restored_held.load(), 0) << "no restart restored held readings";
}

// Numbers to the main output as "n:<v>"; words to it as "w:<word>" and
// their lengths to a side output.
class NumbersAndWords final : public TwoInputStreamOperator<int64_t, std::string, std::string> {
 public:
  explicit NumbersAndWords(OutputTag<int64_t> lengths) : lengths_(std::move(lengths)) {}
  void process_element1(const int64_t& n, int64_t) override { output().collect("n:" + std::to_string(n)); }
  void process_element2(const std::string& w, int64_t) override {
    output().collect("w:" + w);
    output().collect(lengths_, static_cast<int64_t>(w.size()));
  }

 private:
  OutputTag<int64_t> lengths_;
};

constexpr int64_t kNumbers = 3000, kWords = 500;

TEST(CustomOperatorTwoInputTest, BothInputsReachTheOperatorAndItsSideOutput) {
  testing::CollectingSink<std::string>::Rows main_rows;
  testing::CollectingSink<int64_t>::Rows side_rows;
  JobConfig config;
  config.default_parallelism = 2;
  StreamEnvironment env(config);
  OutputTag<int64_t> lengths{"lengths"};
  auto numbers = env.from_source<int64_t>(
      [] { return std::make_unique<GeneratorSource<int64_t>>([](int64_t i) { return i; }, kNumbers); }, "numbers");
  auto words = env.from_source<std::string>(
      [] {
        return std::make_unique<GeneratorSource<std::string>>([](int64_t i) { return std::string(1 + i % 9, 'x'); },
                                                               kWords);
      },
      "words");
  auto merged = numbers.connect(words.rebalance())
                    .transform<std::string>("merge", [lengths] { return std::make_unique<NumbersAndWords>(lengths); });
  merged.parallelism(3);  // fed by two subtasks of each source: rebalanced
  merged.sink_to([&] { return std::make_unique<testing::CollectingSink<std::string>>(&main_rows); });
  merged.get_side_output(lengths).sink_to(
      [&] { return std::make_unique<testing::CollectingSink<int64_t>>(&side_rows); });
  auto r = env.execute("custom-two-input");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->status, JobStatus::kFinished) << r->failure;

  std::multiset<std::string> got(main_rows.rows.begin(), main_rows.rows.end());
  std::multiset<std::string> want;
  std::multiset<int64_t> want_lengths;
  for (int64_t i = 0; i < kNumbers; ++i) want.insert("n:" + std::to_string(i));
  for (int64_t i = 0; i < kWords; ++i) {
    want.insert("w:" + std::string(1 + i % 9, 'x'));
    want_lengths.insert(1 + i % 9);
  }
  EXPECT_EQ(got, want);
  EXPECT_EQ(std::multiset<int64_t>(side_rows.rows.begin(), side_rows.rows.end()), want_lengths);
}

}  // namespace custom_operator_test
}  // namespace weir
