// Changelog checkpoints of heap state: a delta holds what changed since the
// last confirmed checkpoint and nothing else, and a chain (base, then its
// deltas in order) restores exactly the state of the snapshot that ended
// it, into heap or RocksDB tables, at any key-group range. The snapshots
// are written as the asynchronous writer does (Harness::write) and their
// chains kept in memory; the files and the metadata are tested with the
// checkpoint storages and in tests/kill_restore_test.cc.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "testing/keyed_state_harness.h"
#include "testing/seed.h"

namespace weir::detail {
namespace {

using Groups = std::map<int, std::string>;

// A heap backend taking changelog snapshots, and what its chains hold: each
// written file's key groups by path ("c<id>").
class ChangelogTest : public ::testing::Test {
 protected:
  struct Taken {
    int64_t id;
    bool delta;
    std::vector<ChangelogFile> chain;  // base first, this snapshot's file last
    size_t bytes;                      // of this snapshot's file
  };

  // Takes changelog snapshot `id` of `h` and writes it; `written`: the
  // writer reports its file (a checkpoint whose writer failed does not).
  Taken take(Harness& h, int64_t id, bool written = true) {
    SnapshotOptions options;
    options.checkpoint_id = id;
    options.changelog_allowed = true;
    options.materialize_interval_ms = materialize_ms_;
    auto snap = h.backend().core().snapshot(options);
    EXPECT_TRUE(snap.ok()) << snap.status();
    ChangelogSnapshot* changelog = (*snap)->changelog();
    EXPECT_NE(changelog, nullptr);
    Groups groups = Harness::write(**snap);
    ChangelogFile file;
    file.path = "c" + std::to_string(id);
    file.delta = changelog->delta();
    for (const auto& [kg, bytes] : groups) file.size += bytes.size();
    files_[file.path] = std::move(groups);
    Taken t{id, file.delta, changelog->preceding(), file.size};
    t.chain.push_back(file);
    if (written) changelog->written(file);
    return t;
  }

  // A backend of `kind` over `range` restored from `chain`.
  std::unique_ptr<Harness> restore(const std::vector<ChangelogFile>& chain, StateBackendKind kind,
                                   KeyGroupRange range = kAll) {
    auto h = std::make_unique<Harness>(range, kind);
    for (const ChangelogFile& f : chain) {
      for (const auto& [kg, bytes] : files_.at(f.path)) {
        if (!range.contains(kg)) continue;
        absl::Status s = f.delta ? h->backend().core().restore_key_group_changes(kg, bytes)
                                 : h->backend().core().restore_key_group(kg, bytes);
        EXPECT_TRUE(s.ok()) << s;
      }
    }
    return h;
  }

