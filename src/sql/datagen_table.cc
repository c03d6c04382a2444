#include "sql/datagen_table.h"

#include <algorithm>
#include <cfloat>
#include <limits>
#include <memory>
#include <optional>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "sql/decimal.h"
#include "sql/table_options.h"
#include "weir/config.h"
#include "weir/connectors.h"

namespace weir::sql {
namespace {

struct FieldSpec {
  std::string name;
  Type type;
  bool sequence = false;
  int64_t start = 0, end = 0;  // a sequence's (a DECIMAL's unscaled)
  int64_t min = std::numeric_limits<int64_t>::min(), max = std::numeric_limits<int64_t>::max();  // BIGINT, DECIMAL
  double min_double = 0, max_double = DBL_MAX;
  int64_t length = 100;
  bool var_len = false;
  int64_t max_past_ms = 0;
  double null_rate = 0;
  uint64_t seed = 0;  // of the column's name: its values do not depend on which columns are read
};

// SplitMix64: a well-mixed 64-bit value of `x`.
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

uint64_t name_seed(const std::string& name) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  return h;
}

// The options each kind of column takes, after "fields.C.".
std::vector<std::string> options_of(const Type& t, bool sequence) {
  std::vector<std::string> out = {"kind", "null-rate"};
  if (sequence) {
    out.insert(out.end(), {"start", "end"});
    return out;
  }
  switch (t.kind) {
    case TypeKind::kBigInt:
    case TypeKind::kDouble:
    case TypeKind::kDecimal:
      out.insert(out.end(), {"min", "max"});
      break;
    case TypeKind::kVarchar:
    case TypeKind::kBytes:
      out.insert(out.end(), {"length", "var-len"});
      break;
    case TypeKind::kTimestamp:
    case TypeKind::kDate:
      out.push_back("max-past");
      break;
    default:
      break;
  }
  return out;
}

// A number option of the column's type: BIGINT as is, DECIMAL unscaled.
absl::StatusOr<int64_t> whole_or_decimal(const FieldSpec& f, const std::string& value) {
  if (f.type.kind == TypeKind::kDecimal) return parse_decimal(value, f.type.scale);
  int64_t v;
  if (!absl::SimpleAtoi(value, &v)) return absl::InvalidArgumentError("not a whole number");
  return v;
}

// The specs of `columns`, from t's options; an error names the option.
absl::StatusOr<std::vector<FieldSpec>> field_specs(const TableDef& t, const std::vector<Column>& columns,
                                                   std::string* bad_key = nullptr) {
  std::vector<FieldSpec> specs;
  for (const Column& c : columns) {
    if (t.computed_expr(c.name) != nullptr) continue;
    FieldSpec f;
    f.name = c.name;
    f.type = c.type;
    f.seed = name_seed(c.name);
    if (c.type.collection()) {
      return absl::InvalidArgumentError("table " + t.name + ": column " + c.name + ": the datagen connector makes no " +
                                        std::string(type_name(c.type.kind)) + " values yet");
    }
    if (c.type.kind == TypeKind::kDecimal) {
      const int64_t top = c.type.precision >= 18 ? std::numeric_limits<int64_t>::max() : [&] {
        int64_t p = 1;
        for (int i = 0; i < c.type.precision; ++i) p *= 10;
        return p - 1;
      }();
      f.min = -top;
      f.max = top;
    }
    specs.push_back(std::move(f));
  }
  auto bad = [&](const std::string& key, const std::string& why) {
    if (bad_key != nullptr) *bad_key = key;
    return absl::InvalidArgumentError("table " + t.name + ": '" + key + "' " + why);
  };
  // The kind first: which options a column takes depends on it.
  for (FieldSpec& f : specs) {
    auto kind = t.options.find("fields." + f.name + ".kind");
    if (kind == t.options.end()) continue;
    if (kind->second != "random" && kind->second != "sequence") return bad(kind->first, "is 'random' or 'sequence', not '" + kind->second + "'");
    f.sequence = kind->second == "sequence";
    if (f.sequence && f.type.kind != TypeKind::kBigInt && f.type.kind != TypeKind::kVarchar) {
      return bad(kind->first, "= 'sequence': a sequence of " + std::string(type_name(f.type.kind)) + " is not supported yet (BIGINT and STRING are)");
    }
  }
  for (const auto& [key, value] : t.options) {
    if (key.rfind("fields.", 0) != 0) continue;
    const size_t dot = key.rfind('.');
    const std::string column = dot > 7 ? key.substr(7, dot - 7) : "";
    const std::string option = key.substr(dot + 1);
    auto f = std::find_if(specs.begin(), specs.end(), [&](const FieldSpec& s) { return s.name == column; });
    if (f == specs.end()) {
      std::vector<std::string> names;
      for (const FieldSpec& s : specs) names.push_back(s.name);
      const std::string near = nearest(column, names);
      const bool computed = t.computed_expr(column) != nullptr;
      return bad(key, computed ? "names a computed column" : "names no column" + (near.empty() ? std::string() : " (did you mean '" + near + "'?)"));
    }
    const std::vector<std::string> takes = options_of(f->type, f->sequence);
    if (std::find(takes.begin(), takes.end(), option) == takes.end()) {
      std::vector<std::string> full;
      for (const std::string& o : takes) full.push_back("fields." + f->name + "." + o);
      const std::string near_option = nearest(option, takes);
      const std::string near = near_option.empty() ? "" : "fields." + f->name + "." + near_option;
      return bad(key, "is no option of " + std::string(f->sequence ? "a sequence of " : "a random ") +
                          std::string(type_name(f->type.kind)) +
                          (near.empty() ? " (it takes " + absl::StrJoin(full, ", ") + ")" : " (did you mean '" + near + "'?)"));
    }
    if (option == "kind") continue;
    if (option == "null-rate") {
      if (!absl::SimpleAtod(value, &f->null_rate) || f->null_rate < 0 || f->null_rate > 1) return bad(key, "is a share from 0 to 1");
    } else if (option == "start" || option == "end" || option == "min" || option == "max") {
      if (f->type.kind == TypeKind::kDouble) {
        double d;
        if (!absl::SimpleAtod(value, &d)) return bad(key, "is no number: '" + value + "'");
        (option == "min" ? f->min_double : f->max_double) = d;
        continue;
      }
      auto v = whole_or_decimal(*f, value);
      if (!v.ok()) return bad(key, "is no number of the column's type: '" + value + "'");
      (option == "start" ? f->start : option == "end" ? f->end : option == "min" ? f->min : f->max) = *v;
    } else if (option == "length") {
      if (!absl::SimpleAtoi(value, &f->length) || f->length < 1 || f->length > 1 << 20) return bad(key, "is a length from 1 to 1048576");
    } else if (option == "var-len") {
      if (value != "true" && value != "false") return bad(key, "is 'true' or 'false'");
      f->var_len = value == "true";
    } else if (option == "max-past") {
      auto d = parse_duration(value);
      if (!d.ok() || d->count() < 0) return bad(key, "is no duration ('5 s', '1 min')");
      f->max_past_ms = d->count();
    }
  }
  for (const FieldSpec& f : specs) {
    const std::string prefix = "fields." + f.name + ".";
    if (f.sequence && (!t.options.contains(prefix + "start") || !t.options.contains(prefix + "end"))) {
      return bad(prefix + "kind", "= 'sequence' needs '" + prefix + "start' and '" + prefix + "end'");
    }
    if (f.sequence && f.start > f.end) return bad(prefix + "start", "is past '" + prefix + "end'");
    if (!f.sequence && (f.min > f.max || f.min_double > f.max_double)) return bad(prefix + "min", "is past '" + prefix + "max'");
  }
  return specs;
}

absl::StatusOr<int64_t> count_option(const TableDef& t, const std::string& key, int64_t fallback, int64_t least) {
  auto it = t.options.find(key);
  if (it == t.options.end()) return fallback;
  int64_t v;
  if (!absl::SimpleAtoi(it->second, &v) || v < least) {
    return absl::InvalidArgumentError("table " + t.name + ": '" + key + "' '" + it->second + "' is no whole number of at least " +
                                      std::to_string(least));
  }
  return v;
}

Value value_of(const FieldSpec& f, int64_t i) {
  const uint64_t h = mix(f.seed ^ mix(static_cast<uint64_t>(i)));
  auto unit = [](uint64_t x) { return static_cast<double>(x >> 11) * 0x1.0p-53; };  // [0, 1)
  if (f.null_rate > 0 && unit(mix(h + 1)) < f.null_rate) return Value{};
  if (f.sequence) {
    const int64_t v = f.start + i;
    if (f.type.kind == TypeKind::kVarchar) return std::to_string(v);
    return v;
  }
  switch (f.type.kind) {
    case TypeKind::kBoolean:
      return (h & 1) == 1;
    case TypeKind::kBigInt:
    case TypeKind::kDecimal: {
      const uint64_t span = static_cast<uint64_t>(f.max) - static_cast<uint64_t>(f.min);
      const uint64_t offset = span == std::numeric_limits<uint64_t>::max() ? h : h % (span + 1);
      const int64_t v = static_cast<int64_t>(static_cast<uint64_t>(f.min) + offset);
      if (f.type.kind == TypeKind::kDecimal) return decimal_text(v, f.type.scale);  // as text: the job builder reads it exact
      return v;
    }
    case TypeKind::kDouble:
      return f.min_double + unit(h) * (f.max_double - f.min_double);
    case TypeKind::kVarchar: {
      const int64_t n = f.var_len ? 1 + static_cast<int64_t>(mix(h + 2) % static_cast<uint64_t>(f.length)) : f.length;
      std::string s(static_cast<size_t>(n), '0');
      uint64_t bits = 0;
      for (int64_t k = 0; k < n; ++k) {
        if (k % 16 == 0) bits = mix(h + 3 + static_cast<uint64_t>(k));
        s[static_cast<size_t>(k)] = "0123456789abcdef"[bits & 0xF];
        bits >>= 4;
      }
      return s;
    }
    case TypeKind::kTimestamp:
    case TypeKind::kDate: {
      const int64_t past = f.max_past_ms > 0 ? static_cast<int64_t>(h % static_cast<uint64_t>(f.max_past_ms + 1)) : 0;
      const int64_t ms = absl::ToUnixMillis(absl::Now()) - past;
      if (f.type.kind == TypeKind::kDate) return ms / 86'400'000;  // days: the job builder reads it as is
      return ms;
    }
    case TypeKind::kTime:
      return static_cast<int64_t>(h % 86'400'000);
    case TypeKind::kBytes: {  // as base64 text, the form the job builder reads
      const int64_t n = f.var_len ? 1 + static_cast<int64_t>(mix(h + 2) % static_cast<uint64_t>(f.length)) : f.length;
      std::string bytes(static_cast<size_t>(n), '\0');
      for (int64_t k = 0; k < n; ++k) bytes[static_cast<size_t>(k)] = static_cast<char>(mix(h + 3 + static_cast<uint64_t>(k)));
      return absl::Base64Escape(bytes);
    }
    default:
      return Value{};
  }
}

// The rows, at `per_second` rows per second of the whole source: each
// subtask's share of it is known when it opens.
class DatagenSource final : public Source<Row> {
 public:
  DatagenSource(std::function<Row(int64_t)> row, int64_t count, int64_t per_second)
      : row_(std::move(row)), count_(count), per_second_(per_second) {}

