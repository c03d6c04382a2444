#include "batch/external_sorter.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>
#include <queue>

#include "common/file_util.h"
#include "weir/serializer.h"

namespace weir::batch {
namespace {

namespace fs = std::filesystem;

// The key's first 8 bytes as a big-endian number, zero-padded: two keys
// whose prefixes differ compare as their prefixes do.
uint64_t key_prefix(std::string_view key) {
  unsigned char b[8] = {};
  std::memcpy(b, key.data(), std::min<size_t>(key.size(), 8));
  uint64_t p = 0;
  for (unsigned char c : b) p = (p << 8) | c;
  return p;
}

// Bytewise comparison of two keys (as memcmp, then the shorter first),
// eight bytes at a time: sort keys are short (batch execution's are 18
// bytes), and a call into memcmp for each costs more than the comparison.
static_assert(std::endian::native == std::endian::little, "compare_keys swaps little-endian words");
inline int compare_keys(std::string_view a, std::string_view b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t x, y;
    std::memcpy(&x, a.data() + i, 8);
    std::memcpy(&y, b.data() + i, 8);
    if (x != y) return __builtin_bswap64(x) < __builtin_bswap64(y) ? -1 : 1;
  }
  for (; i < n; ++i) {
    const auto x = static_cast<unsigned char>(a[i]), y = static_cast<unsigned char>(b[i]);
    if (x != y) return x < y ? -1 : 1;
  }
  return a.size() == b.size() ? 0 : (a.size() < b.size() ? -1 : 1);
}

// Index entry of a record held in memory. Sorting compares the prefixes and
// reaches for the key bytes (a cache miss) only when they are equal.
struct Entry {
  uint64_t prefix;
  const char* data;  // key, then value
  uint32_t key_size;
  uint32_t value_size;
  std::string_view key() const { return {data, key_size}; }
  std::string_view value() const { return {data + key_size, value_size}; }
  friend bool operator<(const Entry& a, const Entry& b) {
    if (a.prefix != b.prefix) return a.prefix < b.prefix;
    return compare_keys(a.key(), b.key()) < 0;
  }
};
// std::stable_sort's scratch: half an entry per record.
constexpr size_t kScratchPerRecord = sizeof(Entry) / 2;

// A sorted sequence of records being read; the merge's input.
class Source {
 public:
  virtual ~Source() = default;
  virtual bool valid() const = 0;
  virtual std::string_view key() const = 0;
  virtual std::string_view value() const = 0;
  virtual void next() = 0;
  virtual absl::Status status() const = 0;
};

// The records held in memory, sorted.
class MemorySource final : public Source {
 public:
  explicit MemorySource(const std::vector<Entry>* entries) : entries_(entries) {}
  bool valid() const override { return pos_ < entries_->size(); }
  std::string_view key() const override { return (*entries_)[pos_].key(); }
  std::string_view value() const override { return (*entries_)[pos_].value(); }
  void next() override { ++pos_; }
  absl::Status status() const override { return absl::OkStatus(); }

 private:
  const std::vector<Entry>* entries_;
  size_t pos_ = 0;
};

// Writes one run file.
class RunWriter {
 public:
  RunWriter(std::string path, size_t buffer_bytes) : path_(std::move(path)), buffer_bytes_(buffer_bytes) {}
  ~RunWriter() {
    if (fd_ >= 0) ::close(fd_);
  }
  absl::Status open() {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd_ < 0) return errno_status("open", path_, errno);
    buf_.reserve(buffer_bytes_);
    return absl::OkStatus();
  }
  absl::Status add(std::string_view key, std::string_view value) {
    ByteWriter header(&buf_);
    header.put_varint(key.size());
    header.put_varint(value.size());
    if (buf_.size() + key.size() + value.size() > buffer_bytes_) {
      // Header first, then a record too big for the buffer goes straight out.
      if (absl::Status s = flush(); !s.ok()) return s;
      if (key.size() + value.size() >= buffer_bytes_) {
        if (absl::Status s = write(key); !s.ok()) return s;
        return write(value);
      }
    }
    buf_.append(key);
    buf_.append(value);
    return absl::OkStatus();
  }
  absl::Status close() {
    if (absl::Status s = flush(); !s.ok()) return s;
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) return errno_status("close", path_, errno);
    return absl::OkStatus();
  }
  int64_t bytes() const { return written_ + static_cast<int64_t>(buf_.size()); }

 private:
  absl::Status write(std::string_view bytes) {
    written_ += static_cast<int64_t>(bytes.size());
    return write_all(fd_, bytes, path_);
  }
  absl::Status flush() {
    absl::Status s = write(buf_);
    buf_.clear();
    return s;
  }

  const std::string path_;
  const size_t buffer_bytes_;
  int fd_ = -1;
  std::string buf_;
  int64_t written_ = 0;
};

