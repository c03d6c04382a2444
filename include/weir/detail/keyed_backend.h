// The keyed state backend of one operator subtask: its named state tables
// (heap or RocksDB, chosen per job), the current key, and the state handles
// user functions get (ValueState, ListState, MapState, ReducingState).
//
// The handles, timers and windows work on StateTable<K, V> (state_table.h),
// so they behave the same on both backends; only the table type differs.
// Snapshots of either backend use the canonical key-group layout, so state
// moves between backends through any checkpoint or savepoint.
//
// Confined to the task thread, except snapshots, which are immutable.
#ifndef WEIR_DETAIL_KEYED_BACKEND_H_
#define WEIR_DETAIL_KEYED_BACKEND_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "weir/detail/heap_state.h"
#include "weir/detail/kv_state.h"
#include "weir/context.h"
#include "weir/detail/operator.h"
#include "weir/key_group.h"
#include "weir/state.h"

namespace weir::detail {

// Untyped part of the backend: tables by name, snapshots, raw restored bytes
// of states not yet registered. Implemented in src/state/keyed_backend.cc.
class KeyedBackendCore {
 public:
  // `store` null: heap tables; otherwise tables in `store`.
  KeyedBackendCore(KeyGroupRange range, std::shared_ptr<KvStore> store);
  ~KeyedBackendCore();
  KeyedBackendCore(const KeyedBackendCore&) = delete;
  KeyedBackendCore& operator=(const KeyedBackendCore&) = delete;

  KeyGroupRange range() const;
  bool is_heap() const;

  // Keeps restored bytes until the state is registered (types are known
  // only then). Returns an error naming the key group on corrupt input.
  // With `borrow`, keeps views of `bytes` instead of copies: the caller
  // keeps them valid until end_restore().
  absl::Status restore_key_group(int kg, std::string_view bytes, bool borrow = false);
  // Keeps changes of key group `kg` (a changelog delta's blob, copied) to
  // apply after its entries when each state is registered.
  absl::Status restore_key_group_changes(int kg, std::string_view bytes);
  // Called with a borrowed key group's bytes once every state in it is
  // restored (or copied by end_restore).
  void set_release(std::function<void(std::string_view)> release);
  // The borrowed restored bytes are about to go: copies what no registered
  // state took yet (a state registered later still gets it).
  void end_restore();

  // Canonical; native when `native_allowed` and the tables live in a
  // store (RocksDB) and no restored state is still unregistered; a
  // changelog (base or delta) when `changelog_allowed` and they live on the
  // heap.
  absl::StatusOr<std::unique_ptr<KeyedStateSnapshot>> snapshot(const SnapshotOptions& options = {});
  // The snapshot of a keyed operator: this keyed state, no operator state.
  absl::StatusOr<OperatorSnapshot> operator_snapshot(const SnapshotOptions& options);
  void checkpoint_complete(int64_t checkpoint_id);
  // Restores the key groups of this range from a native snapshot opened as
  // `source` (another store), converting them to the canonical layout.
  absl::Status restore_from_store(KvStore* source, const NativeRestore& from);
  // The store was opened from a native snapshot with these states: each is
  // checked against its declaration when registered.
  void adopt_states(const std::vector<StateMeta>& states);
  // Whether state `name` was restored and is not registered yet.
  bool has_unregistered(const std::string& name) const;
  // Removes every entry of key group `kg` from every registered state.
  void clear_key_group(int kg);

  // The table of state `name`, created (and given its restored entries)
  // on first use. An error when the name is registered again with another
  // kind or type, or was checkpointed with another kind or type.
  template <typename K, typename V>
  absl::StatusOr<StateTable<K, V>*> table(const std::string& name, StateKind kind, TableTtl ttl = {}) {
    absl::StatusOr<StateTableBase*> t =
        find_or_add(name, kind, type_signature<K>() + "->" + type_signature<V>(), ttl, &make_table<K, V>);
    if (!t.ok()) return t.status();
    auto* typed = dynamic_cast<StateTable<K, V>*>(*t);
    if (typed == nullptr) return registered_with_other_types(name);
    return typed;
  }

