#include "checkpoint/storage.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "common/file_util.h"

namespace fs = std::filesystem;

namespace weir::checkpoint {
namespace {

std::string chk_dir_name(int64_t id) { return "chk-" + std::to_string(id); }

absl::Status verify_files(const RestoredCheckpoint& cp, CheckpointStorage& storage) {
  for (const auto& op : cp.metadata.operators) {
    for (const auto& s : op.subtasks) {
      auto bytes = storage.read_state_file(cp.location, s);
      if (!bytes.ok()) return bytes.status();
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

absl::Status FileCheckpointStorage::ensure_dir(int64_t id) {
  absl::MutexLock lock(&mu_);
  if (created_[id]) return absl::OkStatus();
  std::error_code ec;
  fs::create_directories(location(id), ec);
  if (ec) return errno_status("mkdir", location(id), ec.value());
  created_[id] = true;
  return absl::OkStatus();
}

absl::Status FileCheckpointStorage::write_state_file(int64_t id, const std::string& name,
                                                     std::string_view bytes) {
  absl::Status s = ensure_dir(id);
  if (!s.ok()) return s;
  return write_file_synced((fs::path(location(id)) / name).string(), bytes);
}

absl::StatusOr<std::string> FileCheckpointStorage::finalize(const CheckpointMetadata& m) {
  absl::Status s = ensure_dir(m.checkpoint_id);
  if (!s.ok()) return s;
  std::string dir = location(m.checkpoint_id);
  s = fsync_directory(dir);
  if (!s.ok()) return s;
  s = write_file_atomic((fs::path(dir) / kMetadataFileName).string(), encode_metadata(m));
  if (!s.ok()) return s;
  s = fsync_directory(fixed_ ? fs::path(job_dir_).parent_path().string() : job_dir_);
  if (!s.ok()) return s;
  return dir;
}

absl::StatusOr<std::string> FileCheckpointStorage::read_state_file(
    const std::string& location, const OperatorSubtaskState& handle) {
  std::string path = (fs::path(location) / handle.file).string();
  auto bytes = read_file(path);
  if (!bytes.ok()) return bytes.status();
  if (bytes->size() != handle.file_size) {
    return absl::DataLossError(path + ": size " + std::to_string(bytes->size()) + ", expected " +
                               std::to_string(handle.file_size));
  }
  absl::Status s = verify_state_file(*bytes, path);
  if (!s.ok()) return s;
  return bytes;
}

void FileCheckpointStorage::discard(int64_t id) {
  {
    absl::MutexLock lock(&mu_);
    created_.erase(id);
  }
  std::error_code ec;
  fs::remove_all(location(id), ec);  // best effort: a leftover is found and reported later
}

absl::Status MemoryCheckpointStorage::write_state_file(int64_t id, const std::string& name,
                                                       std::string_view bytes) {
  absl::MutexLock lock(&mu_);
  files_[id][name] = std::string(bytes);
  return absl::OkStatus();
}

absl::StatusOr<std::string> MemoryCheckpointStorage::finalize(const CheckpointMetadata& m) {
  absl::MutexLock lock(&mu_);
  files_[m.checkpoint_id][std::string(kMetadataFileName)] = encode_metadata(m);
  return location(m.checkpoint_id);
}

std::string MemoryCheckpointStorage::location(int64_t id) const {
  return "memory://" + job_id_ + "/" + std::to_string(id);
}

absl::StatusOr<std::string> MemoryCheckpointStorage::read_state_file(
    const std::string& location, const OperatorSubtaskState& handle) {
  absl::MutexLock lock(&mu_);
  for (const auto& [id, files] : files_) {
    if (this->location(id) != location) continue;
    auto it = files.find(handle.file);
    if (it == files.end()) break;
    absl::Status s = verify_state_file(it->second, location + "/" + handle.file);
    if (!s.ok()) return s;
    return it->second;
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
  fs::path dir(path);
  if (dir.filename() == kMetadataFileName) dir = dir.parent_path();
  std::string meta_path = (dir / kMetadataFileName).string();
  auto bytes = read_file(meta_path);
  if (!bytes.ok()) {
    if (absl::IsNotFound(bytes.status())) {
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

absl::Status RoutingCheckpointStorage::write_state_file(int64_t id, const std::string& name,
                                                        std::string_view bytes) {
  return target(id)->write_state_file(id, name, bytes);
}

absl::StatusOr<std::string> RoutingCheckpointStorage::finalize(const CheckpointMetadata& m) {
  return target(m.checkpoint_id)->finalize(m);
}

absl::StatusOr<std::string> RoutingCheckpointStorage::read_state_file(const std::string& location,
                                                                      const OperatorSubtaskState& handle) {
  if (location.rfind("memory://", 0) == 0) return checkpoints_->read_state_file(location, handle);
  // A directory: a savepoint, or a checkpoint of this or another job.
  return FileCheckpointStorage::at_directory(location)->read_state_file(location, handle);
}

void RoutingCheckpointStorage::discard(int64_t id) {
  // A savepoint is discarded only while incomplete (aborted); once complete
  // it belongs to the user and is never passed here.
  target(id)->discard(id);
}

std::string RoutingCheckpointStorage::location(int64_t id) const { return target(id)->location(id); }

absl::Status RoutingCheckpointStorage::add_savepoint(int64_t id, const std::string& dir) {
  std::error_code ec;
  if (fs::exists(dir, ec)) return absl::AlreadyExistsError("savepoint directory " + dir + " already exists");
  fs::create_directories(dir, ec);
  if (ec) return errno_status("mkdir", dir, ec.value());
  absl::MutexLock lock(&mu_);
  savepoints_[id] = FileCheckpointStorage::at_directory(dir);
  return absl::OkStatus();
}

void discard_checkpoint_at(const std::string& location) {
  if (location.rfind("memory://", 0) == 0) return;
  std::error_code ec;
  fs::remove_all(location, ec);  // best effort, as discard()
}

}  // namespace weir::checkpoint
