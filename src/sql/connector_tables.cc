// Kafka tables (sql/job_builder.h): 'kafka' (a source and a sink, through
// weir/kafka.h) and 'upsert-kafka' (the same over a changelog by the
// table's PRIMARY KEY), their options named as Flink's connectors name
// theirs; the 'postgres' tables are in postgres_tables.cc.
#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "sql/connector_tables.h"
#include "sql/expression.h"
#include "sql/job_builder.h"
#include "sql/keys.h"
#include "weir/kafka.h"

namespace weir::sql {

std::string table_option(const TableDef& t, const std::string& name, const std::string& fallback) {
  auto it = t.options.find(name);
  return it == t.options.end() ? fallback : it->second;
}

absl::Status table_error(const TableDef& t, const std::string& what) {
  return absl::InvalidArgumentError("table " + t.name + ": " + what);
}

namespace {

// The records' format: 'json' (fields by name), 'csv' (fields by position)
// or 'raw' (one VARCHAR column, the bytes).
absl::StatusOr<std::shared_ptr<const Format>> table_format(const TableDef& t, const std::vector<Column>& columns,
                                                           const std::string& option_name = "format") {
  const std::string format = table_option(t, option_name);
  TableDef shape = t;
  shape.columns = columns;
  if (format == "json") {
    // Its options as Flink names them: 'json.x', or for a key or a value
    // format 'key.json.x' / 'value.json.x'.
    const std::string prefix = option_name == "format" ? "json." : option_name.substr(0, option_name.find('.') + 1) + "json.";
    JsonOptions o;
    const std::string missing = absl::AsciiStrToLower(table_option(t, prefix + "fail-on-missing-field", "false"));
    if (missing != "true" && missing != "false") {
      return table_error(t, "'" + prefix + "fail-on-missing-field' is 'true' or 'false', not '" + missing + "'");
    }
    o.fail_on_missing_field = missing == "true";
    const std::string standard = absl::AsciiStrToUpper(table_option(t, prefix + "timestamp-format.standard", ""));
    if (standard == "SQL") {
      o.timestamp_text = JsonOptions::TimestampText::kSql;
    } else if (standard == "ISO-8601") {
      o.timestamp_text = JsonOptions::TimestampText::kIso8601;
    } else if (!standard.empty()) {
      return table_error(t, "'" + prefix + "timestamp-format.standard' is 'SQL' or 'ISO-8601', not '" + standard + "'");
    }
    return json_format(csv_schema(shape), o);
  }
  if (format == "csv") return csv_format(csv_schema(shape));
  if (format == "raw") {
    if (columns.size() != 1 || columns[0].type.kind != TypeKind::kVarchar) {
      return table_error(t, "format 'raw' needs one VARCHAR column");
    }
    return raw_format(columns[0].name);
  }
  const std::string quoted = option_name == "format" ? option_name : "\"" + option_name + "\"";
  return table_error(t, format.empty() ? "the " + t.connector() + " connector needs " + quoted + " = 'json', 'csv' or 'raw'"
                               : quoted + " '" + format + "' is not supported (json, csv and raw are)");
}

// The rows of a Kafka source: each record decoded where it is read, so its
// partition's watermark (a split of the source) sees the row's event time.
// A record the format cannot read fails the task naming topic, partition,
// offset and cause, unless the table says to skip such records (then they
// are counted and logged).
//
// Of an upsert-kafka table: a record with a value is its key's row now
// (+U), one without (a tombstone) its key's deletion (-D: the key's columns
// from the record's key, the others NULL); Normalize below makes a
// changelog of them.
struct UpsertKey {
  std::shared_ptr<const Format> format;  // of the key's bytes: the PRIMARY KEY's columns
  std::vector<int> columns;              // where they are in a row
  size_t width = 0;                      // of a row
};

class KafkaRows final : public Source<Row> {
 public:
  KafkaRows(SourceFactory<KafkaRecord> records, std::shared_ptr<const Format> format, int timestamp_column,
            bool skip_bad, std::string table, std::optional<UpsertKey> upsert = std::nullopt)
      : records_factory_(std::move(records)), decoder_(format, "table " + table), timestamp_column_(timestamp_column),
        skip_bad_(skip_bad), table_(std::move(table)), upsert_(std::move(upsert)) {
    if (upsert_) key_decoder_.emplace(upsert_->format, "table " + table_ + " (record keys)");
  }

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
    if (upsert_ && r.tombstone) {
      if (!key_decoder_->decode(r.key, &key_, &rejected_)) return reject(r, r.key, *key_decoder_);
      row_.kind = RowKind::kDelete;
      row_.values.assign(upsert_->width, Value{});
      for (size_t i = 0; i < upsert_->columns.size(); ++i) row_.values[upsert_->columns[i]] = std::move(key_.values[i]);
      return true;
    }
    if (!decoder_.decode(r.value, &row_, &rejected_)) return reject(r, r.value, decoder_);
    row_.kind = upsert_ ? RowKind::kUpdateAfter : RowKind::kInsert;
    if (timestamp_column_ >= 0) {
      row_.values.insert(row_.values.begin() + timestamp_column_, r.timestamp >= 0 ? Value(r.timestamp) : Value());
    }
    return true;
  }

