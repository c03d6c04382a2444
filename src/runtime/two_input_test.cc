// Two-input operators: a keyed co-process function with state shared by both
// inputs (exactly-once under failures), and the interval join.
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <random>
#include <set>

#include "testing/committing_sink.h"
#include "weir/connectors.h"
#include "weir/weir.h"
#include "testing/seed.h"

namespace weir {
namespace {

struct Order {
  int64_t id = 0;
  int64_t customer = 0;
  int64_t ts = 0;
  auto weir_fields() { return std::tie(id, customer, ts); }
};

struct Customer {
  int64_t id = 0;
  std::string name;
  int64_t ts = 0;
  auto weir_fields() { return std::tie(id, name, ts); }
};


// Enriches orders with their customer's name, whichever arrives first.
class Enrich final : public KeyedCoProcessFunction<int64_t, Order, Customer, std::string> {
 public:
  absl::Status open(KeyedRuntimeContext<int64_t>& ctx) override {
    name_ = &ctx.get_state(ValueStateDescriptor<std::string>{"name"});
    waiting_ = &ctx.get_list_state(ListStateDescriptor<int64_t>{"waiting-orders"});
    return absl::OkStatus();
  }
  void process_element1(const Order& o, Context&, Collector<std::string>& out) override {
    if (auto n = name_->value()) {
      out.collect(std::to_string(o.id) + "," + *n);
    } else {
      waiting_->add(o.id);
    }
  }
  void process_element2(const Customer& c, Context&, Collector<std::string>& out) override {
    name_->update(c.name);
    for (int64_t id : waiting_->get()) out.collect(std::to_string(id) + "," + c.name);
    waiting_->clear();
  }

