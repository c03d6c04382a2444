// A job's directory of local state (RocksDB working copies and local
// snapshot copies), `<root>/<job>`, owned by the process running the job.
//
// The owner holds an exclusive flock on `<root>/<job>/.owner` for the job's
// life and removes the directory when it ends. A process killed without
// cleaning up leaves its directory behind, but not its lock (the kernel
// drops it with the process): sweep() removes every job directory under
// `root` whose lock it can take, so stale working copies of crashed
// processes do not accumulate. (flock locks belong to an open file, so a
// second job of the same process conflicts with the first as well.)
#ifndef WEIR_STATE_STATE_DIRECTORY_H_
#define WEIR_STATE_STATE_DIRECTORY_H_

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace weir::state {

class JobStateDirectory {
 public:
  // Creates `<root>/<job>` and takes its lock.
  static absl::StatusOr<std::unique_ptr<JobStateDirectory>> acquire(const std::filesystem::path& root,
                                                                     const std::string& job_id);
  ~JobStateDirectory();  // unlocks and removes the directory
  JobStateDirectory(const JobStateDirectory&) = delete;
  JobStateDirectory& operator=(const JobStateDirectory&) = delete;

  const std::filesystem::path& path() const { return dir_; }

  // Removes the job directories under `root` whose owner is gone; returns
  // them. Directories without a lock file, or whose lock file is younger
  // than `min_age_seconds` (an owner still starting), are left alone.
  static std::vector<std::filesystem::path> sweep(const std::filesystem::path& root, int min_age_seconds = 60);

 private:
  JobStateDirectory(std::filesystem::path dir, int fd) : dir_(std::move(dir)), fd_(fd) {}

  const std::filesystem::path dir_;
  const int fd_;
};

}  // namespace weir::state

#endif  // WEIR_STATE_STATE_DIRECTORY_H_
