#include "network/result_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "common/file_util.h"
#include "s3/s3_client.h"

namespace weir::network {
namespace {

constexpr size_t kFrameHeaderBytes = 1 + 1 + 8 + 8 + 4;
constexpr size_t kLengthOffset = kFrameHeaderBytes - 4;
// Staged frames are written once they reach this size.
constexpr size_t kWriteBytes = 256 * 1024;

void put_u32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
void append_i64(std::string& s, int64_t v) {
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>(static_cast<uint64_t>(v) >> (8 * i)));
}
uint32_t get_u32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}
int64_t get_i64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return static_cast<int64_t>(v);
}

[[noreturn]] void fail(const absl::Status& s) { throw std::runtime_error(std::string(s.message())); }

}  // namespace

namespace {

bool remote(const JobConfig& config) { return s3::is_s3_url(config.checkpoint.directory); }

}  // namespace

std::string local_result_root(const JobConfig& config, const std::string& job_id, ExchangeMode mode) {
  namespace fs = std::filesystem;
  if (mode == ExchangeMode::kPersisted && !remote(config)) {
    return (fs::path(config.checkpoint.directory) / "results" / job_id).string();
  }
  fs::path base = config.result_directory.empty() ? fs::temp_directory_path() / "weir-results"
                                                   : fs::path(config.result_directory);
  return (base / job_id).string();
}

std::string result_directory(const JobConfig& config, const std::string& job_id, ExchangeMode mode) {
  const std::string root = local_result_root(config, job_id, mode);
  if (mode != ExchangeMode::kPersisted || !remote(config)) return root;
  // Each process its own copy: what another process wrote is read from S3.
  return (std::filesystem::path(root) / ("persisted-" + std::to_string(::getpid()))).string();
}

std::string remote_result_directory(const JobConfig& config, const std::string& job_id, ExchangeMode mode) {
  if (mode != ExchangeMode::kPersisted || !remote(config)) return "";
  std::string dir = config.checkpoint.directory;
  while (!dir.empty() && dir.back() == '/') dir.pop_back();
  return dir + "/results/" + job_id;
}

std::string result_file_path(const std::string& directory, int job_edge, int producer, int consumer) {
  return (std::filesystem::path(directory) /
          ("e" + std::to_string(job_edge) + "-p" + std::to_string(producer) + "-c" + std::to_string(consumer)))
      .string();
}

absl::StatusOr<std::shared_ptr<ResultFileWriter>> ResultFileWriter::create(std::string path, bool durable,
                                                                           Published published) {
  std::error_code ec;
  const std::string dir = std::filesystem::path(path).parent_path().string();
  std::filesystem::create_directories(dir, ec);
  if (ec) return errno_status("mkdir", dir, ec.value());
  const std::string in_progress = path + ".inprogress";
  int fd = ::open(in_progress.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errno_status("open", in_progress, errno);
  return std::shared_ptr<ResultFileWriter>(
      new ResultFileWriter(std::move(path), fd, durable, std::move(published)));
}

ResultFileWriter::ResultFileWriter(std::string path, int fd, bool durable, Published published)
    : path_(std::move(path)), fd_(fd), durable_(durable), published_hook_(std::move(published)) {}

ResultFileWriter::~ResultFileWriter() { close(); }

void ResultFileWriter::append_header(const ChannelEvent& ev, uint32_t length) {
  staged_.push_back(static_cast<char>(ev.kind));
  staged_.push_back(static_cast<char>(ev.idle || ev.savepoint ? 1 : 0));
  append_i64(staged_, ev.checkpoint_id);
  append_i64(staged_, ev.timestamp_ms);
  staged_.append(4, '\0');
  put_u32(staged_.data() + staged_.size() - 4, length);
}

bool ResultFileWriter::push(ChannelEvent ev, std::atomic<int64_t>*, const std::atomic<bool>*) {
  if (fd_ < 0) return published_;  // after end-of-data: nothing more to keep
  if (ev.kind == EventKind::kBuffer) {
    const char* p = ev.buffer.data();
    size_t n = ev.buffer.size();
    while (n > 0) {
      if (open_frame_ == std::string::npos ||
          get_u32(staged_.data() + open_frame_ + kLengthOffset) == kMaxFrameBytes) {
        open_frame_ = staged_.size();
        append_header(ev, 0);
      }
      char* length = staged_.data() + open_frame_ + kLengthOffset;
      const uint32_t have = get_u32(length);
      const size_t take = std::min(n, kMaxFrameBytes - have);
      put_u32(length, static_cast<uint32_t>(have + take));
      staged_.append(p, take);
      p += take;
      n -= take;
      if (staged_.size() >= kWriteBytes) write_out();
    }
    return true;
  }
  open_frame_ = std::string::npos;
  append_header(ev, 0);
  if (ev.kind == EventKind::kEndOfData) {
    finish();
  } else if (staged_.size() >= kWriteBytes) {
    write_out();
  }
  return true;
}

void ResultFileWriter::write_out() {
  const std::string in_progress = path_ + ".inprogress";
  absl::Status s = write_all(fd_, staged_, in_progress);
  if (!s.ok()) fail(s);
  bytes_ += static_cast<int64_t>(staged_.size());
  staged_.clear();
  open_frame_ = std::string::npos;
}

void ResultFileWriter::finish() {
  write_out();
  const std::string in_progress = path_ + ".inprogress";
  if (durable_ && ::fsync(fd_) != 0) fail(errno_status("fsync", in_progress, errno));
  ::close(fd_);
  fd_ = -1;
  absl::Status s = durable_ ? rename_durable(in_progress, path_)
                            : (std::rename(in_progress.c_str(), path_.c_str()) == 0
                                   ? absl::OkStatus()
                                   : errno_status("rename", in_progress, errno));
  if (!s.ok()) fail(s);
  if (published_hook_) {
    s = published_hook_(path_);
    if (!s.ok()) fail(s);
  }
  published_ = true;
}

void ResultFileWriter::close() {
  if (fd_ < 0) return;
  ::close(fd_);
  fd_ = -1;
  ::unlink((path_ + ".inprogress").c_str());
}

absl::StatusOr<std::shared_ptr<ResultFileReader>> ResultFileReader::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) return absl::NotFoundError("result file " + path + " is missing (its producer's output is lost)");
    return errno_status("open", path, err);
  }
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  return std::shared_ptr<ResultFileReader>(new ResultFileReader(path, fd));
}

