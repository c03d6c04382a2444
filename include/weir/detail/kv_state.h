// The state table of the RocksDB backend, over an ordered byte store.
//
// Layout (one RocksDB instance per keyed operator subtask, one column family
// per state, named after the state):
//   key   = u16 key group, big-endian | Serializer<K>(key)
//   value = Serializer<V>(value)
// The key group leads, so one key group, or a range of them, is one
// contiguous scan: snapshots and rescaling read ranges, not keys. Map and
// list states keep a key's whole map or list in one value.
//
// A table keeps a write-back cache of decoded entries (absent keys
// included), bounded by KvStore::cache_bytes() per table: a hit costs a hash
// probe, as on the heap backend, and a changed entry is encoded and written
// once when it leaves the cache or before for_each and snapshots, not once
// per record. When the cache is full, the dirty entries go to the store,
// entries not touched since the last eviction leave, and if that freed too
// little, others do until half the budget is free (a bulk CLOCK). An
// entry's size is estimated from its encoded size when it was last read or
// written, so a value that grows in the cache counts at its old size until
// the next write-back. Operators read and modify entries in place exactly as
// with the heap backend.
//
// The store itself (src/state/rocksdb_store.cc) is reached through KvStore,
// so no RocksDB header appears here. Store errors (an I/O error, a full disk)
// throw std::runtime_error naming the store and the cause; the task fails and
// the job restarts from its last checkpoint.
//
// Confined to the task thread, except views, which are immutable.
#ifndef WEIR_DETAIL_KV_STATE_H_
#define WEIR_DETAIL_KV_STATE_H_

#include <climits>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "weir/detail/operator.h"
#include "weir/detail/state_table.h"
#include "weir/key_group.h"

namespace weir::detail {

inline void put_key_group_prefix(std::string* out, int kg) {
  out->push_back(static_cast<char>((kg >> 8) & 0xff));
  out->push_back(static_cast<char>(kg & 0xff));
}
inline constexpr size_t kKeyGroupPrefixSize = 2;

using KvVisitor = std::function<void(std::string_view key, std::string_view value)>;

// A consistent, immutable view of a store (a RocksDB snapshot).
class KvView {
 public:
  virtual ~KvView() = default;
  // Visits the entries of column `cf` whose keys start with `prefix`, in key order.
  virtual void scan(int cf, std::string_view prefix, const KvVisitor& fn) const = 0;
};

class KvStore {
 public:
  virtual ~KvStore() = default;
  // The column family of state `name`, created when absent. With `ttl_ms`
  // > 0 its values start with an 8-byte stamp (TtlValue) and compactions
  // drop those older than ttl_ms (by the wall clock).
  virtual int column(const std::string& name, int64_t ttl_ms = 0) = 0;
  // False when absent.
  virtual bool get(int cf, std::string_view key, std::string* value) = 0;
  virtual void put(int cf, std::string_view key, std::string_view value) = 0;
  // Puts `entries` (keys ascending and unique) in one write, each landing
  // next to the one before in the memtable.
  virtual void put_all(int cf, const std::vector<std::pair<std::string_view, std::string_view>>& entries) = 0;
  virtual void erase(int cf, std::string_view key) = 0;
  // Removes every entry whose key starts with `prefix`.
  virtual void erase_prefix(int cf, std::string_view prefix) = 0;
  // A bulk load of column `cf` (a restore): bulk_put calls between
  // bulk_begin and bulk_end pass entries in ascending key order, keys
  // unique; they go into one SST file, ingested by bulk_end, bypassing the
  // memtable.
  virtual void bulk_begin(int cf) = 0;
  virtual void bulk_put(int cf, const std::vector<std::pair<std::string, std::string_view>>& entries) = 0;
  virtual void bulk_end(int cf) = 0;
  virtual void scan(int cf, std::string_view prefix, const KvVisitor& fn) = 0;
  // Pins the current contents; writes after the call do not show in the view.
  virtual std::shared_ptr<const KvView> pin() = 0;
  // A native snapshot (a RocksDB checkpoint: flush, then hard links) for
  // incremental checkpoints; `states` are listed in it for restoring.
  virtual absl::StatusOr<std::unique_ptr<NativeSnapshot>> native_snapshot(
      std::vector<StateMeta> states) = 0;
  // Checkpoint `checkpoint_id` completed: its uploads may be referenced again.
  virtual void checkpoint_complete(int64_t checkpoint_id) = 0;
  // Compacts every column family now (TTL filters run).
  virtual void compact() = 0;
  // The budget of each table's cache of decoded entries, in estimated
  // bytes (see KvTable); tables read it when they are created.
  size_t cache_bytes() const { return cache_bytes_; }
  void set_cache_bytes(size_t bytes) { cache_bytes_ = bytes; }

