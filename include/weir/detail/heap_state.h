// The heap keyed state backend: typed entries in per-key-group hash maps,
// snapshotted copy-on-write.
//
// Each state table holds one `shared_ptr<Map>` per key group of the subtask's
// range. A snapshot copies those pointers (O(key groups), on the task thread)
// and writes the maps later on another thread. The first write to a key group
// whose map is still shared with a snapshot clones that key group's map, so
// the snapshot stays immutable and the task never waits for the writer. The
// cost is one copy of each key group touched between two checkpoints.
//
// Key-group snapshot layout (inside a state file, see src/checkpoint/format.h):
//   varint num_states
//   per state: string name | u8 kind | varint byte_length | entries
//   entries:   varint count | (key, value) * count   (weir::Serializer format)
//
// Confined to the task thread, except snapshots, which are immutable.
#ifndef WEIR_DETAIL_HEAP_STATE_H_
#define WEIR_DETAIL_HEAP_STATE_H_

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "weir/detail/operator.h"
#include "weir/key_group.h"
#include "weir/serializer.h"
#include "weir/state.h"

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

// DO NOT CHANGE values: stored in checkpoints.
enum class StateKind : uint8_t { kValue = 0, kList = 1, kMap = 2, kReducing = 3 };

// Immutable view of one table's key groups, written off the task thread.
class TableSnapshot {
 public:
  virtual ~TableSnapshot() = default;
  virtual void write_entries(int kg, ByteWriter& out) const = 0;
};

class HeapTableBase {
 public:
  HeapTableBase(std::string name, StateKind kind) : name_(std::move(name)), kind_(kind) {}
  virtual ~HeapTableBase() = default;
  const std::string& name() const { return name_; }
  StateKind kind() const { return kind_; }
  virtual std::shared_ptr<const TableSnapshot> snapshot() const = 0;
  // Replaces key group `kg` with the entries in `in`.
  virtual bool restore_entries(int kg, ByteReader& in) = 0;
  virtual size_t size() const = 0;

 private:
  const std::string name_;
  const StateKind kind_;
};

template <typename K, typename V>
class HeapTable final : public HeapTableBase {
 public:
  using Map = absl::flat_hash_map<K, V>;

  HeapTable(std::string name, StateKind kind, KeyGroupRange range)
      : HeapTableBase(std::move(name), kind), range_(range), groups_(range.size()) {
    for (auto& g : groups_) g = std::make_shared<Map>();
  }

  const V* find(int kg, const K& key) const {
    const Map& m = *groups_[kg - range_.start];
    auto it = m.find(key);
    return it == m.end() ? nullptr : &it->second;
  }
  // Returns the entry for writing, creating it when absent.
  V& get_or_create(int kg, const K& key) { return writable(kg)[key]; }
  void erase(int kg, const K& key) {
    const Map& m = *groups_[kg - range_.start];
    if (m.find(key) == m.end()) return;  // avoid a copy-on-write for nothing
    writable(kg).erase(key);
  }

  size_t size() const override {
    size_t n = 0;
    for (const auto& g : groups_) n += g->size();
    return n;
  }
  // Visits every entry of every key group (read-only).
  template <typename F>
  void for_each(F&& fn) const {
    for (const auto& g : groups_) {
      for (const auto& [k, v] : *g) fn(k, v);
    }
  }

  std::shared_ptr<const TableSnapshot> snapshot() const override {
    return std::make_shared<Snapshot>(range_, groups_);
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
    Snapshot(KeyGroupRange range, std::vector<std::shared_ptr<Map>> groups)
        : range_(range), groups_(std::move(groups)) {}
    void write_entries(int kg, ByteWriter& out) const override {
      Serializer<Map>::write(out, *groups_[kg - range_.start]);
    }

   private:
    const KeyGroupRange range_;
    const std::vector<std::shared_ptr<Map>> groups_;
  };

  Map& writable(int kg) {
    std::shared_ptr<Map>& g = groups_[kg - range_.start];
    // Only this thread creates references, so a count of 1 cannot grow
    // behind our back; a stale count > 1 only costs an unneeded copy.
    if (g.use_count() > 1) g = std::make_shared<Map>(*g);
    return *g;
  }

  const KeyGroupRange range_;
  std::vector<std::shared_ptr<Map>> groups_;
};

// Untyped part of the backend: tables by name, snapshots, raw restored bytes
// of states not yet registered.
class HeapBackendCore {
 public:
  explicit HeapBackendCore(KeyGroupRange range) : range_(range) {}

  KeyGroupRange range() const { return range_; }

  // Keeps restored bytes until the state is registered (types are known
  // only then). Returns an error naming the key group on corrupt input.
  absl::Status restore_key_group(int kg, std::string_view bytes);

  std::unique_ptr<KeyedStateSnapshot> snapshot() const;

  template <typename K, typename V>
  absl::StatusOr<HeapTable<K, V>*> table(const std::string& name, StateKind kind) {
    auto it = tables_.find(name);
    if (it != tables_.end()) {
      if (it->second->kind() != kind) {
        return absl::FailedPreconditionError("state '" + name +
                                             "' is registered twice with different kinds");
      }
      auto* typed = dynamic_cast<HeapTable<K, V>*>(it->second.get());
      if (typed == nullptr) {
        return absl::FailedPreconditionError("state '" + name +
                                             "' is registered twice with different types");
      }
      return typed;
    }
    auto owned = std::make_unique<HeapTable<K, V>>(name, kind, range_);
    HeapTable<K, V>* t = owned.get();
    tables_.emplace(name, std::move(owned));
    absl::Status s = apply_pending(*t);
    if (!s.ok()) return s;
    return t;
  }