// Reads one run file through a buffer; the current record's views point
// into the buffer.
class FileSource final : public Source {
 public:
  FileSource(std::string path, size_t buffer_bytes) : path_(std::move(path)), buf_(buffer_bytes) {}
  ~FileSource() override {
    if (fd_ >= 0) ::close(fd_);
  }
  // Opens the file and reads its first record.
  absl::Status open() {
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) return errno_status("open", path_, errno);
    next();
    return status_;
  }
  bool valid() const override { return valid_; }
  std::string_view key() const override { return key_; }
  std::string_view value() const override { return value_; }
  absl::Status status() const override { return status_; }

  void next() override {
    valid_ = false;
    if (!status_.ok()) return;
    uint64_t key_size = 0, value_size = 0;
    size_t header = 0;
    for (;;) {
      ByteReader r(std::string_view(buf_.data() + begin_, end_ - begin_));
      key_size = r.get_varint();
      value_size = r.get_varint();
      if (r.ok()) {
        header = static_cast<size_t>(r.position() - (buf_.data() + begin_));
        if (key_size + value_size > (uint64_t{1} << 40)) return damaged("a record length out of range");
        if (header + key_size + value_size <= end_ - begin_) break;
      } else if (end_ - begin_ >= 20) {
        return damaged("a malformed record header");
      }
      // Not all of the record is buffered: move what is to the front, grow
      // the buffer if the record is larger than it, and read more.
      const size_t need = header == 0 ? 20 : header + key_size + value_size;
      std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
      end_ -= begin_;
      begin_ = 0;
      if (need > buf_.size()) buf_.resize(need);
      const ssize_t got = ::read(fd_, buf_.data() + end_, buf_.size() - end_);
      if (got < 0) {
        if (errno == EINTR) continue;
        status_ = errno_status("read", path_, errno);
        return;
      }
      if (got == 0) {
        if (end_ == 0) return;  // the end of the run
        return damaged("a truncated record");
      }
      offset_ += got;
      end_ += static_cast<size_t>(got);
    }
    const char* rec = buf_.data() + begin_ + header;
    key_ = std::string_view(rec, key_size);
    value_ = std::string_view(rec + key_size, value_size);
    begin_ += header + key_size + value_size;
    valid_ = true;
  }

 private:
  void damaged(const std::string& what) {
    status_ = absl::DataLossError(path_ + ": " + what + " before byte " + std::to_string(offset_) +
                                  " (the spilled run is damaged)");
  }

  const std::string path_;
  int fd_ = -1;
  std::vector<char> buf_;
  size_t begin_ = 0;  // next unread byte in buf_
  size_t end_ = 0;    // end of the buffered bytes
  int64_t offset_ = 0;  // bytes read from the file
  bool valid_ = false;
  std::string_view key_, value_;
  absl::Status status_;
};

// Merges sources in key order; on equal keys the source given first wins.
class Merger {
 public:
  explicit Merger(std::vector<std::unique_ptr<Source>> sources) : sources_(std::move(sources)) {
    for (size_t i = 0; i < sources_.size(); ++i) push(i);
    pop();
  }
  bool valid() const { return current_ >= 0; }
  std::string_view key() const { return sources_[current_]->key(); }
  std::string_view value() const { return sources_[current_]->value(); }
  void next() {
    sources_[current_]->next();
    push(static_cast<size_t>(current_));
    pop();
  }
  absl::Status status() const { return status_; }

 private:
  struct Later {
    const Merger* m;
    bool operator()(size_t a, size_t b) const {
      const int c = compare_keys(m->sources_[a]->key(), m->sources_[b]->key());
      return c != 0 ? c > 0 : a > b;
    }
  };
  void push(size_t i) {
    if (sources_[i]->valid()) {
      heap_.push(i);
    } else if (status_.ok() && !sources_[i]->status().ok()) {
      status_ = sources_[i]->status();
    }
  }
  void pop() {
    if (!status_.ok() || heap_.empty()) {
      current_ = -1;
      return;
    }
    current_ = static_cast<int>(heap_.top());
    heap_.pop();
  }

