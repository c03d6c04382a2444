#include "common/file_util.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace weir {

absl::Status errno_status(std::string_view op, const std::string& path, int err) {
  std::string msg = std::string(op) + " " + path + ": " + std::strerror(err);
  if (err == ENOENT) return absl::NotFoundError(msg);
  if (err == EACCES || err == EPERM) return absl::PermissionDeniedError(msg);
  if (err == ENOSPC || err == EDQUOT) return absl::ResourceExhaustedError(msg);
  return absl::InternalError(msg);
}

absl::Status write_all(int fd, std::string_view bytes, const std::string& path) {
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno_status("write", path, errno);
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

namespace {
// fsyncs and closes `fd` (of `path`); closes it on failure too.
absl::Status sync_and_close(int fd, const std::string& path) {
  if (::fsync(fd) != 0) {
    int err = errno;
    ::close(fd);
    return errno_status("fsync", path, err);
  }
  if (::close(fd) != 0) return errno_status("close", path, errno);
  return absl::OkStatus();
}
}  // namespace

absl::Status write_file_synced(const std::string& path, std::string_view bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errno_status("open", path, errno);
  absl::Status s = write_all(fd, bytes, path);
  if (!s.ok()) {
    ::close(fd);
    return s;
  }
  return sync_and_close(fd, path);
}

absl::Status copy_file_synced(const std::string& from, const std::string& to) {
  std::error_code ec;
  std::filesystem::copy_file(from, to, std::filesystem::copy_options::overwrite_existing, ec);
  if (ec) return errno_status("copy " + from + " to", to, ec.value());
  int fd = ::open(to.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return errno_status("open", to, errno);
  return sync_and_close(fd, to);
}

absl::Status fsync_directory(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return errno_status("open", dir, errno);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) return errno_status("fsync", dir, err);
  return absl::OkStatus();
}

absl::Status rename_durable(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) return errno_status("rename", from, errno);
  std::string dir = std::filesystem::path(to).parent_path().string();
  return fsync_directory(dir.empty() ? "." : dir);
}

absl::Status write_file_atomic(const std::string& path, std::string_view bytes) {
  std::string tmp = path + ".tmp";
  absl::Status s = write_file_synced(tmp, bytes);
  if (!s.ok()) {
    ::unlink(tmp.c_str());
    return s;
  }
  return rename_durable(tmp, path);
}

absl::StatusOr<std::string> read_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno_status("open", path, errno);
  std::string out;
  struct stat st;
  if (::fstat(fd, &st) == 0 && st.st_size > 0) out.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      return errno_status("read", path, err);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

absl::StatusOr<std::unique_ptr<MappedFile>> MappedFile::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno_status("open", path, errno);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return errno_status("stat", path, err);
  }
  std::unique_ptr<MappedFile> m(new MappedFile());
  m->size_ = static_cast<size_t>(st.st_size);
  if (m->size_ > 0) {
    void* p = ::mmap(nullptr, m->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      return errno_status("mmap", path, err);
    }
    ::madvise(p, m->size_, MADV_SEQUENTIAL);
    m->data_ = static_cast<const char*>(p);
  }
  ::close(fd);
  return m;
}

void MappedFile::release(std::string_view part) const {
  if (data_ == nullptr || part.empty() || part.data() < data_ || part.data() + part.size() > data_ + size_) return;
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  uintptr_t begin = reinterpret_cast<uintptr_t>(part.data());
  uintptr_t end = begin + part.size();
  begin = (begin + page - 1) / page * page;  // whole pages inside `part` only
  end = end / page * page;
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

LineReader::LineReader(std::unique_ptr<MappedFile> file)
    : file_(std::move(file)), data_(file_->bytes().data()), size_(static_cast<int64_t>(file_->bytes().size())) {}

int64_t LineReader::boundary(int64_t i, int64_t p) const {
  const int64_t b = size_ * i / p;
  if (b <= 0) return 0;
  if (b >= size_) return size_;
  const void* nl = std::memchr(data_ + b - 1, '\n', static_cast<size_t>(size_ - b + 1));
  return nl ? static_cast<const char*>(nl) - data_ + 1 : size_;
}

int64_t LineReader::line_at(int64_t offset) const {
  int64_t line = 1;
  for (int64_t at = 0; at < offset; at += kReleaseStep) {
    const int64_t n = std::min(kReleaseStep, offset - at);
    line += std::count(data_ + at, data_ + at + n, '\n');
    file_->release(std::string_view(data_ + at, static_cast<size_t>(n)));
  }
  return line;
}

std::string_view LineReader::next(int64_t* offset) {
  if (*offset - released_ >= kReleaseStep) release_until(*offset);
  const char* begin = data_ + *offset;
  const void* nl = std::memchr(begin, '\n', static_cast<size_t>(size_ - *offset));
  const char* end = nl ? static_cast<const char*>(nl) : data_ + size_;
  size_t len = static_cast<size_t>(end - begin);
  if (len > 0 && begin[len - 1] == '\r') --len;
  *offset = (end - data_) + (nl ? 1 : 0);
  return std::string_view(begin, len);
}

void LineReader::release_until(int64_t offset) {
  offset = std::min(offset, size_);
  if (offset <= released_) return;
  file_->release(std::string_view(data_ + released_, static_cast<size_t>(offset - released_)));
  released_ = offset;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<char*>(data_), size_);
}

int64_t resident_bytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  long long size = 0, resident = 0;
  const int n = std::fscanf(f, "%lld %lld", &size, &resident);
  std::fclose(f);
  return n == 2 ? resident * static_cast<int64_t>(::sysconf(_SC_PAGESIZE)) : 0;
}

}  // namespace weir
