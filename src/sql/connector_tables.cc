// Tables of the systems weir connects to (sql/job_builder.h): 'kafka' (a
// source and a sink, through weir/kafka.h) and 'postgres' (a sink, through
// weir/postgres.h), their options named as Flink's connectors name theirs.
#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "sql/expression.h"
#include "sql/job_builder.h"
#include "sql/keys.h"
#include "weir/kafka.h"
#include "weir/postgres.h"

namespace weir::sql {
namespace {

std::string option(const TableDef& t, const std::string& name, const std::string& fallback = "") {
  auto it = t.options.find(name);
  return it == t.options.end() ? fallback : it->second;
}

absl::Status bad(const TableDef& t, const std::string& what) {
  return absl::InvalidArgumentError("table " + t.name + ": " + what);
}

// The records' format: 'json' (fields by name), 'csv' (fields by position)
// or 'raw' (one VARCHAR column, the bytes).
absl::StatusOr<std::shared_ptr<const Format>> table_format(const TableDef& t, const std::vector<Column>& columns) {
  const std::string format = option(t, "format");
  TableDef shape = t;
  shape.columns = columns;
  if (format == "json") return json_format(csv_schema(shape));
  if (format == "csv") return csv_format(csv_schema(shape));
  if (format == "raw") {
    if (columns.size() != 1 || columns[0].type.kind != TypeKind::kVarchar) {
      return bad(t, "format 'raw' needs one VARCHAR column");
    }
    return raw_format(columns[0].name);
  }
  return bad(t, format.empty() ? "the kafka connector needs format = 'json', 'csv' or 'raw'"
                               : "format '" + format + "' is not supported (json, csv and raw are)");
}

// The rows of a Kafka source: each record decoded where it is read, so its
// partition's watermark (a split of the source) sees the row's event time.
// A record the format cannot read fails the task naming topic, partition,
// offset and cause, unless the table says to skip such records (then they
// are counted and logged).
class KafkaRows final : public Source<Row> {
 public:
  KafkaRows(SourceFactory<KafkaRecord> records, std::shared_ptr<const Format> format, int timestamp_column,
            bool skip_bad, std::string table)
      : records_factory_(std::move(records)), decoder_(format, "table " + table), timestamp_column_(timestamp_column),
        skip_bad_(skip_bad), table_(std::move(table)) {}

  absl::Status open(OperatorContext& ctx) override {
    records_ = records_factory_();
    return records_->open(ctx);
  }
  PollStatus poll(SourceOutput<Row>& out, int max_records) override {
    Decoded decoded(this, out);
    return records_->poll(decoded, max_records);
  }
  absl::Status snapshot_state(int64_t checkpoint_id) override { return records_->snapshot_state(checkpoint_id); }
  void notify_checkpoint_complete(int64_t checkpoint_id) override { records_->notify_checkpoint_complete(checkpoint_id); }
  void close() override {
    if (records_) records_->close();
  }
  bool bounded() const override { return records_factory_()->bounded(); }

 private:
  // Forwards each record, decoded, to a collector of rows.
  class DecodedTo final : public Collector<KafkaRecord> {
   public:
    DecodedTo(KafkaRows* source, Collector<Row>* rows) : source_(source), rows_(rows) {}
    void collect(const KafkaRecord& r) override {
      if (source_->decode(r)) rows_->collect(source_->row_);
    }

   private:
    KafkaRows* source_;
    Collector<Row>* rows_;
  };
  class Decoded final : public SourceOutput<KafkaRecord> {
   public:
    Decoded(KafkaRows* source, SourceOutput<Row>& out) : source_(source), out_(out), all_(source, &out) {}
    void collect(const KafkaRecord& r) override { all_.collect(r); }
    Collector<KafkaRecord>& split(int64_t split_id) override {
      auto it = splits_.find(split_id);
      if (it == splits_.end()) it = splits_.emplace(split_id, DecodedTo(source_, &out_.split(split_id))).first;
      return it->second;
    }
    void release_split(int64_t split_id) override { out_.release_split(split_id); }

   private:
    KafkaRows* source_;
    SourceOutput<Row>& out_;
    DecodedTo all_;
    std::map<int64_t, DecodedTo> splits_;
  };

  bool decode(const KafkaRecord& r) {
    if (!decoder_.decode(r.value, &row_, &rejected_)) {
      rejected_.origin = origin_of(r);
      rejected_.bytes = r.value;
      if (!skip_bad_) {
        throw std::runtime_error("table " + table_ + ": " + rejected_.origin + ": " + rejected_.reason);
      }
      decoder_.unread(rejected_);
      return false;
    }
    if (timestamp_column_ >= 0) {
      row_.values.insert(row_.values.begin() + timestamp_column_, r.timestamp >= 0 ? Value(r.timestamp) : Value());
    }
    return true;
  }

