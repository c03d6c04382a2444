#include "graph/job_graph.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "weir/connectors.h"
#include "weir/stream.h"

namespace weir::graph {
namespace {

DataStream<int64_t> numbers(StreamEnvironment& env, int p = 2) {
  auto s = env.from_source<int64_t>(
      [] { return std::make_unique<GeneratorSource<int64_t>>([](int64_t i) { return i; }, 10); });
  s.parallelism(p);
  return s;
}

TEST(JobGraphTest, ChainsForwardEdgesOfEqualParallelism) {
  StreamEnvironment env;
  auto s = numbers(env);
  auto m = s.map([](const int64_t& x) { return x + 1; }).parallelism(2);
  auto f = m.filter([](const int64_t& x) { return x > 0; }).parallelism(2);
  f.key_by([](const int64_t& x) { return x % 3; })
      .process<int64_t>(nullptr, "keyed")
      .parallelism(2);
  auto g = build_job_graph(env.graph(), env.config());
  ASSERT_TRUE(g.ok()) << g.status();
  ASSERT_EQ((*g)->vertices.size(), 2u);
  EXPECT_EQ((*g)->vertices[0].nodes, (std::vector<int>{0, 1, 2}));
  ASSERT_EQ((*g)->edges.size(), 1u);
  EXPECT_EQ((*g)->edges[0].kind, detail::PartitionKind::kHash);
  EXPECT_FALSE((*g)->edges[0].pointwise);
}

TEST(JobGraphTest, DifferentParallelismRebalancesAndUnionIsNotChained) {
  StreamEnvironment env;
  auto a = numbers(env, 2);
  auto b = numbers(env, 2);
  a.union_with(b).map([](const int64_t& x) { return x; }).parallelism(2);
  a.map([](const int64_t& x) { return x; }).parallelism(3);
  auto g = build_job_graph(env.graph(), env.config());
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ((*g)->vertices.size(), 4u);
  int rebalance = 0, forward = 0;
  for (const auto& e : (*g)->edges) {
    rebalance += e.kind == detail::PartitionKind::kRebalance;
    forward += e.kind == detail::PartitionKind::kForward;
  }
  EXPECT_EQ(rebalance, 1);
  EXPECT_EQ(forward, 2);  // the union's inputs: forward but not chained
}

// Forward edges join subtask i to subtask i; all-to-all edges join every
// producer and consumer.
TEST(JobGraphTest, PipelinedRegionsFollowTheNetworkEdges) {
  StreamEnvironment env;
  auto a = numbers(env, 3);
  auto b = numbers(env, 3);
  // a -> union (forward, not chained) -> map: pointwise, 3 regions so far.
  a.union_with(b).map([](const int64_t& x) { return x; }).parallelism(3);
  auto g = build_job_graph(env.graph(), env.config());
  ASSERT_TRUE(g.ok()) << g.status();
  auto regions = pipelined_regions(**g);
  ASSERT_EQ(regions.size(), static_cast<size_t>((*g)->total_subtasks()));
  EXPECT_EQ(*std::max_element(regions.begin(), regions.end()), 2);  // subtask i of all three vertices
  for (const auto& v : (*g)->vertices) {
    for (int s = 0; s < v.parallelism; ++s) EXPECT_EQ(regions[(*g)->task_index(v.id, s)], regions[s]);
  }

  StreamEnvironment keyed;
  numbers(keyed, 3).key_by([](const int64_t& x) { return x; }).process<int64_t>(nullptr, "k").parallelism(2);
  auto k = build_job_graph(keyed.graph(), keyed.config());
  ASSERT_TRUE(k.ok()) << k.status();
  auto one = pipelined_regions(**k);
  EXPECT_EQ(one, std::vector<int>(5, 0));
}

TEST(JobGraphTest, DerivedUidsAreDeterministicAndExplicitOnesKept) {
  auto build = [] {
    StreamEnvironment env;
    numbers(env).map([](const int64_t& x) { return x; }, "m").uid("my-map");
    numbers(env).map([](const int64_t& x) { return x; }, "m");
    return build_job_graph(env.graph(), env.config());
  };
  auto g1 = build(), g2 = build();
  ASSERT_TRUE(g1.ok() && g2.ok());
  EXPECT_EQ((*g1)->uids, (*g2)->uids);
  EXPECT_EQ((*g1)->uids[1], "my-map");
  EXPECT_NE((*g1)->uids[0], (*g1)->uids[2]);
}

TEST(JobGraphTest, RejectsInvalidGraphs) {
  {
    StreamEnvironment env;
    numbers(env).uid("x");
    numbers(env).uid("x");
    auto g = build_job_graph(env.graph(), env.config());
    ASSERT_FALSE(g.ok());
    EXPECT_NE(g.status().message().find("'x' is used twice"), std::string::npos);
  }
  {
    StreamEnvironment env;
    numbers(env, 2).forward().map([](const int64_t& x) { return x; }).parallelism(3);
    auto g = build_job_graph(env.graph(), env.config());
    ASSERT_FALSE(g.ok());
    EXPECT_NE(g.status().message().find("equal parallelism"), std::string::npos);
  }
  {
    StreamEnvironment env;
    env.config().max_parallelism = 4;
    numbers(env, 5);
    EXPECT_FALSE(build_job_graph(env.graph(), env.config()).ok());
  }
}

// An iteration: the head is a vertex of its own, the feedback a network
// edge (round robin unless said), and the loop's edges carry its rounds.
TEST(JobGraphTest, AnIterationIsACycleOfNetworkEdges) {
  StreamEnvironment env;
  env.config().default_parallelism = 2;
  auto it = numbers(env).iterate();
  auto body = it.map([](const int64_t& x) { return x - 1; }).parallelism(2);
  auto back = body.filter([](const int64_t& x) { return x > 0; }).parallelism(2);
  it.close_with(back);
  body.filter([](const int64_t& x) { return x == 0; }).sink_to(nullptr, "out").parallelism(2);
  auto g = build_job_graph(env.graph(), env.config());
  ASSERT_TRUE(g.ok()) << g.status();
  // source | head | map -> filter -> (filter -> sink)
  ASSERT_EQ((*g)->vertices.size(), 3u);
  EXPECT_TRUE((*g)->vertices[1].iteration_head);
  EXPECT_EQ((*g)->vertices[1].nodes.size(), 1u) << "nothing is chained to a head";
  EXPECT_TRUE((*g)->iterates());
  int feedback = 0, in_loop = 0;
  for (const JobEdge& e : (*g)->edges) {
    feedback += e.feedback;
    in_loop += e.in_loop;
    if (e.feedback) {
      EXPECT_EQ(e.source_vertex, 2);
      EXPECT_EQ(e.target_vertex, 1);
      EXPECT_EQ(e.kind, detail::PartitionKind::kRebalance);
    }
  }
  EXPECT_EQ(feedback, 1);
  EXPECT_EQ(in_loop, 2);  // head -> body, body -> head; not source -> head
  // One region: the cycle joins everything it touches.
  auto regions = pipelined_regions(**g);
  EXPECT_TRUE(std::all_of(regions.begin(), regions.end(), [](int r) { return r == 0; }));
}

TEST(JobGraphTest, IterationsThatCannotRunAreRefusedByName) {
  auto refused = [](auto build, JobConfig config = {}) {
    StreamEnvironment env(config);
    build(env);
    auto g = build_job_graph(env.graph(), env.config());
    return g.ok() ? std::string("accepted") : std::string(g.status().message());
  };
  EXPECT_NE(refused([](StreamEnvironment& env) { numbers(env).iterate("loop"); }).find("'loop' is never closed"),
            std::string::npos);
  EXPECT_NE(refused([](StreamEnvironment& env) {
              auto it = numbers(env).iterate("loop");
              it.parallelism(2);
              it.close_with(it.map([](const int64_t& x) { return x; }).parallelism(2).forward());
            }).find("is forward"),
            std::string::npos);
  EXPECT_NE(refused([](StreamEnvironment& env) {
              auto other = numbers(env, 2).map([](const int64_t& x) { return x; }, "elsewhere");
              auto it = numbers(env).iterate("loop");
              it.map([](const int64_t& x) { return x; }).sink_to(nullptr);
              it.close_with(other);
            }).find("comes from 'elsewhere', which is not downstream"),
            std::string::npos);
  JobConfig batch;
  batch.runtime_mode = RuntimeMode::kBatch;
  auto loop = [](StreamEnvironment& env) {
    auto it = numbers(env).iterate("loop");
    it.close_with(it.map([](const int64_t& x) { return x; }).parallelism(2));
  };
  EXPECT_NE(refused(loop, batch).find("cannot run in batch mode"), std::string::npos);
  JobConfig blocking;
  blocking.exchange = ExchangeMode::kBlocking;
  EXPECT_NE(refused(loop, blocking).find("has a blocking exchange"), std::string::npos);
  EXPECT_EQ(refused(loop), "accepted");
}

}  // namespace
}  // namespace weir::graph
