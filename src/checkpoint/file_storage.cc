#include "checkpoint/file_storage.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "absl/strings/numbers.h"
#include "checkpoint/storage_scheme.h"
#include "common/file_util.h"
#include "common/test_points.h"

namespace fs = std::filesystem;

namespace weir::checkpoint {
namespace {

// Buffered writes to a file; finish() flushes, fsyncs and closes.
class FileOutput final : public StateFileOutput {
 public:
  FileOutput(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~FileOutput() override {
    if (fd_ >= 0) ::close(fd_);
  }
  absl::Status append(std::string_view bytes) override {
    buf_.append(bytes);
    if (buf_.size() < kBufferBytes) return absl::OkStatus();
    return drain();
  }
  absl::Status finish() override {
    absl::Status s = drain();
    if (!s.ok()) return s;
    if (::fsync(fd_) != 0) return errno_status("fsync", path_, errno);
    int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) return errno_status("close", path_, errno);
    return absl::OkStatus();
  }

 private:
  static constexpr size_t kBufferBytes = 1 << 20;
  absl::Status drain() {
    absl::Status s = write_all(fd_, buf_, path_);
    buf_.clear();
    return s;
  }
  int fd_;
  const std::string path_;
  std::string buf_;
};

// A state file read back from disk, memory-mapped.
class MappedBytes final : public StateFileBytes {
 public:
  explicit MappedBytes(std::unique_ptr<MappedFile> file) : file_(std::move(file)) {}
  std::string_view bytes() const override { return file_->bytes(); }
  void release(std::string_view part) const override { file_->release(part); }

