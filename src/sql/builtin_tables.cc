// The built-in tables (sql/job_builder.h TableConnectors::built_in):
// 'values', 'datagen' (datagen_table.cc), 'filesystem' (also partitioned),
// 'print' and 'blackhole'.
#include <cstdio>
#include <stdexcept>

#include "absl/strings/ascii.h"
#include "absl/strings/str_join.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "sql/datagen_table.h"
#include "sql/file_table_source.h"
#include "sql/job_builder.h"
#include "sql/values.h"
#include "weir/connectors.h"

namespace weir::sql {
namespace {

// A values table's rows, one per poll: a watermark follows every row, so
// what is late does not depend on how many rows a poll takes.
class RowByRow final : public Source<Row> {
 public:
  explicit RowByRow(std::unique_ptr<Source<Row>> rows) : rows_(std::move(rows)) {}
  absl::Status open(OperatorContext& ctx) override { return rows_->open(ctx); }
  PollStatus poll(SourceOutput<Row>& out, int) override { return rows_->poll(out, 1); }
  absl::Status snapshot_state(int64_t checkpoint_id) override { return rows_->snapshot_state(checkpoint_id); }
  void notify_checkpoint_complete(int64_t checkpoint_id) override { rows_->notify_checkpoint_complete(checkpoint_id); }
  void close() override { rows_->close(); }
  bool bounded() const override { return rows_->bounded(); }

 private:
  std::unique_ptr<Source<Row>> rows_;
};

// "+I[1, abc, NULL]", as Flink's print connector writes rows.
std::string print_text(const Row& row) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < row.values.size(); ++i) parts.push_back(row.text(i).value_or("NULL"));
  return std::string(row_kind_name(row.kind)) + "[" + absl::StrJoin(parts, ", ") + "]";
}

class Discard final : public Sink<Row> {
 public:
  absl::Status open(OperatorContext&) override { return absl::OkStatus(); }
  absl::Status write(const Row&) override { return absl::OkStatus(); }
};

}  // namespace

std::string partition_path(const std::vector<std::string>& names, const std::vector<std::optional<std::string>>& values) {
  std::string path;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) path += '/';
    path += names[i] + '=';
    if (!values[i] || values[i]->empty()) {
      path += "__DEFAULT_PARTITION__";
      continue;
    }
    const std::string& v = *values[i];
    const bool dots = v == "." || v == "..";
    for (char c : v) {
      const auto u = static_cast<unsigned char>(c);
      if (dots || c == '/' || c == '%' || c == '\\' || u < 0x20 || u == 0x7f) {
        static const char kHex[] = "0123456789ABCDEF";
        path += '%';
        path += kHex[u >> 4];
        path += kHex[u & 15];
      } else {
        path += c;
      }
    }
  }
  return path;
}

DataStream<std::string> partitioned_lines(const DataStream<Row>& rows, const TableDef& t, const std::string& by,
                                          const std::string& uid) {
  std::vector<std::string> names;
  std::vector<int> parts;
  for (absl::string_view c : absl::StrSplit(by, ',')) {
    names.emplace_back(c);
    parts.push_back(t.index_of(std::string_view(c.data(), c.size())));
  }
  std::vector<int> rest;
  TableDef data = t;
  data.columns.clear();
  for (size_t i = 0; i < t.columns.size(); ++i) {
    if (std::find(parts.begin(), parts.end(), static_cast<int>(i)) != parts.end()) continue;
    rest.push_back(static_cast<int>(i));
    data.columns.push_back(t.columns[i]);
  }
  auto format = csv_format(csv_schema(data));
  DataStream<std::string> out = rows.map(
      [names, parts, rest, format](const Row& row) {
        std::vector<std::optional<std::string>> values;
        for (int p : parts) values.push_back(row.text(static_cast<size_t>(p)));
        std::string line = partition_path(names, values);
        line.push_back('\0');
        Row kept;
        for (int i : rest) kept.values.push_back(row.values[static_cast<size_t>(i)]);
        format->encode(kept, &line);
        return line;
      },
      "csv-partitioned");
  out.uid(uid + "-format");
  return out;
}

DataStream<Row> read_columns(const DataStream<Row>& rows, const std::vector<Column>& declared,
                             const std::vector<Column>& read, const std::string& uid) {
  std::vector<int> at;
  for (const Column& c : read) at.push_back(column_index(declared, c.name));
  DataStream<Row> out = rows.map(
      [at](const Row& all) {
        Row r;
        r.kind = all.kind;
        r.values.reserve(at.size());
        for (int i : at) r.values.push_back(all.values[static_cast<size_t>(i)]);
        return r;
      },
      "read-columns");
  out.uid(uid + "-columns");
  return out;
}

