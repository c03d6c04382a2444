#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "common/file_util.h"
#include "weir/connectors.h"

namespace fs = std::filesystem;

namespace weir {
namespace {

constexpr size_t kBufferBytes = 64 * 1024;

}  // namespace

ExactlyOnceFileSink::ExactlyOnceFileSink(std::string directory, std::string prefix)
    : dir_(std::move(directory)), prefix_(std::move(prefix)) {}

ExactlyOnceFileSink::~ExactlyOnceFileSink() { close(); }

std::string ExactlyOnceFileSink::name(int64_t seq) const {
  return prefix_ + "-" + std::to_string(subtask_) + "-" + std::to_string(seq);
}

std::string ExactlyOnceFileSink::path(const std::string& file) const {
  return (fs::path(dir_) / file).string();
}

absl::Status ExactlyOnceFileSink::open(OperatorContext& ctx) {
  subtask_ = ctx.subtask_index();
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return errno_status("mkdir", dir_, ec.value());
  pending_state_ = std::make_unique<OperatorListState<PendingPartFile>>(ctx, "pending-files");
  seq_state_ = std::make_unique<OperatorListState<int64_t>>(ctx, "next-seq");
  bool corrupt = false;
  pending_ = pending_state_->get(&corrupt);
  auto seqs = seq_state_->get(&corrupt);
  if (corrupt) return absl::DataLossError("file sink " + dir_ + ": state is corrupt");
  seq_ = seqs.empty() ? 0 : seqs.front();
  // Commit what the restored checkpoint pre-committed...
  for (const PendingPartFile& p : pending_) {
    absl::Status s = publish(p.seq);
    if (!s.ok()) return s;
  }
  pending_.clear();
  // ...and drop every other unpublished file of this subtask: it belongs to
  // an attempt after the checkpoint.
  std::string hidden = "." + prefix_ + "-" + std::to_string(subtask_) + "-";
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    std::string f = entry.path().filename().string();
    if (f.rfind(hidden, 0) == 0) fs::remove(entry.path(), ec);
  }
  return fsync_directory(dir_);
}

absl::Status ExactlyOnceFileSink::publish(int64_t seq) {
  std::string from = path("." + name(seq) + ".pending");
  std::string to = path(name(seq));
  if (::rename(from.c_str(), to.c_str()) == 0) return absl::OkStatus();
  int err = errno;
  // Published before the failure: nothing to do.
  if (err == ENOENT && ::access(to.c_str(), F_OK) == 0) return absl::OkStatus();
  return errno_status("publish", from, err);
}

absl::Status ExactlyOnceFileSink::write(const std::string& line) {
  if (fd_ < 0) {
    std::string p = path("." + name(seq_) + ".inprogress");
    fd_ = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) return errno_status("open", p, errno);
  }
  buffer_.append(line);
  buffer_.push_back('\n');
  if (buffer_.size() >= kBufferBytes) return flush_buffer();
  return absl::OkStatus();
}

absl::Status ExactlyOnceFileSink::flush_buffer() {
  absl::Status s = write_all(fd_, buffer_, path("." + name(seq_) + ".inprogress"));
  buffer_.clear();
  return s;
}

absl::Status ExactlyOnceFileSink::snapshot_state(int64_t checkpoint_id) {
  if (fd_ >= 0) {
    absl::Status s = flush_buffer();
    if (!s.ok()) return s;
    std::string in_progress = path("." + name(seq_) + ".inprogress");
    if (::fsync(fd_) != 0) return errno_status("fsync", in_progress, errno);
    ::close(fd_);
    fd_ = -1;
    s = rename_durable(in_progress, path("." + name(seq_) + ".pending"));
    if (!s.ok()) return s;
    pending_.push_back({checkpoint_id, seq_});
    ++seq_;
  }
  pending_state_->update(pending_);
  seq_state_->update({seq_});
  return absl::OkStatus();
}

void ExactlyOnceFileSink::notify_checkpoint_complete(int64_t checkpoint_id) {
  bool any = false;
  auto it = pending_.begin();
  for (; it != pending_.end() && it->checkpoint_id <= checkpoint_id; ++it) {
    // A failure here leaves the file pending; the next restore publishes it.
    (void)publish(it->seq);
    any = true;
  }
  pending_.erase(pending_.begin(), it);
  if (any) (void)fsync_directory(dir_);
}

void ExactlyOnceFileSink::close() {
  if (fd_ >= 0) {
    ::close(fd_);  // left in progress: discarded by the next start
    fd_ = -1;
  }
}

absl::Status PrintSink::write(const std::string& line) {
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fputc('\n', stdout);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> read_published_lines(const std::string& directory,
                                                              const std::string& prefix) {
  std::vector<std::string> lines;
  std::error_code ec;
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(directory, ec)) {
    std::string f = entry.path().filename().string();
    if (f.rfind(prefix + "-", 0) == 0) files.push_back(entry.path());
  }
  if (ec) return errno_status("list", directory, ec.value());
  // In commit order: by subtask, then sequence number (numerically).
  auto order = [&](const fs::path& p) {
    std::string name = p.filename().string().substr(prefix.size() + 1);
    size_t dash = name.find('-');
    int64_t subtask = std::atoll(name.substr(0, dash).c_str());
    int64_t seq = dash == std::string::npos ? 0 : std::atoll(name.c_str() + dash + 1);
    return std::make_pair(subtask, seq);
  };
  std::sort(files.begin(), files.end(),
            [&](const fs::path& a, const fs::path& b) { return order(a) < order(b); });
  for (const auto& f : files) {
    auto content = read_file(f.string());
    if (!content.ok()) return content.status();
    size_t pos = 0;
    while (pos < content->size()) {
      size_t nl = content->find('\n', pos);
      if (nl == std::string::npos) nl = content->size();
      lines.emplace_back(content->substr(pos, nl - pos));
      pos = nl + 1;
    }
  }
  return lines;
}

}  // namespace weir
