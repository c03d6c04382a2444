// Job libraries: jobs built out of tree as shared libraries with the entry
// point of weir/job_library.h, loaded into this process, and the store that
// keeps them by content (the SHA-256 of their bytes) on the JobManager and
// the TaskManagers.
#ifndef WEIR_CLUSTER_JOB_LIBRARY_H_
#define WEIR_CLUSTER_JOB_LIBRARY_H_

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "weir/job_library.h"

namespace weir::cluster {

// A loaded job library. Stays loaded for the life of the process: tasks,
// operators and their vtables live in its code.
class JobLibrary {
 public:
  // Loads the library at `path` once per process (later calls return the
  // same object). Errors name the path and the cause: not a shared library,
  // missing symbols, no weir entry point, built against another weir.
  static absl::StatusOr<const JobLibrary*> load(const std::string& path);
  // The library loaded from `path`, or null.
  static const JobLibrary* loaded(const std::string& path);

  const std::string& name() const { return name_; }
  const std::string& path() const { return path_; }
  // Calls the library's build function; an exception it throws becomes an
  // error.
  absl::Status build(StreamEnvironment& env, const std::vector<std::string>& args) const;

 private:
  JobLibrary(std::string path, std::string name, JobBuildFunction build)
      : path_(std::move(path)), name_(std::move(name)), build_(build) {}

  const std::string path_;
  const std::string name_;
  const JobBuildFunction build_;
};

// Builds job `job` (a built-in job's name, or the path of a job library)
// with `args` in a child process (this executable's `weir run --dry-run`),
// so that a build that crashes, hangs or takes too much memory takes down
// only the child. The child's address space is limited to
// `memory_limit_bytes` (0: no limit; none either in a sanitizer build,
// whose shadow memory is address space). InvalidArgument naming the job
// and what the child said, the signal that ended it, or the timeout.
absl::Status build_in_child(const std::string& job, const std::vector<std::string>& args,
                            std::chrono::milliseconds timeout, int64_t memory_limit_bytes = 0);

// Lower-case hex SHA-256 of `bytes`.
std::string sha256_hex(std::string_view bytes);
// InvalidArgument unless `digest` is 64 lower-case hex digits.
absl::Status check_digest(const std::string& digest);

// Libraries by digest: <dir>/<digest>.so, written atomically, checked
// against their digest before every load or read. The directory is created
// private to the user (0700).
class LibraryStore {
 public:
  explicit LibraryStore(std::string dir) : dir_(std::move(dir)) {}

  // The default directory: <system temp>/weir-libraries-<uid>.
  static std::string default_directory();

  // Stores `bytes`, refusing them unless they hash to `digest`; returns the
  // path they are stored at.
  absl::StatusOr<std::string> put(const std::string& digest, std::string_view bytes);
  // The stored bytes of `digest`: NotFound when absent, DataLoss when the
  // file no longer hashes to its name (it is removed then).
  absl::StatusOr<std::string> read(const std::string& digest);
  // The library `digest`, verified and loaded (once loaded, the code in
  // memory is what was verified: the file is not hashed again).
  absl::StatusOr<const JobLibrary*> load(const std::string& digest);
  // The path of the library `digest`, once its content is verified.
  absl::StatusOr<std::string> verified_path(const std::string& digest);

  const std::string& directory() const { return dir_; }

 private:
  std::string path(const std::string& digest) const { return dir_ + "/" + digest + ".so"; }
  absl::Status ensure_directory();

  const std::string dir_;
  absl::Mutex mu_;  // serialises writers of the same digest
};

}  // namespace weir::cluster

#endif  // WEIR_CLUSTER_JOB_LIBRARY_H_
