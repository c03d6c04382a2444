// Record formats: how the bytes of a connector's records (a line of a file,
// the value of a Kafka record) become typed rows and back. One layer for
// every connector: a connector moves bytes, a Format reads and writes them.
//
//   Schema orders{{"id", FieldType::kString, false}, {"customer", FieldType::kString},
//                 {"amount", FieldType::kInt64}};
//   OutputTag<Rejected> bad{"bad-orders"};
//   DataStream<Row> rows = decode_rows(kafka_records, json_format(orders), bad);
//   rows.get_side_output(bad).map(...)   // every record that could not be read, and why
//
// Formats:
//   csv_format   RFC 4180: fields split by a delimiter, quoted with '"' where
//                they hold the delimiter, a quote or a line break (a quote in
//                a quoted field is doubled). An unquoted empty field is NULL,
//                a quoted one ("") the empty string.
//   json_format  one JSON object per record; fields by name, in any order,
//                others ignored; a missing field or JSON null is NULL.
//   raw_format   the bytes as they are, one STRING column.
// A changelog format reads and writes the row kind too: CSV as a first column
// (+I, -U, +U, -D), JSON as the field named by `kind_field`.
//
// A record a format cannot read never stops the job and is never dropped
// silently: decode_rows emits it to the rejects side output with where it
// came from and why (the reason names the field). When nothing reads that
// side output the rejects are counted and logged (at most a line every 10 s).
#ifndef WEIR_FORMATS_H_
#define WEIR_FORMATS_H_

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "weir/serializer.h"
#include "weir/stream.h"

namespace weir {

// What a row of a changelog stream does to the row of its key.
enum class RowKind : uint8_t {
  kInsert,        // +I
  kUpdateBefore,  // -U: the row before an update (an upsert sink skips it)
  kUpdateAfter,   // +U: the row after an update
  kDelete,        // -D
};
std::string_view row_kind_name(RowKind kind);
std::optional<RowKind> parse_row_kind(std::string_view s);

// kTimestamp: milliseconds since the epoch (UTC) as int64_t, read from a
// number of milliseconds or from text as Flink writes it, "2026-01-01
// 00:00:05.934" (SQL) or "2026-01-01T00:00:05.934[Z]" (ISO-8601), with up
// to 9 fractional digits (those past milliseconds dropped).
//
// kJson: any JSON value (an array, an object, ...) held as a std::string of
// its JSON text: JSON reads and writes the value itself, CSV its text.
enum class FieldType : uint8_t { kString, kInt64, kDouble, kBool, kTimestamp, kJson };
std::string_view field_type_name(FieldType type);  // STRING, BIGINT, DOUBLE, BOOLEAN, TIMESTAMP(3), JSON

// "yyyy-MM-dd[ HH:mm:ss[.f...]]" (or with 'T' for ' ', and a trailing 'Z')
// as milliseconds since the epoch, UTC; nullopt when it is not one (or
// names no day, as 2026-02-30). Digits past milliseconds are dropped.
std::optional<int64_t> parse_timestamp_text(std::string_view s);

struct Field {
  std::string name;
  FieldType type = FieldType::kString;
  bool nullable = true;
};

class Schema {
 public:
  Schema() = default;
  Schema(std::initializer_list<Field> fields) : fields_(fields) {}
  explicit Schema(std::vector<Field> fields) : fields_(std::move(fields)) {}

  const std::vector<Field>& fields() const { return fields_; }
  size_t size() const { return fields_.size(); }
  const Field& field(size_t i) const { return fields_[i]; }
  // The column of `name`, or -1.
  int index_of(std::string_view name) const;
  // Refuses empty or repeated names.
  absl::Status validate() const;

 private:
  std::vector<Field> fields_;
};

// One value of a row: NULL, or of its column's type.
using Value = std::variant<std::monostate, int64_t, double, bool, std::string>;

template <>
struct Serializer<Value> {
  static void write(ByteWriter& out, const Value& v);
  static Value read(ByteReader& in);
  static std::string signature() { return "value"; }
};

struct Row {
  RowKind kind = RowKind::kInsert;
  std::vector<Value> values;

  bool is_null(size_t i) const { return std::holds_alternative<std::monostate>(values[i]); }
  // The value of column i; its type must be the column's (checked by the
  // format that made the row), and not NULL.
  int64_t int64(size_t i) const { return std::get<int64_t>(values[i]); }
  double float64(size_t i) const { return std::get<double>(values[i]); }
  bool boolean(size_t i) const { return std::get<bool>(values[i]); }
  const std::string& string(size_t i) const { return std::get<std::string>(values[i]); }
  // The value as text (NULL: nullopt), as a database's text format has it.
  std::optional<std::string> text(size_t i) const;

