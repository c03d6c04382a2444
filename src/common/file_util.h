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

// A mapped file's lines read a byte range at a time, as sources that split
// a file among their subtasks read it: a line belongs to the range it
// starts in, and the pages read leave the process's memory a step at a
// time, so a reader's resident set does not grow with the file (at most a
// step per reader: 8 MiB steps made six subtasks hold 48 MB of their
// files; a step costs one madvise).
class LineReader {
 public:
  static constexpr int64_t kReleaseStep = 1 << 20;

  explicit LineReader(std::unique_ptr<MappedFile> file);
  int64_t size() const { return size_; }
  // Where share i of p of the file starts: byte size * i / p moved to the
  // start of the line after it (0 and size() stay).
  int64_t boundary(int64_t i, int64_t p) const;
  // The number (1-based) of the line that starts at `offset`, counted a
  // step at a time, the counted pages released at once.
  int64_t line_at(int64_t offset) const;
  // Reading goes on at `offset`: the pages before it are no concern of
  // this reader any more.
  void seek(int64_t offset) { released_ = offset; }
  // The line starting at *offset (< size()), without its line end (LF or
  // CR LF); *offset moves past it. Pages read a step ago are released.
  std::string_view next(int64_t* offset);
  // Done with the bytes before `offset`: their pages are released.
  void release_until(int64_t offset);

 private:
  std::unique_ptr<MappedFile> file_;
  const char* data_ = nullptr;
  int64_t size_ = 0;
  int64_t released_ = 0;  // pages before this offset left memory
};

// The resident bytes of this process now (/proc/self/statm), 0 if unknown.
int64_t resident_bytes();

// Message for errno `err` on `op` of `path`.
absl::Status errno_status(std::string_view op, const std::string& path, int err);

}  // namespace weir

#endif  // WEIR_COMMON_FILE_UTIL_H_
