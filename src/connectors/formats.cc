// CSV, JSON and raw formats (weir/formats.h).
#include "weir/formats.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <set>

#include "common/rate_limited_log.h"
#include "absl/time/civil_time.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "spdlog/spdlog.h"

namespace weir {

std::string_view row_kind_name(RowKind kind) {
  switch (kind) {
    case RowKind::kInsert: return "+I";
    case RowKind::kUpdateBefore: return "-U";
    case RowKind::kUpdateAfter: return "+U";
    case RowKind::kDelete: return "-D";
  }
  return "?";
}

std::optional<RowKind> parse_row_kind(std::string_view s) {
  if (s == "+I") return RowKind::kInsert;
  if (s == "-U") return RowKind::kUpdateBefore;
  if (s == "+U") return RowKind::kUpdateAfter;
  if (s == "-D") return RowKind::kDelete;
  return std::nullopt;
}

std::string_view field_type_name(FieldType type) {
  switch (type) {
    case FieldType::kString: return "STRING";
    case FieldType::kInt64: return "BIGINT";
    case FieldType::kDouble: return "DOUBLE";
    case FieldType::kBool: return "BOOLEAN";
    case FieldType::kTimestamp: return "TIMESTAMP(3)";
    case FieldType::kJson: return "JSON";
  }
  return "?";
}

int Schema::index_of(std::string_view name) const {
  for (size_t i = 0; i < fields_.size(); ++i) {
    if (fields_[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

absl::Status Schema::validate() const {
  if (fields_.empty()) return absl::InvalidArgumentError("schema: no fields");
  std::set<std::string_view> seen;
  for (const Field& f : fields_) {
    if (f.name.empty()) return absl::InvalidArgumentError("schema: a field without a name");
    if (!seen.insert(f.name).second) return absl::InvalidArgumentError("schema: field " + f.name + " twice");
  }
  return absl::OkStatus();
}

void Serializer<Value>::write(ByteWriter& out, const Value& v) {
  out.put_fixed<uint8_t>(static_cast<uint8_t>(v.index()));
  switch (v.index()) {
    case 1: out.put_fixed<int64_t>(std::get<int64_t>(v)); break;
    case 2: out.put_fixed<double>(std::get<double>(v)); break;
    case 3: out.put_fixed<uint8_t>(std::get<bool>(v) ? 1 : 0); break;
    case 4: Serializer<std::string>::write(out, std::get<std::string>(v)); break;
    default: break;
  }
}

Value Serializer<Value>::read(ByteReader& in) {
  switch (in.get_fixed<uint8_t>()) {
    case 0: return std::monostate{};
    case 1: return in.get_fixed<int64_t>();
    case 2: return in.get_fixed<double>();
    case 3: return in.get_fixed<uint8_t>() != 0;
    case 4: return Serializer<std::string>::read(in);
    default:
      in.fail();
      return std::monostate{};
  }
}

namespace {

void append_int(std::string* out, int64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, r.ptr);
}

void append_double(std::string* out, double v) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  out->append(buf, r.ptr);
}

std::string shown(std::string_view s) {
  constexpr size_t kMax = 40;
  return "'" + std::string(s.substr(0, kMax)) + (s.size() > kMax ? "...'" : "'");
}

absl::Status field_error(const Field& f, const std::string& what) {
  return absl::InvalidArgumentError("field " + f.name + ": " + what);
}

}  // namespace

std::optional<int64_t> parse_timestamp_text(std::string_view s) {
  if (!s.empty() && s.back() == 'Z') s.remove_suffix(1);
  auto digits = [&](size_t at, size_t n, int* out) {
    if (at + n > s.size()) return false;
    int v = 0;
    for (size_t i = at; i < at + n; ++i) {
      if (s[i] < '0' || s[i] > '9') return false;
      v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
  };
  int y, mo, d, h = 0, mi = 0, sec = 0;
  if (!digits(0, 4, &y) || s.size() < 10 || s[4] != '-' || !digits(5, 2, &mo) || s[7] != '-' || !digits(8, 2, &d)) {
    return std::nullopt;
  }
  int64_t ms = 0;
  if (s.size() > 10) {
    if ((s[10] != ' ' && s[10] != 'T') || !digits(11, 2, &h) || s.size() < 19 || s[13] != ':' || !digits(14, 2, &mi) ||
        s[16] != ':' || !digits(17, 2, &sec)) {
      return std::nullopt;
    }
    if (s.size() > 19) {
      if (s[19] != '.' || s.size() == 20 || s.size() > 29) return std::nullopt;
      int scale = 100;
      for (size_t i = 20; i < s.size(); ++i) {
        if (s[i] < '0' || s[i] > '9') return std::nullopt;
        ms += (s[i] - '0') * scale;
        scale /= 10;
      }
    }
  }
  const absl::CivilSecond civil(y, mo, d, h, mi, sec);
  if (civil.year() != y || civil.month() != mo || civil.day() != d || civil.hour() != h || civil.minute() != mi ||
      civil.second() != sec) {
    return std::nullopt;  // 2026-02-30 and the like
  }
  return absl::ToUnixMillis(absl::FromCivil(civil, absl::UTCTimeZone())) + ms;
}

namespace {

// A text value into column `f`'s type.
absl::Status parse_text(const Field& f, std::string_view s, Value* v) {
  switch (f.type) {
    case FieldType::kTimestamp: {
      int64_t n = 0;
      auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
      if (ec == std::errc() && end == s.data() + s.size() && !s.empty()) {
        *v = n;
        return absl::OkStatus();
      }
      auto ms = parse_timestamp_text(s);
      if (!ms) {
        return field_error(f, shown(s) + " is not a TIMESTAMP(3) ('yyyy-MM-dd HH:mm:ss.SSS', ISO-8601 "
                                         "'yyyy-MM-ddTHH:mm:ss.SSS', or epoch milliseconds)");
      }
      *v = *ms;
      return absl::OkStatus();
    }
    case FieldType::kString:
    case FieldType::kJson:
      *v = std::string(s);
      return absl::OkStatus();
    case FieldType::kInt64: {
      std::string_view t = s;
      if (!t.empty() && t[0] == '+') t.remove_prefix(1);
      int64_t n = 0;
      auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), n);
      if (ec == std::errc::result_out_of_range) return field_error(f, shown(s) + " is out of range for BIGINT");
      if (ec != std::errc() || end != t.data() + t.size() || t.empty()) {
        return field_error(f, shown(s) + " is not a BIGINT");
      }
      *v = n;
      return absl::OkStatus();
    }
    case FieldType::kDouble: {
      std::string_view t = s;
      if (!t.empty() && t[0] == '+') t.remove_prefix(1);
      double d = 0;
      auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), d);
      if (ec != std::errc() || end != t.data() + t.size() || t.empty()) {
        return field_error(f, shown(s) + " is not a DOUBLE");
      }
      *v = d;
      return absl::OkStatus();
    }
    case FieldType::kBool:
      if (s == "true" || s == "TRUE" || s == "True") {
        *v = true;
      } else if (s == "false" || s == "FALSE" || s == "False") {
        *v = false;
      } else {
        return field_error(f, shown(s) + " is not a BOOLEAN (true or false)");
      }
      return absl::OkStatus();
  }
  return field_error(f, "unknown type");
}

absl::Status null_value(const Field& f, Value* v) {
  if (!f.nullable) return field_error(f, "NULL in a NOT NULL column");
  *v = std::monostate{};
  return absl::OkStatus();
}

std::string_view trim_line_end(std::string_view s) {
  if (!s.empty() && s.back() == '\n') s.remove_suffix(1);
  if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
  return s;
}

class CsvFormat final : public Format {
 public:
  CsvFormat(Schema schema, CsvOptions o) : Format(std::move(schema)), o_(o) {
    if (status_.ok() && (o_.delimiter == '"' || o_.delimiter == '\n' || o_.delimiter == '\r')) {
      status_ = absl::InvalidArgumentError("csv format: the delimiter cannot be a quote or a line break");
    }
  }

