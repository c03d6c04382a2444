#include "state/local_state.h"

#include <algorithm>

namespace weir::state {

namespace fs = std::filesystem;

std::atomic<int64_t> LocalStateStore::restores_{0};

LocalStateStore::~LocalStateStore() {
  std::error_code ec;
  fs::remove_all(root_, ec);
  fs::remove(root_.parent_path(), ec);  // the job's directory, once empty
}

std::string LocalStateStore::changelog_copy_name(const std::string& path) {
  const fs::path p(path);
  return p.parent_path().filename().string() + "~" + p.filename().string();
}

fs::path LocalStateStore::directory_for(const std::string& owner, int64_t checkpoint_id) const {
  return root_ / owner / ("chk-" + std::to_string(checkpoint_id));
}

void LocalStateStore::put(const std::string& owner, int64_t checkpoint_id, KeyGroupRange range) {
  Copy copy{range, {}};
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(directory_for(owner, checkpoint_id), ec)) {
    copy.files[e.path().string()] = e.file_size(ec);
    if (ec) return;  // an unreadable copy is not registered
  }
  if (ec || copy.files.empty()) return;
  std::lock_guard lock(mu_);
  copies_[owner][checkpoint_id] = std::move(copy);
}

void LocalStateStore::confirm(int64_t checkpoint_id) {
  std::vector<fs::path> doomed;
  {
    std::lock_guard lock(mu_);
    for (auto& [owner, by_id] : copies_) {
      for (auto it = by_id.begin(); it != by_id.end() && it->first < checkpoint_id;) {
        doomed.push_back(directory_for(owner, it->first));
        it = by_id.erase(it);
      }
    }
  }
  std::error_code ec;
  for (const fs::path& d : doomed) fs::remove_all(d, ec);
}

std::optional<std::vector<std::string>> LocalStateStore::find(const std::string& owner, int64_t checkpoint_id,
                                                              KeyGroupRange range,
                                                              std::vector<uint64_t> expected_sizes) const {
  std::lock_guard lock(mu_);
  auto o = copies_.find(owner);
  if (o == copies_.end()) return std::nullopt;
  auto c = o->second.find(checkpoint_id);
  if (c == o->second.end() || !(c->second.range == range)) return std::nullopt;
  std::vector<uint64_t> sizes;
  std::vector<std::string> files;
  for (const auto& [path, size] : c->second.files) {
    std::error_code ec;
    uint64_t now = fs::file_size(path, ec);
    if (ec || now != size) return std::nullopt;
    sizes.push_back(size);
    files.push_back(path);
  }
  std::sort(sizes.begin(), sizes.end());
  std::sort(expected_sizes.begin(), expected_sizes.end());
  if (sizes != expected_sizes) return std::nullopt;
  return files;
}

}  // namespace weir::state
