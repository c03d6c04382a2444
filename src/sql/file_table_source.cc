#include "sql/file_table_source.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"
#include "common/file_util.h"
#include "sql/job_builder.h"
#include "weir/connectors.h"
#include "weir/context.h"

namespace weir::sql {
namespace {

std::vector<std::string> partition_names(const TableDef& t) {
  std::vector<std::string> names;
  auto by = t.options.find("partition-by");
  if (by == t.options.end()) return names;
  for (absl::string_view c : absl::StrSplit(by->second, ',')) names.emplace_back(c);
  return names;
}

// `value` with %XX escapes undone.
std::string unescape(std::string_view value) {
  auto hex = [](char c) {
    return absl::ascii_isdigit(static_cast<unsigned char>(c)) ? c - '0' : (c | 0x20) - 'a' + 10;
  };
  std::string out;
  for (size_t i = 0; i < value.size(); ++i) {
    if (value[i] == '%' && i + 2 < value.size() && absl::ascii_isxdigit(static_cast<unsigned char>(value[i + 1])) &&
        absl::ascii_isxdigit(static_cast<unsigned char>(value[i + 2]))) {
      out.push_back(static_cast<char>(hex(value[i + 1]) * 16 + hex(value[i + 2])));
      i += 2;
    } else {
      out.push_back(value[i]);
    }
  }
  return out;
}

// A CSV field of `text` (quoted when it must be); NULL: an empty field.
void append_field(const std::optional<std::string>& text, std::string* line) {
  if (!text) return;
  if (text->find_first_of(",\"\r\n") == std::string::npos && !text->empty()) {
    *line += *text;
    return;
  }
  *line += '"';
  for (char c : *text) {
    if (c == '"') *line += '"';
    *line += c;
  }
  *line += '"';
}

class FileTableSource final : public Source<Row> {
 public:
  FileTableSource(const TableDef& t, int64_t rows_per_second)
      : rate_(rows_per_second),
        path_(t.options.at("path")),
        where_("table " + t.name + ", " + t.options.at("path")),
        partitions_(partition_names(t)),
        filter_(t.partition_filter) {
    const std::vector<Column>& declared = t.declared.empty() ? t.columns : t.declared;
    width_ = declared.size();
    TableDef data = t, parts = t;
    data.columns.clear();
    parts.columns.clear();
    for (const std::string& p : partitions_) {
      const int at = column_index(declared, p);
      partition_at_.push_back(at);
      parts.columns.push_back(declared[static_cast<size_t>(at)]);
    }
    for (size_t i = 0; i < declared.size(); ++i) {
      if (std::find(partition_at_.begin(), partition_at_.end(), static_cast<int>(i)) != partition_at_.end()) continue;
      data_at_.push_back(static_cast<int>(i));
      data.columns.push_back(declared[i]);
    }
    data_format_ = csv_format(csv_schema(data));
    if (!partitions_.empty()) partition_format_ = csv_format(csv_schema(parts));
  }

  absl::Status open(OperatorContext& ctx) override {
    rate_.start(&ctx.processing_time());
    state_ = std::make_unique<OperatorListState<FileRange>>(ctx, "file-ranges");
    if (ctx.is_restored()) {
      bool corrupt = false;
      ranges_ = state_->get(&corrupt);
      if (corrupt) return absl::DataLossError(where_ + ": the read positions in the checkpoint are corrupt");
      return absl::OkStatus();
    }
    auto files = list_files();
    if (!files.ok()) return files.status();
    for (const std::string& file : *files) {
      if (!partitions_.empty()) {
        auto values = partition_row(file);
        if (!values.ok()) return values.status();
        if (filter_) {
          auto keep = evaluate(*filter_, *values);
          // An error (a CAST of a value that is none) reads the file: the
          // filter above the scan decides per row.
          if (keep.ok() && !(std::holds_alternative<bool>(*keep) && std::get<bool>(*keep))) continue;
        }
      }
      absl::Status s = add_range(file, ctx.subtask_index(), ctx.parallelism());
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }

  PollStatus poll(SourceOutput<Row>& out, int max_records) override {
    if (current_ >= ranges_.size()) return PollStatus::kEndOfInput;
    max_records = rate_.allow(max_records);
    if (max_records == 0) return PollStatus::kIdle;
    for (int n = 0; n < max_records;) {
      if (current_ >= ranges_.size()) return PollStatus::kEndOfInput;
      FileRange& r = ranges_[current_];
      if (reader_ == nullptr) {
        absl::Status s = open_range(r);
        if (!s.ok()) throw std::runtime_error(std::string(s.message()));
      }
      if (r.offset >= r.end) {
        reader_.reset();
        ++current_;
        continue;
      }
      const int64_t line = r.line++;
      Row data;
      absl::Status s = data_format_->decode(reader_->next(&r.offset), &data);
      if (!s.ok()) {
        throw UnrecoverableError(where_ + (r.file.empty() ? "" : "/" + r.file) + ": line " + std::to_string(line) + ": " +
                                 std::string(s.message()));
      }
      row_.values.resize(width_);
      for (size_t i = 0; i < data_at_.size(); ++i) row_.values[static_cast<size_t>(data_at_[i])] = std::move(data.values[i]);
      for (size_t i = 0; i < partition_at_.size(); ++i) {
        row_.values[static_cast<size_t>(partition_at_[i])] = partition_values_.values[i];
      }
      out.collect(row_);
      ++n;
    }
    return current_ >= ranges_.size() ? PollStatus::kEndOfInput : PollStatus::kMore;
  }

  absl::Status snapshot_state(int64_t) override {
    state_->update(std::vector<FileRange>(ranges_.begin() + static_cast<long>(std::min(current_, ranges_.size())),
                                          ranges_.end()));
    return absl::OkStatus();
  }

  void close() override { reader_.reset(); }

  bool bounded() const override { return true; }

 private:
  // The files to read, relative to the directory path_ in name order, or
  // {""} when path_ is a file.
  absl::StatusOr<std::vector<std::string>> list_files() const {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::is_directory(path_, ec)) {
      if (!fs::exists(path_, ec)) return absl::NotFoundError(where_ + ": no such file or directory");
      return std::vector<std::string>{""};
    }
    std::vector<std::string> files;
    fs::recursive_directory_iterator it(path_, ec), end;
    for (; !ec && it != end; it.increment(ec)) {
      const std::string name = it->path().filename().string();
      if (name.empty() || name[0] == '.' || name[0] == '_') {
        if (it->is_directory(ec)) it.disable_recursion_pending();
        continue;
      }
      if (it->is_regular_file(ec)) files.push_back(fs::relative(it->path(), path_, ec).string());
    }
    if (ec) return absl::UnavailableError(where_ + ": cannot list the directory: " + ec.message());
    std::sort(files.begin(), files.end());
    return files;
  }

