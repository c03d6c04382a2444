#include "checkpoint/s3_storage.h"


#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <cstdlib>
#include <map>
#include <utility>

#include "absl/strings/numbers.h"
#include "checkpoint/storage_scheme.h"
#include "common/file_util.h"

namespace weir::checkpoint {
namespace {

// A state file going up: its bytes stream into the object's upload.
class S3Output final : public StateFileOutput {
 public:
  explicit S3Output(std::unique_ptr<s3::S3Client::Writer> writer) : writer_(std::move(writer)) {}
  absl::Status append(std::string_view bytes) override { return writer_->append(bytes); }
  absl::Status finish() override { return writer_->finish(); }

 private:
  std::unique_ptr<s3::S3Client::Writer> writer_;
};

s3::S3Url child(const s3::S3Url& dir, const std::string& name) {
  return {dir.bucket, dir.key.empty() ? name : dir.key + "/" + name};
}

}  // namespace

S3CheckpointStorage::S3CheckpointStorage(std::shared_ptr<s3::S3Client> client, s3::S3Url root, const std::string& job_id)
    : client_(std::move(client)), job_(child(root, job_id)), fixed_(false) {}

S3CheckpointStorage::S3CheckpointStorage(Fixed, std::shared_ptr<s3::S3Client> client, s3::S3Url dir)
    : client_(std::move(client)), job_(std::move(dir)), fixed_(true) {}

std::unique_ptr<S3CheckpointStorage> S3CheckpointStorage::at(std::shared_ptr<s3::S3Client> client, s3::S3Url dir) {
  return std::unique_ptr<S3CheckpointStorage>(new S3CheckpointStorage(Fixed{}, std::move(client), std::move(dir)));
}

absl::StatusOr<std::unique_ptr<S3CheckpointStorage>> S3CheckpointStorage::at(const std::string& dir) {
  auto client = s3::shared_s3_client();
  if (!client.ok()) return client.status();
  auto url = s3::parse_s3_url(dir);
  if (!url.ok()) return url.status();
  return at(*std::move(client), *std::move(url));
}

absl::StatusOr<bool> S3CheckpointStorage::empty(int64_t id) const {
  const s3::S3Url d = dir(id);
  auto objects = client_->list(s3::S3Url{d.bucket, d.key + "/"});
  if (!objects.ok()) return objects.status();
  return objects->empty();
}

s3::S3Url S3CheckpointStorage::dir(int64_t id) const { return fixed_ ? job_ : child(job_, checkpoint_dir_name(id)); }

std::string S3CheckpointStorage::location(int64_t id) const { return dir(id).str(); }

absl::StatusOr<std::unique_ptr<StateFileOutput>> S3CheckpointStorage::create_state_file(int64_t id,
                                                                                        const std::string& name) {
  return std::unique_ptr<StateFileOutput>(new S3Output(client_->writer(child(dir(id), name))));
}

absl::StatusOr<std::string> S3CheckpointStorage::finalize(const CheckpointMetadata& m) {
  // Every state file was acknowledged (its upload completed) before the
  // coordinator finalizes: _metadata goes last, and commits the checkpoint.
  absl::Status s = client_->put(child(dir(m.checkpoint_id), std::string(kMetadataFileName)), encode_metadata(m));
  if (!s.ok()) return s;
  return location(m.checkpoint_id);
}

absl::StatusOr<std::unique_ptr<StateFileOutput>> S3CheckpointStorage::create_shared_file(int64_t id,
                                                                                        const std::string& name) {
  if (fixed_) return absl::UnimplementedError("a savepoint keeps no shared files");
  return std::unique_ptr<StateFileOutput>(new S3Output(client_->writer(child(shared_dir(id), name))));
}

absl::StatusOr<std::shared_ptr<const StateFileBytes>> S3CheckpointStorage::read_changelog_file(
    const std::string& location, const detail::ChangelogFile& file) {
  auto url = s3::parse_s3_url(native_file_location(location, file.path));
  if (!url.ok()) return url.status();
  return read_object(*url, file.size);
}

absl::StatusOr<std::shared_ptr<const StateFileBytes>> S3CheckpointStorage::read_state_file(
    const std::string& location, const OperatorSubtaskState& handle) {
  auto at = s3::parse_s3_url(location);
  if (!at.ok()) return at.status();
  return read_object(child(*at, handle.file), handle.file_size);
}

absl::StatusOr<std::shared_ptr<const StateFileBytes>> S3CheckpointStorage::read_object(const s3::S3Url& url,
                                                                                     uint64_t size) {
  auto bytes = client_->get(url);
  if (!bytes.ok()) {
    if (absl::IsNotFound(bytes.status())) return absl::DataLossError(url.str() + ": missing");
    return bytes.status();
  }
  if (bytes->size() != size) {
    return absl::DataLossError(url.str() + ": size " + std::to_string(bytes->size()) + ", expected " +
                               std::to_string(size));
  }
  absl::Status s = verify_state_file(*bytes, url.str());
  if (!s.ok()) return s;
  return std::shared_ptr<const StateFileBytes>(std::make_shared<OwnedStateFileBytes>(*std::move(bytes)));
}

absl::StatusOr<std::vector<int64_t>> S3CheckpointStorage::stored_checkpoints() {
  std::vector<int64_t> ids;
  if (fixed_) return ids;
  auto objects = client_->list(child(job_, "chk-"));
  if (!objects.ok()) return objects.status();
  const size_t from = job_.key.size() + (job_.key.empty() || job_.key.back() == '/' ? 0 : 1);
  for (const auto& o : *objects) {
    const std::string rel = o.key.substr(from);  // chk-<n>/<file>
    int64_t id;
    if (rel.rfind("chk-", 0) == 0 && absl::SimpleAtoi(rel.substr(4, rel.find('/') - 4), &id) &&
        (ids.empty() || ids.back() != id)) {
      ids.push_back(id);
    }
  }
  return ids;
}

s3::S3Url S3CheckpointStorage::shared_dir(int64_t id) const {
  return child(child(job_, "shared"), "c" + std::to_string(id));
}

absl::StatusOr<std::string> S3CheckpointStorage::upload_file(int64_t id, const std::string& local,
                                                             const std::string& name, bool shared) {
  if (fixed_) return absl::UnimplementedError("a savepoint keeps no native files");
  absl::Status s = client_->put_file(child(shared ? shared_dir(id) : dir(id), name), local);
  if (!s.ok()) return s;
  // Relative to the checkpoint's location, as FileCheckpointStorage says it.
  return shared ? "../shared/c" + std::to_string(id) + "/" + name : name;
}

absl::StatusOr<std::shared_ptr<const StateFileBytes>> S3CheckpointStorage::read_operator_state(
    const std::string& location, const OperatorSubtaskState& handle) {
  if (!handle.has_operator_state_checksum) return CheckpointStorage::read_operator_state(location, handle);
  auto at = s3::parse_s3_url(location);
  if (!at.ok()) return at.status();
  const s3::S3Url url = child(*at, handle.file);
  auto bytes = client_->get_range(url, handle.operator_state_offset, handle.operator_state_length);
  if (!bytes.ok()) {
    if (absl::IsNotFound(bytes.status())) return absl::DataLossError(url.str() + ": missing");
    return bytes.status();
  }
  absl::Status s = verify_operator_state(*bytes, handle, url.str());
  if (!s.ok()) return s;
  return std::shared_ptr<const StateFileBytes>(std::make_shared<OwnedStateFileBytes>(*std::move(bytes)));
}

void S3CheckpointStorage::discard(int64_t id) {
  // Best effort, as for files: a leftover without _metadata is never used.
  for (const s3::S3Url& d : fixed_ ? std::vector<s3::S3Url>{dir(id)} : std::vector<s3::S3Url>{dir(id), shared_dir(id)}) {
    absl::Status s = client_->remove_all(s3::S3Url{d.bucket, d.key + "/"});  // not chk-10/ with chk-1/
    if (!s.ok()) spdlog::warn("could not remove checkpoint {}: {}", d.str(), std::string(s.message()));
  }
}

void S3CheckpointStorage::discard_subsumed(int64_t id, const std::vector<std::string>& unreferenced) {
  const s3::S3Url d = dir(id);
  absl::Status s = client_->remove_all(s3::S3Url{d.bucket, d.key + "/"});
  if (!s.ok()) spdlog::warn("could not remove checkpoint {}: {}", location(id), std::string(s.message()));
  discard_files(unreferenced);
}

namespace {

absl::StatusOr<std::vector<std::string>> download_native_files_from(const std::string& location,
                                                                    const OperatorSubtaskState& state,
                                                                    const std::string& dir) {
  auto client = s3::shared_s3_client();
  if (!client.ok()) return client.status();
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return errno_status("mkdir", dir, ec.value());
  std::vector<std::string> local;
  for (const NativeFile& f : state.native_files) {
    const std::string at = native_file_location(location, f.path);
    auto url = s3::parse_s3_url(at);
    if (!url.ok()) return url.status();
    const std::string to = (std::filesystem::path(dir) / std::filesystem::path(url->key).filename()).string();
    auto size = (*client)->get_file(*url, to);
    if (!size.ok()) {
      if (absl::IsNotFound(size.status())) return absl::DataLossError(location + ": " + at + ": missing");
      return size.status();
    }
    if (static_cast<uint64_t>(*size) != f.size) {
      return absl::DataLossError(location + ": " + at + ": size " + std::to_string(*size) + ", expected " +
                                 std::to_string(f.size));
    }
    if (f.has_checksum) {
      auto sum = checksum_file(to);
      if (!sum.ok()) return sum.status();
      if (*sum != f.checksum) return absl::DataLossError(location + ": " + at + ": checksum mismatch (the file is corrupted)");
    }
    local.push_back(to);
  }
  return local;
}

absl::StatusOr<RestoredCheckpoint> load_s3_checkpoint(const std::string& url) {
  std::string path = url;
  const std::string suffix = "/" + std::string(kMetadataFileName);
  if (path.size() > suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0) {
    path.resize(path.size() - suffix.size());
  }
  auto reader = S3CheckpointStorage::at(path);
  if (!reader.ok()) return reader.status();
  auto dir = s3::parse_s3_url(path);
  const s3::S3Url meta_url = child(*dir, std::string(kMetadataFileName));
  auto bytes = (*reader)->client().get(meta_url);
  if (!bytes.ok()) {
    if (absl::IsNotFound(bytes.status())) return absl::NotFoundError(dir->str() + ": incomplete checkpoint (no _metadata)");
    return bytes.status();
  }
  auto meta = decode_metadata(*bytes, meta_url.str());
  if (!meta.ok()) return meta.status();
  RestoredCheckpoint cp{dir->str(), std::move(*meta)};
  // The sizes of the job's objects, for the native files (their checksums
  // are checked as a restore downloads them).
  std::map<std::string, int64_t> sizes;
  bool listed = false;
  for (const auto& op : cp.metadata.operators) {
    for (const auto& s : op.subtasks) {
      auto state = (*reader)->read_state_file(cp.location, s);
      if (!state.ok()) return state.status();
      for (const auto& f : s.changelog) {
        auto chain = (*reader)->read_changelog_file(cp.location, f);
        if (!chain.ok()) return chain.status();
      }
      for (const auto& f : s.native_files) {
        if (!listed) {
          const size_t cut = dir->key.rfind('/');
          auto objects = (*reader)->client().list(s3::S3Url{dir->bucket, cut == std::string::npos ? "" : dir->key.substr(0, cut + 1)});
          if (!objects.ok()) return objects.status();
          for (const auto& o : *objects) sizes[s3::S3Url{dir->bucket, o.key}.str()] = o.size;
          listed = true;
        }
        const std::string at = native_file_location(cp.location, f.path);
        auto it = sizes.find(at);
        if (it == sizes.end()) return absl::DataLossError(cp.location + ": " + at + ": missing");
        if (static_cast<uint64_t>(it->second) != f.size) {
          return absl::DataLossError(cp.location + ": " + at + ": size " + std::to_string(it->second) +
                                     ", expected " + std::to_string(f.size));
        }
      }
    }
  }
  return cp;
}

absl::StatusOr<RestoredCheckpoint> find_latest_s3_checkpoint(const std::string& root,
                                                             std::vector<std::string>* skipped) {
  auto client = s3::shared_s3_client();
  if (!client.ok()) return client.status();
  auto at = s3::parse_s3_url(root);
  if (!at.ok()) return at.status();
  s3::S3Url prefix = *at;
  if (!prefix.key.empty()) prefix.key += "/";
  auto objects = (*client)->list(prefix);
  if (!objects.ok()) return objects.status();
  // Each <job>/chk-<n>/ seen: when its _metadata was published, or for an
  // incomplete one when its newest object was written (times as text).
  struct Candidate {
    std::string time;
    bool published = false;
    int64_t id = 0;
  };
  std::map<std::string, Candidate> dirs;
  for (const auto& o : *objects) {
    const std::string rel = o.key.substr(prefix.key.size());  // <job>/chk-<n>/<file>
    const size_t a = rel.find('/');
    const size_t b = a == std::string::npos ? a : rel.find('/', a + 1);
    if (b == std::string::npos || rel.compare(a + 1, 4, "chk-") != 0) continue;
    Candidate& c = dirs[prefix.key + rel.substr(0, b)];
    c.id = std::atoll(rel.c_str() + a + 5);
    if (rel.substr(b + 1) == kMetadataFileName) {
      c.published = true;
      c.time = o.last_modified;
    } else if (!c.published) {
      c.time = std::max(c.time, o.last_modified);
    }
  }
  std::vector<std::pair<std::string, Candidate>> order(dirs.begin(), dirs.end());
  std::sort(order.begin(), order.end(), [](const auto& x, const auto& y) {
    return x.second.time != y.second.time ? x.second.time > y.second.time : x.second.id > y.second.id;
  });
  for (const auto& [key, c] : order) {
    const std::string url = s3::S3Url{at->bucket, key}.str();
    if (!c.published) {
      if (skipped) skipped->push_back(url + ": incomplete checkpoint (no _metadata)");
      continue;
    }
    auto cp = load_s3_checkpoint(url);
    if (cp.ok()) return cp;
    if (skipped) skipped->push_back(std::string(cp.status().message()));
  }
  return absl::NotFoundError("no complete checkpoint under " + root);
}

// s3://BUCKET/KEY joined with `relative`: "." and ".." resolved in the key
// alone.
std::string resolve_key(const std::string& location, const std::string& relative) {
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

class S3Scheme final : public StorageScheme {
 public:
  bool remote() const override { return true; }
  absl::StatusOr<std::unique_ptr<CheckpointStorage>> open(const std::string& root,
                                                         const std::string& job_id) const override {
    auto client = s3::shared_s3_client();
    if (!client.ok()) return client.status();
    auto url = s3::parse_s3_url(root);
    if (!url.ok()) return url.status();
    return std::make_unique<S3CheckpointStorage>(*std::move(client), *std::move(url), job_id);
  }
  absl::StatusOr<std::unique_ptr<CheckpointStorage>> at(const std::string& dir) const override {
    auto storage = S3CheckpointStorage::at(dir);
    if (!storage.ok()) return storage.status();
    return std::unique_ptr<CheckpointStorage>(*std::move(storage));
  }
  absl::StatusOr<std::unique_ptr<CheckpointStorage>> create_savepoint(const std::string& dir) const override {
    auto storage = S3CheckpointStorage::at(dir);
    if (!storage.ok()) return storage.status();
    auto empty = (*storage)->empty(0);  // its one location, whatever the id
    if (!empty.ok()) return empty.status();
    if (!*empty) return absl::AlreadyExistsError("savepoint directory " + dir + " already exists");
    return std::unique_ptr<CheckpointStorage>(*std::move(storage));
  }
  absl::StatusOr<RestoredCheckpoint> load(const std::string& path) const override { return load_s3_checkpoint(path); }
  absl::StatusOr<RestoredCheckpoint> find_latest(const std::string& root,
                                                 std::vector<std::string>* skipped) const override {
    return find_latest_s3_checkpoint(root, skipped);
  }
  std::string resolve(const std::string& location, const std::string& relative) const override {
    return resolve_key(location, relative);
  }
  void discard_at(const std::string& location) const override {
    auto storage = S3CheckpointStorage::at(location);
    if (storage.ok()) (*storage)->discard(0);  // its one location, whatever the id
  }
  void remove_file(const std::string& file) const override {
    auto client = s3::shared_s3_client();
    auto url = s3::parse_s3_url(file);
    absl::Status s = !client.ok() ? client.status() : !url.ok() ? url.status() : (*client)->remove(*url);
    if (!s.ok()) spdlog::warn("could not remove {}: {}", file, std::string(s.message()));
  }
  absl::StatusOr<std::vector<std::string>> download_native_files(const std::string& location,
                                                                 const OperatorSubtaskState& state,
                                                                 const std::string& dir) const override {
    return download_native_files_from(location, state, dir);
  }
};

}  // namespace

const StorageScheme& s3_scheme() {
  static const S3Scheme scheme;
  return scheme;
}

}  // namespace weir::checkpoint