  // A record the format cannot read (`bytes`, its value or key): fails the
  // task, or is skipped, counted and logged.
  bool reject(const KafkaRecord& r, const std::string& bytes, detail::RowDecoder& decoder) {
    rejected_.origin = origin_of(r);
    rejected_.bytes = bytes;
    if (!skip_bad_) throw UnrecoverableError("table " + table_ + ": " + rejected_.origin + ": " + rejected_.reason);
    decoder.unread(rejected_);
    return false;
  }

  SourceFactory<KafkaRecord> records_factory_;
  std::unique_ptr<Source<KafkaRecord>> records_;
  detail::RowDecoder decoder_;
  const int timestamp_column_;  // of the record's timestamp ("metadata.timestamp"), or -1
  const bool skip_bad_;
  const std::string table_;
  const std::optional<UpsertKey> upsert_;
  std::optional<detail::RowDecoder> key_decoder_;
  Row row_, key_;
  Rejected rejected_;
};

// An upsert table's records as a changelog, per key (Flink's
// ChangelogNormalize): the key's latest row in value state; a new row
// gives +I (none before) or -U of the old and +U of the new (an equal one:
// nothing), a deletion -D of the old (none before: nothing).
class Normalize final : public KeyedProcessFunction<std::string, Row, Row> {
 public:
  absl::Status open(KeyedRuntimeContext<std::string>& ctx) override {
    latest_ = &ctx.get_state(ValueStateDescriptor<Row>{"latest"});
    return absl::OkStatus();
  }
  void process_element(const Row& row, Context&, Collector<Row>& out) override {
    std::optional<Row> old = latest_->value();
    if (row.kind == RowKind::kDelete) {
      if (!old) return;
      old->kind = RowKind::kDelete;
      out.collect(*std::move(old));
      latest_->clear();
      return;
    }
    if (old && old->values == row.values) return;
    Row now = row;
    if (old) {
      old->kind = RowKind::kUpdateBefore;
      out.collect(*std::move(old));
      now.kind = RowKind::kUpdateAfter;
    } else {
      now.kind = RowKind::kInsert;
    }
    out.collect(now);
    now.kind = RowKind::kInsert;
    latest_->update(std::move(now));
  }

