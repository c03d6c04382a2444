#include "checkpoint/storage.h"


#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <filesystem>
#include <system_error>

#include "absl/strings/numbers.h"
#include "checkpoint/s3_storage.h"
#include "common/file_util.h"
#include "common/test_points.h"

namespace fs = std::filesystem;

namespace weir::checkpoint {
namespace {

std::string chk_dir_name(int64_t id) { return "chk-" + std::to_string(id); }

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

}  // namespace

// A state file held in memory. It grows with realloc(), which moves a large
// (mmap-backed) block by remapping its pages instead of copying them, so a
// file of N bytes never needs 2N while it is written; finish() returns the
// unused tail.
class MemoryCheckpointStorage::File final : public StateFileBytes {
 public:
  File() = default;
  explicit File(std::string_view bytes) { append(bytes); }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  ~File() override { std::free(data_); }

  void append(std::string_view bytes) {
    if (bytes.empty()) return;
    if (size_ + bytes.size() > capacity_) resize(std::max(size_ + bytes.size(), capacity_ + capacity_ / 2));
    std::memcpy(data_ + size_, bytes.data(), bytes.size());
    size_ += bytes.size();
  }
  void shrink_to_fit() {
    if (size_ > 0 && size_ < capacity_) resize(size_);
  }
  std::string_view bytes() const override { return {data_, size_}; }

 private:
  void resize(size_t capacity) {
    void* p = std::realloc(data_, capacity);
    if (p == nullptr) throw std::bad_alloc();
    data_ = static_cast<char*>(p);
    capacity_ = capacity;
  }

