// Iterations through the public API, in process: the Collatz sequence of
// every start value goes round a loop keyed by its start, one step per
// trip, the steps counted in keyed state, the count emitted when the value
// reaches 1. Nothing here is idempotent: a step lost on the back edge
// leaves a start without its result, a step replayed twice counts twice or
// emits twice. With the feedback keyed (close_with a KeyedStream) and round
// robin, under injected sink failures on both state backends, and with two
// feedback streams into one head.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "testing/committing_sink.h"
#include "testing/seed.h"
#include "weir/connectors.h"
#include "weir/weir.h"

namespace weir {
namespace iteration_test {

struct Step {
  int64_t start = 0;
  int64_t value = 0;
  auto weir_fields() { return std::tie(start, value); }
};

struct Result {
  int64_t start = 0;
  int64_t steps = 0;
  auto weir_fields() { return std::tie(start, steps); }
};

const OutputTag<Result> kDone{"done"};

int64_t collatz_steps(int64_t n) {
  int64_t steps = 0;
  for (; n != 1; ++steps) n = n % 2 == 0 ? n / 2 : 3 * n + 1;
  return steps;
}

// One step of a start's sequence per record; its steps so far in state.
class Collatz final : public KeyedProcessFunction<int64_t, Step, Step> {
 public:
  absl::Status open(KeyedRuntimeContext<int64_t>& ctx) override {
    steps_ = &ctx.get_state(ValueStateDescriptor<int64_t>{"steps"});
    return absl::OkStatus();
  }
  void process_element(const Step& s, Context& ctx, Collector<Step>& out) override {
    if (s.value == 1) {
      ctx.output(kDone, Result{s.start, steps_->value_or(0)});
      return;
    }
    steps_->update(steps_->value_or(0) + 1);
    out.collect(Step{s.start, s.value % 2 == 0 ? s.value / 2 : 3 * s.value + 1});
  }

 private:
  ValueState<int64_t>* steps_ = nullptr;
};

constexpr int64_t kStarts = 20000;

enum class Feedback { kKeyed, kRoundRobin, kTwoStreams };

struct Case {
  StateBackendKind backend;
  Feedback feedback;
};

class IterationTest : public ::testing::TestWithParam<Case> {};

TEST_P(IterationTest, EveryStepOnceThroughFailures) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  testing::CommitLog<Result> log;
  StreamEnvironment env(testing::failure_test_config(3, GetParam().backend));
  auto starts = env.from_source<Step>(
      [] {
        // 20,000 a second per subtask: a third of a second of input.
        return std::make_unique<GeneratorSource<Step>>([](int64_t i) { return Step{i + 1, i + 1}; }, kStarts, 20000);
      },
      "starts");
  IterativeStream<Step> loop = starts.iterate();
  loop.uid("head");
  auto steps = loop.key_by([](const Step& s) { return s.start; })
                   .process<Step>([] { return std::make_unique<Collatz>(); }, "collatz");
  steps.uid("collatz");
  switch (GetParam().feedback) {
    case Feedback::kKeyed:
      loop.close_with(steps.key_by([](const Step& s) { return s.start; }));
      break;
    case Feedback::kRoundRobin:
      loop.close_with(steps);
      break;
    case Feedback::kTwoStreams: {
      // Even and odd values come back through two operators.
      auto even = steps.filter([](const Step& s) { return s.value % 2 == 0; }, "even");
      auto odd = steps.filter([](const Step& s) { return s.value % 2 != 0; }, "odd");
      loop.close_with(even.union_with(odd));
      break;
    }
  }
  steps.get_side_output(kDone)
      .sink_to([&log, seed] { return std::make_unique<testing::CommittingSink<Result>>(&log, 3000, seed); })
      .uid("sink");
  auto r = env.execute("collatz");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->status, JobStatus::kFinished) << r->failure;
  EXPECT_GE(r->restarts, 1);

