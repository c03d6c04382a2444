#include "state/state_directory.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace weir::state {

namespace fs = std::filesystem;

namespace {
constexpr const char* kLockFile = ".owner";
}  // namespace

absl::StatusOr<std::unique_ptr<JobStateDirectory>> JobStateDirectory::acquire(const fs::path& root,
                                                                              const std::string& job_id) {
  fs::path dir = root / job_id;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return absl::InternalError("cannot create state directory " + dir.string() + ": " + ec.message());
  fs::path lock = dir / kLockFile;
  int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return absl::InternalError("cannot create " + lock.string() + ": " + std::strerror(errno));
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    ::close(fd);
    return absl::FailedPreconditionError("state directory " + dir.string() + " is in use by another job: " +
                                         std::strerror(err));
  }
  return std::unique_ptr<JobStateDirectory>(new JobStateDirectory(dir, fd));
}

JobStateDirectory::~JobStateDirectory() {
  std::error_code ec;
  fs::remove_all(dir_, ec);  // the lock file too, while still locked
  ::close(fd_);
}

std::vector<fs::path> JobStateDirectory::sweep(const fs::path& root, int min_age_seconds) {
  std::vector<fs::path> removed;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    if (!e.is_directory(ec)) continue;
    fs::path lock = e.path() / kLockFile;
    auto written = fs::last_write_time(lock, ec);
    if (ec) {
      ec.clear();
      continue;  // no lock file: not ours, or an owner creating it
    }
    if (fs::file_time_type::clock::now() - written < std::chrono::seconds(min_age_seconds)) continue;
    int fd = ::open(lock.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) continue;
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {  // no live owner
      fs::remove_all(e.path(), ec);
      if (!ec) removed.push_back(e.path());
      ec.clear();
    }
    ::close(fd);
  }
  return removed;
}

}  // namespace weir::state