 private:
  struct Pending {
    StateKind kind;
    std::string bytes;
  };
  absl::Status apply_pending(HeapTableBase& table);

  const KeyGroupRange range_;
  std::map<std::string, std::unique_ptr<HeapTableBase>> tables_;
  // state name -> key group -> raw entries, for states restored but not yet
  // registered. Written back verbatim by snapshots so nothing is lost.
  std::map<std::string, std::map<int, Pending>> pending_;
};

// The typed face of the backend for keys of type K: the current key, and the
// state handles.
template <typename K>
class HeapKeyedBackend {
 public:
  explicit HeapKeyedBackend(KeyGroupRange range) : core_(range) {}

  void set_current_key(const K* key, int kg) {
    key_ = key;
    kg_ = kg;
  }
  const K& current_key() const { return *key_; }
  int current_key_group() const { return kg_; }
  HeapBackendCore& core() { return core_; }

 private:
  HeapBackendCore core_;
  const K* key_ = nullptr;  // points at the key of the record being processed
  int kg_ = 0;
};

template <typename K, typename T>
class HeapValueState final : public ValueState<T> {
 public:
  HeapValueState(HeapKeyedBackend<K>* b, HeapTable<K, T>* t) : b_(b), t_(t) {}
  std::optional<T> value() const override {
    const T* v = t_->find(b_->current_key_group(), b_->current_key());
    return v ? std::optional<T>(*v) : std::nullopt;
  }
  void update(const T& v) override { t_->get_or_create(b_->current_key_group(), b_->current_key()) = v; }
  void update(T&& v) override {
    t_->get_or_create(b_->current_key_group(), b_->current_key()) = std::move(v);
  }
  void clear() override { t_->erase(b_->current_key_group(), b_->current_key()); }

 private:
  HeapKeyedBackend<K>* b_;
  HeapTable<K, T>* t_;
};

template <typename K, typename T>
class HeapListState final : public ListState<T> {
 public:
  HeapListState(HeapKeyedBackend<K>* b, HeapTable<K, std::vector<T>>* t) : b_(b), t_(t) {}
  std::vector<T> get() const override {
    const auto* v = t_->find(b_->current_key_group(), b_->current_key());
    return v ? *v : std::vector<T>{};
  }
  void add(const T& v) override {
    t_->get_or_create(b_->current_key_group(), b_->current_key()).push_back(v);
  }
  void update(std::vector<T> values) override {
    if (values.empty()) return clear();
    t_->get_or_create(b_->current_key_group(), b_->current_key()) = std::move(values);
  }
  void clear() override { t_->erase(b_->current_key_group(), b_->current_key()); }

 private:
  HeapKeyedBackend<K>* b_;
  HeapTable<K, std::vector<T>>* t_;
};

template <typename K, typename UK, typename UV>
class HeapMapState final : public MapState<UK, UV> {
 public:
  using Inner = absl::flat_hash_map<UK, UV>;
  HeapMapState(HeapKeyedBackend<K>* b, HeapTable<K, Inner>* t) : b_(b), t_(t) {}
  std::optional<UV> get(const UK& k) const override {
    const Inner* m = t_->find(b_->current_key_group(), b_->current_key());
    if (!m) return std::nullopt;
    auto it = m->find(k);
    return it == m->end() ? std::nullopt : std::optional<UV>(it->second);
  }
  void put(const UK& k, const UV& v) override {
    t_->get_or_create(b_->current_key_group(), b_->current_key()).insert_or_assign(k, v);
  }
  void remove(const UK& k) override {
    const Inner* m = t_->find(b_->current_key_group(), b_->current_key());
    if (!m || !m->contains(k)) return;
    Inner& w = t_->get_or_create(b_->current_key_group(), b_->current_key());
    w.erase(k);
    if (w.empty()) clear();
  }
  bool contains(const UK& k) const override {
    const Inner* m = t_->find(b_->current_key_group(), b_->current_key());
    return m && m->contains(k);
  }
  std::vector<std::pair<UK, UV>> entries() const override {
    const Inner* m = t_->find(b_->current_key_group(), b_->current_key());
    if (!m) return {};
    return {m->begin(), m->end()};
  }
  bool is_empty() const override {
    const Inner* m = t_->find(b_->current_key_group(), b_->current_key());
    return !m || m->empty();
  }
  void clear() override { t_->erase(b_->current_key_group(), b_->current_key()); }

 private:
  HeapKeyedBackend<K>* b_;
  HeapTable<K, Inner>* t_;
};

template <typename K, typename T>
class HeapReducingState final : public ReducingState<T> {
 public:
  HeapReducingState(HeapKeyedBackend<K>* b, HeapTable<K, T>* t,
                    std::function<T(const T&, const T&)> reduce)
      : b_(b), t_(t), reduce_(std::move(reduce)) {}
  std::optional<T> get() const override {
    const T* v = t_->find(b_->current_key_group(), b_->current_key());
    return v ? std::optional<T>(*v) : std::nullopt;
  }
  void add(const T& v) override {
    const T* old = t_->find(b_->current_key_group(), b_->current_key());
    T next = old ? reduce_(*old, v) : v;
    t_->get_or_create(b_->current_key_group(), b_->current_key()) = std::move(next);
  }
  void clear() override { t_->erase(b_->current_key_group(), b_->current_key()); }

 private:
  HeapKeyedBackend<K>* b_;
  HeapTable<K, T>* t_;
  std::function<T(const T&, const T&)> reduce_;
};

}  // namespace detail
}  // namespace weir

#endif  // WEIR_DETAIL_HEAP_STATE_H_
