// Checkpoints in S3-compatible object storage (s3_client.h), laid out as
// FileCheckpointStorage lays out directories:
//   s3://BUCKET/PREFIX/<job-id>/chk-<n>/<uid>-<subtask>.state
//   s3://BUCKET/PREFIX/<job-id>/chk-<n>/_metadata
// An object store has no rename and no directories: each state file appears
// whole when its upload completes (a multipart upload that never completes
// leaves nothing behind), and _metadata is uploaded last, after every state
// file of the checkpoint is acknowledged. It is the commit point: a
// chk-<n>/ without _metadata is incomplete and never restored from, and a
// restore verifies every state file's size and checksum before using it.
//
// Incremental checkpoints upload RocksDB's files as FileCheckpointStorage
// copies them: new SST files once, under <job-id>/shared/c<n>/ (later
// checkpoints refer to them again), the rest under chk-<n>/. A restore
// downloads the files it needs (s3_scheme().download_native_files,
// storage_scheme.h).
//
// Thread-safe.
#ifndef WEIR_CHECKPOINT_S3_STORAGE_H_
#define WEIR_CHECKPOINT_S3_STORAGE_H_

#include <memory>
#include <string>
#include <vector>

#include "s3/s3_client.h"
#include "checkpoint/storage.h"

namespace weir::checkpoint {

class S3CheckpointStorage final : public CheckpointStorage {
 public:
  // Checkpoints of job `job_id` under `root` (s3://BUCKET/PREFIX).
  S3CheckpointStorage(std::shared_ptr<s3::S3Client> client, s3::S3Url root, const std::string& job_id);
  // Every checkpoint id maps to `dir` itself (one savepoint).
  static std::unique_ptr<S3CheckpointStorage> at(std::shared_ptr<s3::S3Client> client, s3::S3Url dir);
  // The same for the s3:// URL `dir`, with the process's client.
  static absl::StatusOr<std::unique_ptr<S3CheckpointStorage>> at(const std::string& dir);

  s3::S3Client& client() const { return *client_; }
  // Whether nothing is stored under checkpoint `checkpoint_id`'s location.
  absl::StatusOr<bool> empty(int64_t checkpoint_id) const;

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
  absl::StatusOr<std::string> upload_file(int64_t checkpoint_id, const std::string& local, const std::string& name,
                                          bool shared) override;
  bool supports_native() const override { return !fixed_; }
  absl::StatusOr<std::unique_ptr<StateFileOutput>> create_shared_file(int64_t checkpoint_id,
                                                                      const std::string& name) override;
  bool supports_shared_files() const override { return !fixed_; }
  absl::StatusOr<std::shared_ptr<const StateFileBytes>> read_changelog_file(
      const std::string& location, const detail::ChangelogFile& file) override;

 private:
  struct Fixed {};
  S3CheckpointStorage(Fixed, std::shared_ptr<s3::S3Client> client, s3::S3Url dir);
  s3::S3Url dir(int64_t checkpoint_id) const;
  s3::S3Url shared_dir(int64_t checkpoint_id) const;
  // The state file at `url`, checked against `size` and its checksum.
  absl::StatusOr<std::shared_ptr<const StateFileBytes>> read_object(const s3::S3Url& url, uint64_t size);

  const std::shared_ptr<s3::S3Client> client_;
  const s3::S3Url job_;   // PREFIX/<job-id>, or the savepoint's own prefix
  const bool fixed_;  // location(id) is job_ itself
};

}  // namespace weir::checkpoint

#endif  // WEIR_CHECKPOINT_S3_STORAGE_H_
