// Ready sources and sinks.
//
// FileSource: reads a text file as lines, split among the subtasks by byte
// range (a line belongs to the split holding its first byte). Its position
// (byte offset and line number per split) is operator state, so a restored
// job resumes exactly after the last line the checkpoint covered.
//
// GeneratorSource<T>: T = fn(sequence number) for 0..count-1 (count < 0:
// unbounded); subtask i of p takes numbers i, i+p, ...; the position is the
// next number.
//
// ExactlyOnceFileSink: two-phase commit of lines into part files in a
// directory. Lines go to a hidden in-progress file; a checkpoint closes it
// as pending (pre-commit); completion of that checkpoint renames it to its
// published name. After a restore, the pending files of the restored
// checkpoint are published and every other unpublished file of the subtask
// is deleted. Naming, with P the configured prefix:
//   P-<subtask>-<seq>                 published (committed output)
//   .P-<subtask>-<seq>.inprogress     being written, not committed
//   .P-<subtask>-<seq>.pending        pre-committed, awaiting its checkpoint
// Unpublished files start with a dot; readers take only published ones.
//
// PrintSink: writes lines to stdout as they come (at-least-once).
#ifndef WEIR_CONNECTORS_H_
#define WEIR_CONNECTORS_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "weir/detail/operators.h"
#include "weir/functions.h"

namespace weir {

class LineReader;  // src/common/file_util.h

struct TextLine {
  int64_t line_number = 0;  // 1-based, in the whole file
  std::string text;
  auto weir_fields() { return std::tie(line_number, text); }
};
// For decode_rows (weir/formats.h): a line's bytes, and where it was read.
inline std::string_view bytes_of(const TextLine& l) { return l.text; }
inline std::string origin_of(const TextLine& l) { return "line " + std::to_string(l.line_number); }

// A byte range of a file and the read position in it (FileSource state).
struct FileSplit {
  int64_t start = 0;   // first byte of the split
  int64_t end = 0;     // lines starting before this byte belong to it
  int64_t offset = 0;  // next byte to read
  int64_t line = 1;    // number of the line at `offset`
  auto weir_fields() { return std::tie(start, end, offset, line); }
};

// A pre-committed part file awaiting its checkpoint (ExactlyOnceFileSink state).
struct PendingPartFile {
  int64_t checkpoint_id = 0;
  int32_t subtask = 0;  // of the writer, part of the file name
  int64_t seq = 0;
  std::string partition;  // subdirectory, empty for none
  auto weir_fields() { return std::tie(checkpoint_id, subtask, seq, partition); }
};

// Caps a source subtask at `per_second` records per second of processing
// time (0: no cap), counted from open().
class RateLimiter {
 public:
  explicit RateLimiter(int64_t per_second) : per_second_(per_second) {}
  void start(ProcessingTimeService* clock) {
    clock_ = clock;
    start_ms_ = clock->now_ms();
  }
  // How many of `wanted` records may go now (0: poll again later).
  int allow(int wanted) {
    if (per_second_ <= 0) return wanted;
    int64_t allowed = (clock_->now_ms() - start_ms_ + 1) * per_second_ / 1000 - emitted_;
    int n = static_cast<int>(std::clamp<int64_t>(allowed, 0, wanted));
    emitted_ += n;  // at most; the end of input stops it anyway
    return n;
  }

 private:
  const int64_t per_second_;
  ProcessingTimeService* clock_ = nullptr;
  int64_t start_ms_ = 0, emitted_ = 0;
};

class FileSource final : public Source<TextLine> {
 public:
  // At most `lines_per_second` lines per subtask (0: as fast as it goes).
  explicit FileSource(std::string path, int64_t lines_per_second = 0);
  ~FileSource() override;

  absl::Status open(OperatorContext& ctx) override;
  PollStatus poll(SourceOutput<TextLine>& out, int max_records) override;
  absl::Status snapshot_state(int64_t checkpoint_id) override;
  void close() override;
  bool bounded() const override { return true; }

 private:
  const std::string path_;
  RateLimiter rate_;
  std::unique_ptr<OperatorListState<FileSplit>> state_;
  std::vector<FileSplit> splits_;
  size_t current_ = 0;
  std::unique_ptr<LineReader> reader_;
  TextLine scratch_;
};

// Emits fn(0) .. fn(count - 1) (count < 0: without end). Subtask i of p
// starts with the progression i, i + p, i + 2p, ...; its state is the
// progressions it still owns (next index, stride), split evenly among the
// subtasks when the parallelism changes, so a restore at any parallelism
// emits each index exactly once. Of several progressions it emits the
// lowest index first, so indices (and timestamps derived from them) stay
// nearly in order. With `per_second` > 0 a subtask emits at most that many
// records per second of processing time (idle when ahead).
//
// hold_while(held): while held(i) is true for the next index i, the source
// idles instead of emitting it, and does not end; a test that stops or
// fails a job part-way holds its input there, so the job cannot finish
// first.
template <Serializable T>
class GeneratorSource final : public Source<T> {
 public:
  GeneratorSource(std::function<T(int64_t)> fn, int64_t count, int64_t per_second = 0)
      : fn_(std::move(fn)), count_(count), rate_(per_second) {}

  GeneratorSource& hold_while(std::function<bool(int64_t)> held) {
    held_ = std::move(held);
    return *this;
  }

