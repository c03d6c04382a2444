#include "runtime/operator_context.h"

#include <filesystem>

#include "state/rocksdb_store.h"
#include "weir/detail/operators.h"

namespace weir::runtime {

absl::StatusOr<std::shared_ptr<detail::KvStore>> RuntimeOperatorContext::create_keyed_store() {
  const StateBackendConfig* cfg = info_.state_backend;
  if (cfg == nullptr || cfg->kind == StateBackendKind::kHeap) return std::shared_ptr<detail::KvStore>();
  std::filesystem::path root = cfg->local_directory;
  if (root.empty()) root = std::filesystem::temp_directory_path() / "weir-rocksdb";
  // One directory per operator subtask and attempt; uids may hold any character.
  std::string name;
  for (char c : info_.uid) name.push_back(std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  name += "-" + std::to_string(info_.subtask) + "-a" + std::to_string(info_.attempt);
  return state::open_rocksdb_store(root / (info_.job_id.empty() ? "job" : info_.job_id) / name,
                                   cfg->rocksdb_memory_bytes);
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
