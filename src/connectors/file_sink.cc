#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

#include "common/file_util.h"
#include "common/test_points.h"
#include "weir/connectors.h"

namespace fs = std::filesystem;

namespace weir {
namespace {

constexpr size_t kBufferBytes = 64 * 1024;

}  // namespace

ExactlyOnceFileSink::ExactlyOnceFileSink(std::string directory, std::string prefix,
                                         Partitioner partitioner)
    : dir_(std::move(directory)), prefix_(std::move(prefix)), partitioner_(std::move(partitioner)) {}

ExactlyOnceFileSink::ExactlyOnceFileSink(std::string directory, std::string prefix, PartitionPrefixed)
    : dir_(std::move(directory)), prefix_(std::move(prefix)), prefixed_(true) {}

ExactlyOnceFileSink::~ExactlyOnceFileSink() { close(); }

std::string ExactlyOnceFileSink::name(int subtask, int64_t seq) const {
  return prefix_ + "-" + std::to_string(subtask) + "-" + std::to_string(seq);
}

std::string ExactlyOnceFileSink::hidden(const PendingPartFile& p, const char* suffix, const std::string& base) const {
  return path(p.partition, "." + name(p.subtask, p.seq) + suffix, base);
}

std::string ExactlyOnceFileSink::path(const std::string& partition, const std::string& file,
                                      const std::string& base) const {
  const fs::path dir = base.empty() ? fs::path(dir_) : fs::path(base);
  return (partition.empty() ? dir / file : dir / partition / file).string();
}

absl::Status ExactlyOnceFileSink::open(OperatorContext& ctx) {
  subtask_ = ctx.subtask_index();
  sent_ = &ctx.metrics().counter(kSinkRecordsSent);
  committed_records_ = &ctx.metrics().counter(kSinkRecordsCommitted);
  committed_files_ = &ctx.metrics().counter(kSinkTransactionsCommitted);
  const int parallelism = ctx.parallelism();
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return errno_status("mkdir", dir_, ec.value());
  // Both lists are union state: after a restore every subtask sees the
  // pre-committed files and sequence numbers of all former subtasks, at
  // any parallelism.
  pending_state_ = std::make_unique<OperatorListState<PendingPartFile>>(ctx, "pending-files",
                                                                        detail::Redistribution::kUnion);
  seq_state_ = std::make_unique<OperatorListState<int64_t>>(ctx, "next-seq", detail::Redistribution::kUnion);
  dir_state_ = std::make_unique<OperatorListState<std::string>>(ctx, "directory", detail::Redistribution::kUnion);
  bool corrupt = false;
  pending_ = pending_state_->get(&corrupt);
  auto seqs = seq_state_->get(&corrupt);
  auto dirs = dir_state_->get(&corrupt);
  if (corrupt) return absl::DataLossError("file sink " + dir_ + ": state is corrupt");
  // Above every former subtask's numbers, so no name is ever reused.
  seq_ = seqs.empty() ? 0 : *std::max_element(seqs.begin(), seqs.end());
  // Where the restored checkpoint's files are (state of older checkpoints
  // does not say: this directory).
  std::string written_in = fs::absolute(dir_).lexically_normal().string();
  const std::string here = written_in;
  if (!dirs.empty()) written_in = dirs.front();
  if (written_in != here && !pending_.empty() && subtask_ == 0) {
    spdlog::info("file sink {}: publishing {} files the restored checkpoint left pending in {}, where it wrote them",
                 dir_, pending_.size(), written_in);
  }
  // Commit what the restored checkpoint pre-committed (every subtask tries
  // all of them; publishing is idempotent)...
  for (const PendingPartFile& p : pending_) {
    absl::Status s = publish(p, written_in);
    if (!s.ok()) return s;
  }
  if (!pending_.empty()) WEIR_CRASH_POINT(CrashPoint::kSinkRecovered);
  pending_.clear();
  // ...and drop every other unpublished file, in any partition: it belongs
  // to an attempt after the checkpoint. Subtask s clears the files of
  // writers w with w % parallelism == s, so the files of former subtasks
  // beyond the new parallelism are cleared too; it published every
  // pre-committed file above, so none of those is lost.
  remove_leftovers(dir_, parallelism);
  if (written_in != here) {
    remove_leftovers(written_in, parallelism);
    absl::Status s = fsync_directory(written_in);
    if (!s.ok()) return s;
  }
  dir_state_->update({here});
  return fsync_directory(dir_);
}

void ExactlyOnceFileSink::remove_leftovers(const std::string& base, int parallelism) {
  std::error_code ec;
  std::string hidden_prefix = "." + prefix_ + "-";
  std::vector<fs::path> leftovers;
  for (auto it = fs::recursive_directory_iterator(base, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    std::string file = it->path().filename().string();
    if (file.rfind(hidden_prefix, 0) != 0) continue;
    int writer = std::atoi(file.c_str() + hidden_prefix.size());
    if (writer % parallelism == subtask_) leftovers.push_back(it->path());
  }
  for (const auto& f : leftovers) fs::remove(f, ec);
}

absl::Status ExactlyOnceFileSink::publish(const PendingPartFile& p, const std::string& base) {
  std::string from = hidden(p, ".pending", base);
  std::string to = path(p.partition, name(p.subtask, p.seq), base);
  if (::rename(from.c_str(), to.c_str()) == 0) {
    committed_files_->inc();
    auto lines = p.subtask == subtask_ ? lines_of_.find(p.seq) : lines_of_.end();
    if (lines != lines_of_.end()) {
      committed_records_->inc(lines->second);
      lines_of_.erase(lines);
    }
    return absl::OkStatus();
  }
  int err = errno;
  // Published before the failure: nothing to do.
  if (err == ENOENT && ::access(to.c_str(), F_OK) == 0) return absl::OkStatus();
  return errno_status("publish", from, err);
}

absl::Status ExactlyOnceFileSink::write(const std::string& record) {
  std::string partition;
  std::string_view line = record;
  if (prefixed_) {
    const size_t end = record.find('\0');
    if (end == std::string::npos) return absl::InternalError("file sink " + dir_ + ": a line without its partition");
    partition = record.substr(0, end);
    line.remove_prefix(end + 1);
  } else if (partitioner_) {
    partition = partitioner_(record, detail::current_timestamp());
  }
  auto [it, inserted] = open_.try_emplace(partition);
  OpenFile& f = it->second;
  if (inserted) {
    if (!partition.empty()) {
      std::error_code ec;
      fs::create_directories(fs::path(dir_) / partition, ec);
      if (ec) return errno_status("mkdir", path(partition, ""), ec.value());
    }
    f.seq = seq_++;
    std::string p = path(partition, "." + name(subtask_, f.seq) + ".inprogress");
    f.fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (f.fd < 0) return errno_status("open", p, errno);
  }
  f.buffer.append(line);
  f.buffer.push_back('\n');
  ++f.lines;
  sent_->inc();
  if (f.buffer.size() >= kBufferBytes) return flush(partition, f);
  return absl::OkStatus();
}

absl::Status ExactlyOnceFileSink::flush(const std::string& partition, OpenFile& f) {
  absl::Status s = write_all(f.fd, f.buffer, path(partition, "." + name(subtask_, f.seq) + ".inprogress"));
  f.buffer.clear();
  return s;
}

absl::Status ExactlyOnceFileSink::snapshot_state(int64_t checkpoint_id) {
  for (auto& [partition, f] : open_) {
    absl::Status s = flush(partition, f);
    if (!s.ok()) return s;
    std::string in_progress = path(partition, "." + name(subtask_, f.seq) + ".inprogress");
    if (::fsync(f.fd) != 0) return errno_status("fsync", in_progress, errno);
    ::close(f.fd);
    f.fd = -1;
    PendingPartFile pending{checkpoint_id, subtask_, f.seq, partition};
    lines_of_[f.seq] = f.lines;
    s = rename_durable(in_progress, hidden(pending, ".pending"));
    if (!s.ok()) return s;
    pending_.push_back(std::move(pending));
  }
  open_.clear();
  pending_state_->update(pending_);
  seq_state_->update({seq_});
  WEIR_CRASH_POINT(CrashPoint::kSinkPreCommitted);
  return absl::OkStatus();
}

void ExactlyOnceFileSink::notify_checkpoint_complete(int64_t checkpoint_id) {
  std::set<std::string> dirs;
  auto it = pending_.begin();
  for (; it != pending_.end() && it->checkpoint_id <= checkpoint_id; ++it) {
    // A failure here leaves the file pending; the next restore publishes it.
    (void)publish(*it);
    dirs.insert(path(it->partition, ""));
  }
  pending_.erase(pending_.begin(), it);
  for (const auto& d : dirs) (void)fsync_directory(d);
  if (!dirs.empty()) WEIR_CRASH_POINT(CrashPoint::kSinkPublished);
}

void ExactlyOnceFileSink::close() {
  for (auto& [partition, f] : open_) {
    if (f.fd >= 0) ::close(f.fd);  // left in progress: discarded by the next start
  }
  open_.clear();
}

absl::Status PrintSink::write(const std::string& line) {
  // One line at a time: subtasks print from their own threads.
  flockfile(stdout);
  fwrite_unlocked(line.data(), 1, line.size(), stdout);
  fputc_unlocked('\n', stdout);
  funlockfile(stdout);
  return absl::OkStatus();
}

absl::Status for_each_published_line(const std::string& directory, const std::string& prefix,
                                     const std::function<void(std::string_view line)>& fn) {
  std::error_code ec;
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(directory, ec)) {
    std::string f = entry.path().filename().string();
    if (f.rfind(prefix + "-", 0) == 0) files.push_back(entry.path());
  }
  if (ec) return errno_status("list", directory, ec.value());
  // In commit order: by sequence number, then subtask (numerically). A key's
  // rows stay in order even when rescaling moved it to another subtask:
  // after a restore every subtask numbers its files above all earlier ones.
  auto order = [&](const fs::path& p) {
    std::string name = p.filename().string().substr(prefix.size() + 1);
    size_t dash = name.find('-');
    int64_t subtask = std::atoll(name.substr(0, dash).c_str());
    int64_t seq = dash == std::string::npos ? 0 : std::atoll(name.c_str() + dash + 1);
    return std::make_pair(seq, subtask);
  };
  std::sort(files.begin(), files.end(),
            [&](const fs::path& a, const fs::path& b) { return order(a) < order(b); });
  // Mapped, one file at a time, and the pages read are let go as it goes:
  // memory stays flat however large the files are.
  constexpr size_t kReleaseBytes = size_t{8} << 20;
  for (const auto& f : files) {
    auto file = MappedFile::open(f.string());
    if (!file.ok()) return file.status();
    std::string_view text = (*file)->bytes();
    size_t pos = 0, released = 0;
    while (pos < text.size()) {
      size_t nl = text.find('\n', pos);
      if (nl == std::string_view::npos) nl = text.size();
      fn(text.substr(pos, nl - pos));
      pos = nl + 1;
      if (pos - released >= kReleaseBytes) {
        (*file)->release(text.substr(released, pos - released));
        released = pos;
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> read_published_lines(const std::string& directory,
                                                              const std::string& prefix) {
  std::vector<std::string> lines;
  absl::Status s = for_each_published_line(directory, prefix, [&](std::string_view l) { lines.emplace_back(l); });
  if (!s.ok()) return s;
  return lines;
}

}  // namespace weir