  char* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

namespace {

absl::Status verify_files(const RestoredCheckpoint& cp, CheckpointStorage& storage) {
  for (const auto& op : cp.metadata.operators) {
    for (const auto& s : op.subtasks) {
      auto bytes = storage.read_state_file(cp.location, s);
      if (!bytes.ok()) return bytes.status();
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
  return (fs::path(job_dir_) / chk_dir_name(id)).string();
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

absl::Status CheckpointStorage::write_state_file(int64_t id, const std::string& name, std::string_view bytes) {
  auto out = create_state_file(id, name);
  if (!out.ok()) return out.status();
  absl::Status s = (*out)->append(bytes);
  if (!s.ok()) return s;
  return (*out)->finish();
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

absl::StatusOr<std::shared_ptr<const StateFileBytes>> CheckpointStorage::read_operator_state(
    const std::string& location, const OperatorSubtaskState& handle) {
  // A part of the whole file, which stays held.
  class Section final : public StateFileBytes {
   public:
    Section(std::shared_ptr<const StateFileBytes> file, std::string_view bytes)
        : file_(std::move(file)), bytes_(bytes) {}
    std::string_view bytes() const override { return bytes_; }

   private:
    const std::shared_ptr<const StateFileBytes> file_;
    const std::string_view bytes_;
  };
  auto file = read_state_file(location, handle);
  if (!file.ok()) return file.status();
  const std::string_view section = (*file)->bytes().substr(handle.operator_state_offset, handle.operator_state_length);
  return std::shared_ptr<const StateFileBytes>(std::make_shared<Section>(*std::move(file), section));
}

namespace {

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

absl::StatusOr<std::unique_ptr<StateFileOutput>> MemoryCheckpointStorage::create_state_file(
    int64_t id, const std::string& name) {
  class Output final : public StateFileOutput {
   public:
    Output(MemoryCheckpointStorage* storage, int64_t id, std::string name)
        : storage_(storage), id_(id), name_(std::move(name)) {}
    absl::Status append(std::string_view bytes) override {
      file_->append(bytes);
      return absl::OkStatus();
    }
    absl::Status finish() override {
      file_->shrink_to_fit();
      absl::MutexLock lock(&storage_->mu_);
      storage_->files_[id_][name_] = std::move(file_);
      return absl::OkStatus();
    }

   private:
    MemoryCheckpointStorage* storage_;
    const int64_t id_;
    const std::string name_;
    std::shared_ptr<File> file_ = std::make_shared<File>();
  };
  return std::unique_ptr<StateFileOutput>(new Output(this, id, name));
}

absl::StatusOr<std::string> MemoryCheckpointStorage::finalize(const CheckpointMetadata& m) {
  absl::MutexLock lock(&mu_);
  files_[m.checkpoint_id][std::string(kMetadataFileName)] = std::make_shared<const File>(encode_metadata(m));
  return location(m.checkpoint_id);
}

std::string MemoryCheckpointStorage::location(int64_t id) const {
  return "memory://" + job_id_ + "/" + std::to_string(id);
}

absl::StatusOr<std::shared_ptr<const StateFileBytes>> MemoryCheckpointStorage::read_state_file(
    const std::string& location, const OperatorSubtaskState& handle) {
  absl::MutexLock lock(&mu_);
  for (const auto& [id, files] : files_) {
    if (this->location(id) != location) continue;
    auto it = files.find(handle.file);
    if (it == files.end()) break;
    absl::Status s = verify_state_file(it->second->bytes(), location + "/" + handle.file);
    if (!s.ok()) return s;
    return std::shared_ptr<const StateFileBytes>(it->second);
  }
  return absl::NotFoundError(location + "/" + handle.file + ": no such state file");
}

void MemoryCheckpointStorage::discard(int64_t id) {
  absl::MutexLock lock(&mu_);
  files_.erase(id);
}

size_t MemoryCheckpointStorage::num_checkpoints() const {
  absl::MutexLock lock(&mu_);
  return files_.size();
}

absl::StatusOr<RestoredCheckpoint> load_checkpoint(const std::string& path) {
  if (is_s3_url(path)) return load_s3_checkpoint(path);
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

absl::StatusOr<RestoredCheckpoint> find_latest_checkpoint(const std::string& root,
                                                          std::vector<std::string>* skipped) {
  if (is_s3_url(root)) return find_latest_s3_checkpoint(root, skipped);
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
    auto cp = load_checkpoint(c.path);
    if (cp.ok()) return cp;
    if (skipped) skipped->push_back(std::string(cp.status().message()));
  }
  return absl::NotFoundError("no complete checkpoint under " + root);
}

// ---- RoutingCheckpointStorage ----------------------------------------------

CheckpointStorage* RoutingCheckpointStorage::target(int64_t id) const {
  absl::MutexLock lock(&mu_);
  auto it = savepoints_.find(id);
  return it == savepoints_.end() ? checkpoints_.get() : it->second.get();
}

absl::StatusOr<std::unique_ptr<StateFileOutput>> RoutingCheckpointStorage::create_state_file(
    int64_t id, const std::string& name) {
  return target(id)->create_state_file(id, name);
}

absl::StatusOr<std::string> RoutingCheckpointStorage::finalize(const CheckpointMetadata& m) {
  return target(m.checkpoint_id)->finalize(m);
}

namespace {

// `read` of the storage that holds `location`: this job's own (memory://),
// S3, or a directory (a savepoint, or a checkpoint of this or another job).
template <typename Read>
auto read_at(CheckpointStorage* own, const std::string& location, Read read) -> decltype(read(*own)) {
  if (location.rfind("memory://", 0) == 0) return read(*own);
  if (is_s3_url(location)) {
    auto reader = S3CheckpointStorage::at(location);
    if (!reader.ok()) return reader.status();
    return read(**reader);
  }
  return read(*FileCheckpointStorage::at_directory(location));
}

}  // namespace

absl::StatusOr<std::shared_ptr<const StateFileBytes>> RoutingCheckpointStorage::read_operator_state(
    const std::string& location, const OperatorSubtaskState& handle) {
  return read_at(checkpoints_.get(), location,
                 [&](CheckpointStorage& s) { return s.read_operator_state(location, handle); });
}

absl::StatusOr<std::shared_ptr<const StateFileBytes>> RoutingCheckpointStorage::read_state_file(
    const std::string& location, const OperatorSubtaskState& handle) {
  return read_at(checkpoints_.get(), location,
                 [&](CheckpointStorage& s) { return s.read_state_file(location, handle); });
}

void RoutingCheckpointStorage::discard_subsumed(int64_t id, const std::vector<std::string>& unreferenced) {
  target(id)->discard_subsumed(id, unreferenced);
}

absl::StatusOr<std::string> RoutingCheckpointStorage::upload_file(int64_t id, const std::string& local,
                                                                  const std::string& name, bool shared) {
  return target(id)->upload_file(id, local, name, shared);
}

void RoutingCheckpointStorage::discard(int64_t id) {
  // A savepoint is discarded only while incomplete (aborted); once complete
  // it belongs to the user and is never passed here.
  target(id)->discard(id);
}

std::string RoutingCheckpointStorage::location(int64_t id) const { return target(id)->location(id); }

absl::StatusOr<std::vector<int64_t>> RoutingCheckpointStorage::stored_checkpoints() {
  return checkpoints_->stored_checkpoints();  // savepoints are the user's
}

absl::Status RoutingCheckpointStorage::add_savepoint(int64_t id, const std::string& dir) {
  if (is_s3_url(dir)) {
    auto storage = S3CheckpointStorage::at(dir);
    if (!storage.ok()) return storage.status();
    auto empty = (*storage)->empty(id);
    if (!empty.ok()) return empty.status();
    if (!*empty) return absl::AlreadyExistsError("savepoint directory " + dir + " already exists");
    absl::MutexLock lock(&mu_);
    savepoints_[id] = *std::move(storage);
    return absl::OkStatus();
  }
  std::error_code ec;
  if (fs::exists(dir, ec)) return absl::AlreadyExistsError("savepoint directory " + dir + " already exists");
  fs::create_directories(dir, ec);
  if (ec) return errno_status("mkdir", dir, ec.value());
  route_savepoint(id, dir);
  return absl::OkStatus();
}

void RoutingCheckpointStorage::route_savepoint(int64_t id, const std::string& dir) {
  std::unique_ptr<CheckpointStorage> storage;
  if (is_s3_url(dir)) {
    // The JobManager that chose `dir` made the same storage of it.
    auto s3 = S3CheckpointStorage::at(dir);
    if (s3.ok()) storage = *std::move(s3);
  }
  if (storage == nullptr) storage = FileCheckpointStorage::at_directory(dir);
  absl::MutexLock lock(&mu_);
  savepoints_[id] = std::move(storage);
}

void discard_files(const std::vector<std::string>& files) {
  std::error_code ec;
  for (const auto& f : files) {
    if (is_s3_url(f)) {
      auto client = shared_s3_client();
      auto url = parse_s3_url(f);
      absl::Status s = !client.ok() ? client.status() : !url.ok() ? url.status() : (*client)->remove(*url);
      if (!s.ok()) spdlog::warn("could not remove {}: {}", f, std::string(s.message()));
      continue;
    }
    fs::remove(f, ec);
    fs::remove(fs::path(f).parent_path(), ec);  // fails, harmlessly, unless empty
  }
}

std::string native_file_location(const std::string& location, const std::string& relative) {
  if (!is_s3_url(location)) return (fs::path(location) / relative).lexically_normal().string();
  // s3://BUCKET/KEY: resolve "." and ".." in the key alone.
  const size_t slash = location.find('/', 5);
  const std::string head = location.substr(0, slash);
  std::vector<std::string> parts;
  const std::string key = (slash == std::string::npos ? "" : location.substr(slash + 1)) + "/" + relative;
  size_t at = 0;
  while (at <= key.size()) {
    size_t next = key.find('/', at);
    if (next == std::string::npos) next = key.size();
    const std::string part = key.substr(at, next - at);
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    at = next + 1;
  }
  std::string out = head;
  for (const auto& p : parts) out += "/" + p;
  return out;
}

void discard_checkpoint_at(const std::string& location) {
  if (location.rfind("memory://", 0) == 0) return;
  if (is_s3_url(location)) {
    auto storage = S3CheckpointStorage::at(location);
    if (storage.ok()) (*storage)->discard(0);  // its one location, whatever the id
    return;
  }
  std::error_code ec;
  fs::remove_all(location, ec);  // best effort, as discard()
}

}  // namespace weir::checkpoint
