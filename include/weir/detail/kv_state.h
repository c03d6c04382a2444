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
// A table caches the entry of the last key it touched (decoded, with a dirty
// flag) and writes it back when another key is touched, before for_each, and
// before a snapshot. So operators read and modify entries in place exactly as
// with the heap backend, and a record that touches its key's state several
// times decodes and encodes it once.
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
#include <algorithm>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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
};

// Appends `varint count | (key, value) * count` of key group `kg` of column
// `cf` in canonical layout: keys without their key-group prefix. With
// `min_stamp`, values are TtlValues and those stamped before it are left out.
template <typename Scan>
void write_canonical_entries(const Scan& scan, int cf, int kg, ByteWriter& out, int64_t min_stamp = INT64_MIN) {
  std::string prefix;
  put_key_group_prefix(&prefix, kg);
  std::string entries;
  uint64_t count = 0;
  scan(cf, prefix, [&](std::string_view k, std::string_view v) {
    if (min_stamp != INT64_MIN) {
      int64_t stamp = INT64_MIN;
      if (v.size() >= sizeof(stamp)) std::memcpy(&stamp, v.data(), sizeof(stamp));
      if (stamp < min_stamp) return;
    }
    entries.append(k.substr(kKeyGroupPrefixSize));
    entries.append(v);
    ++count;
  });
  out.put_varint(count);
  out.put_bytes(entries.data(), entries.size());
}

template <typename K, typename V>
class KvTable final : public StateTable<K, V> {
 public:
  KvTable(std::string name, StateKind kind, std::shared_ptr<KvStore> store, TableTtl ttl = {})
      : StateTable<K, V>(std::move(name), kind),
        store_(std::move(store)),
        cf_(store_->column(this->name(), IsTtlValue<V>::value ? ttl.ttl_ms : 0)),
        ttl_(ttl) {}

  const V* find(int kg, const K& key) override {
    load(kg, key);
    return present_ ? &value_ : nullptr;
  }
  V& get_or_create(int kg, const K& key) override {
    load(kg, key);
    if (!present_) {
      value_ = V{};
      present_ = true;
    }
    dirty_ = true;
    return value_;
  }
  void put(int kg, const K& key, V value) override {
    if (!(cached_ && kg_ == kg && key_ == key)) {
      flush();
      set_key(kg, key);
    }
    value_ = std::move(value);
    present_ = true;
    dirty_ = true;
  }
  void erase(int kg, const K& key) override {
    load(kg, key);
    if (!present_) return;  // no tombstone for nothing
    present_ = false;
    dirty_ = false;
    value_ = V{};
    store_->erase(cf_, key_bytes_);
  }
  void for_each(const std::function<void(const K&, const V&)>& fn) override {
    flush();
    store_->scan(cf_, {}, [&](std::string_view k, std::string_view v) {
      K key = decode<K>(k.substr(kKeyGroupPrefixSize), "key");
      V value = decode<V>(v, "value");
      fn(key, value);
    });
  }

  // Expired TTL entries are left out of canonical snapshots (elements of
  // lists and maps expire on access and when the whole entry expires).
  std::shared_ptr<const TableSnapshot> snapshot() override {
    flush();
    return std::make_shared<Snapshot>(store_->pin(), cf_, min_live_stamp<V>(ttl_));
  }
  void flush() override {
    if (!dirty_) return;
    scratch_.clear();
    ByteWriter w(&scratch_);
    Serializer<V>::write(w, value_);
    store_->put(cf_, key_bytes_, scratch_);
    dirty_ = false;
  }

  void begin_restore() override { store_->bulk_begin(cf_); }
  void end_restore() override { store_->bulk_end(cf_); }
  bool restore_entries(int kg, ByteReader& in) override {
    forget();
    std::string prefix;
    put_key_group_prefix(&prefix, kg);
    store_->erase_prefix(cf_, prefix);
    uint64_t n = in.get_length();
    std::vector<std::pair<std::string, std::string_view>> entries;
    entries.reserve(n);
    for (uint64_t i = 0; i < n && in.ok(); ++i) {
      // Entries are (key, value) in Serializer format: decode to find their ends.
      const char* k0 = in.position();
      Serializer<K>::read(in);
      const char* v0 = in.position();
      Serializer<V>::read(in);
      if (!in.ok()) return false;
      std::string key = prefix;
      key.append(k0, static_cast<size_t>(v0 - k0));
      entries.emplace_back(std::move(key), std::string_view(v0, static_cast<size_t>(in.position() - v0)));
    }
    if (!in.ok()) return false;
    // In key order, the last of equal keys winning (as puts in order would).
    std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    size_t out = 0;
    for (size_t i = 0; i < entries.size(); ++i) {
      if (i + 1 < entries.size() && entries[i + 1].first == entries[i].first) continue;
      if (out != i) entries[out] = std::move(entries[i]);
      ++out;
    }
    entries.resize(out);
    store_->bulk_put(cf_, entries);
    return true;
  }

 private:
  class Snapshot final : public TableSnapshot {
   public:
    Snapshot(std::shared_ptr<const KvView> view, int cf, int64_t min_stamp)
        : view_(std::move(view)), cf_(cf), min_stamp_(min_stamp) {}
    void write_entries(int kg, ByteWriter& out) const override {
      write_canonical_entries(
          [this](int cf, std::string_view prefix, const KvVisitor& fn) { view_->scan(cf, prefix, fn); }, cf_, kg,
          out, min_stamp_);
    }

   private:
    const std::shared_ptr<const KvView> view_;
    const int cf_;
    const int64_t min_stamp_;
  };

  template <typename T>
  T decode(std::string_view bytes, const char* what) const {
    ByteReader r(bytes);
    T v = Serializer<T>::read(r);
    if (!r.ok() || !r.at_end()) {
      throw std::runtime_error("state '" + this->name() + "': a stored " + what +
                               " does not decode as its declared type");
    }
    return v;
  }

  void load(int kg, const K& key) {
    if (cached_ && kg_ == kg && key_ == key) return;
    flush();
    set_key(kg, key);
    present_ = store_->get(cf_, key_bytes_, &scratch_);
    value_ = present_ ? decode<V>(scratch_, "value") : V{};
  }
  // Makes (kg, key) the cached key, its value not yet known.
  void set_key(int kg, const K& key) {
    key_bytes_.clear();
    put_key_group_prefix(&key_bytes_, kg);
    ByteWriter w(&key_bytes_);
    Serializer<K>::write(w, key);
    key_ = key;
    kg_ = kg;
    cached_ = true;
  }
  void forget() {
    flush();
    cached_ = false;
    present_ = false;
  }

  const std::shared_ptr<KvStore> store_;
  const int cf_;
  const TableTtl ttl_;
  // The cached entry.
  bool cached_ = false;
  bool present_ = false;
  bool dirty_ = false;
  int kg_ = 0;
  K key_{};
  V value_{};
  std::string key_bytes_;
  std::string scratch_;
};

}  // namespace weir::detail

#endif  // WEIR_DETAIL_KV_STATE_H_