  absl::Status open(OperatorContext& ctx) override {
    const int64_t share = (per_second_ + ctx.parallelism() - 1) / ctx.parallelism();
    rows_ = std::make_unique<GeneratorSource<Row>>(row_, count_, share);
    return rows_->open(ctx);
  }
  PollStatus poll(SourceOutput<Row>& out, int max_records) override { return rows_->poll(out, max_records); }
  absl::Status snapshot_state(int64_t checkpoint_id) override { return rows_->snapshot_state(checkpoint_id); }
  void notify_checkpoint_complete(int64_t checkpoint_id) override { rows_->notify_checkpoint_complete(checkpoint_id); }
  void close() override {
    if (rows_) rows_->close();
  }
  bool bounded() const override { return count_ < std::numeric_limits<int64_t>::max(); }

 private:
  std::function<Row(int64_t)> row_;
  const int64_t count_;
  const int64_t per_second_;
  std::unique_ptr<GeneratorSource<Row>> rows_;
};

}  // namespace

std::string check_datagen_options(const TableDef& t, std::string* key) {
  auto specs = field_specs(t, t.columns, key);
  if (!specs.ok()) return std::string(specs.status().message());
  for (const auto& [option, least] : std::vector<std::pair<std::string, int64_t>>{{"rows-per-second", 1}, {"number-of-rows", 0}}) {
    auto v = count_option(t, option, 0, least);
    if (!v.ok()) {
      *key = option;
      return std::string(v.status().message());
    }
  }
  return "";
}