Schema csv_schema(const TableDef& table) {
  std::vector<Field> fields;
  // DECIMAL, DATE, TIME and BYTES as text, ARRAY and MAP as JSON: the job
  // builder turns them into their SQL values (sql/values.h).
  for (const Column& c : table.columns) fields.push_back({c.name, wire_type(c.type), c.type.nullable});
  return Schema(std::move(fields));
}

TableConnectors TableConnectors::built_in() {
  TableConnectors c;
  c.sources["values"] = [](StreamEnvironment& env, const TableDef& t,
                           const std::string& uid) -> absl::StatusOr<DataStream<Row>> {
    // The rows of option `rows`: CSV lines (as the filesystem sink writes
    // them), read when the job is built; an unreadable line is an error
    // naming it.
    auto text = t.options.find("rows");
    if (text == t.options.end()) {
      return absl::InvalidArgumentError("table " + t.name + ": the values connector needs rows = 'CSV lines'");
    }
    // Lines have every declared column; the rows only those read.
    TableDef declared = t;
    if (!t.declared.empty()) declared.columns = t.declared;
    std::vector<int> read;
    for (const Column& c : t.columns) read.push_back(declared.index_of(c.name));
    auto format = csv_format(csv_schema(declared));
    auto rows = std::make_shared<std::vector<Row>>();
    int line_number = 0;
    for (absl::string_view line : absl::StrSplit(text->second, '\n')) {
      ++line_number;
      if (absl::StripAsciiWhitespace(line).empty()) continue;
      Row all;
      absl::Status s = format->decode(std::string(line), &all);
      if (!s.ok()) {
        return absl::InvalidArgumentError("table " + t.name + ": rows, line " + std::to_string(line_number) + ": " +
                                          std::string(s.message()));
      }
      rows->push_back(std::move(all));
    }
    // Event time from the declared row (the query may not read the
    // watermark's column), then only the columns read.
    std::optional<WatermarkStrategy<Row>> watermarks;
    if (t.watermark) {
      // Watermarks after every poll: results do not depend on timing.
      watermarks = WatermarkStrategy<Row>::for_bounded_out_of_orderness(Duration(t.watermark->delay_ms),
                                                                        event_time_of(t, declared.columns))
                       .with_interval(Duration(0));
    }
    // "scan.parallelism": the source's subtasks (else the job's); with 1
    // the rows come in the order written.
    int parallelism = 0;
    if (auto p = t.options.find("scan.parallelism"); p != t.options.end()) {
      if (!absl::SimpleAtoi(p->second, &parallelism) || parallelism < 1) {
        return absl::InvalidArgumentError("table " + t.name + ": scan.parallelism '" + p->second +
                                          "' is not a positive number");
      }
    }
    const int64_t count = static_cast<int64_t>(rows->size());
    DataStream<Row> out = env.from_source<Row>(
        [rows, count] {
          return std::make_unique<RowByRow>(std::make_unique<GeneratorSource<Row>>(
              [rows](int64_t i) { return (*rows)[static_cast<size_t>(i)]; }, count));
        },
        "values-" + t.name, watermarks);
    out.uid(uid);
    if (parallelism > 0) out.parallelism(parallelism);
    if (read.size() == declared.columns.size()) return out;
    DataStream<Row> pruned = read_columns(out, declared.columns, t.columns, uid);
    if (parallelism > 0) pruned.parallelism(parallelism);
    return pruned;
  };
  c.sources["datagen"] = datagen_table;
  c.sources["filesystem"] = [](StreamEnvironment& env, const TableDef& t,
                               const std::string& uid) -> absl::StatusOr<DataStream<Row>> {
    // The CSV lines of the file `path`, or of the files under the
    // directory `path` (a partitioned table's partition columns from their
    // directories), read once: sql/file_table_source.h.
    auto path = t.options.find("path");
    if (path == t.options.end() || path->second.empty()) {
      return absl::InvalidArgumentError("table " + t.name +
                                        ": the filesystem connector needs path = 'FILE' (or 'DIRECTORY')");
    }
    if (auto f = t.options.find("format"); f != t.options.end() && f->second != "csv") {
      return absl::InvalidArgumentError("table " + t.name + ": format '" + f->second +
                                        "' is not supported by the filesystem source yet (csv is)");
    }
    int64_t rate = 0;  // rows per second and subtask
    if (auto r = t.options.find("scan.records-per-second"); r != t.options.end()) {
      if (!absl::SimpleAtoi(r->second, &rate) || rate < 0) {
        return absl::InvalidArgumentError("table " + t.name + ": \"scan.records-per-second\" '" + r->second +
                                          "' is no count");
      }
    }
    TableDef declared = t;
    if (!t.declared.empty()) declared.columns = t.declared;
    // Event time: each subtask's watermark trails the latest time it read
    // (in its ranges, in file order) by the delay, after every poll.
    std::optional<WatermarkStrategy<Row>> watermarks;
    if (t.watermark) {
      watermarks = WatermarkStrategy<Row>::for_bounded_out_of_orderness(Duration(t.watermark->delay_ms),
                                                                        event_time_of(t, declared.columns))
                       .with_interval(Duration(0));
    }
    DataStream<Row> rows =
        env.from_source<Row>([t, rate] { return make_file_table_source(t, rate); }, "file-" + t.name, watermarks);
    rows.uid(uid);
    if (t.columns.size() == declared.columns.size()) return rows;
    return read_columns(rows, declared.columns, t.columns, uid);
  };
  add_system_connectors(&c);
  c.sinks["blackhole"] = [](const DataStream<Row>& rows, bool, const TableDef&, const std::string& uid) {
    rows.sink_to([] { return std::make_unique<Discard>(); }, "blackhole").uid(uid);
    return absl::OkStatus();
  };
  c.sinks["print"] = [](const DataStream<Row>& rows, bool, const TableDef&, const std::string& uid) {
    rows.map([](const Row& r) { return print_text(r); }, "print-format")
        .uid(uid + "-format")
        .sink_to([] { return std::make_unique<PrintSink>(); }, "print")
        .uid(uid);
    return absl::OkStatus();
  };
  c.sinks["filesystem"] = [](const DataStream<Row>& rows, bool updating, const TableDef& t,
                             const std::string& uid) -> absl::Status {
    auto format = t.options.find("format");
    const bool changelog = format != t.options.end() && format->second == "changelog-csv";
    if (format != t.options.end() && format->second != "csv" && !changelog) {
      return absl::InvalidArgumentError("table " + t.name + ": format '" + format->second +
                                        "' is not supported by the filesystem sink yet (csv and changelog-csv are)");
    }
    if (updating && !changelog) {
      return absl::InvalidArgumentError("table " + t.name + ": the filesystem connector takes inserts only, and the "
                                        "query's result is updating (a GROUP BY without a window; format = "
                                        "'changelog-csv' writes each change)");
    }
    auto path = t.options.find("path");
    if (path == t.options.end() || path->second.empty()) {
      return absl::InvalidArgumentError("table " + t.name + ": the filesystem connector needs path = 'DIRECTORY'");
    }
    const std::string dir = path->second;
    auto by = t.options.find("partition-by");
    if (by != t.options.end() && changelog) {
      return absl::InvalidArgumentError("table " + t.name + ": format 'changelog-csv' is not supported for a "
                                        "partitioned table yet");
    }
    if (by == t.options.end()) {
      // changelog-csv: each row's kind (+I, -U, +U, -D) as a first column.
      TableDef written = t;
      DataStream<Row> lines = rows;
      if (changelog) {
        written.columns.insert(written.columns.begin(), Column{"op", {TypeKind::kVarchar, false}});
        lines = rows.map(
            [](const Row& r) {
              Row out;
              out.values.reserve(r.values.size() + 1);
              out.values.emplace_back(std::string(row_kind_name(r.kind)));
              out.values.insert(out.values.end(), r.values.begin(), r.values.end());
              return out;
            },
            "changelog");
        lines.uid(uid + "-changelog");
      }
      encode_rows(lines, csv_format(csv_schema(written)), "csv")
          .uid(uid + "-format")
          .sink_to([dir] { return std::make_unique<ExactlyOnceFileSink>(dir, "part"); }, "files")
          .uid(uid);
      return absl::OkStatus();
    }
    partitioned_lines(rows, t, by->second, uid)
        .sink_to([dir] { return std::make_unique<ExactlyOnceFileSink>(dir, "part", ExactlyOnceFileSink::PartitionPrefixed{}); },
                 "partitioned-files")
        .uid(uid);
    return absl::OkStatus();
  };
  return c;
}

}  // namespace weir::sql