  std::map<int64_t, int64_t> got;
  for (const Result& res : log.all()) {
    ASSERT_TRUE(got.emplace(res.start, res.steps).second) << "start " << res.start << " twice";
  }
  ASSERT_EQ(static_cast<int64_t>(got.size()), kStarts);
  for (const auto& [start, steps_taken] : got) {
    ASSERT_EQ(steps_taken, collatz_steps(start)) << "start " << start;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, IterationTest,
    ::testing::Values(Case{StateBackendKind::kHeap, Feedback::kKeyed}, Case{StateBackendKind::kRocksDb, Feedback::kKeyed},
                      Case{StateBackendKind::kHeap, Feedback::kRoundRobin},
                      Case{StateBackendKind::kHeap, Feedback::kTwoStreams}),
    [](const ::testing::TestParamInfo<Case>& info) {
      const char* f = info.param.feedback == Feedback::kKeyed        ? "keyed"
                      : info.param.feedback == Feedback::kRoundRobin ? "round_robin"
                                                                     : "two_streams";
      return std::string(to_string(info.param.backend)) + "_" + f;
    });

// A loop that multiplies its records: each goes round six times, four
// copies of it each time, so every start ends as exactly 4^6 leaves, and
// the heads take in four times what they send. With a 1 MiB backlog they
// spill, and no leaf is lost or doubled through sink failures.
struct Copy {
  int64_t start = 0;
  int32_t depth = 0;
  auto weir_fields() { return std::tie(start, depth); }
};

constexpr int64_t kRoots = 200;
constexpr int kDepth = 6;
constexpr int kFanOut = 4;

TEST(IterationSpillTest, AMultiplyingLoopSpillsItsBacklogAndLosesNothing) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  testing::CommitLog<int64_t> log;
  JobConfig config = testing::failure_test_config(2);
  config.iteration_memory_bytes = int64_t{1} << 20;
  StreamEnvironment env(config);
  auto roots = env.from_source<Copy>(
      [] { return std::make_unique<GeneratorSource<Copy>>([](int64_t i) { return Copy{i, 0}; }, kRoots); }, "roots");
  IterativeStream<Copy> loop = roots.iterate();
  const OutputTag<int64_t> leaves{"leaves"};
  auto copies = loop.transform<Copy>("fan-out", [leaves] {
    class FanOut final : public OneInputStreamOperator<Copy, Copy> {
     public:
      explicit FanOut(OutputTag<int64_t> leaves) : leaves_(std::move(leaves)) {}
      void process_element(const Copy& c, int64_t) override {
        if (c.depth == kDepth) {
          output().collect(leaves_, c.start);
          return;
        }
        for (int i = 0; i < kFanOut; ++i) output().collect(Copy{c.start, c.depth + 1});
      }

     private:
      OutputTag<int64_t> leaves_;
    };
    return std::make_unique<FanOut>(leaves);
  });
  loop.close_with(copies);
  copies.get_side_output(leaves)
      .sink_to([&log, seed] { return std::make_unique<testing::CommittingSink<int64_t>>(&log, 200000, seed); })
      .uid("sink");
  auto r = env.execute("fan-out");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->status, JobStatus::kFinished) << r->failure;
  EXPECT_GE(r->restarts, 1);
  std::map<int64_t, int64_t> per_root;
  for (int64_t root : log.all()) ++per_root[root];
  ASSERT_EQ(static_cast<int64_t>(per_root.size()), kRoots);
  for (const auto& [root, n] : per_root) ASSERT_EQ(n, 4096) << "root " << root;
  int64_t spilled = -1;
  for (const VertexStats& v : r->vertices) {
    if (auto it = v.gauges.find("iteration.spilled_bytes"); it != v.gauges.end()) spilled = it->second;
  }
  EXPECT_GT(spilled, 0) << "a backlog of 1 MiB did not spill";
}

}  // namespace iteration_test
}  // namespace weir
