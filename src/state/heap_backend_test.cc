#include <gtest/gtest.h>

#include "runtime/operator_context.h"
#include "weir/detail/heap_state.h"
#include "weir/functions.h"

namespace weir::detail {
namespace {

constexpr int kMaxP = 16;

// Drives keyed state as a keyed operator would: one backend, a current key.
class Harness {
 public:
  explicit Harness(KeyGroupRange range)
      : op_(runtime::RuntimeOperatorContext::Info{0, 1, kMaxP, 0, "op", range, false}),
        backend_(range),
        ctx_(&op_, &backend_) {}

  void set_key(const std::string& k) {
    key_ = k;
    backend_.set_current_key(&key_, key_group_of(key_, kMaxP));
  }
  KeyedRuntimeContext<std::string>& ctx() { return ctx_; }
  HeapKeyedBackend<std::string>& backend() { return backend_; }

  // Serializes every key group of a snapshot, as the async writer does.
  static std::map<int, std::string> write(const KeyedStateSnapshot& snap) {
    std::map<int, std::string> out;
    for (int kg = snap.range().start; kg < snap.range().end; ++kg) {
      ByteWriter w(&out[kg]);
      snap.write_key_group(kg, w);
    }
    return out;
  }
  void restore(const std::map<int, std::string>& groups) {
    for (const auto& [kg, bytes] : groups) {
      if (backend_.core().range().contains(kg)) {
        ASSERT_TRUE(backend_.core().restore_key_group(kg, bytes).ok());
      }
    }
  }

 private:
  runtime::RuntimeOperatorContext op_;
  HeapKeyedBackend<std::string> backend_;
  KeyedRuntimeContext<std::string> ctx_;
  std::string key_;
};

const KeyGroupRange kAll{0, kMaxP};

TEST(HeapBackendTest, StatesAreScopedToTheCurrentKey) {
  Harness h(kAll);
  auto& value = h.ctx().get_state(ValueStateDescriptor<int64_t>{"v"});
  auto& list = h.ctx().get_list_state(ListStateDescriptor<std::string>{"l"});
  auto& map = h.ctx().get_map_state(MapStateDescriptor<std::string, int>{"m"});
  auto& reducing = h.ctx().get_reducing_state(
      ReducingStateDescriptor<int64_t>{"r", [](const int64_t& a, const int64_t& b) { return a + b; }});
  h.set_key("a");
  value.update(1);
  list.add("x");
  map.put("k", 1);
  reducing.add(5);
  reducing.add(6);
  h.set_key("b");
  EXPECT_FALSE(value.value().has_value());
  EXPECT_TRUE(list.get().empty());
  EXPECT_TRUE(map.is_empty());
  EXPECT_FALSE(reducing.get().has_value());
  value.update(2);
  h.set_key("a");
  EXPECT_EQ(value.value(), 1);
  EXPECT_EQ(list.get(), std::vector<std::string>{"x"});
  EXPECT_EQ(map.get("k"), 1);
  EXPECT_EQ(reducing.get(), 11);
  map.remove("k");
  EXPECT_TRUE(map.is_empty());
  value.clear();
  EXPECT_FALSE(value.value().has_value());
  EXPECT_TRUE(h.ctx().status().ok());
}

TEST(HeapBackendTest, SnapshotIsUnaffectedByLaterWrites) {
  Harness h(kAll);
  auto& value = h.ctx().get_state(ValueStateDescriptor<int64_t>{"v"});
  for (int i = 0; i < 1000; ++i) {
    h.set_key("k" + std::to_string(i));
    value.update(i);
  }
  auto snap = h.backend().core().snapshot();
  // The task keeps writing while the snapshot is (not yet) written out.
  for (int i = 0; i < 1000; ++i) {
    h.set_key("k" + std::to_string(i));
    value.update(-1);
  }
  h.set_key("new");
  value.update(7);
  auto groups = Harness::write(*snap);

  Harness restored(kAll);
  restored.restore(groups);
  auto& rv = restored.ctx().get_state(ValueStateDescriptor<int64_t>{"v"});
  for (int i = 0; i < 1000; ++i) {
    restored.set_key("k" + std::to_string(i));
    ASSERT_EQ(rv.value(), i);
  }
  restored.set_key("new");
  EXPECT_FALSE(rv.value().has_value());
}

TEST(HeapBackendTest, RestoreTakesOnlyTheSubtasksKeyGroups) {
  Harness h(kAll);
  auto& value = h.ctx().get_state(ValueStateDescriptor<int64_t>{"v"});
  for (int i = 0; i < 200; ++i) {
    h.set_key("k" + std::to_string(i));
    value.update(i);
  }
  auto groups = Harness::write(*h.backend().core().snapshot());
  KeyGroupRange half = key_group_range_for_operator(kMaxP, 2, 1);
  Harness part(half);
  part.restore(groups);
  auto& pv = part.ctx().get_state(ValueStateDescriptor<int64_t>{"v"});
  size_t n = 0;
  for (int i = 0; i < 200; ++i) {
    std::string k = "k" + std::to_string(i);
    if (!half.contains(key_group_of(k, kMaxP))) continue;
    part.set_key(k);
    EXPECT_EQ(pv.value(), i);
    ++n;
  }
  EXPECT_GT(n, 50u);
}

TEST(HeapBackendTest, UnregisteredRestoredStateSurvivesTheNextSnapshot) {
  Harness h(kAll);
  auto& value = h.ctx().get_state(ValueStateDescriptor<int64_t>{"v"});
  h.set_key("a");
  value.update(9);
  auto groups = Harness::write(*h.backend().core().snapshot());

  Harness middle(kAll);  // restores, never registers "v", snapshots again
  middle.restore(groups);
  auto again = Harness::write(*middle.backend().core().snapshot());

  Harness last(kAll);
  last.restore(again);
  auto& v = last.ctx().get_state(ValueStateDescriptor<int64_t>{"v"});
  last.set_key("a");
  EXPECT_EQ(v.value(), 9);
}

TEST(HeapBackendTest, SameNameWithAnotherKindIsAnError) {
  Harness h(kAll);
  h.ctx().get_state(ValueStateDescriptor<int64_t>{"s"});
  h.ctx().get_list_state(ListStateDescriptor<int64_t>{"s"});
  EXPECT_FALSE(h.ctx().status().ok());
  EXPECT_NE(h.ctx().status().message().find("'s'"), std::string::npos);
}

TEST(HeapBackendTest, CorruptKeyGroupIsReported) {
  Harness h(kAll);
  absl::Status s = h.backend().core().restore_key_group(3, "\x05garbage");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("key group 3"), std::string::npos);
}

}  // namespace
}  // namespace weir::detail