 private:
  const std::unique_ptr<MappedFile> file_;
};

absl::Status verify_files(const RestoredCheckpoint& cp, CheckpointStorage& storage) {
  for (const auto& op : cp.metadata.operators) {
    for (const auto& s : op.subtasks) {
      auto bytes = storage.read_state_file(cp.location, s);
      if (!bytes.ok()) return bytes.status();
      for (const auto& f : s.changelog) {
        auto chain = storage.read_changelog_file(cp.location, f);
        if (!chain.ok()) return chain.status();
      }
      for (const auto& f : s.native_files) {
        fs::path p = native_file_location(cp.location, f.path);
        std::error_code ec;
        uint64_t size = fs::file_size(p, ec);
        // Shared files live outside the checkpoint's directory: name both.
        const std::string what = cp.location + ": " + p.string();
        if (ec) return absl::DataLossError(what + ": " + ec.message());
        if (size != f.size) {
          return absl::DataLossError(what + ": size " + std::to_string(size) + ", expected " +
                                     std::to_string(f.size));
        }
        if (f.has_checksum) {
          auto sum = checksum_file(p.string());
          if (!sum.ok()) return absl::DataLossError(what + ": " + std::string(sum.status().message()));
          if (*sum != f.checksum) return absl::DataLossError(what + ": checksum mismatch (the file is corrupted)");
        }
      }
    }
  }
  return absl::OkStatus();
}


// The operator-state section of the state file at `path`, checked.
absl::StatusOr<std::shared_ptr<const StateFileBytes>> read_section_of(const std::string& path,
                                                                      const OperatorSubtaskState& handle) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno_status("open", path, errno);
  std::string bytes(handle.operator_state_length, '\0');
  size_t done = 0;
  absl::Status s;
  while (done < bytes.size()) {
    const ssize_t n = ::pread(fd, bytes.data() + done, bytes.size() - done,
                              static_cast<off_t>(handle.operator_state_offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      s = errno_status("read", path, errno);
      break;
    }
    if (n == 0) {
      s = absl::DataLossError(path + ": shorter than its operator state (truncated)");
      break;
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  if (s.ok()) s = verify_operator_state(bytes, handle, path);
  if (!s.ok()) return s;
  return std::shared_ptr<const StateFileBytes>(std::make_shared<OwnedStateFileBytes>(std::move(bytes)));
}

}  // namespace

FileCheckpointStorage::FileCheckpointStorage(std::string root, std::string job_id)
    : job_dir_((fs::path(root) / job_id).string()) {}

FileCheckpointStorage::FileCheckpointStorage(AtDirectory, std::string dir)
    : job_dir_(std::move(dir)), fixed_(true) {}

std::unique_ptr<FileCheckpointStorage> FileCheckpointStorage::at_directory(std::string dir) {
  return std::unique_ptr<FileCheckpointStorage>(new FileCheckpointStorage(AtDirectory{}, std::move(dir)));
}

std::string FileCheckpointStorage::location(int64_t id) const {
  if (fixed_) return job_dir_;
  return (fs::path(job_dir_) / checkpoint_dir_name(id)).string();
}

absl::StatusOr<std::vector<int64_t>> FileCheckpointStorage::stored_checkpoints() {
  std::vector<int64_t> ids;
  if (fixed_) return ids;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(job_dir_, ec)) {
    const std::string name = e.path().filename().string();
    int64_t id;
    if (name.rfind("chk-", 0) == 0 && absl::SimpleAtoi(name.substr(4), &id)) ids.push_back(id);
  }
  if (ec && ec != std::errc::no_such_file_or_directory) return errno_status("list", job_dir_, ec.value());
  return ids;
}

absl::Status FileCheckpointStorage::ensure_dir(int64_t id) {
  absl::MutexLock lock(&mu_);
  if (created_[id]) return absl::OkStatus();
  std::error_code ec;
  fs::create_directories(location(id), ec);
  if (ec) return errno_status("mkdir", location(id), ec.value());
  created_[id] = true;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<StateFileOutput>> FileCheckpointStorage::create_state_file(
    int64_t id, const std::string& name) {
  absl::Status s = ensure_dir(id);
  if (!s.ok()) return s;
  std::string path = (fs::path(location(id)) / name).string();
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errno_status("open", path, errno);
  return std::unique_ptr<StateFileOutput>(new FileOutput(fd, path));
}

absl::StatusOr<std::string> FileCheckpointStorage::finalize(const CheckpointMetadata& m) {
  absl::Status s = ensure_dir(m.checkpoint_id);
  if (!s.ok()) return s;
  std::string dir = location(m.checkpoint_id);
  s = fsync_directory(dir);
  if (!s.ok()) return s;
  // _metadata appears at once, complete: written beside it, then renamed.
  const std::string metadata = (fs::path(dir) / kMetadataFileName).string();
  const std::string tmp = metadata + ".tmp";
  s = write_file_synced(tmp, encode_metadata(m));
  if (!s.ok()) {
    ::unlink(tmp.c_str());
    return s;
  }
  WEIR_CRASH_POINT(CrashPoint::kMetadataBeforeRename);
  s = rename_durable(tmp, metadata);
  if (!s.ok()) return s;
  WEIR_CRASH_POINT(CrashPoint::kMetadataAfterRename);
  s = fsync_directory(fixed_ ? fs::path(job_dir_).parent_path().string() : job_dir_);
  if (!s.ok()) return s;
  return dir;
}

absl::StatusOr<std::shared_ptr<const StateFileBytes>> FileCheckpointStorage::read_operator_state(
    const std::string& location, const OperatorSubtaskState& handle) {
  if (!handle.has_operator_state_checksum) return CheckpointStorage::read_operator_state(location, handle);
  return read_section_of((fs::path(location) / handle.file).string(), handle);
}

absl::StatusOr<std::shared_ptr<const StateFileBytes>> FileCheckpointStorage::read_state_file(
    const std::string& location, const OperatorSubtaskState& handle) {
  std::string path = (fs::path(location) / handle.file).string();
  auto file = MappedFile::open(path);
  if (!file.ok()) return file.status();
  auto mapped = std::make_shared<const MappedBytes>(std::move(*file));
  std::string_view bytes = mapped->bytes();
  if (bytes.size() != handle.file_size) {
    return absl::DataLossError(path + ": size " + std::to_string(bytes.size()) + ", expected " +
                               std::to_string(handle.file_size));
  }
  // The checksum reads every page; each chunk is let go once hashed.
  absl::Status s = verify_state_file(bytes, path, [&mapped](std::string_view c) { mapped->release(c); });
  if (!s.ok()) return s;
  return std::shared_ptr<const StateFileBytes>(std::move(mapped));
}

void FileCheckpointStorage::discard(int64_t id) {
  {
    absl::MutexLock lock(&mu_);
    created_.erase(id);
  }
  std::error_code ec;
  fs::remove_all(location(id), ec);  // best effort: a leftover is found and reported later
  if (!fixed_) fs::remove_all(shared_dir(id), ec);
}

void FileCheckpointStorage::discard_subsumed(int64_t id, const std::vector<std::string>& unreferenced) {
  {
    absl::MutexLock lock(&mu_);
    created_.erase(id);
  }
  std::error_code ec;
  fs::remove_all(location(id), ec);
  discard_files(unreferenced);
}

std::string FileCheckpointStorage::shared_dir(int64_t id) const {
  return (fs::path(job_dir_) / "shared" / ("c" + std::to_string(id))).string();
}

absl::StatusOr<std::string> FileCheckpointStorage::upload_file(int64_t id, const std::string& local,
                                                               const std::string& name, bool shared) {
  if (fixed_) return absl::UnimplementedError("a savepoint keeps no native files");
  absl::Status s = ensure_dir(id);
  if (!s.ok()) return s;
  fs::path dir = shared ? fs::path(shared_dir(id)) : fs::path(location(id));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return errno_status("mkdir", dir.string(), ec.value());
  fs::path to = dir / name;
  // Copied by the kernel: an SST can be large, and its pages need not pass
  // through this process.
  s = copy_file_synced(local, to.string());
  if (!s.ok()) return s;
  return shared ? (fs::path("..") / "shared" / ("c" + std::to_string(id)) / name).string() : name;
}

absl::StatusOr<std::unique_ptr<StateFileOutput>> FileCheckpointStorage::create_shared_file(int64_t id,
                                                                                          const std::string& name) {
  if (fixed_) return absl::UnimplementedError("a savepoint keeps no shared files");
  absl::Status s = ensure_dir(id);
  if (!s.ok()) return s;
  const fs::path dir = shared_dir(id);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return errno_status("mkdir", dir.string(), ec.value());
  const std::string path = (dir / name).string();
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errno_status("open", path, errno);
  return std::unique_ptr<StateFileOutput>(new FileOutput(fd, path));
}

// ---- the file scheme ----------------------------------------------------------

namespace {

absl::StatusOr<RestoredCheckpoint> load_from_directory(const std::string& path) {
  fs::path dir(path);
  if (dir.filename() == kMetadataFileName) dir = dir.parent_path();
  std::string meta_path = (dir / kMetadataFileName).string();
  auto bytes = read_file(meta_path);
  if (!bytes.ok()) {
    if (absl::IsNotFound(bytes.status())) {
      std::error_code ec;
      if (!fs::is_directory(dir, ec)) return absl::NotFoundError(dir.string() + ": no such checkpoint directory");
      return absl::NotFoundError(dir.string() + ": incomplete checkpoint (no _metadata)");
    }
    return bytes.status();
  }
  auto meta = decode_metadata(*bytes, meta_path);
  if (!meta.ok()) return meta.status();
  RestoredCheckpoint cp{dir.string(), std::move(*meta)};
  FileCheckpointStorage reader(dir.parent_path().parent_path().string(), "");
  absl::Status s = verify_files(cp, reader);
  if (!s.ok()) return s;
  return cp;
}

absl::StatusOr<RestoredCheckpoint> find_latest_in_directory(const std::string& root,
                                                            std::vector<std::string>* skipped) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) {
    return absl::NotFoundError("checkpoint directory " + root + " does not exist");
  }
  // Candidates: every <job>/chk-<n>, newest first.
  struct Candidate {
    int64_t time_ms;
    int64_t id;
    std::string path;
  };
  std::vector<Candidate> candidates;
  for (const auto& job : fs::directory_iterator(root, ec)) {
    if (!job.is_directory()) continue;
    for (const auto& chk : fs::directory_iterator(job.path(), ec)) {
      std::string name = chk.path().filename().string();
      if (!chk.is_directory() || name.rfind("chk-", 0) != 0) continue;
      int64_t id = std::atoll(name.c_str() + 4);
      // The directory changes last when _metadata is published, so its
      // modification time orders checkpoints by completion, broken or not.
      auto mtime = fs::last_write_time(chk.path(), ec);
      int64_t time_ms = ec ? 0 : mtime.time_since_epoch().count();
      candidates.push_back({time_ms, id, chk.path().string()});
    }
  }
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    return a.time_ms != b.time_ms ? a.time_ms > b.time_ms : a.id > b.id;
  });
  for (const auto& c : candidates) {
    auto cp = load_from_directory(c.path);
    if (cp.ok()) return cp;
    if (skipped) skipped->push_back(std::string(cp.status().message()));
  }
  return absl::NotFoundError("no complete checkpoint under " + root);
}

