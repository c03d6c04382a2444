#include "checkpoint/memory_storage.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <new>


#include "checkpoint/storage_scheme.h"

namespace weir::checkpoint {

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

// A file being written; `done` stores it.
class MemoryOutput final : public StateFileOutput {
 public:
  using Done = std::function<void(std::shared_ptr<const MemoryCheckpointStorage::File>)>;
  explicit MemoryOutput(Done done) : done_(std::move(done)) {}
  absl::Status append(std::string_view bytes) override {
    file_->append(bytes);
    return absl::OkStatus();
  }
  absl::Status finish() override {
    file_->shrink_to_fit();
    done_(std::move(file_));
    return absl::OkStatus();
  }

 private:
  const Done done_;
  std::shared_ptr<MemoryCheckpointStorage::File> file_ = std::make_shared<MemoryCheckpointStorage::File>();
};

absl::StatusOr<std::unique_ptr<StateFileOutput>> MemoryCheckpointStorage::create_state_file(
    int64_t id, const std::string& name) {
  return std::unique_ptr<StateFileOutput>(new MemoryOutput([this, id, name](std::shared_ptr<const File> file) {
    absl::MutexLock lock(&mu_);
    files_[id][name] = std::move(file);
  }));
}

absl::StatusOr<std::unique_ptr<StateFileOutput>> MemoryCheckpointStorage::create_shared_file(
    int64_t id, const std::string& name) {
  const std::string at = native_file_location(location(id), shared_file_path(id, name));
  return std::unique_ptr<StateFileOutput>(new MemoryOutput([this, id, at](std::shared_ptr<const File> file) {
    absl::MutexLock lock(&mu_);
    shared_[at] = Shared{id, std::move(file)};
  }));
}

absl::StatusOr<std::shared_ptr<const StateFileBytes>> MemoryCheckpointStorage::read_changelog_file(
    const std::string& location, const detail::ChangelogFile& file) {
  const std::string at = native_file_location(location, file.path);
  absl::MutexLock lock(&mu_);
  auto it = shared_.find(at);
  if (it == shared_.end()) return absl::NotFoundError(at + ": no such changelog file");
  if (it->second.file->bytes().size() != file.size) {
    return absl::DataLossError(at + ": size " + std::to_string(it->second.file->bytes().size()) + ", expected " +
                               std::to_string(file.size));
  }
  absl::Status s = verify_state_file(it->second.file->bytes(), at);
  if (!s.ok()) return s;
  return std::shared_ptr<const StateFileBytes>(it->second.file);
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
  std::erase_if(shared_, [id](const auto& entry) { return entry.second.checkpoint_id == id; });
}

void MemoryCheckpointStorage::discard_subsumed(int64_t id, const std::vector<std::string>& unreferenced) {
  absl::MutexLock lock(&mu_);
  files_.erase(id);
  for (const std::string& at : unreferenced) shared_.erase(at);
}

size_t MemoryCheckpointStorage::num_checkpoints() const {
  absl::MutexLock lock(&mu_);
  return files_.size();
}

// ---- the memory scheme --------------------------------------------------------

namespace {

// Checkpoints in memory are read back by the job that holds them
// (RoutingCheckpointStorage reads memory:// locations from the job's own
// storage): there is nothing to open, load or find from outside.
class MemoryScheme final : public StorageScheme {
 public:
  bool remote() const override { return false; }
  bool durable() const override { return false; }
  absl::StatusOr<std::unique_ptr<CheckpointStorage>> open(const std::string& root,
                                                         const std::string& job_id) const override {
    return std::make_unique<MemoryCheckpointStorage>(job_id);
  }
  absl::StatusOr<std::unique_ptr<CheckpointStorage>> at(const std::string& dir) const override {
    return absl::FailedPreconditionError(dir + ": a checkpoint in memory is read only by the job that holds it");
  }
  absl::StatusOr<std::unique_ptr<CheckpointStorage>> create_savepoint(const std::string& dir) const override {
    return absl::InvalidArgumentError("a savepoint needs a directory ('" + dir + "' is none)");
  }
  absl::StatusOr<RestoredCheckpoint> load(const std::string& path) const override {
    return absl::NotFoundError(path + ": no such checkpoint directory");
  }
  absl::StatusOr<RestoredCheckpoint> find_latest(const std::string& root,
                                                 std::vector<std::string>* skipped) const override {
    return absl::NotFoundError("checkpoint directory " + root + " does not exist");
  }
  std::string resolve(const std::string& location, const std::string& relative) const override {
    return (std::filesystem::path(location) / relative).lexically_normal().string();
  }
  void discard_at(const std::string& location) const override {}  // gone with the job
  void remove_file(const std::string& file) const override {}
};

}  // namespace

const StorageScheme& memory_scheme() {
  static const MemoryScheme scheme;
  return scheme;
}

}  // namespace weir::checkpoint