  SourceFactory<KafkaRecord> records_factory_;
  std::unique_ptr<Source<KafkaRecord>> records_;
  detail::RowDecoder decoder_;
  const int timestamp_column_;  // of the record's timestamp ("metadata.timestamp"), or -1
  const bool skip_bad_;
  const std::string table_;
  Row row_;
  Rejected rejected_;
};

absl::StatusOr<DataStream<Row>> kafka_source(StreamEnvironment& env, const TableDef& t, const std::string& uid) {
  KafkaSource::Builder b = KafkaSource::builder();
  const std::string servers = option(t, "properties.bootstrap.servers");
  if (servers.empty()) return bad(t, "the kafka connector needs \"properties.bootstrap.servers\" = 'host:port,...'");
  b.bootstrap_servers(servers);
  const std::string topic = option(t, "topic"), pattern = option(t, "topic-pattern");
  if (topic.empty() == pattern.empty()) return bad(t, "the kafka connector needs topic = 'a;b' or \"topic-pattern\" (one)");
  if (!topic.empty()) b.topics(absl::StrSplit(topic, ';', absl::SkipEmpty()));
  if (!pattern.empty()) b.topic_pattern(pattern);
  if (const std::string g = option(t, "properties.group.id"); !g.empty()) b.group_id(g);
  const std::string mode = option(t, "scan.startup.mode", "earliest-offset");
  if (mode == "earliest-offset") {
    b.start_from(KafkaStartFrom::kEarliest);
  } else if (mode == "latest-offset") {
    b.start_from(KafkaStartFrom::kLatest);
  } else if (mode == "group-offsets") {
    b.start_from(KafkaStartFrom::kCommitted);
  } else if (mode == "timestamp") {
    int64_t ms = 0;
    if (!absl::SimpleAtoi(option(t, "scan.startup.timestamp-millis"), &ms)) {
      return bad(t, "\"scan.startup.mode\" = 'timestamp' needs \"scan.startup.timestamp-millis\" = 'N'");
    }
    b.start_from_timestamp(ms);
  } else {
    return bad(t, "\"scan.startup.mode\" '" + mode + "' is none of earliest-offset, latest-offset, group-offsets, timestamp");
  }
  const std::string bounded = option(t, "scan.bounded.mode", "unbounded");
  if (bounded != "unbounded" && bounded != "latest-offset") {
    return bad(t, "\"scan.bounded.mode\" '" + bounded + "' is none of unbounded, latest-offset");
  }
  b.bounded(bounded == "latest-offset");
  if (const std::string rate = option(t, "scan.records-per-second"); !rate.empty()) {
    int64_t n = 0;
    if (!absl::SimpleAtoi(rate, &n) || n < 0) return bad(t, "\"scan.records-per-second\" '" + rate + "' is no count");
    b.max_records_per_second(n);
  }
  for (const auto& [k, v] : t.options) {
    if (absl::StartsWith(k, "properties.") && k != "properties.bootstrap.servers" && k != "properties.group.id") {
      b.property(k.substr(11), v);
    }
  }
  absl::Status valid = b.options().validate();
  if (!valid.ok()) return bad(t, std::string(valid.message()));
  // The columns the records hold: every declared one but the record's
  // timestamp, which "metadata.timestamp" names (Flink's METADATA FROM
  // 'timestamp', which PostgreSQL's grammar has not).
  const std::vector<Column>& declared = t.declared.empty() ? t.columns : t.declared;
  std::vector<Column> held = declared;
  int timestamp_column = -1;
  if (const std::string c = option(t, "metadata.timestamp"); !c.empty()) {
    timestamp_column = column_index(declared, c);
    if (timestamp_column < 0 || declared[timestamp_column].type.kind != TypeKind::kTimestamp) {
      return bad(t, "\"metadata.timestamp\" '" + c + "' is no TIMESTAMP column");
    }
    held.erase(held.begin() + timestamp_column);
  }
  auto format = table_format(t, held);
  if (!format.ok()) return format.status();
  const std::string format_name = option(t, "format");
  const bool skip_bad = option(t, format_name + ".ignore-parse-errors", "false") == "true";
  std::optional<WatermarkStrategy<Row>> watermarks;
  if (t.watermark) {
    const int time = column_index(declared, t.watermark->column);
    watermarks = WatermarkStrategy<Row>::for_bounded_out_of_orderness(
        Duration(t.watermark->delay_ms), [time](const Row& r) { return r.is_null(time) ? int64_t{0} : r.int64(time); });
    if (const std::string idle = option(t, "scan.watermark.idle-timeout"); !idle.empty()) {
      absl::Duration d;
      if (!absl::ParseDuration(absl::StrReplaceAll(idle, {{" ", ""}}), &d) || d <= absl::ZeroDuration()) {
        return bad(t, "\"scan.watermark.idle-timeout\" '" + idle + "' is no duration ('10s', '500ms')");
      }
      watermarks = watermarks->with_idleness(Duration(absl::ToInt64Milliseconds(d)));
    }
  }
  SourceFactory<KafkaRecord> records = b.build();
  std::shared_ptr<const Format> f = *format;
  const std::string name = t.name;
  DataStream<Row> rows = env.from_source<Row>(
      [records, f, timestamp_column, skip_bad, name] {
        return std::make_unique<KafkaRows>(records, f, timestamp_column, skip_bad, name);
      },
      "kafka-" + t.name, watermarks);
  rows.uid(uid);
  if (t.declared.empty() || t.declared.size() == t.columns.size()) return rows;
  return read_columns(rows, declared, t.columns, uid);  // only the columns the query reads
}

absl::Status kafka_sink(const DataStream<Row>& rows, bool updating, const TableDef& t, const std::string& uid) {
  if (updating) {
    return bad(t, "the kafka connector takes inserts only, and the query's result is updating (a GROUP BY "
                  "without a window; write it to a table with a PRIMARY KEY of the postgres connector)");
  }
  KafkaSink::Builder b = KafkaSink::builder();
  const std::string servers = option(t, "properties.bootstrap.servers");
  if (servers.empty()) return bad(t, "the kafka connector needs \"properties.bootstrap.servers\" = 'host:port,...'");
  const std::string topic = option(t, "topic");
  if (topic.empty() || absl::StrContains(topic, ';')) return bad(t, "a kafka sink needs topic = 'one topic'");
  b.bootstrap_servers(servers).topic(topic);
  auto delivery = parse_kafka_delivery(option(t, "sink.delivery-guarantee", "exactly-once"));
  if (!delivery.ok()) return bad(t, "\"sink.delivery-guarantee\": " + std::string(delivery.status().message()));
  b.delivery(*delivery);
  b.transactional_id_prefix(option(t, "sink.transactional-id-prefix", "weir-" + t.name));
  for (const auto& [k, v] : t.options) {
    if (absl::StartsWith(k, "properties.") && k != "properties.bootstrap.servers") b.property(k.substr(11), v);
  }
  absl::Status valid = b.options().validate();
  if (!valid.ok()) return bad(t, std::string(valid.message()));
  auto format = table_format(t, t.columns);
  if (!format.ok()) return format.status();
  // A record's key: the PRIMARY KEY's values (CSV), so one key's rows go to
  // one partition; none without a primary key.
  std::vector<int> key;
  if (auto pk = t.options.find("primary-key"); pk != t.options.end()) {
    for (absl::string_view c : absl::StrSplit(pk->second, ',')) key.push_back(t.index_of(std::string_view(c.data(), c.size())));
  }
  std::shared_ptr<const Format> f = *format;
  DataStream<KafkaRecord> records = rows.map(
      [f, key](const Row& r) {
        KafkaRecord k;
        f->encode(r, &k.value);
        std::vector<std::string> parts;
        for (int i : key) parts.push_back(r.text(static_cast<size_t>(i)).value_or(""));
        k.key = absl::StrJoin(parts, ",");
        return k;
      },
      "kafka-record");
  records.uid(uid + "-record");
  records.sink_to(b.build(), "kafka-" + t.name).uid(uid);
  return absl::OkStatus();
}

// The rows as PostgreSQL reads text: TIMESTAMP as '2020-01-01 00:00:01.000'
// (UTC), INTERVAL as milliseconds, the rest as a format writes it.
PostgresRow postgres_row(const Row& r, const std::vector<TypeKind>& kinds) {
  PostgresRow p = PostgresRow::of(r);
  for (size_t i = 0; i < r.values.size(); ++i) {
    if (kinds[i] == TypeKind::kTimestamp && std::holds_alternative<int64_t>(r.values[i])) {
      p.values[i] = timestamp_text(std::get<int64_t>(r.values[i]));
    }
  }
  return p;
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
  const std::string conninfo = option(t, "conninfo");
  if (conninfo.empty()) return bad(t, "the postgres connector needs conninfo = 'host=... dbname=...' (libpq's)");
  const std::string table = option(t, "table-name", t.name);
  std::vector<std::string> columns;
  std::vector<TypeKind> kinds;
  for (const Column& c : t.columns) columns.push_back(c.name), kinds.push_back(c.type.kind);
  auto pk = t.options.find("primary-key");
  if (pk == t.options.end()) {
    if (updating) {
      return bad(t, "the query's result is updating (a GROUP BY without a window): declare the table's PRIMARY KEY, "
                    "and the postgres connector upserts by it");
    }
    // Inserts, exactly once: one prepared transaction per checkpoint.
    PostgresSink::Builder b = PostgresSink::builder();
    b.conninfo(conninfo).table(table).columns(columns).transaction_prefix(
        option(t, "sink.transaction-prefix", "weir-" + t.name));
    absl::Status valid = b.options().validate();
    if (!valid.ok()) return bad(t, std::string(valid.message()));
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
  if (!valid.ok()) return bad(t, std::string(valid.message()));
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

void add_system_connectors(TableConnectors* c) {
  c->sources["kafka"] = kafka_source;
  c->sinks["kafka"] = kafka_sink;
  c->sinks["postgres"] = postgres_sink;
}

}  // namespace weir::sql
