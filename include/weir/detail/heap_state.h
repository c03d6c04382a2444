// The heap state table: typed entries in per-key-group hash maps, snapshotted
// copy-on-write.
//
// Each table holds one `shared_ptr<Map>` per key group of the subtask's
// range. A snapshot copies those pointers (O(key groups), on the task thread)
// and writes the maps later on another thread. The first write to a key group
// whose map is still shared with a snapshot clones that key group's map, so
// the snapshot stays immutable and the task never waits for the writer. The
// cost is one copy of each key group touched while the snapshot is written.
// The snapshot lets go of a key group as soon as it is written (each group
// is written once), so the old copy is freed then, and a group the task
// touches only after that is not copied at all.
//
// Changelog checkpoints: once sealed the first time, the table records per
// key group which keys were written (a set of keys, not values). A delta
// snapshot serializes, on the task thread, each key touched since the last
// confirmed checkpoint with its value (or its removal): what changed, not
// the state, and no views of key groups, so the task's writes while the
// delta is written out copy nothing.
//
// Confined to the task thread, except snapshots, which are immutable.
#ifndef WEIR_DETAIL_HEAP_STATE_H_
#define WEIR_DETAIL_HEAP_STATE_H_

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "weir/detail/state_table.h"
#include "weir/key_group.h"

// ThreadSanitizer does not model std::atomic_thread_fence, so it cannot see
// the order writable() relies on (the snapshot writer's last read of a
// group, then its reference dropped; the task seeing a count of 1, then a
// fence). These tell it. No-ops in other builds.
#if defined(__SANITIZE_THREAD__)
#define WEIR_HEAP_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define WEIR_HEAP_TSAN 1
#endif
#endif
#ifdef WEIR_HEAP_TSAN
extern "C" void __tsan_acquire(void* addr);
extern "C" void __tsan_release(void* addr);
#endif

namespace weir::detail {

inline void heap_group_released([[maybe_unused]] const void* group) {
#ifdef WEIR_HEAP_TSAN
  __tsan_release(const_cast<void*>(group));
#endif
}
inline void heap_group_acquired([[maybe_unused]] const void* group) {
  std::atomic_thread_fence(std::memory_order_acquire);
#ifdef WEIR_HEAP_TSAN
  __tsan_acquire(const_cast<void*>(group));
#endif
}

template <typename K, typename V>
class HeapTable final : public StateTable<K, V> {
 public:
  using Map = absl::flat_hash_map<K, V>;

  HeapTable(std::string name, StateKind kind, KeyGroupRange range, TableTtl ttl = {})
      : StateTable<K, V>(std::move(name), kind), range_(range), groups_(range.size()), ttl_(ttl) {
    for (auto& g : groups_) g = std::make_shared<Map>();
  }

  const V* find(int kg, const K& key) override {
    const Map& m = *groups_[kg - range_.start];
    auto it = m.find(key);
    return it == m.end() ? nullptr : &it->second;
  }
  V& get_or_create(int kg, const K& key) override {
    if (tracking_) changed(kg, key);
    return writable(kg)[key];
  }
  void put(int kg, const K& key, V value) override {
    if (tracking_) changed(kg, key);
    writable(kg).insert_or_assign(key, std::move(value));
  }
  void erase(int kg, const K& key) override {
    const Map& m = *groups_[kg - range_.start];
    if (m.find(key) == m.end()) return;  // avoid a copy-on-write for nothing
    if (tracking_) changed(kg, key);
    writable(kg).erase(key);
  }
  void clear_key_group(int kg) override {
    std::shared_ptr<Map>& g = groups_[kg - range_.start];
    if (tracking_ && !g->empty()) {
      Changes& c = open_;
      c.keys[kg - range_.start].clear();
      c.cleared[kg - range_.start] = 1;
    }
    if (g->empty()) return;
    if (g.use_count() > 1) {
      g = std::make_shared<Map>();  // a snapshot keeps the old one
    } else {
      heap_group_acquired(g.get());
      g->clear();
    }
  }
  void for_each(const std::function<void(const K&, const V&)>& fn) override {
    for (const auto& g : groups_) {
      for (const auto& [k, v] : *g) fn(k, v);
    }
  }