  std::vector<std::unique_ptr<Source>> sources_;
  std::priority_queue<size_t, std::vector<size_t>, Later> heap_{Later{this}};
  int current_ = -1;
  absl::Status status_;
};

}  // namespace

class ExternalSorter::Impl {
 public:
  explicit Impl(Options options)
      : options_(std::move(options)),
        // A sixteenth of the budget, within [4 KiB, 256 KiB]: small enough
        // that the last block's slack is a small share of the budget.
        block_size_(static_cast<size_t>(std::clamp<int64_t>(options_.memory_bytes / 16, 4 << 10, 256 << 10))) {
    options_.max_fan_in = std::max(options_.max_fan_in, 2);
    options_.io_buffer_bytes = std::max(options_.io_buffer_bytes, 64);
  }
  ~Impl() {
    merger_.reset();
    for (const std::string& run : runs_) remove(run);
  }

  absl::Status add(std::string_view key, std::string_view value) {
    if (!status_.ok()) return status_;
    if (merger_ != nullptr) return absl::FailedPreconditionError("ExternalSorter::add after finish");
    if (key.size() > UINT32_MAX || value.size() > UINT32_MAX) {
      return absl::InvalidArgumentError("a record of " + std::to_string(key.size() + value.size()) +
                                        " bytes: keys and values are limited to 4 GiB each");
    }
    const size_t size = key.size() + value.size();
    if (!entries_.empty() && usage_with(size) > options_.memory_bytes) {
      if (absl::Status s = spill(); !s.ok()) return fail(s);
    }
    char* p = allocate(size);
    std::memcpy(p, key.data(), key.size());
    std::memcpy(p + key.size(), value.data(), value.size());
    entries_.push_back(
        Entry{key_prefix(key), p, static_cast<uint32_t>(key.size()), static_cast<uint32_t>(value.size())});
    ++stats_.records;
    return absl::OkStatus();
  }

  absl::Status finish() {
    if (!status_.ok()) return status_;
    if (merger_ != nullptr) return absl::FailedPreconditionError("ExternalSorter::finish called twice");
    sort_held();
    if (!runs_.empty()) {
      // Merge the oldest runs until the rest fit in one merge with memory's.
      const int in_memory = entries_.empty() ? 0 : 1;
      while (static_cast<int>(runs_.size()) + in_memory > options_.max_fan_in) {
        const int excess = static_cast<int>(runs_.size()) + in_memory - options_.max_fan_in;
        const int take = std::min(options_.max_fan_in, excess + 1);
        if (absl::Status s = merge_pass(take); !s.ok()) return fail(s);
      }
    }
    std::vector<std::unique_ptr<Source>> sources;
    for (const std::string& run : runs_) {
      auto f = std::make_unique<FileSource>(run, options_.io_buffer_bytes);
      if (absl::Status s = f->open(); !s.ok()) return fail(s);
      sources.push_back(std::move(f));
    }
    sources.push_back(std::make_unique<MemorySource>(&entries_));
    merger_ = std::make_unique<Merger>(std::move(sources));
    return merger_->status();
  }

  bool valid() const { return merger_ != nullptr && merger_->valid(); }
  std::string_view key() const { return merger_->key(); }
  std::string_view value() const { return merger_->value(); }
  void next() {
    if (valid()) merger_->next();
  }
  absl::Status status() const {
    if (!status_.ok()) return status_;
    return merger_ == nullptr ? absl::OkStatus() : merger_->status();
  }
  const Stats& stats() const { return stats_; }

 private:
  // Memory held once one more record of `size` bytes is added: blocks, the
  // index (while a vector grows it holds its old and new arrays), and the
  // stable sort's scratch of half an entry per record.
  int64_t usage_with(size_t size) const {
    const size_t blocks = block_bytes_ + (size > block_free_ ? std::max(size, block_size_) : 0);
    size_t index = entries_.capacity();
    if (entries_.size() == entries_.capacity()) index += std::max<size_t>(1, 2 * entries_.capacity());
    return static_cast<int64_t>(blocks + index * sizeof(Entry) + (entries_.size() + 1) * kScratchPerRecord);
  }

