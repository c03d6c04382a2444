// The untyped half of the keyed state backend (see
// include/weir/detail/state_table.h for the layout it reads and writes).
#include <algorithm>
#include <chrono>
#include <functional>
#include <map>
#include <string>

#include "absl/synchronization/mutex.h"

#include "weir/detail/keyed_backend.h"

namespace weir::detail {
namespace {

// One state of a canonical key-group blob (layout in state_table.h), with
// the changes that follow its entries when it has any.
void put_canonical_state(ByteWriter& out, const std::string& name, uint8_t kind, const std::string& type,
                         std::string_view entries, const std::vector<std::string>* changes = nullptr) {
  const bool has_changes = changes != nullptr && !changes->empty();
  if (has_changes) kind |= kKindHasChanges;
  out.put_string(name);
  if (type.empty()) {
    out.put_fixed<uint8_t>(kind);
  } else {
    out.put_fixed<uint8_t>(kind | kKindHasType);
    out.put_string(type);
  }
  out.put_string(entries);
  if (!has_changes) return;
  out.put_varint(changes->size());
  for (const std::string& c : *changes) out.put_string(c);
}

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The chains of the changelog snapshots written and not yet confirmed, by
// checkpoint: filled by snapshot threads, read by the task thread.
struct WrittenChains {
  struct Chain {
    std::vector<ChangelogFile> files;
    int64_t base_ms = 0;  // when the chain's base was taken
  };
  absl::Mutex mu;
  std::map<int64_t, Chain> chains ABSL_GUARDED_BY(mu);
};

class Changelog final : public ChangelogSnapshot {
 public:
  Changelog(std::shared_ptr<WrittenChains> chains, int64_t checkpoint_id, int64_t preceding_id,
            std::vector<ChangelogFile> preceding, int64_t base_ms)
      : chains_(std::move(chains)),
        checkpoint_id_(checkpoint_id),
        preceding_id_(preceding_id),
        preceding_(std::move(preceding)),
        base_ms_(base_ms) {}
  bool delta() const override { return !preceding_.empty(); }
  const std::vector<ChangelogFile>& preceding() const override { return preceding_; }
  int64_t preceding_id() const override { return preceding_id_; }
  void written(const ChangelogFile& file) override {
    WrittenChains::Chain chain{preceding_, base_ms_};
    chain.files.push_back(file);
    absl::MutexLock lock(&chains_->mu);
    chains_->chains[checkpoint_id_] = std::move(chain);
    // Checkpoints that never complete are never confirmed: keep the newest.
    while (chains_->chains.size() > 16) chains_->chains.erase(chains_->chains.begin());
  }

 private:
  const std::shared_ptr<WrittenChains> chains_;
  const int64_t checkpoint_id_;
  const int64_t preceding_id_;
  const std::vector<ChangelogFile> preceding_;
  const int64_t base_ms_;
};

class KeyedSnapshot final : public KeyedStateSnapshot {
 public:
  struct Table {
    std::string name;
    StateKind kind;
    std::string type;
    std::shared_ptr<const TableSnapshot> snapshot;
  };
  struct Raw {
    std::string name;
    StateKind kind;
    std::string type;
    struct Group {
      std::string entries;
      std::vector<std::string> changes;
    };
    std::map<int, Group> groups;
  };

  KeyedSnapshot(KeyGroupRange range, std::vector<Table> tables, std::vector<Raw> raw,
                std::unique_ptr<ChangelogSnapshot> changelog = nullptr)
      : range_(range), tables_(std::move(tables)), raw_(std::move(raw)), changelog_(std::move(changelog)) {}

  KeyGroupRange range() const override { return range_; }
  ChangelogSnapshot* changelog() const override { return changelog_.get(); }

  void write_key_group(int kg, ByteWriter& out) const override {
    size_t raw_here = 0;
    for (const Raw& r : raw_) raw_here += r.groups.count(kg);
    out.put_varint(tables_.size() + raw_here);
    std::string scratch;
    for (const Table& t : tables_) {
      scratch.clear();
      ByteWriter w(&scratch);
      t.snapshot->write_entries(kg, w);
      put_canonical_state(out, t.name, static_cast<uint8_t>(t.kind), t.type, scratch);
    }
    for (const Raw& r : raw_) {
      auto it = r.groups.find(kg);
      if (it == r.groups.end()) continue;
      put_canonical_state(out, r.name, static_cast<uint8_t>(r.kind), r.type, it->second.entries,
                          &it->second.changes);
    }
  }