  std::map<std::string, Groups> files_;
  int64_t materialize_ms_ = 10 * 60 * 1000;
};

// The state of the job under test: a value and a map per key, as a model.
struct Model {
  std::map<std::string, int64_t> values;
  std::map<std::string, std::map<std::string, int>> maps;
};

void expect_holds(Harness& h, const Model& m, const std::vector<std::string>& keys, KeyGroupRange range,
                  const std::string& what) {
  auto& value = h.ctx().get_state(ValueStateDescriptor<int64_t>{"v"});
  auto& map = h.ctx().get_map_state(MapStateDescriptor<std::string, int>{"m"});
  for (const std::string& k : keys) {
    if (!range.contains(key_group_of(k, kMaxP))) continue;
    h.set_key(k);
    auto v = m.values.find(k);
    ASSERT_EQ(value.value(), v == m.values.end() ? std::nullopt : std::optional<int64_t>(v->second))
        << what << ": value of " << k;
    auto mm = m.maps.find(k);
    std::vector<std::pair<std::string, int>> want;
    if (mm != m.maps.end()) want.assign(mm->second.begin(), mm->second.end());
    auto got = map.entries();
    std::sort(got.begin(), got.end());
    ASSERT_EQ(got, want) << what << ": map of " << k;
  }
}

TEST_F(ChangelogTest, EveryChainRestoresItsSnapshotOnBothBackendsAndAnyRange) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  Harness h(kAll);
  auto& value = h.ctx().get_state(ValueStateDescriptor<int64_t>{"v"});
  auto& map = h.ctx().get_map_state(MapStateDescriptor<std::string, int>{"m"});
  std::vector<std::string> keys;
  for (int i = 0; i < 2000; ++i) keys.push_back("k" + std::to_string(i));
  Model model;
  auto write_some = [&](int n) {
    for (int i = 0; i < n; ++i) {
      const std::string& k = keys[rng() % keys.size()];
      h.set_key(k);
      switch (rng() % 6) {
        case 0:
          value.clear();
          model.values.erase(k);
          break;
        case 1:
        case 2: {
          int64_t x = static_cast<int64_t>(rng() % 1000);
          value.update(x);
          model.values[k] = x;
          break;
        }
        case 3:
          value.modify() += 1;
          model.values[k] += 1;
          break;
        case 4: {
          std::string mk = "u" + std::to_string(rng() % 5);
          map.put(mk, static_cast<int>(i));
          model.maps[k][mk] = static_cast<int>(i);
          break;
        }
        default: {
          std::string mk = "u" + std::to_string(rng() % 5);
          map.remove(mk);
          auto it = model.maps.find(k);
          if (it != model.maps.end()) {
            it->second.erase(mk);
            if (it->second.empty()) model.maps.erase(it);
          }
        }
      }
    }
  };
  write_some(6000);
  Taken base = take(h, 1);
  EXPECT_FALSE(base.delta) << "the first changelog snapshot is a base";
  h.backend().core().checkpoint_complete(1);
  int deltas = 0;
  for (int64_t id = 2; id <= 12; ++id) {
    write_some(static_cast<int>(rng() % 60));
    // Some checkpoints fail (their file is written but they never
    // complete); the next delta holds their changes again.
    const bool completes = rng() % 4 != 0;
    const Model at = model;
    Taken t = take(h, id);
    if (t.delta) {
      ++deltas;
      EXPECT_LT(t.bytes, base.bytes / 4) << "checkpoint " << id << ": a delta of a few keys";
    } else {
      base = t;
    }
    // The chain continues the last completed checkpoint's.
    for (KeyGroupRange range : {kAll, KeyGroupRange{0, 5}, KeyGroupRange{5, kMaxP}}) {
      for (StateBackendKind kind : {StateBackendKind::kHeap, StateBackendKind::kRocksDb}) {
        auto restored = restore(t.chain, kind, range);
        expect_holds(*restored, at, keys, range, "checkpoint " + std::to_string(id));
      }
    }
    if (completes) h.backend().core().checkpoint_complete(id);
  }
  EXPECT_GE(deltas, 8) << "deltas of a few keys against a base of thousands";
}

TEST_F(ChangelogTest, ADeltaHoldsOnlyTheKeysWrittenAndTheirRemovals) {
  Harness h(kAll);
  auto& value = h.ctx().get_state(ValueStateDescriptor<std::string>{"v"});
  for (int i = 0; i < 1000; ++i) {
    h.set_key("k" + std::to_string(i));
    value.update(std::string(100, 'x'));
  }
  Taken base = take(h, 1);
  h.backend().core().checkpoint_complete(1);
  for (int i = 0; i < 10; ++i) {
    h.set_key("k" + std::to_string(i));
    value.update("changed");
  }
  h.set_key("k500");
  value.clear();
  h.set_key("k999");
  (void)value.peek();  // a read changes nothing
  Taken delta = take(h, 2);
  ASSERT_TRUE(delta.delta);
  // 10 values of 7 bytes and one removal, with their keys and the framing
  // of 16 key groups.
  EXPECT_LT(delta.bytes, 600u) << "base " << base.bytes;
  EXPECT_GT(base.bytes, 100'000u);
  auto restored = restore(delta.chain, StateBackendKind::kHeap);
  auto& rv = restored->ctx().get_state(ValueStateDescriptor<std::string>{"v"});
  restored->set_key("k3");
  EXPECT_EQ(rv.value(), "changed");
  restored->set_key("k500");
  EXPECT_EQ(rv.value(), std::nullopt);
  restored->set_key("k999");
  EXPECT_EQ(rv.value(), std::string(100, 'x'));
}

TEST_F(ChangelogTest, AClearedKeyGroupIsClearedOnRestore) {
  Harness h(kAll);
  auto& value = h.ctx().get_state(ValueStateDescriptor<int64_t>{"v"});
  std::vector<std::string> keys;
  for (int i = 0; i < 200; ++i) keys.push_back("k" + std::to_string(i));
  for (const auto& k : keys) {
    h.set_key(k);
    value.update(1);
  }
  take(h, 1);
  h.backend().core().checkpoint_complete(1);
  const int cleared = key_group_of(keys[0], kMaxP);
  h.backend().core().clear_key_group(cleared);
  h.set_key(keys[0]);
  value.update(2);  // written again after the clear
  Taken t = take(h, 2);
  ASSERT_TRUE(t.delta);
  auto restored = restore(t.chain, StateBackendKind::kRocksDb);
  auto& rv = restored->ctx().get_state(ValueStateDescriptor<int64_t>{"v"});
  for (const auto& k : keys) {
    restored->set_key(k);
    const int kg = key_group_of(k, kMaxP);
    std::optional<int64_t> want = k == keys[0] ? 2 : (kg == cleared ? std::optional<int64_t>() : 1);
    EXPECT_EQ(rv.value(), want) << k;
  }
}

// Checkpoints that never complete: their sets of keys are merged (the
// oldest two, past eight) and the next delta still holds every change
// since the last completed one, a cleared key group included.
TEST_F(ChangelogTest, ChangesOfCheckpointsThatNeverCompleteAreMergedAndKept) {
  Harness h(kAll);
  auto& value = h.ctx().get_state(ValueStateDescriptor<int64_t>{"v"});
  std::map<std::string, int64_t> model;
  for (int i = 0; i < 300; ++i) {
    h.set_key("k" + std::to_string(i));
    value.update(i);
    model["k" + std::to_string(i)] = i;
  }
  take(h, 1);
  h.backend().core().checkpoint_complete(1);
  const int cleared = key_group_of("k0", kMaxP);
  Taken last{};
  for (int64_t id = 2; id <= 25; ++id) {
    const std::string k = "k" + std::to_string(id * 7 % 300);
    h.set_key(k);
    value.update(1000 + id);
    model[k] = 1000 + id;
    if (id == 6) {
      h.backend().core().clear_key_group(cleared);
      std::erase_if(model, [&](const auto& e) { return key_group_of(e.first, kMaxP) == cleared; });
    }
    last = take(h, id);  // never completes
  }
  ASSERT_TRUE(last.delta);
  ASSERT_EQ(last.chain.size(), 2u) << "a delta on checkpoint 1's base";
  auto restored = restore(last.chain, StateBackendKind::kHeap);
  auto& rv = restored->ctx().get_state(ValueStateDescriptor<int64_t>{"v"});
  for (int i = 0; i < 300; ++i) {
    const std::string k = "k" + std::to_string(i);
    restored->set_key(k);
    auto it = model.find(k);
    EXPECT_EQ(rv.value(), it == model.end() ? std::nullopt : std::optional<int64_t>(it->second)) << k;
  }
}

// A chain is followed only once its checkpoint completed, and only when no
// later snapshot was taken meanwhile (that one, on the older chain, could
// complete and subsume it while a delta followed its files).
TEST_F(ChangelogTest, ADeltaFollowsTheNewestCompletedChainTakenLast) {
  Harness h(kAll);
  auto& value = h.ctx().get_state(ValueStateDescriptor<int64_t>{"v"});
  for (int i = 0; i < 100; ++i) {  // a base that outweighs the deltas
    h.set_key("k" + std::to_string(i));
    value.update(i);
  }
  h.set_key("a");
  value.update(1);
  take(h, 1);
  h.backend().core().checkpoint_complete(1);
  value.update(2);
  Taken second = take(h, 2);
  ASSERT_EQ(second.chain.size(), 2u);
  value.update(3);
  Taken third = take(h, 3);  // before checkpoint 2's completion is known
  h.backend().core().checkpoint_complete(2);
  value.update(4);
  Taken fourth = take(h, 4);
  ASSERT_EQ(fourth.chain.size(), 2u) << "checkpoint 2 is not followed: 3 was taken after it";
  EXPECT_EQ(fourth.chain.front().path, "c1");
  h.backend().core().checkpoint_complete(4);
  value.update(5);
  Taken fifth = take(h, 5);
  ASSERT_EQ(fifth.chain.size(), 3u);
  EXPECT_EQ(fifth.chain[1].path, "c4");
  auto restored = restore(fifth.chain, StateBackendKind::kHeap);
  auto& rv = restored->ctx().get_state(ValueStateDescriptor<int64_t>{"v"});
  restored->set_key("a");
  EXPECT_EQ(rv.value(), 5);
  (void)third;
}

// A new base when the deltas since the base outweigh it, or when the base is
// older than the materialization interval.
TEST_F(ChangelogTest, ANewBaseWhenTheDeltasOutweighTheBaseOrItIsTooOld) {
  Harness h(kAll);
  auto& value = h.ctx().get_state(ValueStateDescriptor<int64_t>{"v"});
  for (int i = 0; i < 100; ++i) {
    h.set_key("k" + std::to_string(i));
    value.update(i);
  }
  take(h, 1);
  h.backend().core().checkpoint_complete(1);
  int64_t id = 2;
  int deltas = 0;
  for (; id < 50; ++id) {
    for (int i = 0; i < 30; ++i) {
      h.set_key("k" + std::to_string(i));
      value.update(id);
    }
    Taken t = take(h, id);
    h.backend().core().checkpoint_complete(id);
    if (!t.delta) break;
    ++deltas;
  }
  EXPECT_GE(deltas, 2);
  EXPECT_LT(id, 50) << "the deltas grew past the base without a new one";
  materialize_ms_ = 0;
  h.set_key("k0");
  value.update(-1);
  EXPECT_FALSE(take(h, ++id).delta) << "a base older than the interval is replaced";
}

// A state restored from a chain and not registered yet is written back as
// it was read, changes included, by a base and by a savepoint, and
// restores once registered.
TEST_F(ChangelogTest, AnUnregisteredStateKeepsItsChangesThroughABaseAndASavepoint) {
  Harness h(kAll);
  auto& value = h.ctx().get_state(ValueStateDescriptor<int64_t>{"v"});
  for (int i = 0; i < 50; ++i) {
    h.set_key("k" + std::to_string(i));
    value.update(i);
  }
  take(h, 1);
  h.backend().core().checkpoint_complete(1);
  h.set_key("k7");
  value.update(700);
  Taken delta = take(h, 2);
  auto unregistered = restore(delta.chain, StateBackendKind::kHeap);
  ASSERT_TRUE(unregistered->backend().core().has_unregistered("v"));
  Taken rebased = take(*unregistered, 3);  // a restored backend starts a new chain
  ASSERT_FALSE(rebased.delta);
  auto savepoint = unregistered->backend().core().snapshot();
  ASSERT_TRUE(savepoint.ok());
  ASSERT_EQ((*savepoint)->changelog(), nullptr);
  Groups canonical = Harness::write(**savepoint);
  for (int from = 0; from < 2; ++from) {
    std::unique_ptr<Harness> r;
    if (from == 0) {
      r = restore(rebased.chain, StateBackendKind::kRocksDb);
    } else {
      r = std::make_unique<Harness>(kAll, StateBackendKind::kRocksDb);
      r->restore(canonical);
    }
    auto& rv = r->ctx().get_state(ValueStateDescriptor<int64_t>{"v"});
    for (int i = 0; i < 50; ++i) {
      r->set_key("k" + std::to_string(i));
      EXPECT_EQ(rv.value(), i == 7 ? 700 : i) << (from == 0 ? "base" : "savepoint") << " k" << i;
    }
  }
}

}  // namespace
}  // namespace weir::detail