ResultFileReader::~ResultFileReader() { close(); }

bool ResultFileReader::read_exactly(char* p, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::read(fd_, p + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) fail(errno_status("read", path_, errno));
    if (r == 0) {
      if (got == 0) return false;
      throw std::runtime_error("result file " + path_ + " is truncated");
    }
    got += static_cast<size_t>(r);
  }
  return true;
}

std::optional<ChannelEvent> ResultFileReader::poll() {
  if (ended_ || fd_ < 0) return std::nullopt;
  char header[kFrameHeaderBytes];
  if (!read_exactly(header, kFrameHeaderBytes)) {
    throw std::runtime_error("result file " + path_ + " ends without end-of-data");
  }
  const uint8_t kind = static_cast<uint8_t>(header[0]);
  const uint32_t length = get_u32(header + kLengthOffset);
  if (kind > static_cast<uint8_t>(EventKind::kIdle) || length > ResultFileWriter::kMaxFrameBytes ||
      (length != 0 && kind != static_cast<uint8_t>(EventKind::kBuffer))) {
    throw std::runtime_error("result file " + path_ + " is corrupt (a frame of kind " + std::to_string(kind) +
                             " and " + std::to_string(length) + " bytes)");
  }
  ChannelEvent ev;
  ev.kind = static_cast<EventKind>(kind);
  ev.checkpoint_id = get_i64(header + 2);
  ev.timestamp_ms = get_i64(header + 10);
  ev.idle = ev.kind == EventKind::kIdle && header[1] != 0;
  ev.savepoint = ev.kind == EventKind::kBarrier && header[1] != 0;
  if (ev.kind == EventKind::kBuffer) {
    data_.resize(std::max<size_t>(data_.size(), length));
    if (length > 0 && !read_exactly(data_.data(), length)) {
      throw std::runtime_error("result file " + path_ + " is truncated");
    }
    // Borrows this reader's memory (no pool): valid until the next poll.
    ev.buffer = Buffer(nullptr, data_.data(), data_.size());
    ev.buffer.set_size(length);
  }
  if (ev.kind == EventKind::kEndOfData) ended_ = true;
  return ev;
}

void ResultFileReader::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::optional<ChannelEvent> ServedResultReader::poll() {
  std::optional<ChannelEvent> ev = channel_->poll();
  if (ev) {
    ended_ = ended_ || ev->kind == EventKind::kEndOfData;
    return ev;
  }
  if (!ended_ && channel_->closed()) {
    throw std::runtime_error(what_ + " ended before its end-of-data: the TaskManager serving it failed or is gone");
  }
  return std::nullopt;
}

}  // namespace weir::network