class FileScheme final : public StorageScheme {
 public:
  bool remote() const override { return false; }
  absl::StatusOr<std::unique_ptr<CheckpointStorage>> open(const std::string& root,
                                                         const std::string& job_id) const override {
    return std::make_unique<FileCheckpointStorage>(root, job_id);
  }
  absl::StatusOr<std::unique_ptr<CheckpointStorage>> at(const std::string& dir) const override {
    return FileCheckpointStorage::at_directory(dir);
  }
  absl::StatusOr<std::unique_ptr<CheckpointStorage>> create_savepoint(const std::string& dir) const override {
    std::error_code ec;
    if (fs::exists(dir, ec)) return absl::AlreadyExistsError("savepoint directory " + dir + " already exists");
    fs::create_directories(dir, ec);
    if (ec) return errno_status("mkdir", dir, ec.value());
    return FileCheckpointStorage::at_directory(dir);
  }
  absl::StatusOr<RestoredCheckpoint> load(const std::string& path) const override {
    return load_from_directory(path);
  }
  absl::StatusOr<RestoredCheckpoint> find_latest(const std::string& root,
                                                 std::vector<std::string>* skipped) const override {
    return find_latest_in_directory(root, skipped);
  }
  std::string resolve(const std::string& location, const std::string& relative) const override {
    return (fs::path(location) / relative).lexically_normal().string();
  }
  void discard_at(const std::string& location) const override {
    std::error_code ec;
    fs::remove_all(location, ec);  // best effort, as discard()
  }
  void remove_file(const std::string& file) const override {
    std::error_code ec;
    fs::remove(file, ec);
    fs::remove(fs::path(file).parent_path(), ec);  // fails, harmlessly, unless empty
  }
};

}  // namespace

const StorageScheme& file_scheme() {
  static const FileScheme scheme;
  return scheme;
}

}  // namespace weir::checkpoint
