// Keyed state tables: the typed storage behind every keyed state, window and
// timer, implemented by each state backend.
//
// A table maps (key group, key) to a value of type V for one named state of
// one operator subtask. The heap backend keeps objects (heap_state.h); the
// RocksDB backend keeps bytes (kv_state.h) behind a write-back cache of
// decoded entries, so both offer the same in-place access:
//   - find() returns the entry or null; get_or_create() returns it for
//     writing. Either pointer or reference stays valid until the next call
//     on the same table with another key, or until for_each / snapshot.
// Both backends snapshot into the same canonical per-key-group layout, so a
// snapshot of one restores into the other.
//
// Canonical key-group snapshot layout (inside a state file, see
// src/checkpoint/format.h):
//   varint num_states
//   per state: string name | u8 kind | [string type] | varint byte_length | entries
//   entries:   varint count | (key, value) * count   (weir::Serializer format)
// The type (weir::type_signature of key and value, "K->V") is present when
// the kind byte has bit kKindHasType set; state files of version 1 lack it.
// A restore compares it with the registered state's and refuses a change.
// With bit kKindHasChanges, `varint n | string changes * n` follows the
// entries (state files of version 4 on).
// A changelog checkpoint's delta files hold, in the same framing, each
// state's changes (layout at StateTableBase) instead of its entries.
//
// Confined to the task thread, except snapshots, which are immutable.
#ifndef WEIR_DETAIL_STATE_TABLE_H_
#define WEIR_DETAIL_STATE_TABLE_H_

#include <algorithm>
#include <climits>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "weir/detail/operator.h"
#include "weir/serializer.h"

namespace weir {

template <typename A, typename B>
struct Serializer<absl::flat_hash_map<A, B>> {
  static void write(ByteWriter& out, const absl::flat_hash_map<A, B>& m) {
    out.put_varint(m.size());
    for (const auto& [k, v] : m) {
      Serializer<A>::write(out, k);
      Serializer<B>::write(out, v);
    }
  }
  static std::string signature() { return "map<" + type_signature<A>() + "," + type_signature<B>() + ">"; }
  static absl::flat_hash_map<A, B> read(ByteReader& in) {
    absl::flat_hash_map<A, B> m;
    uint64_t n = in.get_length();
    m.reserve(n);
    for (uint64_t i = 0; i < n && in.ok(); ++i) {
      A k = Serializer<A>::read(in);
      B v = Serializer<B>::read(in);
      m.insert_or_assign(std::move(k), std::move(v));
    }
    return m;
  }
};

namespace detail {

// Sorts pairs by their first element and keeps, of equal ones, the last:
// the entries a map would hold after inserting them in order.
template <typename Pair>
void sort_keeping_last(std::vector<Pair>& v) {
  std::stable_sort(v.begin(), v.end(), [](const Pair& a, const Pair& b) { return a.first < b.first; });
  size_t out = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i + 1 < v.size() && v[i + 1].first == v[i].first) continue;
    if (out != i) v[out] = std::move(v[i]);
    ++out;
  }
  v.erase(v.begin() + static_cast<std::ptrdiff_t>(out), v.end());
}

// DO NOT CHANGE values: stored in checkpoints.
enum class StateKind : uint8_t { kValue = 0, kList = 1, kMap = 2, kReducing = 3 };
inline constexpr uint8_t kKindHasType = 0x80;
// In a key-group blob: the state's entries are followed by `varint n |
// string changes * n` (a state restored from a changelog and not yet
// registered, written back as it was read).
inline constexpr uint8_t kKindHasChanges = 0x40;
// The flags byte of a changes blob (layout at StateTableBase).
inline constexpr uint8_t kChangesCleared = 0x01;

// A value with the processing time of its last access, for states with a
// time-to-live. The stamp is serialized first (8 bytes, little-endian),
// where a RocksDB compaction filter reads it.
template <typename T>
struct TtlValue {
  int64_t stamp = 0;
  T value{};
  auto weir_fields() { return std::tie(stamp, value); }
};
template <typename V>
struct IsTtlValue : std::false_type {};
template <typename T>
struct IsTtlValue<TtlValue<T>> : std::true_type {};

// Writes `v` in Serializer format, leaving out expired TTL values (stamp <
// min_stamp) wherever they sit in a list or map: the entries of a TTL
// table's key group, and the elements of a TTL list or map state.
template <typename T>
void write_live(ByteWriter& out, const T& v, int64_t min_stamp);