  // The partition columns' values of `file`.
  absl::StatusOr<Row> partition_row(const std::string& file) const {
    auto values = partition_values(file, partitions_);
    if (!values.ok()) return absl::InvalidArgumentError(where_ + ": " + std::string(values.status().message()));
    std::string line;
    for (size_t i = 0; i < values->size(); ++i) {
      if (i > 0) line += ',';
      append_field((*values)[i], &line);
    }
    Row row;
    absl::Status s = partition_format_->decode(line, &row);
    if (!s.ok()) return absl::InvalidArgumentError(where_ + "/" + file + ": partition values: " + std::string(s.message()));
    return row;
  }

  // This subtask's byte range of `file`, moved to line boundaries.
  absl::Status add_range(const std::string& file, int64_t i, int64_t p) {
    const std::string full = file.empty() ? path_ : path_ + "/" + file;
    auto mapped = MappedFile::open(full);
    if (!mapped.ok()) return mapped.status();
    LineReader reader(std::move(*mapped));
    FileRange r;
    r.file = file;
    r.offset = reader.boundary(i, p);
    r.end = reader.boundary(i + 1, p);
    if (r.offset >= r.end) return absl::OkStatus();
    r.line = reader.line_at(r.offset);
    ranges_.push_back(std::move(r));
    return absl::OkStatus();
  }

  absl::Status open_range(const FileRange& r) {
    const std::string full = r.file.empty() ? path_ : path_ + "/" + r.file;
    auto mapped = MappedFile::open(full);
    if (!mapped.ok()) return absl::Status(mapped.status().code(), where_ + ": " + std::string(mapped.status().message()));
    reader_ = std::make_unique<LineReader>(std::move(*mapped));
    if (r.offset > reader_->size() || r.end > reader_->size()) {
      reader_.reset();
      return absl::FailedPreconditionError(where_ + (r.file.empty() ? "" : "/" + r.file) +
                                           ": the file is shorter than the restored read position");
    }
    reader_->seek(r.offset);
    if (!partitions_.empty()) {
      auto values = partition_row(r.file);
      if (!values.ok()) return values.status();
      partition_values_ = *std::move(values);
    }
    return absl::OkStatus();
  }

  RateLimiter rate_;
  const std::string path_;
  const std::string where_;
  const std::vector<std::string> partitions_;
  const std::optional<Expr> filter_;
  size_t width_ = 0;
  std::vector<int> partition_at_;  // declared index of each partition column
  std::vector<int> data_at_;       // declared index of each column in the lines
  std::shared_ptr<const Format> data_format_;
  std::shared_ptr<const Format> partition_format_;

  std::unique_ptr<OperatorListState<FileRange>> state_;
  std::vector<FileRange> ranges_;
  size_t current_ = 0;
  std::unique_ptr<LineReader> reader_;  // of ranges_[current_], once opened
  Row partition_values_;                // of ranges_[current_]'s file
  Row row_;
};

}  // namespace

absl::StatusOr<std::vector<std::optional<std::string>>> partition_values(const std::string& relative,
                                                                         const std::vector<std::string>& names) {
  std::vector<std::optional<std::string>> values(names.size());
  std::vector<bool> found(names.size(), false);
  for (absl::string_view part : absl::StrSplit(relative, '/')) {
    const size_t eq = part.find('=');
    if (eq == absl::string_view::npos) continue;
    for (size_t i = 0; i < names.size(); ++i) {
      if (found[i] || !absl::EqualsIgnoreCase(part.substr(0, eq), names[i])) continue;
      const absl::string_view value = part.substr(eq + 1);
      if (value != "__DEFAULT_PARTITION__") values[i] = unescape(std::string_view(value.data(), value.size()));
      found[i] = true;
    }
  }
  for (size_t i = 0; i < names.size(); ++i) {
    if (!found[i]) {
      return absl::InvalidArgumentError("file " + relative + " is in no directory " + names[i] +
                                        "=VALUE of partition column " + names[i]);
    }
  }
  return values;
}

std::unique_ptr<Source<Row>> make_file_table_source(const TableDef& table, int64_t rows_per_second) {
  return std::make_unique<FileTableSource>(table, rows_per_second);
}

}  // namespace weir::sql
