// PostgreSQL tables (sql/job_builder.h): 'postgres' (Flink's 'jdbc' with a
// jdbc:postgresql:// URL becomes it), a sink and a source through
// weir/postgres.h, its options named as Flink's JDBC connector names its.
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "sql/connector_tables.h"
#include "sql/expression.h"
#include "sql/keys.h"
#include "sql/values.h"
#include "weir/postgres.h"

namespace weir::sql {
namespace {

// The rows as PostgreSQL reads text: TIMESTAMP as '2020-01-01 00:00:01.000'
// (UTC), INTERVAL as milliseconds, the rest as a format writes it.
PostgresRow postgres_row(const Row& r, const std::vector<TypeKind>& kinds) {
  PostgresRow p = PostgresRow::of(r);
  for (size_t i = 0; i < r.values.size(); ++i) {
    if (kinds[i] == TypeKind::kTimestamp && std::holds_alternative<int64_t>(r.values[i])) {
      p.values[i] = timestamp_text(std::get<int64_t>(r.values[i]));
    }
    if (kinds[i] == TypeKind::kBytes && p.values[i]) {  // base64 (a sink's form) as bytea's hex input
      std::string bytes;
      if (absl::Base64Unescape(*p.values[i], &bytes)) p.values[i] = "\\x" + absl::BytesToHexString(bytes);
    }
  }
  return p;
}

// What the source selects for a column of `type`: text the job builder
// reads (a TIMESTAMP as 'yyyy-MM-dd HH:mm:ss.SSS' in UTC, BYTES as base64,
// an ARRAY or a MAP (a PostgreSQL array, json, jsonb) as JSON).
std::string select_expression(const std::string& quoted, const Type& type) {
  switch (type.kind) {
    case TypeKind::kTimestamp: return "to_char(" + quoted + ", 'YYYY-MM-DD HH24:MI:SS.MS')";
    case TypeKind::kBytes: return "translate(encode(" + quoted + ", 'base64'), E'\\n', '')";
    case TypeKind::kArray:
    case TypeKind::kMap: return "to_json(" + quoted + ")::text";
    default: return quoted;
  }
}

// A PostgreSQL table's rows as the columns' values: BIGINT, DOUBLE,
// BOOLEAN and TIMESTAMP read from their text, the rest text (the job
// builder reads DECIMAL, DATE, TIME, BYTES, ARRAY and MAP from it).
class PostgresTableSource final : public Source<Row> {
 public:
  PostgresTableSource(PostgresSourceOptions o, std::string table, std::vector<Column> columns)
      : source_(std::move(o)), table_(std::move(table)), columns_(std::move(columns)) {}
  absl::Status open(OperatorContext& ctx) override { return source_.open(ctx); }
  PollStatus poll(SourceOutput<Row>& out, int max_records) override {
    Converting c(this, &out);
    return source_.poll(c, max_records);
  }
  absl::Status snapshot_state(int64_t id) override { return source_.snapshot_state(id); }
  void close() override { source_.close(); }
  bool bounded() const override { return true; }

 private:
  class Converting final : public SourceOutput<PostgresRow> {
   public:
    Converting(PostgresTableSource* s, SourceOutput<Row>* out) : s_(s), out_(out) {}
    void collect(const PostgresRow& p) override { out_->collect(s_->row_of(p)); }
    Collector<PostgresRow>& split(int64_t) override { return *this; }
    void release_split(int64_t) override {}

   private:
    PostgresTableSource* s_;
    SourceOutput<Row>* out_;
  };

  Row row_of(const PostgresRow& p) const {
    Row r;
    r.values.reserve(p.values.size());
    for (size_t i = 0; i < p.values.size(); ++i) {
      if (!p.values[i]) {
        r.values.emplace_back();
        continue;
      }
      const std::string& text = *p.values[i];
      auto fail = [&](const char* what) {
        throw UnrecoverableError("table " + table_ + ", column " + columns_[i].name + ": '" + text.substr(0, 40) +
                                 "' is not " + what);
      };
      switch (wire_type(columns_[i].type)) {
        case FieldType::kInt64: {
          int64_t n;
          if (!absl::SimpleAtoi(text, &n)) fail("a BIGINT");
          r.values.emplace_back(n);
          break;
        }
        case FieldType::kDouble: {
          double d;
          if (!absl::SimpleAtod(text, &d)) fail("a DOUBLE");
          r.values.emplace_back(d);
          break;
        }
        case FieldType::kBool:
          if (text != "t" && text != "f" && text != "true" && text != "false") fail("a BOOLEAN");
          r.values.emplace_back(text[0] == 't');
          break;
        case FieldType::kTimestamp: {
          auto ms = parse_timestamp_text(text);
          if (!ms) fail("a TIMESTAMP(3)");
          r.values.emplace_back(*ms);
          break;
        }
        default:
          r.values.emplace_back(text);
          break;
      }
    }
    return r;
  }