  absl::Status decode(std::string_view bytes, Row* row) const override {
    if (!status_.ok()) return status_;
    bytes = trim_line_end(bytes);
    const size_t first = o_.changelog ? 1 : 0;
    const size_t want = schema().size() + first;
    row->values.resize(schema().size());
    row->kind = RowKind::kInsert;
    size_t column = 0;
    size_t i = 0;
    std::string quoted;
    for (;;) {
      // One field from position i.
      bool was_quoted = false;
      std::string_view text;
      if (i < bytes.size() && bytes[i] == '"') {
        was_quoted = true;
        quoted.clear();
        ++i;
        for (;;) {
          if (i >= bytes.size()) return absl::InvalidArgumentError(where(column) + "a quote is not closed");
          if (bytes[i] == '"') {
            if (i + 1 < bytes.size() && bytes[i + 1] == '"') {
              quoted += '"';
              i += 2;
              continue;
            }
            ++i;
            break;
          }
          quoted += bytes[i++];
        }
        if (i < bytes.size() && bytes[i] != o_.delimiter) {
          return absl::InvalidArgumentError(where(column) + "text after a closing quote");
        }
        text = quoted;
      } else {
        size_t end = bytes.find(o_.delimiter, i);
        if (end == std::string_view::npos) end = bytes.size();
        text = bytes.substr(i, end - i);
        if (text.find('"') != std::string_view::npos) {
          return absl::InvalidArgumentError(where(column) + "a quote inside an unquoted field");
        }
        i = end;
      }
      if (column < want) {
        absl::Status s = take(column, first, text, was_quoted, row);
        if (!s.ok()) return s;
      }
      ++column;
      if (i >= bytes.size()) break;
      ++i;  // the delimiter
    }
    if (column != want) {
      return absl::InvalidArgumentError("expected " + std::to_string(want) + " fields, found " +
                                        std::to_string(column));
    }
    return absl::OkStatus();
  }