 private:
  ValueState<std::string>* name_ = nullptr;
  ListState<int64_t>* waiting_ = nullptr;
};

std::multiset<std::string> as_multiset(const std::vector<std::string>& v) { return {v.begin(), v.end()}; }

constexpr int64_t kCustomers = 5000;

std::multiset<std::string> expected_enrichment(int64_t orders) {
  std::multiset<std::string> out;
  for (int64_t i = 0; i < orders; ++i) out.insert(std::to_string(i) + ",c" + std::to_string((i * 7) % kCustomers));
  return out;
}

JobResult run_enrich(int64_t orders, int64_t fail_every, uint64_t seed, testing::CommitLog<std::string>* rows,
                     StateBackendKind backend = StateBackendKind::kHeap) {
  StreamEnvironment env(testing::failure_test_config(3, backend));
  auto o = env.from_source<Order>([orders] {
    return std::make_unique<GeneratorSource<Order>>(
        [](int64_t i) { return Order{i, (i * 7) % kCustomers, i}; }, orders);
  }, "orders");
  auto c = env.from_source<Customer>([] {
    return std::make_unique<GeneratorSource<Customer>>(
        [](int64_t i) { return Customer{i, "c" + std::to_string(i), i}; }, kCustomers);
  }, "customers");
  o.connect(c)
      .key_by([](const Order& x) { return x.customer; }, [](const Customer& x) { return x.id; })
      .process<std::string>([] { return std::make_unique<Enrich>(); }, "enrich")
      .uid("enrich")
      .sink_to([rows, fail_every, seed] { return std::make_unique<testing::CommittingSink<std::string>>(rows, fail_every, seed); })
      .uid("sink");
  auto r = env.execute("enrich");
  EXPECT_TRUE(r.ok()) << r.status();
  return r.value_or(JobResult{});
}

TEST(TwoInputTest, CoProcessSharesKeyedStateAcrossInputs) {
  testing::CommitLog<std::string> rows;
  JobResult r = run_enrich(200000, 0, 0, &rows);
  ASSERT_EQ(r.status, JobStatus::kFinished) << r.failure;
  EXPECT_EQ(as_multiset(rows.all()), expected_enrichment(200000));
}

class TwoInputBackendTest : public ::testing::TestWithParam<StateBackendKind> {};

TEST_P(TwoInputBackendTest, CoProcessIsExactlyOnceUnderFailures) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  testing::CommitLog<std::string> rows;
  JobResult r = run_enrich(400000, 20000, seed, &rows, GetParam());
  ASSERT_EQ(r.status, JobStatus::kFinished) << r.failure;
  EXPECT_GE(r.restarts, 1);
  EXPECT_EQ(as_multiset(rows.all()), expected_enrichment(400000));
}

TEST(TwoInputTest, IntervalJoinPairsRecordsWithinTheBounds) {
  testing::CommitLog<std::string> rows;
  StreamEnvironment env;
  auto wm_o = WatermarkStrategy<Order>::for_monotonous_timestamps([](const Order& o) { return o.ts; });
  auto wm_c = WatermarkStrategy<Customer>::for_monotonous_timestamps([](const Customer& c) { return c.ts; });
  // Orders at t = 10 i for key i % 3; "customers" (here: events) at t = 5 j for key j % 3.
  auto orders = env.from_source<Order>([] {
    return std::make_unique<GeneratorSource<Order>>([](int64_t i) { return Order{i, i % 3, 10 * i}; }, 300);
  }, "orders", wm_o);
  auto events = env.from_source<Customer>([] {
    return std::make_unique<GeneratorSource<Customer>>(
        [](int64_t j) { return Customer{j % 3, std::to_string(j), 5 * j}; }, 600);
  }, "events", wm_c);
  orders.key_by([](const Order& o) { return o.customer; })
      .interval_join(events.key_by([](const Customer& c) { return c.id; }))
      .between(Duration(-20), Duration(15))
      .process<std::string>([](const Order& o, const Customer& c, Collector<std::string>& out) {
        out.collect(std::to_string(o.id) + "," + c.name);
      })
      .sink_to([&rows] { return std::make_unique<testing::CommittingSink<std::string>>(&rows); });
  auto r = env.execute("interval-join");
  ASSERT_TRUE(r.ok() && r->status == JobStatus::kFinished);
  std::multiset<std::string> want;
  for (int64_t i = 0; i < 300; ++i) {
    for (int64_t j = 0; j < 600; ++j) {
      if (i % 3 == j % 3 && 5 * j >= 10 * i - 20 && 5 * j <= 10 * i + 15) {
        want.insert(std::to_string(i) + "," + std::to_string(j));
      }
    }
  }
  EXPECT_EQ(as_multiset(rows.all()), want);
}

// Window join: orders at t = 10 i with key i % 7, events at t = 3 j with key
// j % 7, in 100 ms tumbling windows; every pair with equal key and window,
// exactly once under failures.
JobResult run_window_join(int64_t fail_every, uint64_t seed, testing::CommitLog<std::string>* rows,
                          StateBackendKind backend = StateBackendKind::kHeap) {
  StreamEnvironment env(testing::failure_test_config(2, backend));
  auto wm_o = WatermarkStrategy<Order>::for_monotonous_timestamps([](const Order& o) { return o.ts; });
  auto wm_c = WatermarkStrategy<Customer>::for_monotonous_timestamps([](const Customer& c) { return c.ts; });
  auto orders = env.from_source<Order>([] {
    return std::make_unique<GeneratorSource<Order>>([](int64_t i) { return Order{i, i % 7, 10 * i}; }, 20000);
  }, "orders", wm_o);
  auto events = env.from_source<Customer>([] {
    return std::make_unique<GeneratorSource<Customer>>(
        [](int64_t j) { return Customer{j % 7, std::to_string(j), 3 * j}; }, 60000);
  }, "events", wm_c);
  orders.join(events)
      .where([](const Order& o) { return o.customer; })
      .equal_to([](const Customer& c) { return c.id; })
      .window(TumblingEventTimeWindows::of(Duration(100)))
      .apply<std::string>([](const Order& o, const Customer& c, Collector<std::string>& out) {
        out.collect(std::to_string(o.id) + "," + c.name);
      })
      .uid("join")
      .sink_to([rows, fail_every, seed] {
        return std::make_unique<testing::CommittingSink<std::string>>(rows, fail_every, seed);
      })
      .uid("sink");
  auto r = env.execute("window-join");
  EXPECT_TRUE(r.ok()) << r.status();
  return r.value_or(JobResult{});
}

std::multiset<std::string> expected_window_join() {
  std::multiset<std::string> want;
  for (int64_t i = 0; i < 20000; ++i) {
    // Events j with 3 j in [w, w + 100) and j % 7 == i % 7.
    int64_t w = (10 * i) / 100 * 100;
    for (int64_t j = (w + 2) / 3; 3 * j < w + 100 && j < 60000; ++j) {
      if (j % 7 == i % 7) want.insert(std::to_string(i) + "," + std::to_string(j));
    }
  }
  return want;
}

TEST(TwoInputTest, WindowJoinPairsEqualKeysInTheSameWindow) {
  testing::CommitLog<std::string> rows;
  JobResult r = run_window_join(0, 0, &rows);
  ASSERT_EQ(r.status, JobStatus::kFinished) << r.failure;
  EXPECT_EQ(as_multiset(rows.all()), expected_window_join());
}

TEST_P(TwoInputBackendTest, WindowJoinIsExactlyOnceUnderFailures) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  testing::CommitLog<std::string> rows;
  JobResult r = run_window_join(8000, seed, &rows, GetParam());
  ASSERT_EQ(r.status, JobStatus::kFinished) << r.failure;
  EXPECT_GE(r.restarts, 1);
  EXPECT_EQ(as_multiset(rows.all()), expected_window_join());
}