  PostgresSource source_;
  const std::string table_;
  const std::vector<Column> columns_;
};

absl::StatusOr<DataStream<Row>> postgres_source(StreamEnvironment& env, const TableDef& t, const std::string& uid) {
  const std::string conninfo = table_option(t, "conninfo");
  if (conninfo.empty()) return table_error(t, "the postgres connector needs conninfo = 'host=... dbname=...' (libpq's)");
  auto pk = t.options.find("primary-key");
  if (pk == t.options.end()) {
    return table_error(t, "reading a postgres table needs its PRIMARY KEY (rows are read in its order, and a restored "
                          "job reads on after the last key it had): declare PRIMARY KEY (...) NOT ENFORCED");
  }
  if (t.watermark) return table_error(t, "a WATERMARK on a postgres table is not supported yet");
  int fetch = 1000;
  if (auto f = t.options.find("scan.fetch-size"); f != t.options.end()) {
    if (!absl::SimpleAtoi(f->second, &fetch) || fetch < 1) {
      return table_error(t, "'scan.fetch-size' '" + f->second + "' is no count of rows");
    }
  }
  PostgresSourceOptions o;
  o.conninfo = conninfo;
  o.table = table_option(t, "table-name", t.name);
  o.key_columns = absl::StrSplit(pk->second, ',');
  o.fetch_size = fetch;
  for (const Column& c : t.columns) {
    o.columns.push_back(c.name);
    // Quoted as PostgreSQL quotes an identifier (the name has no '"': the
    // lexer refuses one in a name).
    o.expressions.push_back(select_expression("\"" + c.name + "\"", c.type));
  }
  absl::Status valid = o.validate();
  if (!valid.ok()) return table_error(t, std::string(valid.message()));
  const std::string name = t.name;
  const std::vector<Column> columns = t.columns;
  DataStream<Row> rows = env.from_source<Row>(
      [o, name, columns] { return std::make_unique<PostgresTableSource>(o, name, columns); }, "postgres-" + t.name);
  rows.uid(uid);
  return rows;
}

// Changes of one key reach one sink subtask, in order.
class ByKey final : public KeyedProcessFunction<std::string, Row, PostgresRow> {
 public:
  explicit ByKey(std::vector<TypeKind> kinds) : kinds_(std::move(kinds)) {}
  void process_element(const Row& row, Context&, Collector<PostgresRow>& out) override {
    out.collect(postgres_row(row, kinds_));
  }

 private:
  const std::vector<TypeKind> kinds_;
};

absl::Status postgres_sink(const DataStream<Row>& rows, bool updating, const TableDef& t, const std::string& uid) {
  const std::string conninfo = table_option(t, "conninfo");
  if (conninfo.empty()) return table_error(t, "the postgres connector needs conninfo = 'host=... dbname=...' (libpq's)");
  const std::string table = table_option(t, "table-name", t.name);
  std::vector<std::string> columns;
  std::vector<TypeKind> kinds;
  for (const Column& c : t.columns) columns.push_back(c.name), kinds.push_back(c.type.kind);
  auto pk = t.options.find("primary-key");
  if (pk == t.options.end()) {
    if (updating) {
      return table_error(t, "the query's result is updating (a GROUP BY without a window): declare the table's PRIMARY KEY, "
                    "and the postgres connector upserts by it");
    }
    // Inserts, exactly once: one prepared transaction per checkpoint.
    PostgresSink::Builder b = PostgresSink::builder();
    b.conninfo(conninfo).table(table).columns(columns).transaction_prefix(
        table_option(t, "sink.transaction-prefix", "weir-" + t.name));
    absl::Status valid = b.options().validate();
    if (!valid.ok()) return table_error(t, std::string(valid.message()));
    DataStream<PostgresRow> out = rows.map([kinds](const Row& r) { return postgres_row(r, kinds); }, "postgres-row");
    out.uid(uid + "-row");
    out.sink_to(b.build(), "postgres-" + t.name).uid(uid);
    return absl::OkStatus();
  }
  // By primary key: each key's last change upserted (or deleted).
  std::vector<std::string> key_columns = absl::StrSplit(pk->second, ',');
  PostgresUpsertSink::Builder b = PostgresUpsertSink::builder();
  b.conninfo(conninfo).table(table).columns(columns).key_columns(key_columns);
  absl::Status valid = b.options().validate();
  if (!valid.ok()) return table_error(t, std::string(valid.message()));
  std::vector<Expr> keys;
  for (const std::string& k : key_columns) {
    const int i = t.index_of(k);
    keys.push_back(Expr::column_ref(i, t.columns[static_cast<size_t>(i)].type));
  }
  std::vector<std::string> names;
  for (const Column& c : t.columns) names.push_back(c.name);
  auto encoder = std::make_shared<const KeyEncoder>(keys, names, "PRIMARY KEY");
  DataStream<PostgresRow> out = rows.key_by([encoder](const Row& r) { return encoder->encode(r); })
                                    .process<PostgresRow>([kinds] { return std::make_unique<ByKey>(kinds); },
                                                          "postgres-by-key");
  out.uid(uid + "-by-key");
  out.sink_to(b.build(), "postgres-" + t.name).uid(uid);
  return absl::OkStatus();
}

}  // namespace

void add_postgres_tables(TableConnectors* c) {
  c->sinks["postgres"] = postgres_sink;
  c->sources["postgres"] = postgres_source;
}

}  // namespace weir::sql