 private:
  ValueState<Row>* latest_ = nullptr;
};

// The PRIMARY KEY's columns of `t` (an upsert table needs one).
absl::StatusOr<std::vector<int>> primary_key(const TableDef& t, const std::vector<Column>& columns) {
  auto pk = t.options.find("primary-key");
  if (pk == t.options.end()) return table_error(t, "the " + t.connector() + " connector needs a PRIMARY KEY");
  std::vector<int> key;
  for (absl::string_view c : absl::StrSplit(pk->second, ',')) key.push_back(column_index(columns, std::string_view(c.data(), c.size())));
  return key;
}

// The format of the key's bytes of an upsert table: "key.format" over its
// PRIMARY KEY's columns.
absl::StatusOr<std::shared_ptr<const Format>> key_format(const TableDef& t, const std::vector<Column>& columns,
                                                         const std::vector<int>& key) {
  TableDef keys = t;
  keys.options["format"] = table_option(t, "key.format");
  if (keys.options["format"].empty()) return table_error(t, "the upsert-kafka connector needs \"key.format\" = 'json', 'csv' or 'raw'");
  std::vector<Column> key_columns;
  for (int i : key) key_columns.push_back(columns[static_cast<size_t>(i)]);
  return table_format(keys, key_columns);
}

// The rows of a kafka table, or of an upsert-kafka table (`upsert`: a
// changelog by its primary key).
absl::StatusOr<DataStream<Row>> kafka_rows(StreamEnvironment& env, const TableDef& t, const std::string& uid,
                                           bool upsert) {
  KafkaSource::Builder b = KafkaSource::builder();
  const std::string servers = table_option(t, "properties.bootstrap.servers");
  if (servers.empty()) return table_error(t, "the kafka connector needs \"properties.bootstrap.servers\" = 'host:port,...'");
  b.bootstrap_servers(servers);
  const std::string topic = table_option(t, "topic"), pattern = table_option(t, "topic-pattern");
  if (topic.empty() == pattern.empty()) return table_error(t, "the kafka connector needs topic = 'a;b' or \"topic-pattern\" (one)");
  if (!topic.empty()) b.topics(absl::StrSplit(topic, ';', absl::SkipEmpty()));
  if (!pattern.empty()) b.topic_pattern(pattern);
  if (const std::string g = table_option(t, "properties.group.id"); !g.empty()) b.group_id(g);
  const std::string mode = table_option(t, "scan.startup.mode", "earliest-offset");
  if (mode == "earliest-offset") {
    b.start_from(KafkaStartFrom::kEarliest);
  } else if (mode == "latest-offset") {
    b.start_from(KafkaStartFrom::kLatest);
  } else if (mode == "group-offsets") {
    b.start_from(KafkaStartFrom::kCommitted);
  } else if (mode == "timestamp") {
    int64_t ms = 0;
    if (!absl::SimpleAtoi(table_option(t, "scan.startup.timestamp-millis"), &ms)) {
      return table_error(t, "\"scan.startup.mode\" = 'timestamp' needs \"scan.startup.timestamp-millis\" = 'N'");
    }
    b.start_from_timestamp(ms);
  } else {
    return table_error(t, "\"scan.startup.mode\" '" + mode + "' is none of earliest-offset, latest-offset, group-offsets, timestamp");
  }
  const std::string bounded = table_option(t, "scan.bounded.mode", "unbounded");
  if (bounded != "unbounded" && bounded != "latest-offset") {
    return table_error(t, "\"scan.bounded.mode\" '" + bounded + "' is none of unbounded, latest-offset");
  }
  b.bounded(bounded == "latest-offset");
  if (const std::string rate = table_option(t, "scan.records-per-second"); !rate.empty()) {
    int64_t n = 0;
    if (!absl::SimpleAtoi(rate, &n) || n < 0) return table_error(t, "\"scan.records-per-second\" '" + rate + "' is no count");
    b.max_records_per_second(n);
  }
  for (const auto& [k, v] : t.options) {
    if (absl::StartsWith(k, "properties.") && k != "properties.bootstrap.servers" && k != "properties.group.id") {
      b.property(k.substr(11), v);
    }
  }
  absl::Status valid = b.options().validate();
  if (!valid.ok()) return table_error(t, std::string(valid.message()));
  // The columns the records hold: every declared one but the record's
  // timestamp, which "metadata.timestamp" names (Flink's METADATA FROM
  // 'timestamp', which PostgreSQL's grammar has not).
  const std::vector<Column>& declared = t.declared.empty() ? t.columns : t.declared;
  if (upsert && (t.watermark || t.options.contains("metadata.timestamp"))) {
    return table_error(t, "an upsert-kafka table has no event time yet (neither a watermark nor \"metadata.timestamp\")");
  }
  std::vector<Column> held = declared;
  int timestamp_column = -1;
  if (const std::string c = table_option(t, "metadata.timestamp"); !c.empty()) {
    timestamp_column = column_index(declared, c);
    if (timestamp_column < 0 || declared[timestamp_column].type.kind != TypeKind::kTimestamp) {
      return table_error(t, "\"metadata.timestamp\" '" + c + "' is no TIMESTAMP column");
    }
    held.erase(held.begin() + timestamp_column);
  }
  const std::string format_option = upsert ? "value.format" : "format";
  auto format = table_format(t, held, format_option);
  if (!format.ok()) return format.status();
  const std::string format_name = table_option(t, format_option);
  const bool skip_bad = table_option(t, format_name + ".ignore-parse-errors", "false") == "true";
  std::optional<UpsertKey> key;
  if (upsert) {
    auto pk = primary_key(t, declared);
    if (!pk.ok()) return pk.status();
    auto kf = key_format(t, declared, *pk);
    if (!kf.ok()) return kf.status();
    key = UpsertKey{*kf, *pk, declared.size()};
  }
  std::optional<WatermarkStrategy<Row>> watermarks;
  if (t.watermark) {
    watermarks = WatermarkStrategy<Row>::for_bounded_out_of_orderness(Duration(t.watermark->delay_ms),
                                                                      event_time_of(t, declared));
    if (const std::string idle = table_option(t, "scan.watermark.idle-timeout"); !idle.empty()) {
      absl::Duration d;
      if (!absl::ParseDuration(absl::StrReplaceAll(idle, {{" ", ""}}), &d) || d <= absl::ZeroDuration()) {
        return table_error(t, "\"scan.watermark.idle-timeout\" '" + idle + "' is no duration ('10s', '500ms')");
      }
      watermarks->with_idleness(Duration(absl::ToInt64Milliseconds(d)));
    }
  }
  SourceFactory<KafkaRecord> records = b.build();
  std::shared_ptr<const Format> f = *format;
  const std::string name = t.name;
  DataStream<Row> rows = env.from_source<Row>(
      [records, f, timestamp_column, skip_bad, name, key] {
        return std::make_unique<KafkaRows>(records, f, timestamp_column, skip_bad, name, key);
      },
      "kafka-" + t.name, watermarks);
  rows.uid(uid);
  if (upsert) {
    std::vector<Expr> columns;
    for (int i : key->columns) columns.push_back(Expr::column_ref(i, declared[static_cast<size_t>(i)].type));
    std::vector<std::string> names;
    for (const Column& c : declared) names.push_back(c.name);
    auto encoder = std::make_shared<const KeyEncoder>(columns, names, "PRIMARY KEY");
    rows = rows.key_by([encoder](const Row& r) { return encoder->encode(r); })
               .process<Row>([] { return std::make_unique<Normalize>(); }, "normalize");
    rows.uid(uid + "-normalize");
  }
  if (t.declared.empty() || t.declared.size() == t.columns.size()) return rows;
  return read_columns(rows, declared, t.columns, uid);  // only the columns the query reads
}

absl::StatusOr<DataStream<Row>> kafka_source(StreamEnvironment& env, const TableDef& t, const std::string& uid) {
  return kafka_rows(env, t, uid, false);
}
absl::StatusOr<DataStream<Row>> upsert_kafka_source(StreamEnvironment& env, const TableDef& t, const std::string& uid) {
  return kafka_rows(env, t, uid, true);
}

// The sink of a kafka or upsert-kafka table, as its options say.
absl::StatusOr<KafkaSink::Builder> kafka_sink_builder(const TableDef& t) {
  KafkaSink::Builder b = KafkaSink::builder();
  const std::string servers = table_option(t, "properties.bootstrap.servers");
  if (servers.empty()) return table_error(t, "the kafka connector needs \"properties.bootstrap.servers\" = 'host:port,...'");
  const std::string topic = table_option(t, "topic");
  if (topic.empty() || absl::StrContains(topic, ';')) return table_error(t, "a kafka sink needs topic = 'one topic'");
  b.bootstrap_servers(servers).topic(topic);
  auto delivery = parse_kafka_delivery(table_option(t, "sink.delivery-guarantee", "exactly-once"));
  if (!delivery.ok()) return table_error(t, "\"sink.delivery-guarantee\": " + std::string(delivery.status().message()));
  b.delivery(*delivery);
  b.transactional_id_prefix(table_option(t, "sink.transactional-id-prefix", "weir-" + t.name));
  for (const auto& [k, v] : t.options) {
    if (absl::StartsWith(k, "properties.") && k != "properties.bootstrap.servers") b.property(k.substr(11), v);
  }
  absl::Status valid = b.options().validate();
  if (!valid.ok()) return table_error(t, std::string(valid.message()));
  return b;
}

absl::Status kafka_sink(const DataStream<Row>& rows, bool updating, const TableDef& t, const std::string& uid) {
  if (updating) {
    return table_error(t, "the kafka connector takes inserts only, and the query's result is updating (a GROUP BY "
                  "without a window; write it to an upsert-kafka table, or a postgres table with a PRIMARY KEY)");
  }
  auto b = kafka_sink_builder(t);
  if (!b.ok()) return b.status();
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
  records.sink_to(b->build(), "kafka-" + t.name).uid(uid);
  return absl::OkStatus();
}

// An upsert table's records, per key in order of its changes: +I and +U
// the row under its key, -D and -U a tombstone. (A -U is the key's row
// leaving: a +U may follow it, or not, when a condition above the
// aggregation dropped the new row, as HAVING does.)
class UpsertRecords final : public KeyedProcessFunction<std::string, Row, KafkaRecord> {
 public:
  UpsertRecords(std::shared_ptr<const Format> key, std::shared_ptr<const Format> value, std::vector<int> key_columns)
      : key_(std::move(key)), value_(std::move(value)), key_columns_(std::move(key_columns)) {}
  void process_element(const Row& row, Context&, Collector<KafkaRecord>& out) override {
    Row k;
    for (int i : key_columns_) k.values.push_back(row.values[static_cast<size_t>(i)]);
    KafkaRecord r;
    key_->encode(k, &r.key);
    r.tombstone = row.kind == RowKind::kDelete || row.kind == RowKind::kUpdateBefore;
    if (!r.tombstone) value_->encode(row, &r.value);
    out.collect(r);
  }

