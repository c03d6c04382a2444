#include "checkpoint/storage.h"

#include <spdlog/spdlog.h>

#include "checkpoint/storage_scheme.h"

namespace weir::checkpoint {

absl::Status CheckpointStorage::write_state_file(int64_t id, const std::string& name, std::string_view bytes) {
  auto out = create_state_file(id, name);
  if (!out.ok()) return out.status();
  absl::Status s = (*out)->append(bytes);
  if (!s.ok()) return s;
  return (*out)->finish();
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

absl::StatusOr<std::shared_ptr<const StateFileBytes>> CheckpointStorage::read_changelog_file(
    const std::string& location, const detail::ChangelogFile& file) {
  // A state file at a path relative to the checkpoint's directory.
  OperatorSubtaskState handle;
  handle.file = file.path;
  handle.file_size = file.size;
  return read_state_file(location, handle);
}

// ---- RoutingCheckpointStorage ----------------------------------------------

CheckpointStorage* RoutingCheckpointStorage::target(int64_t id) const {
  absl::MutexLock lock(&mu_);
  auto it = savepoints_.find(id);
  return it == savepoints_.end() ? checkpoints_.get() : it->second.get();
}

absl::Status RoutingCheckpointStorage::unroutable(int64_t id) const {
  absl::MutexLock lock(&mu_);
  auto it = unroutable_.find(id);
  return it == unroutable_.end() ? absl::OkStatus() : it->second;
}

absl::StatusOr<std::unique_ptr<StateFileOutput>> RoutingCheckpointStorage::create_state_file(
    int64_t id, const std::string& name) {
  if (absl::Status s = unroutable(id); !s.ok()) return s;
  return target(id)->create_state_file(id, name);
}

absl::StatusOr<std::string> RoutingCheckpointStorage::finalize(const CheckpointMetadata& m) {
  return target(m.checkpoint_id)->finalize(m);
}

namespace {

// `read` of the storage that holds `location`: this job's own (in memory),
// or the one its scheme opens there (a savepoint, or a checkpoint of this or
// another job).
template <typename Read>
auto read_at(CheckpointStorage* own, const std::string& location, Read read) -> decltype(read(*own)) {
  const StorageScheme& scheme = scheme_for(location);
  if (!scheme.durable()) return read(*own);
  auto reader = scheme.at(location);
  if (!reader.ok()) return reader.status();
  return read(**reader);
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

absl::StatusOr<std::shared_ptr<const StateFileBytes>> RoutingCheckpointStorage::read_changelog_file(
    const std::string& location, const detail::ChangelogFile& file) {
  return read_at(checkpoints_.get(), location,
                 [&](CheckpointStorage& s) { return s.read_changelog_file(location, file); });
}

absl::StatusOr<std::unique_ptr<StateFileOutput>> RoutingCheckpointStorage::create_shared_file(
    int64_t id, const std::string& name) {
  if (absl::Status s = unroutable(id); !s.ok()) return s;
  return target(id)->create_shared_file(id, name);
}

void RoutingCheckpointStorage::discard_subsumed(int64_t id, const std::vector<std::string>& unreferenced) {
  target(id)->discard_subsumed(id, unreferenced);
}

absl::StatusOr<std::string> RoutingCheckpointStorage::upload_file(int64_t id, const std::string& local,
                                                                  const std::string& name, bool shared) {
  if (absl::Status s = unroutable(id); !s.ok()) return s;
  return target(id)->upload_file(id, local, name, shared);
}

void RoutingCheckpointStorage::discard(int64_t id) {
  // A savepoint is discarded only while incomplete (aborted); once complete
  // it belongs to the user and is never passed here.
  {
    absl::MutexLock lock(&mu_);
    unroutable_.erase(id);
  }
  target(id)->discard(id);
}

std::string RoutingCheckpointStorage::location(int64_t id) const { return target(id)->location(id); }

absl::StatusOr<std::vector<int64_t>> RoutingCheckpointStorage::stored_checkpoints() {
  return checkpoints_->stored_checkpoints();  // savepoints are the user's
}

absl::Status RoutingCheckpointStorage::add_savepoint(int64_t id, const std::string& dir) {
  auto storage = scheme_for(dir).create_savepoint(dir);
  if (!storage.ok()) return storage.status();
  absl::MutexLock lock(&mu_);
  savepoints_[id] = *std::move(storage);
  return absl::OkStatus();
}

void RoutingCheckpointStorage::route_savepoint(int64_t id, const std::string& dir) {
  // The JobManager that chose `dir` opened it the same way.
  auto storage = scheme_for(dir).at(dir);
  absl::MutexLock lock(&mu_);
  if (!storage.ok()) {
    // Its files must not land among the checkpoints' (the savepoint would
    // point at files a later checkpoint deletes): the snapshots of this id
    // fail, and the savepoint with them, naming the cause.
    spdlog::error("savepoint {} at {}: {}", id, dir, std::string(storage.status().message()));
    unroutable_[id] = absl::Status(storage.status().code(), "savepoint " + std::to_string(id) + " at " + dir +
                                                                ": " + std::string(storage.status().message()));
    return;
  }
  savepoints_[id] = *std::move(storage);
}

// ---- by the scheme of the location ----------------------------------------

absl::StatusOr<RestoredCheckpoint> load_checkpoint(const std::string& path) { return scheme_for(path).load(path); }

absl::StatusOr<RestoredCheckpoint> find_latest_checkpoint(const std::string& root,
                                                          std::vector<std::string>* skipped) {
  return scheme_for(root).find_latest(root, skipped);
}

void discard_files(const std::vector<std::string>& files) {
  for (const auto& f : files) scheme_for(f).remove_file(f);
}

std::string shared_file_path(int64_t id, const std::string& name) {
  return "../shared/c" + std::to_string(id) + "/" + name;
}

std::string native_file_location(const std::string& location, const std::string& relative) {
  return scheme_for(location).resolve(location, relative);
}

void discard_checkpoint_at(const std::string& location) { scheme_for(location).discard_at(location); }

}  // namespace weir::checkpoint
