#include "checkpoint/memory_storage.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
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
