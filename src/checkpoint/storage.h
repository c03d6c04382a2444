// Checkpoint storage: where state files and metadata go.
//
// A job's checkpoints are laid out as
//   <root>/<job-id>/chk-<n>/_metadata          written last, atomically
//   <root>/<job-id>/chk-<n>/<uid>-<subtask>.state
//   <root>/<job-id>/shared/c<n>/...            native files later checkpoints share
// in a directory (file_storage.h), in S3 (s3_storage.h) or in memory
// (memory_storage.h); storage_scheme.h chooses by the location. A chk-<n>
// without a valid _metadata is incomplete and is never restored from.
//
// Every storage is thread-safe: tasks write state files from snapshot
// threads while the coordinator finalizes and discards.
#ifndef WEIR_CHECKPOINT_STORAGE_H_
#define WEIR_CHECKPOINT_STORAGE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "checkpoint/format.h"

namespace weir::checkpoint {

// A state file being written: append, then finish (durable) or drop.
class StateFileOutput : public ByteSink {
 public:
  // Makes the file durable; without it the file does not count.
  virtual absl::Status finish() = 0;
};

// A state file read back: its bytes (memory-mapped for files, so restoring
// large state does not copy it onto the heap).
class StateFileBytes {
 public:
  virtual ~StateFileBytes() = default;
  virtual std::string_view bytes() const = 0;
  // Done with `part` of bytes() for now: a mapped file lets go of its
  // pages (read again if touched), so a restore's memory does not grow
  // with the file.
  virtual void release(std::string_view part) const {}
};

// Bytes read into memory.
class OwnedStateFileBytes final : public StateFileBytes {
 public:
  explicit OwnedStateFileBytes(std::string bytes) : bytes_(std::move(bytes)) {}
  std::string_view bytes() const override { return bytes_; }

 private:
  const std::string bytes_;
};

// A completed checkpoint found for restore.
struct RestoredCheckpoint {
  std::string location;  // the chk-<n> directory, or memory://<job>/<n>
  CheckpointMetadata metadata;
};

class CheckpointStorage {
 public:
  virtual ~CheckpointStorage() = default;

