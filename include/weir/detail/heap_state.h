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
// Confined to the task thread, except snapshots, which are immutable.
#ifndef WEIR_DETAIL_HEAP_STATE_H_
#define WEIR_DETAIL_HEAP_STATE_H_

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
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
  V& get_or_create(int kg, const K& key) override { return writable(kg)[key]; }
  void put(int kg, const K& key, V value) override { writable(kg).insert_or_assign(key, std::move(value)); }
  void erase(int kg, const K& key) override {
    const Map& m = *groups_[kg - range_.start];
    if (m.find(key) == m.end()) return;  // avoid a copy-on-write for nothing
    writable(kg).erase(key);
  }
  void clear_key_group(int kg) override {
    std::shared_ptr<Map>& g = groups_[kg - range_.start];
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

 private:
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
};

}  // namespace weir::detail

#endif  // WEIR_DETAIL_HEAP_STATE_H_