 private:
  size_t cache_bytes_ = 0;
};

// Appends `varint count | (key, value) * count` of key group `kg` of column
// `cf` in canonical layout: keys without their key-group prefix. With
// `min_stamp`, values are TtlValues and those stamped before it are left out.
// `scan` visits a column's entries under a prefix (a store's or a view's).
using KvScan = std::function<void(int cf, std::string_view prefix, const KvVisitor& fn)>;
void write_canonical_entries(const KvScan& scan, int cf, int kg, ByteWriter& out, int64_t min_stamp = INT64_MIN);

// The part of a KvTable that does not depend on its types: the store and
// the table's column, restores and snapshots of its bytes. Implemented in
// src/state/keyed_backend.cc, so a job compiles it once, not per state type.
class KvColumn {
 public:
  // Steps over one key or value in Serializer format (a failure shows in
  // `in`).
  using Skip = void (*)(ByteReader& in);

  KvColumn(const std::string& name, std::shared_ptr<KvStore> store, int64_t ttl_ms);

  KvStore& store() const { return *store_; }
  int cf() const { return cf_; }
  // An immutable view of the column, written in canonical layout.
  std::shared_ptr<const TableSnapshot> snapshot(int64_t min_stamp) const;
  void begin_restore() { store_->bulk_begin(cf_); }
  void end_restore() { store_->bulk_end(cf_); }
  // Replaces key group `kg` with the canonical entries in `in`, whose keys
  // and values `skip_key` and `skip_value` step over.
  bool restore_entries(int kg, ByteReader& in, Skip skip_key, Skip skip_value);
  // Applies the changes in `in` (layout at StateTableBase) to key group `kg`.
  bool apply_changes(int kg, ByteReader& in, Skip skip_key, Skip skip_value);
  // Throws the error of a stored `what` ("key", "value") of state `name`
  // that does not decode as its declared type.
  [[noreturn]] static void undecodable(const std::string& name, const char* what);

  // One entry of a write-back: `key` to `value` is its key's bytes, `value`
  // to `end` its value's, in a shared buffer.
  struct Span {
    size_t key, value, end;
  };
  // Writes the entries of `spans` over `bytes` (keys unique) to the column
  // in key order, in one write (KvStore::put_all); reorders `spans`.
  void write_all(const std::string& bytes, std::vector<Span>& spans);

 private:
  const std::shared_ptr<KvStore> store_;
  const int cf_;
};

template <typename K, typename V>
class KvTable final : public StateTable<K, V> {
 public:
  KvTable(std::string name, StateKind kind, std::shared_ptr<KvStore> store, TableTtl ttl = {})
      : StateTable<K, V>(std::move(name), kind),
        column_(this->name(), std::move(store), IsTtlValue<V>::value ? ttl.ttl_ms : 0),
        ttl_(ttl),
        budget_(column_.store().cache_bytes()) {}

  const V* find(int kg, const K& key) override {
    Entry& e = load(kg, key);
    return e.present ? &e.value : nullptr;
  }
  V& get_or_create(int kg, const K& key) override {
    Entry& e = load(kg, key);
    if (!e.present) {
      e.value = V{};
      e.present = true;
    }
    e.dirty = true;
    return e.value;
  }
  void put(int kg, const K& key, V value) override {
    Entry* e = cached(key);
    if (e == nullptr) e = &insert(kg, key, Entry{});  // no read: the value is replaced
    e->value = std::move(value);
    e->present = true;
    e->dirty = true;
  }
  void erase(int kg, const K& key) override {
    Entry& e = load(kg, key);
    if (!e.present) return;  // no tombstone for nothing
    e.present = false;
    e.dirty = false;
    e.value = V{};
    encode_key(kg, key);
    column_.store().erase(column_.cf(), key_bytes_);
  }
  // Drops the group's cached entries (changes included) and deletes its
  // stored ones: one range of the column.
  void clear_key_group(int kg) override {
    absl::erase_if(cache_, [&](auto& slot) {
      if (slot.second.kg != kg) return false;
      cached_bytes_ -= std::min(cached_bytes_, kEntryOverhead + slot.second.bytes);
      return true;
    });
    key_bytes_.clear();
    put_key_group_prefix(&key_bytes_, kg);
    column_.store().erase_prefix(column_.cf(), key_bytes_);
  }
  void for_each(const std::function<void(const K&, const V&)>& fn) override {
    flush();
    column_.store().scan(column_.cf(), {}, [&](std::string_view k, std::string_view v) {
      K key = decode<K>(k.substr(kKeyGroupPrefixSize), "key");
      V value = decode<V>(v, "value");
      fn(key, value);
    });
  }

  // Expired TTL entries are left out of canonical snapshots (elements of
  // lists and maps expire on access and when the whole entry expires).
  std::shared_ptr<const TableSnapshot> snapshot() override {
    flush();
    return column_.snapshot(min_live_stamp<V>(ttl_));
  }
  // Writes every changed entry to the store. They stay cached unless their
  // sizes, now known, put the cache over its budget.
  void flush() override {
    write_back();
    if (cached_bytes_ > budget_) trim();
  }