  virtual absl::StatusOr<std::unique_ptr<StateFileOutput>> create_state_file(int64_t checkpoint_id,
                                                                             const std::string& name) = 0;
  // Writes a whole state file at once.
  absl::Status write_state_file(int64_t checkpoint_id, const std::string& name, std::string_view bytes);
  // Durably completes checkpoint `m.checkpoint_id`; returns its location.
  virtual absl::StatusOr<std::string> finalize(const CheckpointMetadata& m) = 0;
  // Reads a state file of the checkpoint at `location` and verifies it.
  virtual absl::StatusOr<std::shared_ptr<const StateFileBytes>> read_state_file(
      const std::string& location, const OperatorSubtaskState& handle) = 0;
  // The operator-state section of a state file alone, for a subtask that
  // needs none of the file's key groups: read by range and checked by its
  // own checksum where the metadata has one (else the whole file is read
  // and checked).
  virtual absl::StatusOr<std::shared_ptr<const StateFileBytes>> read_operator_state(
      const std::string& location, const OperatorSubtaskState& handle);
  // Removes everything of checkpoint `checkpoint_id` of this job, shared
  // files it uploaded included (it never completed, or nothing else refers
  // to them).
  virtual void discard(int64_t checkpoint_id) = 0;
  // Removes a completed checkpoint that newer ones replaced: its own
  // files, and of the shared files it refers to those in `unreferenced`
  // (absolute paths no retained checkpoint refers to any more).
  virtual void discard_subsumed(int64_t checkpoint_id, const std::vector<std::string>& unreferenced) {
    discard(checkpoint_id);
  }
  virtual std::string location(int64_t checkpoint_id) const = 0;
  // The ids of the checkpoints this job's storage holds anything of
  // (chk-<id>), complete or not. File and S3 storage list them; others
  // hold none that could be left behind.
  virtual absl::StatusOr<std::vector<int64_t>> stored_checkpoints() { return std::vector<int64_t>{}; }
  // Called before completed checkpoint `checkpoint_id` stops being a
  // restore point (subsumed, or found broken): where it is also recorded
  // elsewhere (high availability), the record goes first. An error keeps
  // its files.
  virtual absl::Status forget_completed(int64_t checkpoint_id) { return absl::OkStatus(); }
  // Copies local file `local` into checkpoint `checkpoint_id` durably:
  // shared (under <job>/shared/, for files later checkpoints may refer to)
  // or private (inside the checkpoint's directory). Returns the path
  // relative to the checkpoint's directory. File and S3 storage have it.
  virtual absl::StatusOr<std::string> upload_file(int64_t checkpoint_id, const std::string& local,
                                                  const std::string& name, bool shared) {
    return absl::UnimplementedError("this checkpoint storage keeps no native files");
  }
  // Whether upload_file works (incremental checkpoints need it).
  virtual bool supports_native() const { return false; }
  // Creates a file of checkpoint `checkpoint_id` that later checkpoints may
  // refer to (a changelog file): under <job>/shared/c<id>/, at
  // shared_file_path(checkpoint_id, name) from the checkpoint's directory.
  // Reference-counted and removed as upload_file's shared files are.
  virtual absl::StatusOr<std::unique_ptr<StateFileOutput>> create_shared_file(int64_t checkpoint_id,
                                                                              const std::string& name) {
    return absl::UnimplementedError("this checkpoint storage keeps no shared files");
  }
  // Whether create_shared_file works (changelog checkpoints need it).
  virtual bool supports_shared_files() const { return false; }
  // A changelog file of the checkpoint at `location`, verified.
  virtual absl::StatusOr<std::shared_ptr<const StateFileBytes>> read_changelog_file(
      const std::string& location, const detail::ChangelogFile& file);
  // Whether checkpoints outlive the process (only those are worth keeping
  // beyond the newest).
  virtual bool durable() const { return true; }
  // Makes checkpoint `checkpoint_id` a savepoint: its files go to
  // directory `dir` (created; must not exist yet), whatever this storage
  // keeps checkpoints in. Only RoutingCheckpointStorage supports it.
  virtual absl::Status add_savepoint(int64_t checkpoint_id, const std::string& dir) {
    return absl::UnimplementedError("this checkpoint storage takes no savepoints");
  }
};

// The storage a job uses: checkpoints go to `checkpoints`, savepoints to
// their own directories; state files are read from wherever a restored
// location points (a memory:// location, a directory, or s3://, see
// s3_storage.h). Thread-safe.
class RoutingCheckpointStorage final : public CheckpointStorage {
 public:
  explicit RoutingCheckpointStorage(std::shared_ptr<CheckpointStorage> checkpoints)
      : checkpoints_(std::move(checkpoints)) {}

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
  absl::Status add_savepoint(int64_t checkpoint_id, const std::string& dir) override;
  // Routes checkpoint `checkpoint_id` to the savepoint directory `dir` that
  // another process created (a TaskManager writing a savepoint's files).
  // When this process cannot open `dir`, every file of that id fails with
  // the reason instead (the subtasks decline, the savepoint fails).
  void route_savepoint(int64_t checkpoint_id, const std::string& dir);
  absl::StatusOr<std::string> upload_file(int64_t checkpoint_id, const std::string& local,
                                          const std::string& name, bool shared) override;
  bool supports_native() const override { return checkpoints_->supports_native(); }
  absl::StatusOr<std::unique_ptr<StateFileOutput>> create_shared_file(int64_t checkpoint_id,
                                                                      const std::string& name) override;
  bool supports_shared_files() const override { return checkpoints_->supports_shared_files(); }
  absl::StatusOr<std::shared_ptr<const StateFileBytes>> read_changelog_file(
      const std::string& location, const detail::ChangelogFile& file) override;
  bool durable() const override { return checkpoints_->durable(); }

 private:
  CheckpointStorage* target(int64_t checkpoint_id) const;
  // Why the savepoint `checkpoint_id` cannot be written here; OK if it can.
  absl::Status unroutable(int64_t checkpoint_id) const;

  const std::shared_ptr<CheckpointStorage> checkpoints_;
  mutable absl::Mutex mu_;
  std::map<int64_t, std::unique_ptr<CheckpointStorage>> savepoints_ ABSL_GUARDED_BY(mu_);
  std::map<int64_t, absl::Status> unroutable_ ABSL_GUARDED_BY(mu_);
};

// Where create_shared_file(checkpoint_id, name) puts a file, relative to
// the checkpoint's directory.
std::string shared_file_path(int64_t checkpoint_id, const std::string& name);

// Removes the checkpoint directory `location` (a claimed checkpoint of an
// earlier job). memory:// locations are left alone.
void discard_checkpoint_at(const std::string& location);
// Removes files (absolute paths, or s3:// objects), and their directories
// once empty.
void discard_files(const std::vector<std::string>& files);
// Where a native file of the checkpoint at `location` is: `relative` is its
// NativeFile::path (shared files under ../shared/), the result an absolute
// path, or an s3:// URL for a checkpoint in S3.
std::string native_file_location(const std::string& location, const std::string& relative);

// Loads and fully verifies (metadata and every state file's checksum) the
// checkpoint in directory `path` (a chk-<n> directory or its _metadata).
absl::StatusOr<RestoredCheckpoint> load_checkpoint(const std::string& path);

// The newest complete, intact checkpoint under `root` (any job directory),
// by completion time. Each broken or incomplete one passed over is described
// in `skipped` ("<path>: <reason>").
absl::StatusOr<RestoredCheckpoint> find_latest_checkpoint(const std::string& root,
                                                          std::vector<std::string>* skipped);

}  // namespace weir::checkpoint

#endif  // WEIR_CHECKPOINT_STORAGE_H_