 private:
  using TableFactory = std::unique_ptr<StateTableBase> (*)(const std::string& name, StateKind kind,
                                                           KeyGroupRange range,
                                                           const std::shared_ptr<KvStore>& store, TableTtl ttl);
  template <typename K, typename V>
  static std::unique_ptr<StateTableBase> make_table(const std::string& name, StateKind kind, KeyGroupRange range,
                                                    const std::shared_ptr<KvStore>& store, TableTtl ttl) {
    if (store == nullptr) return std::make_unique<HeapTable<K, V>>(name, kind, range, ttl);
    return std::make_unique<KvTable<K, V>>(name, kind, store, ttl);
  }
  // The untyped part of table(): the registered table, or a new one from
  // `make` (checked against the restored state first).
  absl::StatusOr<StateTableBase*> find_or_add(const std::string& name, StateKind kind, const std::string& type,
                                              TableTtl ttl, TableFactory make);
  static absl::Status registered_with_other_types(const std::string& name);

  class Impl;
  std::unique_ptr<Impl> impl_;
};

// The typed face of the backend for keys of type K: the current key, and the
// tables.
template <typename K>
class KeyedBackend {
 public:
  KeyedBackend(KeyGroupRange range, std::shared_ptr<KvStore> store) : core_(range, std::move(store)) {}

  void set_current_key(const K* key, int kg) {
    key_ = key;
    kg_ = kg;
  }
  const K& current_key() const { return *key_; }
  int current_key_group() const { return kg_; }
  KeyedBackendCore& core() { return core_; }

 private:
  KeyedBackendCore core_;
  const K* key_ = nullptr;  // points at the key of the record being processed
  int kg_ = 0;
};

// Creates the backend the job is configured with (ctx) and restores the key
// groups of `restore` that fall into the subtask's range. The restored bytes
// are borrowed from `restore` (valid during the operator's open()): the
// operator registers its states, then calls core().end_restore() before
// open() returns.
template <typename K>
absl::StatusOr<std::unique_ptr<KeyedBackend<K>>> open_keyed_backend(OperatorContext& ctx,
                                                                     const OperatorRestore* restore) {
  KeyGroupRange range = ctx.key_group_range();
  // Fast path: a RocksDB backend restoring one native snapshot of exactly
  // its range opens that snapshot's files as its store.
  const bool adopt = restore != nullptr && restore->native.size() == 1 && restore->key_groups.empty() &&
                     restore->native[0].range == range && keyed_stores(ctx).keyed_store_is_native();
  absl::StatusOr<std::shared_ptr<KvStore>> store =
      adopt ? keyed_stores(ctx).open_native_store(restore->native[0]) : keyed_stores(ctx).create_keyed_store();
  if (!store.ok()) return store.status();
  auto backend = std::make_unique<KeyedBackend<K>>(range, std::move(*store));
  if (restore == nullptr) return backend;
  if (adopt) backend->core().adopt_states(restore->native[0].states);
  if (restore->release) backend->core().set_release(restore->release);
  for (const RestoredKeyGroup& kg : restore->key_groups) {
    if (!range.contains(kg.key_group)) continue;
    absl::Status s = backend->core().restore_key_group(kg.key_group, kg.bytes, /*borrow=*/true);
    if (!s.ok()) return s;
  }
  for (const RestoredKeyGroup& kg : restore->key_group_changes) {
    if (!range.contains(kg.key_group)) continue;
    absl::Status s = backend->core().restore_key_group_changes(kg.key_group, kg.bytes);
    if (!s.ok()) return s;
  }
  if (adopt) return backend;
  // Otherwise (another range, or the heap backend): read the key groups out
  // of each native snapshot in the canonical layout.
  for (const NativeRestore& n : restore->native) {
    auto source = keyed_stores(ctx).open_native_store(n);
    if (!source.ok()) return source.status();
    absl::Status s = backend->core().restore_from_store(source->get(), n);
    if (!s.ok()) return s;
  }
  return backend;
}

template <typename K, typename T>
class TableValueState final : public ValueState<T> {
 public:
  TableValueState(KeyedBackend<K>* b, StateTable<K, T>* t) : b_(b), t_(t) {}
  std::optional<T> value() const override {
    const T* v = t_->find(b_->current_key_group(), b_->current_key());
    return v ? std::optional<T>(*v) : std::nullopt;
  }
  const T* peek() const override { return t_->find(b_->current_key_group(), b_->current_key()); }
  T& modify() override { return t_->get_or_create(b_->current_key_group(), b_->current_key()); }
  void update(const T& v) override { t_->put(b_->current_key_group(), b_->current_key(), v); }
  void update(T&& v) override { t_->put(b_->current_key_group(), b_->current_key(), std::move(v)); }
  void clear() override { t_->erase(b_->current_key_group(), b_->current_key()); }

