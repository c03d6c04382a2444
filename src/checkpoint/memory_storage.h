// Checkpoints in the memory of the process that runs the job, when no
// checkpoint directory is given: they serve failover inside the process
// (only the newest is kept; see storage.h for the layout it mirrors).
#ifndef WEIR_CHECKPOINT_MEMORY_STORAGE_H_
#define WEIR_CHECKPOINT_MEMORY_STORAGE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "checkpoint/storage.h"

namespace weir::checkpoint {

class MemoryCheckpointStorage final : public CheckpointStorage {
 public:
  explicit MemoryCheckpointStorage(std::string job_id) : job_id_(std::move(job_id)) {}

  absl::StatusOr<std::unique_ptr<StateFileOutput>> create_state_file(int64_t checkpoint_id,
                                                                     const std::string& name) override;
  absl::StatusOr<std::string> finalize(const CheckpointMetadata& m) override;
  absl::StatusOr<std::shared_ptr<const StateFileBytes>> read_state_file(
      const std::string& location, const OperatorSubtaskState& handle) override;
  void discard(int64_t checkpoint_id) override;
  void discard_subsumed(int64_t checkpoint_id, const std::vector<std::string>& unreferenced) override;
  std::string location(int64_t checkpoint_id) const override;
  bool durable() const override { return false; }
  absl::StatusOr<std::unique_ptr<StateFileOutput>> create_shared_file(int64_t checkpoint_id,
                                                                      const std::string& name) override;
  bool supports_shared_files() const override { return true; }
  absl::StatusOr<std::shared_ptr<const StateFileBytes>> read_changelog_file(
      const std::string& location, const detail::ChangelogFile& file) override;

  // For tests: how many checkpoints hold files.
  size_t num_checkpoints() const;

  class File;  // a file's bytes

 private:
  const std::string job_id_;
  mutable absl::Mutex mu_;
  std::map<int64_t, std::map<std::string, std::shared_ptr<const File>>> files_ ABSL_GUARDED_BY(mu_);
  // Shared files by where they resolve to (native_file_location), and the
  // checkpoint that wrote each.
  struct Shared {
    int64_t checkpoint_id;
    std::shared_ptr<const File> file;
  };
  std::map<std::string, Shared> shared_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weir::checkpoint

#endif  // WEIR_CHECKPOINT_MEMORY_STORAGE_H_