  void encode(const Row& row, std::string* out) const override {
    if (o_.changelog) {
      out->append(row_kind_name(row.kind));
      out->push_back(o_.delimiter);
    }
    for (size_t i = 0; i < row.values.size(); ++i) {
      if (i > 0) out->push_back(o_.delimiter);
      const Value& v = row.values[i];
      switch (v.index()) {
        case 1: append_int(out, std::get<int64_t>(v)); break;
        case 2: append_double(out, std::get<double>(v)); break;
        case 3: out->append(std::get<bool>(v) ? "true" : "false"); break;
        case 4: append_string(out, std::get<std::string>(v)); break;
        default: break;  // NULL: empty and unquoted
      }
    }
  }

 private:
  std::string where(size_t column) const {
    const size_t first = o_.changelog ? 1 : 0;
    if (column < first) return "row kind: ";
    if (column - first < schema().size()) return "field " + schema().field(column - first).name + ": ";
    return "field " + std::to_string(column + 1) + ": ";
  }

  absl::Status take(size_t column, size_t first, std::string_view text, bool was_quoted, Row* row) const {
    if (column < first) {
      auto kind = parse_row_kind(text);
      if (!kind) return absl::InvalidArgumentError("row kind: " + shown(text) + " is not one of +I, -U, +U, -D");
      row->kind = *kind;
      return absl::OkStatus();
    }
    const Field& f = schema().field(column - first);
    Value* v = &row->values[column - first];
    if (text.empty() && !was_quoted) return null_value(f, v);
    return parse_text(f, text, v);
  }

  void append_string(std::string* out, const std::string& s) const {
    bool quote = s.empty() || s.find_first_of(std::string{o_.delimiter, '"', '\n', '\r'}) != std::string::npos;
    if (!quote) {
      out->append(s);
      return;
    }
    out->push_back('"');
    for (char c : s) {
      if (c == '"') out->push_back('"');
      out->push_back(c);
    }
    out->push_back('"');
  }

  const CsvOptions o_;
};

const char* json_kind(const nlohmann::json& j) {
  if (j.is_string()) return "a string";
  if (j.is_boolean()) return "a boolean";
  if (j.is_number_integer() || j.is_number_unsigned()) return "an integer";
  if (j.is_number()) return "a number";
  if (j.is_object()) return "an object";
  if (j.is_array()) return "an array";
  return "null";
}

void append_json_string(std::string* out, std::string_view s) {
  out->push_back('"');
  for (char c : s) {
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(c));
          out->append(buf);
        } else {
          out->push_back(c);
        }
    }
  }
  out->push_back('"');
}