  size_t size() const {
    size_t n = 0;
    for (const auto& g : groups_) n += g->size();
    return n;
  }

  // Expired TTL entries, and expired elements of TTL lists and maps, are
  // left out of the snapshot (cleanup on a full snapshot; the live entry
  // goes at its next access).
  std::shared_ptr<const TableSnapshot> snapshot() override {
    return std::make_shared<Snapshot>(range_, groups_, min_live_stamp<V>(ttl_));
  }

  bool restore_entries(int kg, ByteReader& in) override {
    auto restored = std::make_shared<Map>(Serializer<Map>::read(in));
    if (!in.ok()) return false;
    groups_[kg - range_.start] = std::move(restored);
    return true;
  }

  bool tracks_changes() const override { return tracking_; }
  void seal_changes(int64_t checkpoint_id) override {
    if (tracking_) {
      open_.id = checkpoint_id;
      sealed_.push_back(std::move(open_));
      // Checkpoints that never complete would keep a set each: the oldest
      // two become one (a confirmation then forgets them later, and a delta
      // may write a key once more than needed).
      if (sealed_.size() > kMaxSealed) merge_oldest();
    }
    tracking_ = true;
    open_ = Changes(range_.size());
  }
  // Serialized here, on the task thread: the delta holds bytes, not views
  // of key groups, so the task's writes while it is written copy nothing
  // (views of whole groups would be cloned by the first write to each).
  std::shared_ptr<const TableSnapshot> snapshot_changes() override {
    auto snap = std::make_shared<DeltaSnapshot>(range_);
    const int64_t min_stamp = min_live_stamp<V>(ttl_);
    for (int i = 0; i < range_.size(); ++i) {
      ByteWriter out(&snap->groups[i]);
      write_changes(i, min_stamp, out);
    }
    return snap;
  }
  void changes_confirmed(int64_t checkpoint_id) override {
    while (!sealed_.empty() && sealed_.front().id <= checkpoint_id) sealed_.erase(sealed_.begin());
  }
  bool apply_changes(int kg, ByteReader& in) override {
    const uint8_t flags = in.get_fixed<uint8_t>();
    if ((flags & kChangesCleared) != 0) groups_[kg - range_.start] = std::make_shared<Map>();
    Map& m = writable(kg);
    const uint64_t removed = in.get_length();
    for (uint64_t i = 0; i < removed && in.ok(); ++i) m.erase(Serializer<K>::read(in));
    const uint64_t n = in.get_length();
    for (uint64_t i = 0; i < n && in.ok(); ++i) {
      K k = Serializer<K>::read(in);
      V v = Serializer<V>::read(in);
      m.insert_or_assign(std::move(k), std::move(v));
    }
    return in.ok();
  }

 private:
  // The keys written in one checkpoint interval, per key group.
  struct Changes {
    explicit Changes(int groups) : keys(groups), cleared(groups, 0) {}
    int64_t id = 0;  // the checkpoint that sealed them
    std::vector<absl::flat_hash_set<K>> keys;
    std::vector<uint8_t> cleared;  // the group was emptied first
  };

  // The changes of every key group, serialized by snapshot_changes().
  class DeltaSnapshot final : public TableSnapshot {
   public:
    explicit DeltaSnapshot(KeyGroupRange range) : groups(range.size()), range_(range) {}
    void write_entries(int kg, ByteWriter& out) const override {
      std::string& g = groups[static_cast<size_t>(kg - range_.start)];
      out.put_bytes(g.data(), g.size());
      std::string().swap(g);  // written once
    }

    mutable std::vector<std::string> groups;

   private:
    const KeyGroupRange range_;
  };

  struct PtrHash {
    size_t operator()(const K* k) const { return absl::Hash<K>{}(*k); }
  };
  struct PtrEq {
    bool operator()(const K* a, const K* b) const { return *a == *b; }
  };