 private:
  KeyedBackend<K>* b_;
  StateTable<K, T>* t_;
};

// The TTL rules of one state: when an entry expires, whether an expired
// entry stays visible until cleaned up, whether reads extend it.
struct TtlRules {
  StateTtlConfig cfg;
  const ProcessingTimeService* clock;
  int64_t now() const { return clock->now_ms(); }
  bool expired(int64_t stamp, int64_t now) const { return now - stamp >= cfg.ttl.count(); }
  bool keep_expired() const { return cfg.visibility == StateTtlConfig::Visibility::kReturnExpiredIfNotCleanedUp; }
  bool refresh() const { return cfg.update_type == StateTtlConfig::UpdateType::kOnReadAndWrite; }
};

// TTL handles: entries are TtlValue<T>; an expired entry reads as absent
// (or, with kReturnExpiredIfNotCleanedUp, as itself until removed).
template <typename K, typename T>
class TtlAccess {
 public:
  TtlAccess(KeyedBackend<K>* b, StateTable<K, TtlValue<T>>* t, StateTtlConfig cfg, const ProcessingTimeService* clock)
      : b_(b), t_(t), ttl_{cfg, clock} {}

  // The live entry of the current key, or null; applies the TTL rules.
  const T* read() const {
    const TtlValue<T>* e = t_->find(b_->current_key_group(), b_->current_key());
    if (e == nullptr) return nullptr;
    int64_t now = ttl_.now();
    if (ttl_.expired(e->stamp, now)) {
      if (ttl_.keep_expired()) return &e->value;
      t_->erase(b_->current_key_group(), b_->current_key());
      return nullptr;
    }
    if (ttl_.refresh()) {
      TtlValue<T>& w = t_->get_or_create(b_->current_key_group(), b_->current_key());
      w.stamp = now;
      return &w.value;
    }
    return &e->value;
  }
  void write(T v) const {
    t_->put(b_->current_key_group(), b_->current_key(), TtlValue<T>{ttl_.now(), std::move(v)});
  }
  // The live value in place (T{} when absent or expired and not visible),
  // stamped now: a write.
  T& modify() const {
    const bool live = read() != nullptr;
    TtlValue<T>& w = t_->get_or_create(b_->current_key_group(), b_->current_key());
    if (!live) w.value = T{};
    w.stamp = ttl_.now();
    return w.value;
  }
  void clear() const { t_->erase(b_->current_key_group(), b_->current_key()); }

 private:
  KeyedBackend<K>* b_;
  StateTable<K, TtlValue<T>>* t_;
  const TtlRules ttl_;
};

template <typename K, typename T>
class TtlValueState final : public ValueState<T> {
 public:
  explicit TtlValueState(TtlAccess<K, T> access) : a_(std::move(access)) {}
  std::optional<T> value() const override {
    const T* v = a_.read();
    return v ? std::optional<T>(*v) : std::nullopt;
  }
  const T* peek() const override { return a_.read(); }
  T& modify() override { return a_.modify(); }
  void update(const T& v) override { a_.write(v); }
  void update(T&& v) override { a_.write(std::move(v)); }
  void clear() override { a_.clear(); }

 private:
  TtlAccess<K, T> a_;
};

template <typename K, typename T>
class TtlReducingState final : public ReducingState<T> {
 public:
  TtlReducingState(TtlAccess<K, T> access, std::function<T(const T&, const T&)> reduce)
      : a_(std::move(access)), reduce_(std::move(reduce)) {}
  std::optional<T> get() const override {
    const T* v = a_.read();
    return v ? std::optional<T>(*v) : std::nullopt;
  }
  void add(const T& v) override {
    const T* old = a_.read();
    a_.write(old ? reduce_(*old, v) : v);
  }
  void clear() override { a_.clear(); }