class JsonFormat final : public Format {
 public:
  JsonFormat(Schema schema, JsonOptions o) : Format(std::move(schema)), o_(std::move(o)) {
    if (status_.ok() && !o_.kind_field.empty() && this->schema().index_of(o_.kind_field) >= 0) {
      status_ = absl::InvalidArgumentError("json format: the row kind field " + o_.kind_field +
                                           " is also a column of the schema");
    }
  }

  absl::Status decode(std::string_view bytes, Row* row) const override {
    if (!status_.ok()) return status_;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(bytes);
    } catch (const nlohmann::json::exception& e) {
      std::string msg = e.what();
      size_t cut = msg.find("] ");
      return absl::InvalidArgumentError("not JSON: " + (cut == std::string::npos ? msg : msg.substr(cut + 2)));
    }
    if (!j.is_object()) return absl::InvalidArgumentError(std::string("not a JSON object but ") + json_kind(j));
    row->kind = RowKind::kInsert;
    if (!o_.kind_field.empty()) {
      auto it = j.find(o_.kind_field);
      if (it == j.end() || !it->is_string()) {
        return absl::InvalidArgumentError("field " + o_.kind_field + ": no row kind (+I, -U, +U, -D)");
      }
      auto kind = parse_row_kind(it->get_ref<const std::string&>());
      if (!kind) {
        return absl::InvalidArgumentError("field " + o_.kind_field + ": " +
                                          shown(it->get_ref<const std::string&>()) +
                                          " is not one of +I, -U, +U, -D");
      }
      row->kind = *kind;
    }
    row->values.resize(schema().size());
    for (size_t i = 0; i < schema().size(); ++i) {
      const Field& f = schema().field(i);
      Value* v = &row->values[i];
      auto it = j.find(f.name);
      if (it == j.end() && o_.fail_on_missing_field) return field_error(f, "missing (json.fail-on-missing-field)");
      if (it == j.end() || it->is_null()) {
        absl::Status s = null_value(f, v);
        if (!s.ok()) return it == j.end() ? field_error(f, "missing in a NOT NULL column") : s;
        continue;
      }
      const nlohmann::json& x = *it;
      switch (f.type) {
        case FieldType::kString:
          if (!x.is_string()) return field_error(f, std::string("expected STRING, got ") + json_kind(x));
          *v = x.get<std::string>();
          break;
        case FieldType::kInt64:
          if (x.is_number_unsigned()) {
            uint64_t u = x.get<uint64_t>();
            if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
              return field_error(f, std::to_string(u) + " is out of range for BIGINT");
            }
            *v = static_cast<int64_t>(u);
          } else if (x.is_number_integer()) {
            *v = x.get<int64_t>();
          } else {
            return field_error(f, std::string("expected BIGINT, got ") + json_kind(x));
          }
          break;
        case FieldType::kDouble:
          if (!x.is_number()) return field_error(f, std::string("expected DOUBLE, got ") + json_kind(x));
          *v = x.get<double>();
          if (!std::isfinite(std::get<double>(*v))) return field_error(f, "out of range for DOUBLE");
          break;
        case FieldType::kBool:
          if (!x.is_boolean()) return field_error(f, std::string("expected BOOLEAN, got ") + json_kind(x));
          *v = x.get<bool>();
          break;
        case FieldType::kTimestamp:
          if (x.is_number_integer()) {
            *v = x.get<int64_t>();
          } else if (x.is_string()) {
            absl::Status s = parse_text(f, x.get_ref<const std::string&>(), v);
            if (!s.ok()) return s;
          } else {
            return field_error(f, std::string("expected TIMESTAMP(3) (text or epoch milliseconds), got ") + json_kind(x));
          }
          break;
        case FieldType::kJson:
          *v = x.dump();
          break;
      }
    }
    return absl::OkStatus();
  }

  void encode(const Row& row, std::string* out) const override {
    out->push_back('{');
    bool first = true;
    if (!o_.kind_field.empty()) {
      append_json_string(out, o_.kind_field);
      out->push_back(':');
      append_json_string(out, row_kind_name(row.kind));
      first = false;
    }
    for (size_t i = 0; i < row.values.size() && i < schema().size(); ++i) {
      if (!first) out->push_back(',');
      first = false;
      append_json_string(out, schema().field(i).name);
      out->push_back(':');
      const Value& v = row.values[i];
      if (schema().field(i).type == FieldType::kTimestamp && v.index() == 1 &&
          o_.timestamp_text != JsonOptions::TimestampText::kMillis) {
        const absl::Time t = absl::FromUnixMillis(std::get<int64_t>(v));
        append_json_string(out, absl::FormatTime(o_.timestamp_text == JsonOptions::TimestampText::kSql
                                                     ? "%Y-%m-%d %H:%M:%E3S"
                                                     : "%Y-%m-%dT%H:%M:%E3S",
                                                 t, absl::UTCTimeZone()));
        continue;
      }
      if (schema().field(i).type == FieldType::kJson && v.index() == 4) {
        out->append(std::get<std::string>(v));  // JSON text already
        continue;
      }
      switch (v.index()) {
        case 1: append_int(out, std::get<int64_t>(v)); break;
        case 2:
          if (std::isfinite(std::get<double>(v))) {
            append_double(out, std::get<double>(v));
          } else {
            out->append("null");  // JSON has no NaN or infinity
          }
          break;
        case 3: out->append(std::get<bool>(v) ? "true" : "false"); break;
        case 4: append_json_string(out, std::get<std::string>(v)); break;
        default: out->append("null"); break;
      }
    }
    out->push_back('}');
  }

 private:
  const JsonOptions o_;
};