 private:
  const std::shared_ptr<const Format> key_, value_;
  const std::vector<int> key_columns_;
};

absl::Status upsert_kafka_sink(const DataStream<Row>& rows, bool, const TableDef& t, const std::string& uid) {
  auto b = kafka_sink_builder(t);
  if (!b.ok()) return b.status();
  auto value = table_format(t, t.columns, "value.format");
  if (!value.ok()) return value.status();
  auto pk = primary_key(t, t.columns);
  if (!pk.ok()) return pk.status();
  auto key = key_format(t, t.columns, *pk);
  if (!key.ok()) return key.status();
  std::vector<Expr> columns;
  std::vector<std::string> names;
  for (int i : *pk) columns.push_back(Expr::column_ref(i, t.columns[static_cast<size_t>(i)].type));
  for (const Column& c : t.columns) names.push_back(c.name);
  auto encoder = std::make_shared<const KeyEncoder>(columns, names, "PRIMARY KEY");
  std::shared_ptr<const Format> kf = *key, vf = *value;
  const std::vector<int> key_columns = *pk;
  DataStream<KafkaRecord> records =
      rows.key_by([encoder](const Row& r) { return encoder->encode(r); })
          .process<KafkaRecord>([kf, vf, key_columns] { return std::make_unique<UpsertRecords>(kf, vf, key_columns); },
                                "upsert-records");
  records.uid(uid + "-record");
  records.sink_to(b->build(), "kafka-" + t.name).uid(uid);
  return absl::OkStatus();
}

}  // namespace

void add_system_connectors(TableConnectors* c) {
  add_postgres_tables(c);
  c->sources["kafka"] = kafka_source;
  c->sinks["kafka"] = kafka_sink;
  c->sources["upsert-kafka"] = upsert_kafka_source;
  c->sinks["upsert-kafka"] = upsert_kafka_sink;
}

}  // namespace weir::sql
