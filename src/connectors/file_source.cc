#include <algorithm>
#include <cstring>

#include "common/file_util.h"
#include "weir/connectors.h"
#include "weir/functions.h"

namespace weir {

FileSource::FileSource(std::string path, int64_t lines_per_second)
    : path_(std::move(path)), rate_(lines_per_second) {}

FileSource::~FileSource() { close(); }

absl::Status FileSource::open(OperatorContext& ctx) {
  auto file = MappedFile::open(path_);
  // A file that is not there is not there after a restart either: the job
  // fails at once (weir/functions.h UnrecoverableError), not after every
  // restart the strategy allows.
  if (absl::IsNotFound(file.status())) throw UnrecoverableError("file source " + path_ + ": no such file");
  if (!file.ok()) return file.status();
  reader_ = std::make_unique<LineReader>(std::move(*file));
  const int64_t size = reader_->size();

  rate_.start(&ctx.processing_time());
  state_ = std::make_unique<OperatorListState<FileSplit>>(ctx, "splits");
  if (ctx.is_restored()) {
    bool corrupt = false;
    splits_ = state_->get(&corrupt);
    if (corrupt) return absl::DataLossError("file source " + path_ + ": position state is corrupt");
    for (const FileSplit& s : splits_) {
      if (s.offset > size || s.end > size) {
        return absl::FailedPreconditionError("file source " + path_ +
                                             ": the file is shorter than the restored position");
      }
    }
    if (!splits_.empty()) reader_->seek(splits_[0].offset);
    return absl::OkStatus();
  }
  // A fresh start: this subtask's byte range, moved to line boundaries.
  FileSplit s;
  s.start = reader_->boundary(ctx.subtask_index(), ctx.parallelism());
  s.end = reader_->boundary(ctx.subtask_index() + 1, ctx.parallelism());
  s.offset = s.start;
  // Every subtask before the last reads most of the file here.
  s.line = reader_->line_at(s.start);
  if (s.start < s.end) splits_.push_back(s);
  reader_->seek(s.start);
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
      reader_->release_until(s.end);
      ++current_;
      if (current_ < splits_.size()) reader_->seek(splits_[current_].offset);
      continue;
    }
    scratch_.line_number = s.line;
    scratch_.text.assign(reader_->next(&s.offset));
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

void FileSource::close() { reader_.reset(); }

}  // namespace weir