 private:
  TtlAccess<K, T> a_;
  std::function<T(const T&, const T&)> reduce_;
};

// List state with TTL: each element carries its own stamp; the entry's
// stamp is the newest of them, so a RocksDB compaction drops a list once
// all its elements expired. Stamps never decrease along a list (elements
// are appended now, and reads or updates stamp all live ones now), so the
// expired elements are always a prefix.
template <typename K, typename T>
class TtlListState final : public ListState<T> {
 public:
  using Entry = TtlValue<std::vector<TtlValue<T>>>;
  TtlListState(KeyedBackend<K>* b, StateTable<K, Entry>* t, StateTtlConfig cfg, const ProcessingTimeService* clock)
      : b_(b), t_(t), ttl_{cfg, clock} {}

  std::vector<T> get() const override {
    const Entry* e = t_->find(b_->current_key_group(), b_->current_key());
    if (e == nullptr) return {};
    const int64_t now = ttl_.now();
    const size_t dead = expired_prefix(*e, now);
    const bool keep_expired = ttl_.keep_expired();
    const bool refresh = ttl_.refresh();
    std::vector<T> out;
    out.reserve(e->value.size() - (keep_expired ? 0 : dead));
    for (size_t i = keep_expired ? 0 : dead; i < e->value.size(); ++i) out.push_back(e->value[i].value);
    if ((dead > 0 && !keep_expired) || (refresh && dead < e->value.size())) {
      if (!keep_expired && dead == e->value.size()) {
        t_->erase(b_->current_key_group(), b_->current_key());
        return out;
      }
      Entry& w = t_->get_or_create(b_->current_key_group(), b_->current_key());
      if (!keep_expired) w.value.erase(w.value.begin(), w.value.begin() + static_cast<std::ptrdiff_t>(dead));
      if (refresh) {
        for (size_t i = keep_expired ? dead : 0; i < w.value.size(); ++i) w.value[i].stamp = now;
        w.stamp = now;
      }
    }
    return out;
  }
  void add(const T& v) override {
    const int64_t now = ttl_.now();
    Entry& w = t_->get_or_create(b_->current_key_group(), b_->current_key());
    // Drop the expired prefix as we go, so an append-only list stays bounded.
    if (!ttl_.keep_expired()) {
      size_t dead = expired_prefix(w, now);
      if (dead > 0) w.value.erase(w.value.begin(), w.value.begin() + static_cast<std::ptrdiff_t>(dead));
    }
    w.value.push_back({now, v});
    w.stamp = now;
  }
  void update(std::vector<T> values) override {
    if (values.empty()) return clear();
    const int64_t now = ttl_.now();
    Entry& w = t_->get_or_create(b_->current_key_group(), b_->current_key());
    w.value.clear();
    w.value.reserve(values.size());
    for (T& v : values) w.value.push_back({now, std::move(v)});
    w.stamp = now;
  }
  void clear() override { t_->erase(b_->current_key_group(), b_->current_key()); }

 private:
  size_t expired_prefix(const Entry& e, int64_t now) const {
    size_t n = 0;
    while (n < e.value.size() && ttl_.expired(e.value[n].stamp, now)) ++n;
    return n;
  }

  KeyedBackend<K>* b_;
  StateTable<K, Entry>* t_;
  const TtlRules ttl_;
};

// Map state with TTL: each user key's value carries its own stamp; the
// entry's stamp is the newest of them (what a RocksDB compaction reads).
template <typename K, typename UK, typename UV>
class TtlMapState final : public MapState<UK, UV> {
 public:
  using Inner = absl::flat_hash_map<UK, TtlValue<UV>>;
  using Entry = TtlValue<Inner>;
  TtlMapState(KeyedBackend<K>* b, StateTable<K, Entry>* t, StateTtlConfig cfg, const ProcessingTimeService* clock)
      : b_(b), t_(t), ttl_{cfg, clock} {}

