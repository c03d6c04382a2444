#include "runtime/operator_context.h"

#include <filesystem>

#include "state/local_state.h"
#include "state/rocksdb_store.h"
#include "weir/detail/operators.h"

namespace weir::runtime {

std::filesystem::path RuntimeOperatorContext::store_dir(const std::string& suffix) const {
  // One directory per operator subtask and attempt.
  std::string name = snapshot_owner(info_.uid, info_.subtask) + "-a" + std::to_string(info_.attempt) + suffix;
  return state::state_root(info_.state_backend != nullptr ? info_.state_backend->local_directory : "", info_.job_id) /
         name;
}

absl::StatusOr<std::shared_ptr<detail::KvStore>> RuntimeOperatorContext::create_keyed_store() {
  if (!keyed_store_is_native()) return std::shared_ptr<detail::KvStore>();
  auto store = state::open_rocksdb_store(store_dir(""), info_.state_backend->rocksdb_memory_bytes);
  if (store.ok()) (*store)->set_cache_bytes(info_.state_backend->rocksdb_cache_bytes_per_state);
  return store;
}

absl::StatusOr<std::shared_ptr<detail::KvStore>> RuntimeOperatorContext::open_native_store(
    const detail::NativeRestore& from) {
  const StateBackendConfig config = info_.state_backend != nullptr ? *info_.state_backend : StateBackendConfig{};
  auto with_cache = [&](absl::StatusOr<std::shared_ptr<detail::KvStore>> store) {
    if (store.ok()) (*store)->set_cache_bytes(config.rocksdb_cache_bytes_per_state);
    return store;
  };
  if (!from.local_files.empty()) {
    // Local recovery; the checkpoint's files when the local copy does not open.
    auto local = state::open_rocksdb_store_from(store_dir("-r" + std::to_string(stores_opened_++)),
                                                config.rocksdb_memory_bytes, from.local_files, /*link=*/true);
    if (local.ok()) {
      state::LocalStateStore::count_restore();
      return with_cache(std::move(local));
    }
  }
  if (from.download) {
    // Remote files: downloaded beside the store, then linked into it.
    const std::filesystem::path staging = store_dir("-d" + std::to_string(stores_opened_));
    auto files = from.download(staging.string());
    if (!files.ok()) return files.status();
    auto store = state::open_rocksdb_store_from(store_dir("-r" + std::to_string(stores_opened_++)),
                                                config.rocksdb_memory_bytes, *files, /*link=*/true);
    std::error_code ec;
    std::filesystem::remove_all(staging, ec);
    return with_cache(std::move(store));
  }
  return with_cache(state::open_rocksdb_store_from(store_dir("-r" + std::to_string(stores_opened_++)),
                                                   config.rocksdb_memory_bytes, from.files));
}

std::string snapshot_owner(const std::string& uid, int subtask) {
  // Uids may hold any character.
  std::string name;
  for (char c : uid) name.push_back(std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  return name + "-" + std::to_string(subtask);
}

}  // namespace weir::runtime

namespace weir::detail {

absl::Status restore_operator_state(OperatorContext& ctx, const OperatorRestore* restore) {
  if (restore == nullptr) return absl::OkStatus();
  auto& rt = static_cast<runtime::RuntimeOperatorContext&>(ctx);
  rt.state() = restore->operator_state;
  return absl::OkStatus();
}

OperatorStateMap capture_operator_state(OperatorContext& ctx) {
  return static_cast<runtime::RuntimeOperatorContext&>(ctx).state();
}

}  // namespace weir::detail