  absl::Status open(OperatorContext& ctx) override {
    rate_.start(&ctx.processing_time());
    state_ = std::make_unique<OperatorListState<std::pair<int64_t, int64_t>>>(ctx, "progressions");
    bool corrupt = false;
    progressions_ = state_->get(&corrupt);
    if (corrupt) return absl::DataLossError("generator source: restored positions are corrupt");
    if (!ctx.is_restored()) progressions_ = {{ctx.subtask_index(), ctx.parallelism()}};
    return absl::OkStatus();
  }
  PollStatus poll(SourceOutput<T>& out, int max_records) override {
    max_records = rate_.allow(max_records);
    if (max_records == 0) return PollStatus::kIdle;
    for (int i = 0; i < max_records; ++i) {
      auto it = progressions_.size() == 1 ? progressions_.begin()
                                          : std::min_element(progressions_.begin(), progressions_.end());
      if (it == progressions_.end() || done(*it)) return PollStatus::kEndOfInput;
      if (held_ && held_(it->first)) return i == 0 ? PollStatus::kIdle : PollStatus::kMore;
      out.collect(fn_(it->first));
      it->first += it->second;
    }
    return PollStatus::kMore;
  }
  absl::Status snapshot_state(int64_t) override {
    state_->update(progressions_);
    return absl::OkStatus();
  }
  bool bounded() const override { return count_ >= 0; }

 private:
  bool done(const std::pair<int64_t, int64_t>& p) const { return count_ >= 0 && p.first >= count_; }

  std::function<T(int64_t)> fn_;
  const int64_t count_;
  RateLimiter rate_;
  std::function<bool(int64_t)> held_;
  std::vector<std::pair<int64_t, int64_t>> progressions_;  // (next index, stride)
  std::unique_ptr<OperatorListState<std::pair<int64_t, int64_t>>> state_;
};

class ExactlyOnceFileSink final : public Sink<std::string> {
 public:
  // Chooses the subdirectory of a line from the line and its event time
  // (for example "dt=2015-07-15/hm=00:00"); part files are named as above
  // inside it.
  using Partitioner = std::function<std::string(const std::string& line, int64_t timestamp)>;
  // Lines that carry their subdirectory: "dt=2015-07-15/hm=00:00", a '\0',
  // then the line to write (SQL's partition columns); a line without the
  // '\0' is an error.
  struct PartitionPrefixed {};

  ExactlyOnceFileSink(std::string directory, std::string prefix, Partitioner partitioner = nullptr);
  ExactlyOnceFileSink(std::string directory, std::string prefix, PartitionPrefixed);
  ~ExactlyOnceFileSink() override;

  absl::Status open(OperatorContext& ctx) override;
  absl::Status write(const std::string& line) override;
  absl::Status snapshot_state(int64_t checkpoint_id) override;
  void notify_checkpoint_complete(int64_t checkpoint_id) override;
  void close() override;

 private:
  struct OpenFile {
    int fd = -1;
    int64_t seq = 0;
    int64_t lines = 0;
    std::string buffer;
  };
  std::string name(int subtask, int64_t seq) const;
  // In `base` (default: this sink's directory).
  std::string hidden(const PendingPartFile& p, const char* suffix, const std::string& base = "") const;
  std::string path(const std::string& partition, const std::string& file, const std::string& base = "") const;
  absl::Status flush(const std::string& partition, OpenFile& f);
  // Publishes `p`, and counts it (and its lines, when this attempt wrote
  // it) unless it was published before.
  absl::Status publish(const PendingPartFile& p, const std::string& base = "");
  // Removes the unpublished files in `base` of writers w % parallelism ==
  // this subtask.
  void remove_leftovers(const std::string& base, int parallelism);

  const std::string dir_;
  const std::string prefix_;
  const Partitioner partitioner_;
  const bool prefixed_ = false;
  int subtask_ = 0;
  int64_t seq_ = 0;                          // the next file's sequence number
  std::map<std::string, OpenFile> open_;     // in-progress files by partition
  std::vector<PendingPartFile> pending_;
  std::unique_ptr<OperatorListState<PendingPartFile>> pending_state_;
  std::unique_ptr<OperatorListState<int64_t>> seq_state_;
  // The directory the pending files were written in (a job restored with
  // another output directory publishes them where they are).
  std::unique_ptr<OperatorListState<std::string>> dir_state_;
  // Its metrics (weir/metrics.h kSinkRecordsSent, ...), and the lines of
  // each file this attempt wrote, by sequence number.
  Counter* sent_ = nullptr;
  Counter* committed_records_ = nullptr;
  Counter* committed_files_ = nullptr;
  std::map<int64_t, int64_t> lines_of_;
};

class PrintSink final : public Sink<std::string> {
 public:
  absl::Status open(OperatorContext&) override { return absl::OkStatus(); }
  absl::Status write(const std::string& line) override;
};

// Reads the committed (published) lines of an ExactlyOnceFileSink directory,
// each subtask's files in the order they were committed.
absl::StatusOr<std::vector<std::string>> read_published_lines(const std::string& directory,
                                                              const std::string& prefix);
// The same lines, one at a time, holding one file in memory at most.
absl::Status for_each_published_line(const std::string& directory, const std::string& prefix,
                                     const std::function<void(std::string_view line)>& fn);

namespace detail {
// Compiled once in the engine (src/connectors/instantiations.cc).
WEIR_RECORD_TYPE_TEMPLATES(extern, TextLine);
extern template class SourceOperator<TextLine>;
}  // namespace detail

}  // namespace weir

#endif  // WEIR_CONNECTORS_H_