  std::optional<UV> get(const UK& k) const override {
    const TtlValue<UV>* v = live(k);
    return v ? std::optional<UV>(v->value) : std::nullopt;
  }
  void put(const UK& k, const UV& v) override {
    const int64_t now = ttl_.now();
    Entry& w = t_->get_or_create(b_->current_key_group(), b_->current_key());
    w.value.insert_or_assign(k, TtlValue<UV>{now, v});
    w.stamp = now;
  }
  void remove(const UK& k) override {
    const Entry* e = t_->find(b_->current_key_group(), b_->current_key());
    if (!e || !e->value.contains(k)) return;
    Entry& w = t_->get_or_create(b_->current_key_group(), b_->current_key());
    w.value.erase(k);
    if (w.value.empty()) clear();
  }
  bool contains(const UK& k) const override { return live(k) != nullptr; }
  std::vector<std::pair<UK, UV>> entries() const override {
    const Entry* e = t_->find(b_->current_key_group(), b_->current_key());
    if (!e) return {};
    const int64_t now = ttl_.now();
    bool any_expired = false;
    std::vector<std::pair<UK, UV>> out;
    for (const auto& [k, v] : e->value) {
      if (expired(v.stamp, now)) {
        any_expired = true;
        if (!keep_expired()) continue;
      }
      out.emplace_back(k, v.value);
    }
    const bool prune = any_expired && !keep_expired();
    if (prune || (refresh() && !out.empty())) {
      Entry& w = t_->get_or_create(b_->current_key_group(), b_->current_key());
      if (prune) {
        for (auto it = w.value.begin(); it != w.value.end();) {
          if (expired(it->second.stamp, now)) {
            w.value.erase(it++);
          } else {
            ++it;
          }
        }
      }
      if (w.value.empty()) {
        t_->erase(b_->current_key_group(), b_->current_key());
        return out;
      }
      if (refresh()) {
        for (auto& [k, v] : w.value) {
          if (!expired(v.stamp, now)) v.stamp = now;
        }
        w.stamp = now;
      }
    }
    return out;
  }
  bool is_empty() const override { return entries().empty(); }
  void clear() override { t_->erase(b_->current_key_group(), b_->current_key()); }

 private:
  bool expired(int64_t stamp, int64_t now) const { return ttl_.expired(stamp, now); }
  bool keep_expired() const { return ttl_.keep_expired(); }
  bool refresh() const { return ttl_.refresh(); }

  // The value of user key `k` if visible, applying the TTL rules.
  const TtlValue<UV>* live(const UK& k) const {
    const Entry* e = t_->find(b_->current_key_group(), b_->current_key());
    if (!e) return nullptr;
    auto it = e->value.find(k);
    if (it == e->value.end()) return nullptr;
    const int64_t now = ttl_.now();
    if (expired(it->second.stamp, now)) {
      if (keep_expired()) return &it->second;
      Entry& w = t_->get_or_create(b_->current_key_group(), b_->current_key());
      w.value.erase(k);
      if (w.value.empty()) t_->erase(b_->current_key_group(), b_->current_key());
      return nullptr;
    }
    if (!refresh()) return &it->second;
    Entry& w = t_->get_or_create(b_->current_key_group(), b_->current_key());
    TtlValue<UV>& v = w.value.find(k)->second;
    v.stamp = now;
    w.stamp = now;
    return &v;
  }

  KeyedBackend<K>* b_;
  StateTable<K, Entry>* t_;
  const TtlRules ttl_;
};

template <typename K, typename T>
class TableListState final : public ListState<T> {
 public:
  TableListState(KeyedBackend<K>* b, StateTable<K, std::vector<T>>* t) : b_(b), t_(t) {}
  std::vector<T> get() const override {
    const auto* v = t_->find(b_->current_key_group(), b_->current_key());
    return v ? *v : std::vector<T>{};
  }
  void add(const T& v) override {
    t_->get_or_create(b_->current_key_group(), b_->current_key()).push_back(v);
  }
  void update(std::vector<T> values) override {
    if (values.empty()) return clear();
    t_->put(b_->current_key_group(), b_->current_key(), std::move(values));
  }
  void clear() override { t_->erase(b_->current_key_group(), b_->current_key()); }

 private:
  KeyedBackend<K>* b_;
  StateTable<K, std::vector<T>>* t_;
};

template <typename K, typename UK, typename UV>
class TableMapState final : public MapState<UK, UV> {
 public:
  using Inner = absl::flat_hash_map<UK, UV>;
  TableMapState(KeyedBackend<K>* b, StateTable<K, Inner>* t) : b_(b), t_(t) {}
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
  KeyedBackend<K>* b_;
  StateTable<K, Inner>* t_;
};

template <typename K, typename T>
class TableReducingState final : public ReducingState<T> {
 public:
  TableReducingState(KeyedBackend<K>* b, StateTable<K, T>* t, std::function<T(const T&, const T&)> reduce)
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
  KeyedBackend<K>* b_;
  StateTable<K, T>* t_;
  std::function<T(const T&, const T&)> reduce_;
};

}  // namespace weir::detail

#endif  // WEIR_DETAIL_KEYED_BACKEND_H_
