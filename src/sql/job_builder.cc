#include "sql/job_builder.h"

#include <cstdio>
#include <stdexcept>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "sql/decimal.h"
#include "sql/operators.h"
#include "weir/connectors.h"
#include "weir/key_group.h"

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

class Builder {
 public:
  Builder(const PlannedScript& planned, const TableConnectors& connectors, StreamEnvironment& env)
      : planned_(planned), connectors_(connectors), env_(env) {}

  absl::Status run() {
    for (size_t i = 0; i < planned_.inserts.size(); ++i) {
      const InsertPlan& insert = planned_.inserts[i];
      prefix_ = "sql-" + std::to_string(i);
      const PlanNode& sink = *insert.root;
      // A SELECT list right below the sink writes its DECIMALs as text
      // itself; else an operator of its own does.
      sink_ = &sink;
      auto rows = stream(*sink.input, 1);
      sink_ = nullptr;
      if (!rows.ok()) return rows.status();
      const TableDef* table = find(sink.table);
      auto it = connectors_.sinks.find(table->connector());
      if (it == connectors_.sinks.end()) {
        return absl::InvalidArgumentError("table " + table->name + ": connector '" + table->connector() +
                                          "' cannot be written to from SQL yet");
      }
      DataStream<Row> out =
          sink.input->kind == PlanNode::Kind::kProject ? *rows : decimals_out(*rows, sink.columns, prefix_ + "-0-");
      absl::Status s = it->second(out, is_updating(*sink.input), *table, prefix_ + "-0-sink");
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }

 private:
  const TableDef* find(const std::string& name) const {
    for (const TableDef& t : planned_.tables) {
      if (t.name == name) return &t;
    }
    return nullptr;
  }

  // DECIMAL columns as a source gives them (text, as CSV has them; a
  // number) held exactly (sql/decimal.h); a value that is none fails the
  // task naming the table and column.
  static DataStream<Row> decimals_in(const DataStream<Row>& rows, const TableDef& table,
                                     const std::vector<Column>& columns, const std::string& uid) {
    std::vector<std::pair<size_t, Type>> decimal;
    for (size_t i = 0; i < columns.size(); ++i) {
      if (columns[i].type.kind == TypeKind::kDecimal) decimal.emplace_back(i, columns[i].type);
    }
    if (decimal.empty()) return rows;
    const std::string where = "table " + table.name + ", column ";
    DataStream<Row> out = rows.map(
        [decimal, columns, where](const Row& in) {
          Row r = in;
          for (const auto& [i, t] : decimal) {
            Value& v = r.values[i];
            absl::StatusOr<int64_t> d = int64_t{0};
            if (std::holds_alternative<std::monostate>(v)) continue;
            if (const auto* text = std::get_if<std::string>(&v)) d = parse_decimal(*text, t.scale);
            else if (const auto* x = std::get_if<double>(&v)) d = double_to_decimal(*x, t.scale);
            else if (const auto* n = std::get_if<int64_t>(&v)) d = rescale(*n, 0, t.scale);
            if (!d.ok()) throw std::runtime_error(where + columns[i].name + ": " + std::string(d.status().message()));
            v = *d;
          }
          return r;
        },
        "decimals");
    out.uid(uid + "decimals");
    return out;
  }

  // DECIMAL columns as their text ("12.500") for a sink, which knows no
  // DECIMAL: every sink writes them as the exact number.
  static DataStream<Row> decimals_out(const DataStream<Row>& rows, const std::vector<Column>& columns,
                                      const std::string& uid) {
    std::vector<std::pair<size_t, int>> decimal;
    for (size_t i = 0; i < columns.size(); ++i) {
      if (columns[i].type.kind == TypeKind::kDecimal) decimal.emplace_back(i, columns[i].type.scale);
    }
    if (decimal.empty()) return rows;
    DataStream<Row> out = rows.map(
        [decimal](const Row& in) {
          Row r = in;
          for (const auto& [i, scale] : decimal) {
            if (const auto* n = std::get_if<int64_t>(&r.values[i])) r.values[i] = decimal_text(*n, scale);
          }
          return r;
        },
        "decimal-text");
    out.uid(uid + "decimal-text");
    return out;
  }

  // Part of the uids of a stateful node's operators: a hash of what its
  // state holds (plan.h state_layout), so a changed query does not read
  // state it would misread.
  static std::string layout_tag(const PlanNode& n) {
    const std::string layout = state_layout(n);
    return absl::StrFormat("%08x-", static_cast<uint32_t>(hash_bytes(layout.data(), layout.size())));
  }

  absl::StatusOr<DataStream<Row>> stream(const PlanNode& n, int depth) {
    const std::string uid = prefix_ + "-" + std::to_string(depth) + "-";
    switch (n.kind) {
      case PlanNode::Kind::kScan: {
        const TableDef* table = find(n.table);
        auto it = connectors_.sources.find(table->connector());
        if (it == connectors_.sources.end()) {
          return absl::InvalidArgumentError("table " + table->name + ": connector '" + table->connector() +
                                            "' cannot be read from SQL yet");
        }
        // The columns the query reads (projection push-down), in the
        // scan's order.
        TableDef scanned = *table;
        scanned.columns = n.columns;
        scanned.declared = table->columns;
        auto rows = it->second(env_, scanned, uid + "scan");
        if (!rows.ok()) return rows.status();
        return decimals_in(*rows, *table, n.columns, uid);
      }
      case PlanNode::Kind::kFilter: {
        auto in = stream(*n.input, depth + 1);
        if (!in.ok()) return in.status();
        return calc(*in, &n.exprs[0], nullptr, n.input->column_names(), uid);
      }
      case PlanNode::Kind::kProject: {
        // A filter right below is the same operator (its uid the
        // project's).
        const bool filtered = n.input->kind == PlanNode::Kind::kFilter;
        const PlanNode& input = filtered ? *n.input->input : *n.input;
        auto in = stream(input, depth + (filtered ? 2 : 1));
        if (!in.ok()) return in.status();
        std::vector<Expr> exprs = n.exprs;
        if (sink_ != nullptr && sink_->input.get() == &n) {
          for (size_t i = 0; i < exprs.size(); ++i) {
            const Type& to = sink_->columns[i].type;
            if (to.kind == TypeKind::kDecimal) {
              exprs[i] = Expr::call(Op::kCast, Type{TypeKind::kVarchar, to.nullable}, {cast_to(std::move(exprs[i]), to)});
            }
          }
        }
        // Every column of the input, in order (a scan pruned to what the
        // query selects): no operator at all.
        bool identity = !filtered && exprs.size() == n.input->columns.size();
        for (size_t i = 0; identity && i < exprs.size(); ++i) {
          identity = exprs[i].kind == Expr::Kind::kColumn && exprs[i].column == static_cast<int>(i);
        }
        if (identity) return in;
        return calc(*in, filtered ? &n.input->exprs[0] : nullptr, &exprs, input.column_names(), uid);
      }
      case PlanNode::Kind::kWindow: {
        auto in = stream(*n.input, depth + 1);
        if (!in.ok()) return in.status();
        return assign_windows(*in, n, uid);
      }
      case PlanNode::Kind::kAggregate: {
        // Directly over a window table function, the window operator makes
        // the windows (the table function itself is no operator).
        // (CUMULATE: a row per window it is in, then per key and window a
        // state and a timer, as over windowed rows.)
        const bool tvf = n.input->kind == PlanNode::Kind::kWindow && n.input->window->kind != WindowSpec::Kind::kCumulate;
        auto in = stream(tvf ? *n.input->input : *n.input, depth + (tvf ? 2 : 1));
        if (!in.ok()) return in.status();
        const std::string keeps = uid + layout_tag(n);
        if (tvf) return window_aggregate(*in, n, keeps);
        if (window_bounds(*n.input) && !is_updating(*n.input)) return windowed_aggregate(*in, n, keeps);
        if (planned_.settings.two_phase_aggregation && !is_updating(*n.input)) {
          return two_phase_aggregate(*in, n, planned_.settings, keeps);
        }
        return group_aggregate(*in, n, keeps);
      }
      case PlanNode::Kind::kRank: {
        auto in = stream(*n.input, depth + 1);
        if (!in.ok()) return in.status();
        return top_n(*in, n, uid + layout_tag(n));
      }
      case PlanNode::Kind::kOver: {
        auto in = stream(*n.input, depth + 1);
        if (!in.ok()) return in.status();
        return over_aggregate(*in, n, uid + layout_tag(n));
      }
      case PlanNode::Kind::kUnion: {
        auto sides = both_sides(n, depth, "u");
        if (!sides.ok()) return sides.status();
        return sides->first.union_with(sides->second);
      }
      case PlanNode::Kind::kJoin: {
        auto sides = both_sides(n, depth, "r");
        if (!sides.ok()) return sides.status();
        return join(sides->first, sides->second, n, uid + layout_tag(n));
      }
      case PlanNode::Kind::kSink:
        break;
    }
    return absl::InternalError("a sink inside a query");
  }

  // The two inputs of a join or union; the right side's uids carry `tag`
  // and the depth, so they differ from the left side's and from those of
  // the same nodes nested on both sides.
  absl::StatusOr<std::pair<DataStream<Row>, DataStream<Row>>> both_sides(const PlanNode& n, int depth,
                                                                         const std::string& tag) {
    auto left = stream(*n.input, depth + 1);
    if (!left.ok()) return left.status();
    const std::string saved = prefix_;
    prefix_ += tag + std::to_string(depth);
    auto right = stream(*n.right, depth + 1);
    prefix_ = saved;
    if (!right.ok()) return right.status();
    return std::make_pair(*std::move(left), *std::move(right));
  }

  const PlannedScript& planned_;
  const TableConnectors& connectors_;
  StreamEnvironment& env_;
  std::string prefix_;
  const PlanNode* sink_ = nullptr;  // the sink whose rows are being built
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
  for (const Column& c : table.columns) {
    FieldType t = FieldType::kInt64;
    switch (c.type.kind) {
      case TypeKind::kBoolean: t = FieldType::kBool; break;
      case TypeKind::kDouble: t = FieldType::kDouble; break;
      case TypeKind::kVarchar:
      case TypeKind::kDecimal:  // as text; the job builder makes it exact
        t = FieldType::kString;
        break;
      default: t = FieldType::kInt64; break;
    }
    fields.push_back({c.name, t, c.type.nullable});
  }
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
      const int time = declared.index_of(t.watermark->column);
      // Watermarks after every poll: results do not depend on timing.
      watermarks = WatermarkStrategy<Row>::for_bounded_out_of_orderness(
                       Duration(t.watermark->delay_ms),
                       [time](const Row& r) { return r.is_null(time) ? int64_t{0} : r.int64(time); })
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
        "values", watermarks);
    out.uid(uid);
    if (parallelism > 0) out.parallelism(parallelism);
    if (read.size() == declared.columns.size()) return out;
    DataStream<Row> pruned = read_columns(out, declared.columns, t.columns, uid);
    if (parallelism > 0) pruned.parallelism(parallelism);
    return pruned;
  };
  c.sources["filesystem"] = [](StreamEnvironment& env, const TableDef& t,
                               const std::string& uid) -> absl::StatusOr<DataStream<Row>> {
    // The CSV lines of the file `path`, read once (bounded; each subtask
    // its splits, exactly once). A line that is no row of the table fails
    // the job naming the file and line.
    auto path = t.options.find("path");
    if (path == t.options.end() || path->second.empty()) {
      return absl::InvalidArgumentError("table " + t.name + ": the filesystem connector needs path = 'FILE'");
    }
    if (auto f = t.options.find("format"); f != t.options.end() && f->second != "csv") {
      return absl::InvalidArgumentError("table " + t.name + ": format '" + f->second +
                                        "' is not supported by the filesystem source yet (csv is)");
    }
    TableDef declared = t;
    if (!t.declared.empty()) declared.columns = t.declared;
    std::vector<int> read;
    for (const Column& c : t.columns) read.push_back(declared.index_of(c.name));
    auto format = csv_format(csv_schema(declared));
    const std::string file = path->second, where = "table " + t.name + ", " + path->second;
    // Event time: each subtask's watermark trails the latest time it read
    // (in its splits, in file order) by the delay, after every poll. The
    // time column is read from the line here (a line that is no row: time
    // 0, and the decoding below fails the job naming it).
    std::optional<WatermarkStrategy<TextLine>> watermarks;
    if (t.watermark) {
      const int time = declared.index_of(t.watermark->column);
      watermarks = WatermarkStrategy<TextLine>::for_bounded_out_of_orderness(
                       Duration(t.watermark->delay_ms),
                       [format, time](const TextLine& line) {
                         Row r;
                         if (!format->decode(line.text, &r).ok() || r.is_null(time)) return int64_t{0};
                         return r.int64(time);
                       })
                       .with_interval(Duration(0));
    }
    DataStream<TextLine> lines =
        env.from_source<TextLine>([file] { return std::make_unique<FileSource>(file); }, "file", watermarks);
    lines.uid(uid);
    DataStream<Row> rows = lines.map(
        [format, read, where](const TextLine& line) {
          Row all;
          absl::Status s = format->decode(line.text, &all);
          if (!s.ok()) throw std::runtime_error(where + ": " + origin_of(line) + ": " + std::string(s.message()));
          Row r;
          r.values.reserve(read.size());
          for (int i : read) r.values.push_back(std::move(all.values[static_cast<size_t>(i)]));
          return r;
        },
        "csv");
    rows.uid(uid + "-csv");
    return rows;
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

absl::Status build_job(const PlannedScript& planned, const TableConnectors& connectors, StreamEnvironment& env) {
  return Builder(planned, connectors, env).run();
}

}  // namespace weir::sql