 private:
  const KeyGroupRange range_;
  const std::vector<Table> tables_;
  const std::vector<Raw> raw_;  // none in a delta: unregistered states do not change
  const std::unique_ptr<ChangelogSnapshot> changelog_;
};

// A native snapshot: the files of a RocksDB checkpoint; the keyed section of
// the state file stays empty and the files are listed in the metadata.
class NativeKeyedSnapshot final : public KeyedStateSnapshot {
 public:
  NativeKeyedSnapshot(KeyGroupRange range, std::unique_ptr<NativeSnapshot> native)
      : range_(range), native_(std::move(native)) {}
  KeyGroupRange range() const override { return range_; }
  void write_key_group(int, ByteWriter&) const override {}
  NativeSnapshot* native() const override { return native_.get(); }

 private:
  const KeyGroupRange range_;
  const std::unique_ptr<NativeSnapshot> native_;
};

}  // namespace

// The state of a KeyedBackendCore.
class KeyedBackendCore::Impl {
 public:
  Impl(KeyGroupRange range, std::shared_ptr<KvStore> store) : range_(range), store_(std::move(store)) {}

  absl::Status restore_key_group(int kg, std::string_view bytes, bool borrow);
  absl::Status restore_key_group_changes(int kg, std::string_view bytes);
  void end_restore();
  absl::StatusOr<std::unique_ptr<KeyedStateSnapshot>> snapshot(const SnapshotOptions& options);
  std::unique_ptr<ChangelogSnapshot> begin_changelog(const SnapshotOptions& options);
  void checkpoint_complete(int64_t checkpoint_id);
  absl::Status restore_from_store(KvStore* source, const NativeRestore& from);
  absl::StatusOr<StateTableBase*> find_or_add(const std::string& name, StateKind kind, const std::string& type,
                                              TableTtl ttl, TableFactory make);

  struct Pending {
    StateKind kind;
    std::string type;
    bool has_entries = false;  // false: only changes were restored for the key group
    std::string owned;
    std::string_view borrowed;  // when `owned` is unused
    bool is_borrowed = false;
    std::vector<std::string> changes;  // applied after the entries, in order
    std::string_view bytes() const { return is_borrowed ? borrowed : std::string_view(owned); }
  };
  // An error naming the state when it was checkpointed as another kind or
  // with another type signature than it is declared with now.
  absl::Status check_compatible(const std::string& name, StateKind kind, const std::string& type) const;
  absl::Status apply_pending(StateTableBase& table);
  absl::Status apply_pending_to_registered();

  const KeyGroupRange range_;
  const std::shared_ptr<KvStore> store_;
  std::map<std::string, std::unique_ptr<StateTableBase>> tables_;
  // state name -> key group -> raw entries, for states restored but not yet
  // registered. Written back verbatim by snapshots so nothing is lost.
  std::map<std::string, std::map<int, Pending>> pending_;
  // States of an adopted native snapshot, by name.
  std::map<std::string, StateMeta> restored_meta_;
  // Borrowed key groups: their bytes and how many of their states are pending.
  struct BorrowedGroup {
    std::string_view bytes;
    int pending = 0;
  };
  std::map<int, BorrowedGroup> borrowed_;
  std::function<void(std::string_view)> release_;