class RawFormat final : public Format {
 public:
  explicit RawFormat(std::string column) : Format(Schema{{std::move(column), FieldType::kString, false}}) {}
  absl::Status decode(std::string_view bytes, Row* row) const override {
    if (!status_.ok()) return status_;
    row->kind = RowKind::kInsert;
    row->values.resize(1);
    row->values[0] = std::string(bytes);
    return absl::OkStatus();
  }
  void encode(const Row& row, std::string* out) const override {
    if (!row.values.empty() && row.values[0].index() == 4) out->append(std::get<std::string>(row.values[0]));
  }
};

}  // namespace

std::optional<std::string> Row::text(size_t i) const {
  const Value& v = values[i];
  std::string s;
  switch (v.index()) {
    case 1: append_int(&s, std::get<int64_t>(v)); return s;
    case 2: append_double(&s, std::get<double>(v)); return s;
    case 3: return std::string(std::get<bool>(v) ? "true" : "false");
    case 4: return std::get<std::string>(v);
    default: return std::nullopt;
  }
}

std::shared_ptr<const Format> csv_format(Schema schema, CsvOptions options) {
  return std::make_shared<CsvFormat>(std::move(schema), options);
}
std::shared_ptr<const Format> json_format(Schema schema, JsonOptions options) {
  return std::make_shared<JsonFormat>(std::move(schema), std::move(options));
}
std::shared_ptr<const Format> raw_format(std::string column) {
  return std::make_shared<RawFormat>(std::move(column));
}

namespace detail {

RowDecoder::RowDecoder(std::shared_ptr<const Format> format, std::string name)
    : format_(std::move(format)), name_(std::move(name)) {}

RowDecoder::~RowDecoder() {
  if (unread_ > 0) {
    spdlog::warn("{}: {} records could not be read and nothing read their rejects", name_, unread_);
  }
}

bool RowDecoder::decode(std::string_view bytes, Row* row, Rejected* rejected) {
  absl::Status s = format_->decode(bytes, row);
  if (s.ok()) return true;
  rejected->reason = std::string(s.message());
  return false;
}

void RowDecoder::unread(const Rejected& r) {
  ++unread_;
  if (!log_) log_ = std::make_unique<RateLimitedLog>();
  log_->log([&] {
    return name_ + ": a record at " + r.origin + " could not be read (" + r.reason + "); " + std::to_string(unread_) +
           " so far, and nothing reads the rejects";
  });
}

}  // namespace detail

DataStream<std::string> encode_rows(const DataStream<Row>& in, std::shared_ptr<const Format> format,
                                    std::string name) {
  return in.map([format](const Row& r) { return format->encode(r); }, std::move(name));
}

}  // namespace weir
