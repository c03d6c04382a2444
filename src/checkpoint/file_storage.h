// Checkpoints in a directory of a file system every process mounts (the
// layout in storage.h). State files are written through a buffer and
// fsynced; _metadata is written beside its place, fsynced and renamed, and
// the directories fsynced, so a checkpoint is complete exactly when its
// _metadata is there. State files are read back memory-mapped.
#ifndef WEIR_CHECKPOINT_FILE_STORAGE_H_
#define WEIR_CHECKPOINT_FILE_STORAGE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "checkpoint/storage.h"

namespace weir::checkpoint {

class FileCheckpointStorage final : public CheckpointStorage {
 public:
  FileCheckpointStorage(std::string root, std::string job_id);
  // Every checkpoint id maps to `dir` itself (one savepoint).
  static std::unique_ptr<FileCheckpointStorage> at_directory(std::string dir);

  absl::StatusOr<std::unique_ptr<StateFileOutput>> create_state_file(int64_t checkpoint_id,
                                                                     const std::string& name) override;
  absl::StatusOr<std::string> finalize(const CheckpointMetadata& m) override;
  absl::StatusOr<std::shared_ptr<const StateFileBytes>> read_state_file(
      const std::string& location, const OperatorSubtaskState& handle) override;
  absl::StatusOr<std::shared_ptr<const StateFileBytes>> read_operator_state(
      const std::string& location, const OperatorSubtaskState& handle) override;
  void discard(int64_t checkpoint_id) override;
  void discard_subsumed(int64_t checkpoint_id, const std::vector<std::string>& unreferenced) override;
  std::string location(int64_t checkpoint_id) const override;
  absl::StatusOr<std::vector<int64_t>> stored_checkpoints() override;
  absl::StatusOr<std::string> upload_file(int64_t checkpoint_id, const std::string& local,
                                          const std::string& name, bool shared) override;
  bool supports_native() const override { return !fixed_; }
  absl::StatusOr<std::unique_ptr<StateFileOutput>> create_shared_file(int64_t checkpoint_id,
                                                                      const std::string& name) override;
  bool supports_shared_files() const override { return !fixed_; }

 private:
  struct AtDirectory {};
  std::string shared_dir(int64_t checkpoint_id) const;
  FileCheckpointStorage(AtDirectory, std::string dir);
  absl::Status ensure_dir(int64_t checkpoint_id);

  const std::string job_dir_;
  const bool fixed_ = false;  // location(id) is job_dir_ itself
  absl::Mutex mu_;
  std::map<int64_t, bool> created_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weir::checkpoint

#endif  // WEIR_CHECKPOINT_FILE_STORAGE_H_
