#include <algorithm>
#include <cstring>

#include "common/file_util.h"
#include "weir/connectors.h"

namespace weir {
namespace {

// Read pages leave the process's memory in steps of this many bytes, so a
// source's resident set does not grow with the size of its file: at most
// this much per source subtask (8 MiB made six subtasks hold 48 MB of
// their files, 30 MB more for an 85 MB file than for a 17 MB one; a step
// costs one madvise).
constexpr int64_t kReleaseStep = 1 << 20;

}  // namespace

FileSource::FileSource(std::string path, int64_t lines_per_second)
    : path_(std::move(path)), rate_(lines_per_second) {}

FileSource::~FileSource() { close(); }

absl::Status FileSource::open(OperatorContext& ctx) {
  auto file = MappedFile::open(path_);
  if (!file.ok()) return file.status();
  file_ = std::move(*file);
  data_ = file_->bytes().data();
  size_ = static_cast<int64_t>(file_->bytes().size());

  rate_.start(&ctx.processing_time());
  state_ = std::make_unique<OperatorListState<FileSplit>>(ctx, "splits");
  if (ctx.is_restored()) {
    bool corrupt = false;
    splits_ = state_->get(&corrupt);
    if (corrupt) return absl::DataLossError("file source " + path_ + ": position state is corrupt");
    for (const FileSplit& s : splits_) {
      if (s.offset > size_ || s.end > size_) {
        return absl::FailedPreconditionError("file source " + path_ +
                                             ": the file is shorter than the restored position");
      }
    }
    if (!splits_.empty()) released_ = splits_[0].offset;
    return absl::OkStatus();
  }
  // A fresh start: this subtask's byte range, moved to line boundaries.
  int64_t p = ctx.parallelism(), i = ctx.subtask_index();
  auto boundary = [&](int64_t b) {
    if (b <= 0) return int64_t{0};
    if (b >= size_) return size_;
    const void* nl = std::memchr(data_ + b - 1, '\n', static_cast<size_t>(size_ - b + 1));
    return nl ? static_cast<const char*>(nl) - data_ + 1 : size_;
  };
  FileSplit s;
  s.start = boundary(size_ * i / p);
  s.end = boundary(size_ * (i + 1) / p);
  s.offset = s.start;
  // The line number at the start, counted a step at a time: pages counted
  // leave memory at once (every subtask before the last reads most of the
  // file here).
  s.line = 1;
  for (int64_t at = 0; at < s.start; at += kReleaseStep) {
    const int64_t n = std::min(kReleaseStep, s.start - at);
    s.line += std::count(data_ + at, data_ + at + n, '\n');
    file_->release(std::string_view(data_ + at, static_cast<size_t>(n)));
  }
  if (s.start < s.end) splits_.push_back(s);
  released_ = s.start;
  return absl::OkStatus();
}

PollStatus FileSource::poll(SourceOutput<TextLine>& out, int max_records) {
  if (current_ >= splits_.size()) return PollStatus::kEndOfInput;
  max_records = rate_.allow(max_records);
  if (max_records == 0) return PollStatus::kIdle;
  for (int n = 0; n < max_records;) {
    if (current_ >= splits_.size()) return PollStatus::kEndOfInput;
    FileSplit& s = splits_[current_];
    if (s.offset >= s.end) {
      file_->release(std::string_view(data_ + released_, static_cast<size_t>(s.end - released_)));
      ++current_;
      if (current_ < splits_.size()) released_ = splits_[current_].offset;
      continue;
    }
    if (s.offset - released_ >= kReleaseStep) {
      file_->release(std::string_view(data_ + released_, static_cast<size_t>(s.offset - released_)));
      released_ = s.offset;
    }
    const char* begin = data_ + s.offset;
    const void* nl = std::memchr(begin, '\n', static_cast<size_t>(size_ - s.offset));
    const char* end = nl ? static_cast<const char*>(nl) : data_ + size_;
    size_t len = static_cast<size_t>(end - begin);
    if (len > 0 && begin[len - 1] == '\r') --len;
    scratch_.line_number = s.line;
    scratch_.text.assign(begin, len);
    s.offset = (end - data_) + (nl ? 1 : 0);
    ++s.line;
    out.collect(scratch_);
    ++n;
  }
  return current_ >= splits_.size() ? PollStatus::kEndOfInput : PollStatus::kMore;
}

absl::Status FileSource::snapshot_state(int64_t) {
  state_->update(splits_);
  return absl::OkStatus();
}

void FileSource::close() {
  file_.reset();
  data_ = nullptr;
}

}  // namespace weir