  // Changelog snapshots (heap tables): whether the tables record their
  // changes; the chain of the last confirmed changelog checkpoint, which
  // the next delta follows; the chains written and not yet confirmed.
  bool changelog_ = false;
  int64_t last_snapshot_id_ = 0;
  int64_t confirmed_id_ = 0;
  WrittenChains::Chain confirmed_;
  std::shared_ptr<WrittenChains> written_ = std::make_shared<WrittenChains>();
};

KeyedBackendCore::KeyedBackendCore(KeyGroupRange range, std::shared_ptr<KvStore> store)
    : impl_(std::make_unique<Impl>(range, std::move(store))) {}
KeyedBackendCore::~KeyedBackendCore() = default;

KeyGroupRange KeyedBackendCore::range() const { return impl_->range_; }
bool KeyedBackendCore::is_heap() const { return impl_->store_ == nullptr; }
absl::Status KeyedBackendCore::restore_key_group(int kg, std::string_view bytes, bool borrow) {
  return impl_->restore_key_group(kg, bytes, borrow);
}
void KeyedBackendCore::set_release(std::function<void(std::string_view)> release) {
  impl_->release_ = std::move(release);
}
void KeyedBackendCore::end_restore() { impl_->end_restore(); }
absl::Status KeyedBackendCore::restore_key_group_changes(int kg, std::string_view bytes) {
  return impl_->restore_key_group_changes(kg, bytes);
}
absl::StatusOr<std::unique_ptr<KeyedStateSnapshot>> KeyedBackendCore::snapshot(const SnapshotOptions& options) {
  return impl_->snapshot(options);
}
absl::StatusOr<OperatorSnapshot> KeyedBackendCore::operator_snapshot(const SnapshotOptions& options) {
  auto keyed = snapshot(options);
  if (!keyed.ok()) return keyed.status();
  OperatorSnapshot snap;
  snap.keyed = std::move(*keyed);
  return snap;
}
void KeyedBackendCore::checkpoint_complete(int64_t checkpoint_id) { impl_->checkpoint_complete(checkpoint_id); }
absl::Status KeyedBackendCore::restore_from_store(KvStore* source, const NativeRestore& from) {
  return impl_->restore_from_store(source, from);
}
void KeyedBackendCore::adopt_states(const std::vector<StateMeta>& states) {
  for (const StateMeta& m : states) impl_->restored_meta_[m.name] = m;
}
bool KeyedBackendCore::has_unregistered(const std::string& name) const {
  return impl_->tables_.find(name) == impl_->tables_.end() &&
         (impl_->pending_.contains(name) || impl_->restored_meta_.contains(name));
}
void KeyedBackendCore::clear_key_group(int kg) {
  for (auto& [name, table] : impl_->tables_) table->clear_key_group(kg);
}
absl::StatusOr<StateTableBase*> KeyedBackendCore::find_or_add(const std::string& name, StateKind kind,
                                                              const std::string& type, TableTtl ttl,
                                                              TableFactory make) {
  return impl_->find_or_add(name, kind, type, ttl, make);
}

absl::Status KeyedBackendCore::Impl::restore_key_group(int kg, std::string_view bytes, bool borrow) {
  auto corrupt = [&](const std::string& what) {
    return absl::DataLossError("keyed state of key group " + std::to_string(kg) +
                               " is corrupt: " + what);
  };
  if (!range_.contains(kg)) return corrupt("outside the subtask's range");
  ByteReader in(bytes);
  uint64_t num_states = in.get_length();
  for (uint64_t i = 0; i < num_states && in.ok(); ++i) {
    std::string name = in.get_string();
    uint8_t kind_byte = in.get_fixed<uint8_t>();
    std::string type = (kind_byte & kKindHasType) != 0 ? in.get_string() : std::string();
    const bool has_changes = (kind_byte & kKindHasChanges) != 0;
    kind_byte &= static_cast<uint8_t>(~(kKindHasType | kKindHasChanges));
    std::string_view entries = in.get_string_view();
    std::vector<std::string> changes;
    if (has_changes) {
      const uint64_t n = in.get_length();
      for (uint64_t c = 0; c < n && in.ok(); ++c) changes.emplace_back(in.get_string_view());
    }
    if (!in.ok()) break;
    if (kind_byte > static_cast<uint8_t>(StateKind::kReducing)) {
      return corrupt("unknown state kind in state '" + name + "'");
    }
    Pending& p = pending_[name][kg];
    p.kind = static_cast<StateKind>(kind_byte);
    p.type = std::move(type);
    p.has_entries = true;
    p.changes = std::move(changes);
    p.is_borrowed = borrow;
    if (borrow) {
      p.borrowed = entries;
      BorrowedGroup& g = borrowed_[kg];
      g.bytes = bytes;
      ++g.pending;
    } else {
      p.owned.assign(entries);
    }
  }
  if (!in.ok() || !in.at_end()) return corrupt("truncated");
  // States registered before the restore (not the usual order) take it now.
  return apply_pending_to_registered();
}

absl::Status KeyedBackendCore::Impl::restore_key_group_changes(int kg, std::string_view bytes) {
  auto corrupt = [&](const std::string& what) {
    return absl::DataLossError("changes of key group " + std::to_string(kg) + " are corrupt: " + what);
  };
  if (!range_.contains(kg)) return corrupt("outside the subtask's range");
  ByteReader in(bytes);
  const uint64_t num_states = in.get_length();
  for (uint64_t i = 0; i < num_states && in.ok(); ++i) {
    std::string name = in.get_string();
    uint8_t kind_byte = in.get_fixed<uint8_t>();
    std::string type = (kind_byte & kKindHasType) != 0 ? in.get_string() : std::string();
    kind_byte &= static_cast<uint8_t>(~kKindHasType);
    std::string_view changes = in.get_string_view();
    if (!in.ok()) break;
    if (kind_byte > static_cast<uint8_t>(StateKind::kReducing)) {
      return corrupt("unknown state kind in state '" + name + "'");
    }
    auto [it, added] = pending_[name].try_emplace(kg);
    Pending& p = it->second;
    if (added) {
      p.kind = static_cast<StateKind>(kind_byte);
      p.type = std::move(type);
    } else if (p.kind != static_cast<StateKind>(kind_byte)) {
      return corrupt("state '" + name + "' changes kind within the changelog");
    }
    p.changes.emplace_back(changes);
  }
  if (!in.ok() || !in.at_end()) return corrupt("truncated");
  return apply_pending_to_registered();
}

absl::Status KeyedBackendCore::Impl::apply_pending_to_registered() {
  for (auto& [name, table] : tables_) {
    absl::Status s = apply_pending(*table);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

namespace {
const char* kind_name(uint8_t kind) {
  switch (static_cast<StateKind>(kind)) {
    case StateKind::kValue: return "value";
    case StateKind::kList: return "list";
    case StateKind::kMap: return "map";
    case StateKind::kReducing: return "reducing";
  }
  return "unknown";
}
}  // namespace

absl::StatusOr<StateTableBase*> KeyedBackendCore::Impl::find_or_add(const std::string& name, StateKind kind,
                                                              const std::string& type, TableTtl ttl,
                                                              TableFactory make) {
  auto it = tables_.find(name);
  if (it != tables_.end()) {
    if (it->second->kind() != kind) {
      return absl::FailedPreconditionError("state '" + name + "' is registered twice with different kinds");
    }
    return it->second.get();
  }
  // Checked before a RocksDB column family is opened under the name.
  absl::Status compatible = check_compatible(name, kind, type);
  if (!compatible.ok()) return compatible;
  std::unique_ptr<StateTableBase> owned = make(name, kind, range_, store_, ttl);
  StateTableBase* t = owned.get();
  tables_.emplace(name, std::move(owned));
  // Taken by the changelog from now on (its restored entries are in the
  // chain's base as unregistered state already).
  if (changelog_) t->seal_changes(0);
  absl::Status s = apply_pending(*t);
  if (!s.ok()) return s;
  return t;
}

absl::Status KeyedBackendCore::registered_with_other_types(const std::string& name) {
  return absl::FailedPreconditionError("state '" + name + "' is registered twice with different types");
}

absl::Status KeyedBackendCore::Impl::check_compatible(const std::string& name, StateKind kind,
                                                const std::string& type) const {
  auto check = [&](uint8_t was_kind, const std::string& was_type) {
    if (was_kind != static_cast<uint8_t>(kind)) {
      return absl::FailedPreconditionError("state '" + name + "' was checkpointed as " + kind_name(was_kind) +
                                           " state and is now declared as " +
                                           kind_name(static_cast<uint8_t>(kind)) + " state");
    }
    if (!was_type.empty() && was_type != type) {
      return absl::FailedPreconditionError("state '" + name + "' changed type incompatibly: checkpointed as " +
                                           was_type + ", now declared as " + type);
    }
    return absl::OkStatus();
  };
  if (auto it = restored_meta_.find(name); it != restored_meta_.end()) {
    absl::Status s = check(it->second.kind, it->second.type);
    if (!s.ok()) return s;
  }
  if (auto it = pending_.find(name); it != pending_.end()) {
    for (const auto& [kg, p] : it->second) {
      absl::Status s = check(static_cast<uint8_t>(p.kind), p.type);
      if (!s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

void KeyedBackendCore::Impl::end_restore() {
  for (auto& [name, groups] : pending_) {
    for (auto& [kg, p] : groups) {
      if (!p.is_borrowed) continue;
      p.owned.assign(p.borrowed);
      p.is_borrowed = false;
      p.borrowed = {};
    }
  }
  if (release_) {
    for (const auto& [kg, g] : borrowed_) release_(g.bytes);
  }
  borrowed_.clear();
}

absl::Status KeyedBackendCore::Impl::apply_pending(StateTableBase& table) {
  auto it = pending_.find(table.name());
  if (it == pending_.end()) return absl::OkStatus();
  absl::Status compatible = check_compatible(table.name(), table.kind(), table.type());
  if (!compatible.ok()) return compatible;
  // Store errors throw (the task fails); a decode error ends the restore
  // and is returned.
  table.begin_restore();
  int bad_kg = -1;
  for (auto& [kg, p] : it->second) {  // ascending key groups
    if (!p.has_entries) continue;
    ByteReader in(p.bytes());
    if (!table.restore_entries(kg, in) || !in.at_end()) {
      bad_kg = kg;
      break;
    }
    if (!p.is_borrowed) continue;
    // The key group's bytes may go once all its states are restored.
    auto g = borrowed_.find(kg);
    if (g != borrowed_.end() && --g->second.pending == 0) {
      if (release_) release_(g->second.bytes);
      borrowed_.erase(g);
    }
  }
  table.end_restore();
  // The changelog's changes, once every key group's entries are in (a
  // store's bulk restore may land its entries only at end_restore).
  for (auto& [kg, p] : it->second) {
    if (bad_kg >= 0) break;
    for (const std::string& c : p.changes) {
      ByteReader in(c);
      if (!table.apply_changes(kg, in) || !in.at_end()) {
        bad_kg = kg;
        break;
      }
    }
  }
  if (bad_kg >= 0) {
    return absl::DataLossError("state '" + table.name() + "' in key group " + std::to_string(bad_kg) +
                               " does not decode as its declared type");
  }
  pending_.erase(it);
  return absl::OkStatus();
}

std::unique_ptr<ChangelogSnapshot> KeyedBackendCore::Impl::begin_changelog(const SnapshotOptions& options) {
  // A new base when there is no chain to follow (the first changelog
  // snapshot, or the first after a restore), when the base is older than
  // the interval, or when the deltas since it outweigh it (so a restore
  // reads at most about twice the state).
  const int64_t now = steady_ms();
  bool base = confirmed_.files.empty() || now - confirmed_.base_ms >= options.materialize_interval_ms;
  if (!base) {
    uint64_t deltas = 0;
    for (size_t i = 1; i < confirmed_.files.size(); ++i) deltas += confirmed_.files[i].size;
    // Deltas written since and not confirmed weigh too: the next one holds
    // their changes again.
    uint64_t unconfirmed = 0;
    {
      absl::MutexLock lock(&written_->mu);
      for (const auto& [id, chain] : written_->chains) {
        if (chain.files.back().delta) unconfirmed = std::max(unconfirmed, chain.files.back().size);
      }
    }
    base = deltas + unconfirmed >= confirmed_.files.front().size;
  }
  changelog_ = true;
  last_snapshot_id_ = options.checkpoint_id;
  for (const auto& [name, t] : tables_) t->seal_changes(options.checkpoint_id);
  if (base) return std::make_unique<Changelog>(written_, options.checkpoint_id, 0, std::vector<ChangelogFile>{}, now);
  return std::make_unique<Changelog>(written_, options.checkpoint_id, confirmed_id_, confirmed_.files,
                                     confirmed_.base_ms);
}

void KeyedBackendCore::Impl::checkpoint_complete(int64_t checkpoint_id) {
  if (store_ != nullptr) store_->checkpoint_complete(checkpoint_id);
  if (!changelog_) return;
  {
    absl::MutexLock lock(&written_->mu);
    auto& chains = written_->chains;
    // Followed only when it is the newest snapshot taken: one taken after
    // it (on an older chain, before this notification came) may complete
    // and subsume it, and its files would go while a delta follows them.
    auto it = chains.find(checkpoint_id);
    if (it != chains.end() && checkpoint_id > confirmed_id_ && checkpoint_id == last_snapshot_id_) {
      confirmed_ = std::move(it->second);
      confirmed_id_ = checkpoint_id;
    }
    chains.erase(chains.begin(), chains.upper_bound(checkpoint_id));
  }
  if (confirmed_id_ != checkpoint_id) return;  // a savepoint, or a checkpoint whose file was not written here
  for (const auto& [name, t] : tables_) t->changes_confirmed(checkpoint_id);
}

absl::StatusOr<std::unique_ptr<KeyedStateSnapshot>> KeyedBackendCore::Impl::snapshot(const SnapshotOptions& options) {
  const bool native_allowed = options.native_allowed;
  if (store_ != nullptr && native_allowed && pending_.empty()) {
    std::vector<StateMeta> states;
    for (const auto& [name, t] : tables_) {
      t->flush();
      states.push_back({name, static_cast<uint8_t>(t->kind()), t->type()});
    }
    // Adopted states not registered (yet) are in the files too.
    for (const auto& [name, meta] : restored_meta_) {
      if (!tables_.contains(name)) states.push_back(meta);
    }
    auto native = store_->native_snapshot(std::move(states));
    if (!native.ok()) return native.status();
    return std::unique_ptr<KeyedStateSnapshot>(std::make_unique<NativeKeyedSnapshot>(range_, std::move(*native)));
  }
  std::unique_ptr<ChangelogSnapshot> changelog;
  if (store_ == nullptr && options.changelog_allowed) changelog = begin_changelog(options);
  const bool delta = changelog != nullptr && changelog->delta();
  std::vector<KeyedSnapshot::Table> tables;
  tables.reserve(tables_.size());
  for (const auto& [name, t] : tables_) {
    tables.push_back({name, t->kind(), t->type(), delta ? t->snapshot_changes() : t->snapshot()});
  }
  std::vector<KeyedSnapshot::Raw> raw;
  for (const auto& [name, groups] : pending_) {
    if (delta) break;  // unregistered states do not change: the base holds them
    KeyedSnapshot::Raw r{name, StateKind::kValue, "", {}};
    for (const auto& [kg, p] : groups) {
      r.kind = p.kind;
      r.type = p.type;
      // Changes restored without entries follow empty entries.
      std::string entries = p.has_entries ? std::string(p.bytes()) : std::string(1, '\0');
      r.groups.emplace(kg, KeyedSnapshot::Raw::Group{std::move(entries), p.changes});
    }
    raw.push_back(std::move(r));
  }
  return std::unique_ptr<KeyedStateSnapshot>(
      std::make_unique<KeyedSnapshot>(range_, std::move(tables), std::move(raw), std::move(changelog)));
}

absl::Status KeyedBackendCore::Impl::restore_from_store(KvStore* source, const NativeRestore& from) {
  std::vector<int> columns;
  for (const StateMeta& st : from.states) {
    if (st.kind > static_cast<uint8_t>(StateKind::kReducing)) {
      return absl::DataLossError("native snapshot: unknown kind of state '" + st.name + "'");
    }
    columns.push_back(source->column(st.name));
  }
  auto scan = [source](int cf, std::string_view prefix, const KvVisitor& fn) { source->scan(cf, prefix, fn); };
  for (int kg = std::max(range_.start, from.range.start); kg < std::min(range_.end, from.range.end); ++kg) {
    std::string blob;
    ByteWriter out(&blob);
    out.put_varint(from.states.size());
    std::string entries;
    for (size_t i = 0; i < from.states.size(); ++i) {
      entries.clear();
      ByteWriter e(&entries);
      write_canonical_entries(scan, columns[i], kg, e);
      put_canonical_state(out, from.states[i].name, from.states[i].kind, from.states[i].type, entries);
    }
    absl::Status s = restore_key_group(kg, blob, /*borrow=*/false);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace weir::detail