absl::StatusOr<DataStream<Row>> datagen_table(StreamEnvironment& env, const TableDef& t, const std::string& uid) {
  const std::vector<Column>& declared = t.declared.empty() ? t.columns : t.declared;
  auto specs = field_specs(t, declared);
  if (!specs.ok()) return specs.status();
  auto per_second = count_option(t, "rows-per-second", 10000, 1);
  if (!per_second.ok()) return per_second.status();
  auto count = count_option(t, "number-of-rows", std::numeric_limits<int64_t>::max(), 0);
  if (!count.ok()) return count.status();
  int64_t rows = *count;
  for (const FieldSpec& f : *specs) {
    if (f.sequence) rows = std::min(rows, f.end - f.start + 1);  // a sequence ends the table
  }
  auto fields = std::make_shared<const std::vector<FieldSpec>>(*std::move(specs));
  auto row = [fields](int64_t i) {
    Row r;
    r.values.reserve(fields->size());
    for (const FieldSpec& f : *fields) r.values.push_back(value_of(f, i));
    return r;
  };
  std::vector<Column> made;
  for (const FieldSpec& f : *fields) made.push_back({f.name, f.type});
  std::optional<WatermarkStrategy<Row>> watermarks;
  if (t.watermark) {
    watermarks = WatermarkStrategy<Row>::for_bounded_out_of_orderness(Duration(t.watermark->delay_ms), event_time_of(t, made));
  }
  const int64_t rate = *per_second;
  DataStream<Row> out = env.from_source<Row>([row, rows, rate] { return std::make_unique<DatagenSource>(row, rows, rate); },
                                             "datagen-" + t.name, watermarks);
  out.uid(uid);
  if (made.size() == t.columns.size()) return out;
  return read_columns(out, made, t.columns, uid);
}

}  // namespace weir::sql