  // The changes of key group index `i` since the last confirmed checkpoint
  // (every sealed set): each touched key's value now, or its removal.
  void write_changes(int i, int64_t min_stamp, ByteWriter& out) const {
    uint8_t flags = 0;
    size_t touched = 0;
    for (const auto& c : sealed_) {
      flags |= c.cleared[i] ? kChangesCleared : 0;
      touched += c.keys[i].size();
    }
    out.put_fixed<uint8_t>(flags);
    if (touched == 0) {
      out.put_varint(0);
      out.put_varint(0);
      return;
    }
    const Map& g = *groups_[i];
    // Keys touched in several intervals are written once.
    absl::flat_hash_set<const K*, PtrHash, PtrEq> seen;
    std::vector<const K*> removed;
    std::vector<typename Map::const_iterator> live;
    live.reserve(touched);
    for (const auto& c : sealed_) {
      for (const K& k : c.keys[i]) {
        if (sealed_.size() > 1 && !seen.insert(&k).second) continue;
        auto it = g.find(k);
        bool is_live = it != g.end();
        if constexpr (IsTtlValue<V>::value) is_live = is_live && it->second.stamp >= min_stamp;
        if (is_live) {
          live.push_back(it);
        } else {
          removed.push_back(&k);
        }
      }
    }
    out.put_varint(removed.size());
    for (const K* k : removed) Serializer<K>::write(out, *k);
    out.put_varint(live.size());
    for (const auto& it : live) {
      Serializer<K>::write(out, it->first);
      if (min_stamp == INT64_MIN) {
        Serializer<V>::write(out, it->second);
      } else {
        write_live(out, it->second, min_stamp);
      }
    }
  }

  static constexpr size_t kMaxSealed = 8;

  void merge_oldest() {
    Changes& newer = sealed_[1];
    const Changes& older = sealed_[0];
    for (size_t i = 0; i < newer.keys.size(); ++i) {
      // A clear in the newer set removed the older set's keys: they are
      // written as removals, after the clear, which changes nothing.
      newer.keys[i].insert(older.keys[i].begin(), older.keys[i].end());
      newer.cleared[i] |= older.cleared[i];
    }
    sealed_.erase(sealed_.begin());
  }

  void changed(int kg, const K& key) {
    open_.keys[kg - range_.start].insert(key);
  }

  class Snapshot final : public TableSnapshot {
   public:
    Snapshot(KeyGroupRange range, std::vector<std::shared_ptr<Map>> groups, int64_t min_stamp)
        : range_(range), groups_(std::move(groups)), min_stamp_(min_stamp) {}
    void write_entries(int kg, ByteWriter& out) const override {
      std::shared_ptr<Map> g = std::move(groups_[kg - range_.start]);
      if (min_stamp_ == INT64_MIN) {
        Serializer<Map>::write(out, *g);
      } else {
        write_live(out, *g, min_stamp_);
      }
      heap_group_released(g.get());
      // `g` goes here: the live table writes this group in place again.
    }
    ~Snapshot() override {
      for (const auto& g : groups_) {
        if (g != nullptr) heap_group_released(g.get());
      }
    }

   private:
    const KeyGroupRange range_;
    // A group's view is released once written (write_entries, once per group).
    mutable std::vector<std::shared_ptr<Map>> groups_;
    const int64_t min_stamp_;  // TTL entries below it are expired
  };

  Map& writable(int kg) {
    std::shared_ptr<Map>& g = groups_[kg - range_.start];
    // Only this thread creates references, so a count of 1 cannot grow
    // behind our back; a stale count > 1 only costs an unneeded copy.
    if (g.use_count() > 1) {
      g = std::make_shared<Map>(*g);
    } else {
      // A count that fell to 1 when the snapshot writer let go: its reads of
      // the map happen before our writes (pairs with the release decrement).
      heap_group_acquired(g.get());
    }
    return *g;
  }

  const KeyGroupRange range_;
  std::vector<std::shared_ptr<Map>> groups_;
  const TableTtl ttl_;
  // Changelog: whether writes are recorded, into `open_`; the sealed
  // changes not yet confirmed, oldest first.
  bool tracking_ = false;
  Changes open_{0};
  std::vector<Changes> sealed_;
};

}  // namespace weir::detail

#endif  // WEIR_DETAIL_HEAP_STATE_H_