  auto weir_fields() { return std::tie(kind, values); }
  bool operator==(const Row&) const = default;
};

// A record a format could not read.
struct Rejected {
  std::string origin;  // where it was read: "file:line 12", "topic orders partition 3 offset 81"
  std::string reason;  // why, naming the field
  std::string bytes;   // the record as it was
  auto weir_fields() { return std::tie(origin, reason, bytes); }
};

class Format {
 public:
  virtual ~Format() = default;
  const Schema& schema() const { return schema_; }
  // Whether the schema and options make sense (ok) or why not.
  const absl::Status& status() const { return status_; }
  // Reads one record into `row` (its values replaced), or says why not.
  virtual absl::Status decode(std::string_view bytes, Row* row) const = 0;
  // Appends the encoding of `row` to `out`; the row must match the schema.
  virtual void encode(const Row& row, std::string* out) const = 0;
  std::string encode(const Row& row) const {
    std::string s;
    encode(row, &s);
    return s;
  }

 protected:
  explicit Format(Schema schema) : schema_(std::move(schema)), status_(schema_.validate()) {}

 private:
  Schema schema_;

 protected:
  absl::Status status_;
};

struct CsvOptions {
  char delimiter = ',';
  bool changelog = false;  // a first column with the row kind
};
struct JsonOptions {
  std::string kind_field;  // non-empty: a changelog, the row kind in this field ("+I", ...)
  // A field missing from a record is an error rather than NULL (Flink's
  // json.fail-on-missing-field).
  bool fail_on_missing_field = false;
  // How kTimestamp fields are written: epoch milliseconds (a number), or
  // text as Flink's json.timestamp-format.standard says: "SQL"
  // ("2026-01-01 00:00:05.934") or "ISO-8601" ("2026-01-01T00:00:05.934").
  // Either is read whatever this says.
  enum class TimestampText : uint8_t { kMillis, kSql, kIso8601 };
  TimestampText timestamp_text = TimestampText::kMillis;
};

// An invalid schema or option gives a format whose status() says why and
// whose every decode fails with that reason.
std::shared_ptr<const Format> csv_format(Schema schema, CsvOptions options = {});
std::shared_ptr<const Format> json_format(Schema schema, JsonOptions options = {});
std::shared_ptr<const Format> raw_format(std::string column = "value");

class RateLimitedLog;  // src/common/rate_limited_log.h

namespace detail {

// The untyped half of decode_rows: decodes, counts, logs unread rejects.
class RowDecoder {
 public:
  RowDecoder(std::shared_ptr<const Format> format, std::string name);
  ~RowDecoder();
  // true: `row` holds the record; false: `rejected` says why.
  bool decode(std::string_view bytes, Row* row, Rejected* rejected);
  // A reject nothing reads: counted and logged.
  void unread(const Rejected& rejected);

 private:
  std::shared_ptr<const Format> format_;
  std::string name_;
  int64_t unread_ = 0;
  std::unique_ptr<RateLimitedLog> log_;  // made at the first unread reject
};

// Decodes the records of a stream; `bytes_of` and `origin_of` are found by
// argument-dependent lookup (TextLine in weir/connectors.h, KafkaRecord in
// weir/kafka.h).
template <typename In>
class DecodeOperator final : public OneOutputOperator<Row>, public Input<In> {
 public:
  DecodeOperator(std::shared_ptr<const Format> format, std::string name, std::string tag)
      : decoder_(std::move(format), std::move(name)), tag_(std::move(tag)) {}
  void* input() override { return static_cast<Input<In>*>(this); }
  void process(const In& r) override {
    if (decoder_.decode(bytes_of(r), &row_, &rejected_)) {
      this->out_->collect(row_);
      return;
    }
    rejected_.origin = origin_of(r);
    rejected_.bytes.assign(bytes_of(r));
    if (OutputBase* o = this->side_output(tag_)) {
      static_cast<Output<Rejected>*>(o)->collect(rejected_);
    } else {
      decoder_.unread(rejected_);
    }
  }

 private:
  RowDecoder decoder_;
  const std::string tag_;
  Row row_;
  Rejected rejected_;
};

}  // namespace detail

// The rows `format` reads from the records of `in`; what it cannot read goes
// to the side output `rejects` of the returned stream.
template <typename In>
DataStream<Row> decode_rows(const DataStream<In>& in, std::shared_ptr<const Format> format,
                            const OutputTag<Rejected>& rejects, std::string name = "decode") {
  std::string tag = rejects.id;
  std::string label = name;
  return detail::GraphBuilder::add<Row>(in, std::move(name), [format, label, tag]() {
    return std::make_unique<detail::DecodeOperator<In>>(format, label, tag);
  });
}

// The rows as `format` writes them, one string per row.
DataStream<std::string> encode_rows(const DataStream<Row>& in, std::shared_ptr<const Format> format,
                                    std::string name = "encode");

}  // namespace weir

#endif  // WEIR_FORMATS_H_
