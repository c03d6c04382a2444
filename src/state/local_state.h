// Local recovery: the local copies of a job's snapshots, kept by the process
// that took them, so that after a task failure in the same process a
// subtask restores from its local copy instead of reading the checkpoint's
// files back (from S3, say).
//
// A copy lives in `<root>/<owner>/chk-<id>`: the RocksDB checkpoint
// directory of a native snapshot (hard links to the working copy's files),
// moved there once its upload has finished; or, when the store copies state
// files (checkpoints on remote storage), the state file as it was written
// to the checkpoint, under its own name (with changelog checkpoints, the
// chain's files too: links to the previous copy's, and the new one). When
// a checkpoint is confirmed complete, older copies are deleted; the newest
// confirmed one (and newer, pending ones) stay. The whole root goes with the store (when the job ends
// in this process).
//
// A copy is used only when it is known to be intact: registered for the
// same owner, checkpoint and key-group range, with every file present at its
// recorded size, and the same file sizes as the checkpoint's metadata lists.
// Otherwise, or when opening it fails, the restore reads the checkpoint.
//
// Thread-safe.
#ifndef WEIR_STATE_LOCAL_STATE_H_
#define WEIR_STATE_LOCAL_STATE_H_

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "weir/key_group.h"

namespace weir::state {

class LocalStateStore {
 public:
  // `copy_state_files`: keep copies of state files too, not only of native
  // snapshots.
  explicit LocalStateStore(std::filesystem::path root, bool copy_state_files = false)
      : root_(std::move(root)), copy_state_files_(copy_state_files) {}
  ~LocalStateStore();
  LocalStateStore(const LocalStateStore&) = delete;
  LocalStateStore& operator=(const LocalStateStore&) = delete;

  bool copies_state_files() const { return copy_state_files_; }
  // Where the copy of `owner`'s snapshot for `checkpoint_id` goes.
  std::filesystem::path directory_for(const std::string& owner, int64_t checkpoint_id) const;
  // Registers the copy in directory_for(owner, checkpoint_id); records its
  // files and their sizes.
  void put(const std::string& owner, int64_t checkpoint_id, KeyGroupRange range);
  // Checkpoint `checkpoint_id` completed: every older copy is deleted.
  void confirm(int64_t checkpoint_id);
  // The files (absolute paths) of the intact copy of `owner`'s snapshot for
  // `checkpoint_id` over `range`, whose sizes must be `expected_sizes` (in
  // any order); nullopt when there is none.
  std::optional<std::vector<std::string>> find(const std::string& owner, int64_t checkpoint_id, KeyGroupRange range,
                                                std::vector<uint64_t> expected_sizes) const;

  // The name in a copy of the changelog file at `path` (relative to its
  // checkpoint, ../shared/c<id>/<name>): c<id>~<name>. A copy holds, beside
  // the subtask's state file, every file of its chain.
  static std::string changelog_copy_name(const std::string& path);

  // Restores served from local copies by every store of the process.
  static int64_t restores_total() { return restores_.load(); }
  static void count_restore() { restores_.fetch_add(1); }

 private:
  struct Copy {
    KeyGroupRange range;
    std::map<std::string, uint64_t> files;  // absolute path -> size
  };

  const std::filesystem::path root_;
  const bool copy_state_files_;
  mutable std::mutex mu_;
  // owner -> checkpoint id -> copy
  std::map<std::string, std::map<int64_t, Copy>> copies_;
  static std::atomic<int64_t> restores_;
};

}  // namespace weir::state

#endif  // WEIR_STATE_LOCAL_STATE_H_