  void begin_restore() override { column_.begin_restore(); }
  void end_restore() override { column_.end_restore(); }
  bool restore_entries(int kg, ByteReader& in) override {
    forget();
    return column_.restore_entries(kg, in, &skip<K>, &skip<V>);
  }
  bool apply_changes(int kg, ByteReader& in) override {
    forget();
    return column_.apply_changes(kg, in, &skip<K>, &skip<V>);
  }

  // For tests: entries and estimated bytes in the cache.
  size_t cached_entries() const { return cache_.size(); }
  size_t cached_bytes() const { return cached_bytes_; }

 private:
  struct Entry {
    V value{};
    int kg = 0;
    uint32_t bytes = 0;  // encoded size when last read or written
    bool present = false;
    bool dirty = false;
    bool referenced = true;  // touched since the last eviction
  };
  // What an entry costs beyond its encoded bytes: its slot and the
  // hash table's control byte, rounded up.
  static constexpr size_t kEntryOverhead = sizeof(K) + sizeof(Entry) + 8;

  template <typename T>
  static void skip(ByteReader& in) {
    Serializer<T>::read(in);
  }

  template <typename T>
  T decode(std::string_view bytes, const char* what) const {
    ByteReader r(bytes);
    T v = Serializer<T>::read(r);
    if (!r.ok() || !r.at_end()) KvColumn::undecodable(this->name(), what);
    return v;
  }

  Entry* cached(const K& key) {
    auto it = cache_.find(key);
    if (it == cache_.end()) return nullptr;
    it->second.referenced = true;
    return &it->second;
  }
  // The cached entry of `key`, read from the store on a miss.
  Entry& load(int kg, const K& key) {
    if (Entry* e = cached(key)) return *e;
    Entry e;
    encode_key(kg, key);
    e.present = column_.store().get(column_.cf(), key_bytes_, &scratch_);
    if (e.present) {
      e.value = decode<V>(scratch_, "value");
      e.bytes = static_cast<uint32_t>(std::min<size_t>(scratch_.size(), UINT32_MAX));
    }
    return insert(kg, key, std::move(e));
  }
  Entry& insert(int kg, const K& key, Entry e) {
    if (cached_bytes_ >= budget_) {
      write_back();
      trim();
    }
    e.kg = kg;
    cached_bytes_ += kEntryOverhead + e.bytes;
    return cache_.emplace(key, std::move(e)).first->second;
  }
  // Writes the dirty entries to the store, in key order and in one write:
  // each lands next to the one before in the memtable. (Written one by one
  // in the cache's hash order, each insert searched the whole memtable:
  // most of a checkpoint's synchronous part on a large state.) The buffer
  // keeps its size, at most about what the cache holds.
  void write_back() {
    batch_.clear();
    spans_.clear();
    for (auto& [key, e] : cache_) {
      if (!e.dirty) continue;
      KvColumn::Span span;
      span.key = batch_.size();
      put_key_group_prefix(&batch_, e.kg);
      ByteWriter w(&batch_);
      Serializer<K>::write(w, key);
      span.value = batch_.size();
      Serializer<V>::write(w, e.value);
      span.end = batch_.size();
      const size_t bytes = span.end - span.value;
      cached_bytes_ = cached_bytes_ - std::min<size_t>(cached_bytes_, e.bytes) + bytes;
      e.bytes = static_cast<uint32_t>(std::min<size_t>(bytes, UINT32_MAX));
      e.dirty = false;
      spans_.push_back(span);
    }
    if (!spans_.empty()) column_.write_all(batch_, spans_);
  }

  // Frees half the budget: entries not touched since the last eviction
  // first, then any. Call with every entry clean.
  void trim() {
    const size_t target = budget_ / 2;
    auto drop = [&](auto& slot) {
      cached_bytes_ -= std::min(cached_bytes_, kEntryOverhead + slot.second.bytes);
      return true;
    };
    absl::erase_if(cache_, [&](auto& slot) {
      if (slot.second.referenced) {
        slot.second.referenced = false;
        return false;
      }
      return drop(slot);
    });
    if (cached_bytes_ > target) {
      absl::erase_if(cache_, [&](auto& slot) { return cached_bytes_ > target && drop(slot); });
    }
  }
  void forget() {
    flush();
    cache_.clear();
    cached_bytes_ = 0;
  }
  void encode_key(int kg, const K& key) {
    key_bytes_.clear();
    put_key_group_prefix(&key_bytes_, kg);
    ByteWriter w(&key_bytes_);
    Serializer<K>::write(w, key);
  }

  KvColumn column_;
  const TableTtl ttl_;
  const size_t budget_;
  absl::flat_hash_map<K, Entry> cache_;
  size_t cached_bytes_ = 0;  // estimated
  std::string key_bytes_;
  std::string scratch_;
  std::string batch_;                   // write_back's entries
  std::vector<KvColumn::Span> spans_;  // and where each is in batch_
};

}  // namespace weir::detail

#endif  // WEIR_DETAIL_KV_STATE_H_
