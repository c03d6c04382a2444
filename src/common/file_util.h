// Small POSIX file helpers with errors as values that name the path and the
// cause ("write /x/y: No space left on device").
#ifndef WEIR_COMMON_FILE_UTIL_H_
#define WEIR_COMMON_FILE_UTIL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace weir {

// Writes all of `bytes` to the open descriptor `fd` (retrying short writes
// and EINTR); `path` names it in errors.
absl::Status write_all(int fd, std::string_view bytes, const std::string& path);
// Writes `bytes` to `path` and fsyncs it. Replaces an existing file.
absl::Status write_file_synced(const std::string& path, std::string_view bytes);
// Copies `from` to `to` (in the kernel, not through this process's memory) and fsyncs it.
absl::Status copy_file_synced(const std::string& from, const std::string& to);
// Publishes atomically: writes `path`.tmp, fsyncs, renames onto `path`,
// fsyncs the directory. A reader sees the old file or the whole new one.
absl::Status write_file_atomic(const std::string& path, std::string_view bytes);
absl::StatusOr<std::string> read_file(const std::string& path);
absl::Status fsync_directory(const std::string& dir);
// rename(2) followed by an fsync of the target's directory.
absl::Status rename_durable(const std::string& from, const std::string& to);
// A whole file mapped read-only (MAP_PRIVATE, read sequentially): its pages
// come from the page cache, not the heap. Unmapped on destruction.
class MappedFile {
 public:
  static absl::StatusOr<std::unique_ptr<MappedFile>> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  std::string_view bytes() const { return {data_ == nullptr ? "" : data_, size_}; }
  // The caller is done with `part` (inside bytes()) for now: its whole
  // pages leave the process's memory; touching them again reads them back.
  void release(std::string_view part) const;

 private:
  MappedFile() = default;
  const char* data_ = nullptr;
  size_t size_ = 0;
};

// The resident bytes of this process now (/proc/self/statm), 0 if unknown.
int64_t resident_bytes();

// Message for errno `err` on `op` of `path`.
absl::Status errno_status(std::string_view op, const std::string& path, int err);

}  // namespace weir

#endif  // WEIR_COMMON_FILE_UTIL_H_