  char* allocate(size_t size) {
    if (size > block_free_) {
      const size_t block = std::max(size, block_size_);
      blocks_.push_back(std::make_unique<char[]>(block));
      block_bytes_ += block;
      block_next_ = blocks_.back().get();
      block_free_ = block;
    }
    char* p = block_next_;
    block_next_ += size;
    block_free_ -= size;
    return p;
  }

  void sort_held() {
    std::stable_sort(entries_.begin(), entries_.end());
  }

  std::string next_run_path() {
    return (fs::path(options_.spill_directory) / ("run-" + std::to_string(next_run_++) + ".sort")).string();
  }

  absl::Status spill() {
    sort_held();
    std::error_code ec;
    fs::create_directories(options_.spill_directory, ec);
    if (ec) return absl::InternalError("create directory " + options_.spill_directory + ": " + ec.message());
    const std::string path = next_run_path();
    runs_.push_back(path);  // removed at destruction even if writing fails
    RunWriter w(path, options_.io_buffer_bytes);
    absl::Status s = w.open();
    for (size_t i = 0; s.ok() && i < entries_.size(); ++i) s = w.add(entries_[i].key(), entries_[i].value());
    if (s.ok()) s = w.close();
    stats_.spilled_bytes += w.bytes();
    if (!s.ok()) return s;
    ++stats_.spilled_runs;
    entries_.clear();
    blocks_.clear();
    block_bytes_ = 0;
    block_free_ = 0;
    return absl::OkStatus();
  }

  // Merges the oldest `take` runs into one that takes their place.
  absl::Status merge_pass(int take) {
    std::vector<std::unique_ptr<Source>> sources;
    for (int i = 0; i < take; ++i) {
      auto f = std::make_unique<FileSource>(runs_[i], options_.io_buffer_bytes);
      if (absl::Status s = f->open(); !s.ok()) return s;
      sources.push_back(std::move(f));
    }
    const std::string path = next_run_path();
    RunWriter w(path, options_.io_buffer_bytes);
    absl::Status s = w.open();
    Merger m(std::move(sources));
    for (; s.ok() && m.valid(); m.next()) s = w.add(m.key(), m.value());
    if (s.ok()) s = m.status();
    if (s.ok()) s = w.close();
    stats_.spilled_bytes += w.bytes();
    if (!s.ok()) {
      remove(path);
      return s;
    }
    for (int i = 0; i < take; ++i) remove(runs_[i]);
    runs_.erase(runs_.begin(), runs_.begin() + take);
    runs_.push_front(path);
    ++stats_.merge_passes;
    return absl::OkStatus();
  }

  static void remove(const std::string& path) {
    std::error_code ec;
    fs::remove(path, ec);  // best effort: a leftover temp file is no loss
  }

  absl::Status fail(absl::Status s) {
    status_ = s;
    return s;
  }

  Options options_;
  const size_t block_size_;
  Stats stats_;
  absl::Status status_;  // the first error; the sorter is unusable after it
  // Records held in memory: their bytes in blocks, their index entries.
  std::vector<std::unique_ptr<char[]>> blocks_;
  char* block_next_ = nullptr;
  size_t block_free_ = 0;
  size_t block_bytes_ = 0;  // of all blocks
  std::vector<Entry> entries_;
  // Spilled runs, oldest first (the order that keeps the sort stable).
  std::deque<std::string> runs_;
  int next_run_ = 0;
  std::unique_ptr<Merger> merger_;
};

ExternalSorter::ExternalSorter(Options options) : impl_(std::make_unique<Impl>(std::move(options))) {}
ExternalSorter::~ExternalSorter() = default;
absl::Status ExternalSorter::add(std::string_view key, std::string_view value) { return impl_->add(key, value); }
absl::Status ExternalSorter::finish() { return impl_->finish(); }
bool ExternalSorter::valid() const { return impl_->valid(); }
std::string_view ExternalSorter::key() const { return impl_->key(); }
std::string_view ExternalSorter::value() const { return impl_->value(); }
void ExternalSorter::next() { impl_->next(); }
absl::Status ExternalSorter::status() const { return impl_->status(); }
const ExternalSorter::Stats& ExternalSorter::stats() const { return impl_->stats(); }

}  // namespace weir::batch