namespace internal {
template <typename T>
struct LiveWriter {
  static void write(ByteWriter& out, const T& v, int64_t) { Serializer<T>::write(out, v); }
};
template <typename T>
struct LiveWriter<TtlValue<T>> {
  static void write(ByteWriter& out, const TtlValue<T>& v, int64_t min_stamp) {
    out.put_fixed<int64_t>(v.stamp);
    write_live(out, v.value, min_stamp);
  }
};
template <typename E>
struct LiveWriter<std::vector<TtlValue<E>>> {
  static void write(ByteWriter& out, const std::vector<TtlValue<E>>& v, int64_t min_stamp) {
    uint64_t live = 0;
    for (const auto& e : v) live += e.stamp >= min_stamp ? 1 : 0;
    out.put_varint(live);
    for (const auto& e : v) {
      if (e.stamp >= min_stamp) write_live(out, e, min_stamp);
    }
  }
};
template <typename A, typename B>
struct LiveWriter<absl::flat_hash_map<A, TtlValue<B>>> {
  static void write(ByteWriter& out, const absl::flat_hash_map<A, TtlValue<B>>& m, int64_t min_stamp) {
    uint64_t live = 0;
    for (const auto& [k, v] : m) live += v.stamp >= min_stamp ? 1 : 0;
    out.put_varint(live);
    for (const auto& [k, v] : m) {
      if (v.stamp < min_stamp) continue;
      Serializer<A>::write(out, k);
      write_live(out, v, min_stamp);
    }
  }
};
}  // namespace internal

template <typename T>
void write_live(ByteWriter& out, const T& v, int64_t min_stamp) {
  internal::LiveWriter<T>::write(out, v, min_stamp);
}

// How a table with TTL values expires them: entries with stamp <= now - ttl.
struct TableTtl {
  int64_t ttl_ms = 0;
  const ProcessingTimeService* clock = nullptr;
};

// The oldest stamp still live now in a table of V with `ttl`, or INT64_MIN
// when nothing expires (no TTL, or V is not a TtlValue).
template <typename V>
int64_t min_live_stamp(const TableTtl& ttl) {
  if (!IsTtlValue<V>::value || ttl.ttl_ms <= 0 || ttl.clock == nullptr) return INT64_MIN;
  return ttl.clock->now_ms() - ttl.ttl_ms + 1;
}

// Immutable view of one table's key groups, written off the task thread.
class TableSnapshot {
 public:
  virtual ~TableSnapshot() = default;
  // Appends `varint count | (key, value) * count` of key group `kg`. Called
  // at most once per key group: a snapshot may let go of a group it wrote.
  virtual void write_entries(int kg, ByteWriter& out) const = 0;
};

class StateTableBase {
 public:
  StateTableBase(std::string name, StateKind kind, std::string type)
      : name_(std::move(name)), kind_(kind), type_(std::move(type)) {}
  virtual ~StateTableBase() = default;
  const std::string& name() const { return name_; }
  StateKind kind() const { return kind_; }
  // weir::type_signature of key and value: "K->V".
  const std::string& type() const { return type_; }
  // Synchronous part of a snapshot: an immutable view, cheap to take.
  virtual std::shared_ptr<const TableSnapshot> snapshot() = 0;
  // Writes cached entries through to the store (RocksDB); nothing for heap.
  virtual void flush() {}
  // Replaces key group `kg` with the entries in `in` (canonical layout).
  // A restore of several key groups calls them in ascending order between
  // begin_restore and end_restore.
  virtual bool restore_entries(int kg, ByteReader& in) = 0;
  virtual void begin_restore() {}
  virtual void end_restore() {}
  // Removes every entry of key group `kg`: batch execution forgets a key's
  // state once its sorted input was processed.
  virtual void clear_key_group(int kg) = 0;

  // Changelog checkpoints (heap tables). From the first seal_changes() on,
  // the table records the keys each write touches. seal_changes(id) closes
  // the changes since the last seal as those of checkpoint `id`;
  // snapshot_changes() (right after a seal) is a view that writes, per key
  // group, every change sealed after the last confirmed checkpoint in the
  // changes layout below; changes_confirmed(id) forgets the changes of `id`
  // and before (a checkpoint that holds them completed). apply_changes()
  // applies one such blob on restore, after the key group's entries.
  //   changes: u8 flags (kChangesCleared: the key group was emptied first) |
  //            varint removed | key * removed | varint count | (key, value) * count
  virtual bool tracks_changes() const { return false; }
  virtual void seal_changes(int64_t /*checkpoint_id*/) {}
  virtual std::shared_ptr<const TableSnapshot> snapshot_changes() { return nullptr; }
  virtual void changes_confirmed(int64_t /*checkpoint_id*/) {}
  virtual bool apply_changes(int kg, ByteReader& in) = 0;

 private:
  const std::string name_;
  const StateKind kind_;
  const std::string type_;
};

template <typename K, typename V>
class StateTable : public StateTableBase {
 public:
  StateTable(std::string name, StateKind kind)
      : StateTableBase(std::move(name), kind, type_signature<K>() + "->" + type_signature<V>()) {}
  virtual const V* find(int kg, const K& key) = 0;
  // Returns the entry for writing, default-constructed when absent.
  virtual V& get_or_create(int kg, const K& key) = 0;
  // Replaces the entry (a blind write: RocksDB does not read the old one).
  virtual void put(int kg, const K& key, V value) = 0;
  virtual void erase(int kg, const K& key) = 0;
  // Visits every entry of every key group (read-only).
  virtual void for_each(const std::function<void(const K&, const V&)>& fn) = 0;
};

}  // namespace detail
}  // namespace weir

#endif  // WEIR_DETAIL_STATE_TABLE_H_
