// Where checkpoints live, by the scheme of a location:
//   a path            a directory of a file system every process mounts
//                     (file_storage.h)
//   s3://BUCKET/KEY   S3-compatible object storage (s3_storage.h)
//   memory://JOB/N    the memory of the process that runs the job, when no
//                     checkpoint directory is given (memory_storage.h)
// Whatever depends on where a checkpoint is (opening a job's storage,
// reading one back, finding the newest, removing one) goes through the
// scheme of its location, scheme_for(); nothing else looks at a location's
// prefix.
#ifndef WEIR_CHECKPOINT_STORAGE_SCHEME_H_
#define WEIR_CHECKPOINT_STORAGE_SCHEME_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "checkpoint/storage.h"

namespace weir::checkpoint {

// A retained checkpoint's directory (or key prefix) under its job's, as
// Flink names it: chk-<id>.
inline std::string checkpoint_dir_name(int64_t id) { return "chk-" + std::to_string(id); }

class StorageScheme {
 public:
  virtual ~StorageScheme() = default;

  // Whether processes reach the files only over the network: a TaskManager
  // keeps local copies of its state files for recovery, and downloads
  // native files before a restore.
  virtual bool remote() const = 0;
  // Whether checkpoints outlive the process that wrote them (memory's do
  // not: they are read back only by the job that holds them).
  virtual bool durable() const { return true; }
  // The checkpoints of job `job_id` under `root`.
  virtual absl::StatusOr<std::unique_ptr<CheckpointStorage>> open(const std::string& root,
                                                                 const std::string& job_id) const = 0;
  // The storage of the one location `dir` (a savepoint's, or a checkpoint's
  // read back): every checkpoint id maps to `dir` itself.
  virtual absl::StatusOr<std::unique_ptr<CheckpointStorage>> at(const std::string& dir) const = 0;
  // at() for a new savepoint: refused when `dir` exists (or holds objects).
  virtual absl::StatusOr<std::unique_ptr<CheckpointStorage>> create_savepoint(const std::string& dir) const = 0;
  // load_checkpoint and find_latest_checkpoint (storage.h).
  virtual absl::StatusOr<RestoredCheckpoint> load(const std::string& path) const = 0;
  virtual absl::StatusOr<RestoredCheckpoint> find_latest(const std::string& root,
                                                         std::vector<std::string>* skipped) const = 0;
  // native_file_location (storage.h).
  virtual std::string resolve(const std::string& location, const std::string& relative) const = 0;
  // Removes the checkpoint at `location`, best effort.
  virtual void discard_at(const std::string& location) const = 0;
  // Removes one file (and its directory once empty), best effort.
  virtual void remove_file(const std::string& file) const = 0;
  // Copies the native files of `state` (a subtask of the checkpoint at
  // `location`) into directory `dir`, each checked against its size and
  // checksum; their local paths, in the handle's order. Remote schemes only.
  virtual absl::StatusOr<std::vector<std::string>> download_native_files(const std::string& location,
                                                                         const OperatorSubtaskState& state,
                                                                         const std::string& dir) const;
};

// The scheme of `location`; "" (no checkpoint directory) is memory's.
const StorageScheme& scheme_for(std::string_view location);

// Each scheme (defined beside its storage).
const StorageScheme& file_scheme();
const StorageScheme& memory_scheme();
const StorageScheme& s3_scheme();

}  // namespace weir::checkpoint

#endif  // WEIR_CHECKPOINT_STORAGE_SCHEME_H_