INSTANTIATE_TEST_SUITE_P(Backends, TwoInputBackendTest, testing::kBothBackends, testing::backend_name);

// co_group sees both sides of each key and window, including windows where
// only one side has records.
TEST(TwoInputTest, WindowCoGroupSeesBothSidesOfEachWindow) {
  testing::CommitLog<std::string> rows;
  StreamEnvironment env;
  auto wm_o = WatermarkStrategy<Order>::for_monotonous_timestamps([](const Order& o) { return o.ts; });
  auto wm_c = WatermarkStrategy<Customer>::for_monotonous_timestamps([](const Customer& c) { return c.ts; });
  // Orders at t = 10 i, i < 100, key 0; events at t = 25 j, j < 80, key 0: windows of 100 ms
  // hold 10 orders each up to t = 1000 and 4 events each up to t = 2000.
  auto orders = env.from_source<Order>([] {
    return std::make_unique<GeneratorSource<Order>>([](int64_t i) { return Order{i, 0, 10 * i}; }, 100);
  }, "orders", wm_o);
  auto events = env.from_source<Customer>([] {
    return std::make_unique<GeneratorSource<Customer>>([](int64_t j) { return Customer{0, "e", 25 * j}; }, 80);
  }, "events", wm_c);
  orders.join(events)
      .where([](const Order& o) { return o.customer; })
      .equal_to([](const Customer& c) { return c.id; })
      .window(TumblingEventTimeWindows::of(Duration(100)))
      .co_group<std::string>([](const int64_t&, const TimeWindow& w, const std::vector<Order>& os,
                                const std::vector<Customer>& cs, Collector<std::string>& out) {
        out.collect(std::to_string(w.start) + ":" + std::to_string(os.size()) + "/" + std::to_string(cs.size()));
      })
      .sink_to([&rows] { return std::make_unique<testing::CommittingSink<std::string>>(&rows); });
  auto r = env.execute("window-co-group");
  ASSERT_TRUE(r.ok() && r->status == JobStatus::kFinished);
  std::multiset<std::string> want;
  for (int64_t w = 0; w < 2000; w += 100) {
    want.insert(std::to_string(w) + ":" + (w < 1000 ? "10" : "0") + "/4");
  }
  EXPECT_EQ(as_multiset(rows.all()), want);
}

}  // namespace
}  // namespace weir
