// Leader election through a real ZooKeeper server (Debian's zookeeper, run
// by the test): one leader at a time, epochs that only grow, a leader that
// steps down when it loses ZooKeeper, a new leader when the old one goes.
#include "cluster/leader_election.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/process.h"
#include "tests/zk_server.h"

namespace weir::cluster {
namespace {

using namespace std::chrono_literals;
using testing::TempDir;
using testing::ZkServer;

bool eventually(const std::function<bool()>& done, std::chrono::milliseconds deadline) {
  const auto until = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(20ms);  // polling the condition
  }
  return done();
}

// A contender that records what it was told.
struct Contender {
  explicit Contender(const ZkServer& zk, std::string address, std::chrono::milliseconds session = 2000ms) {
    LeaderElection::Options o;
    o.quorum = zk.quorum();
    o.root = "/weir/test";
    o.address = std::move(address);
    o.session_timeout = session;
    election = std::make_unique<LeaderElection>(
        o, LeaderElection::Callbacks{[this](int64_t epoch) {
                                       std::lock_guard lock(mu);
                                       epochs.push_back(epoch);
                                     },
                                     [this] { ++revocations; }});
  }
  std::vector<int64_t> granted() {
    std::lock_guard lock(mu);
    return epochs;
  }
  std::unique_ptr<LeaderElection> election;
  std::mutex mu;
  std::vector<int64_t> epochs;
  std::atomic<int> revocations{0};
};

class LeaderElectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::make_unique<TempDir>(std::string("zk-") +
                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    zk_ = std::make_unique<ZkServer>(*dir_);
    ASSERT_TRUE(zk_->start()) << "ZooKeeper did not start (scripts/install-deps.sh installs it)\n" << zk_->log();
  }
  std::unique_ptr<TempDir> dir_;
  std::unique_ptr<ZkServer> zk_;
};

int leaders(const std::vector<std::unique_ptr<Contender>>& cs) {
  int n = 0;
  for (const auto& c : cs) n += c != nullptr && c->election->is_leader();
  return n;
}

// Three contenders: exactly one leads and is the address ZooKeeper names;
// each time the leader leaves, another takes over under a higher epoch.
TEST_F(LeaderElectionTest, OneLeaderAtATimeUnderGrowingEpochs) {
  std::vector<std::unique_ptr<Contender>> cs;
  for (int i = 0; i < 3; ++i) {
    cs.push_back(std::make_unique<Contender>(*zk_, "jm-" + std::to_string(i) + ":8081"));
    ASSERT_TRUE(cs.back()->election->start(10s).ok());
  }
  int64_t last_epoch = 0;
  for (int round = 0; round < 3; ++round) {
    ASSERT_TRUE(eventually([&] { return leaders(cs) == 1; }, 10s)) << "round " << round;
    size_t leader = 0;
    while (cs[leader] == nullptr || !cs[leader]->election->is_leader()) ++leader;
    const int64_t epoch = cs[leader]->election->epoch();
    EXPECT_GT(epoch, last_epoch) << "round " << round;
    last_epoch = epoch;
    auto named = LeaderElection::leader_address(zk_->quorum(), "/weir/test", 10s);
    ASSERT_TRUE(named.ok()) << named.status();
    EXPECT_EQ(*named, "jm-" + std::to_string(leader) + ":8081");
    // Never two leaders while it leads.
    for (int i = 0; i < 10; ++i) EXPECT_EQ(leaders(cs), 1);
    cs[leader].reset();  // leaves: its node goes with its session
  }
  EXPECT_TRUE(absl::IsNotFound(LeaderElection::leader_address(zk_->quorum(), "/weir/test", 10s).status()));
}

// ZooKeeper goes away: the leader steps down at once (it cannot know when
// its session expires); when ZooKeeper is back a leader is elected again,
// under a higher epoch than any before.
TEST_F(LeaderElectionTest, TheLeaderStepsDownWhenZooKeeperIsGoneAndALeaderReturnsWithIt) {
  std::vector<std::unique_ptr<Contender>> cs;
  for (int i = 0; i < 2; ++i) {
    cs.push_back(std::make_unique<Contender>(*zk_, "jm-" + std::to_string(i), 1000ms));
    ASSERT_TRUE(cs.back()->election->start(10s).ok());
  }
  ASSERT_TRUE(eventually([&] { return leaders(cs) == 1; }, 10s));
  int64_t before = 0;
  for (const auto& c : cs) before = std::max(before, c->election->epoch());
  zk_->stop();
  EXPECT_TRUE(eventually([&] { return leaders(cs) == 0; }, 5s));
  ASSERT_TRUE(zk_->start()) << zk_->log();
  ASSERT_TRUE(eventually([&] { return leaders(cs) == 1; }, 30s));
  int64_t after = 0;
  for (const auto& c : cs) after = std::max(after, c->election->epoch());
  EXPECT_GT(after, before);
  int revoked = 0;
  for (const auto& c : cs) revoked += c->revocations.load();
  EXPECT_GE(revoked, 1);
}

TEST_F(LeaderElectionTest, AnUnreachableQuorumIsAClearError) {
  const int nobody = testing::free_loopback_port();
  LeaderElection::Options o;
  o.quorum = "127.0.0.1:" + std::to_string(nobody);
  o.address = "jm";
  LeaderElection e(o, {});
  absl::Status s = e.start(1500ms);
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_EQ(s.message(), "cannot reach ZooKeeper at " + o.quorum + " within 1500 ms");
  EXPECT_FALSE(e.is_leader());
}

}  // namespace
}  // namespace weir::cluster
