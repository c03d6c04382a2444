#include "sql/values.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/civil_time.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "sql/decimal.h"

namespace weir::sql {
namespace {

constexpr int64_t kDayMs = 86'400'000;
const absl::CivilDay kEpoch(1970, 1, 1);

std::string shown(std::string_view s) {
  constexpr size_t kMax = 40;
  return "'" + std::string(s.substr(0, kMax)) + (s.size() > kMax ? "...'" : "'");
}


// An element's text inside a collection's text, as value_text has it.
std::string element_text(const Value& v, TypeKind kind) { return value_text(v, Type{kind, true}); }

// An element as a JSON value (to_wire), and back (from_wire).
nlohmann::json element_json(const Value& v, TypeKind kind) {
  if (is_null(v)) return nullptr;
  switch (kind) {
    case TypeKind::kBoolean: return std::get<bool>(v);
    case TypeKind::kBigInt: return std::get<int64_t>(v);
    case TypeKind::kDouble: {
      const double d = std::get<double>(v);
      return std::isfinite(d) ? nlohmann::json(d) : nlohmann::json(nullptr);  // JSON has no NaN
    }
    case TypeKind::kBytes: return absl::Base64Escape(std::get<std::string>(v));
    case TypeKind::kTimestamp: {
      // Text where it has four digits of year (as it is read back), else
      // the milliseconds.
      constexpr int64_t kYear10000 = 253'402'300'800'000, kYear0 = -62'167'219'200'000;
      const int64_t ms = std::get<int64_t>(v);
      if (ms < kYear0 || ms >= kYear10000) return ms;
      return timestamp_text(ms);
    }
    default: return value_text(v, Type{kind, true});
  }
}

absl::StatusOr<Value> element_of_json(const nlohmann::json& j, TypeKind kind) {
  if (j.is_null()) return Value{};
  auto expected = [&](std::string_view what) {
    return absl::InvalidArgumentError("expected " + std::string(what) + ", got " + j.dump().substr(0, 40));
  };
  switch (kind) {
    case TypeKind::kBoolean:
      if (!j.is_boolean()) return expected("BOOLEAN");
      return Value{j.get<bool>()};
    case TypeKind::kBigInt:
      if (!j.is_number_integer()) return expected("BIGINT");
      if (j.is_number_unsigned() && j.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) return expected("a BIGINT in range");
      return Value{j.get<int64_t>()};
    case TypeKind::kDouble:
      if (!j.is_number()) return expected("DOUBLE");
      return Value{j.get<double>()};
    case TypeKind::kVarchar:
      if (j.is_string()) return Value{j.get<std::string>()};
      return Value{j.dump()};  // a number, an object: its JSON text
    case TypeKind::kTimestamp:
      if (j.is_number_integer()) return Value{j.get<int64_t>()};
      if (j.is_string()) return from_wire(Value{j.get<std::string>()}, Type{kind, true});
      return expected("TIMESTAMP(3) (text or epoch milliseconds)");
    case TypeKind::kDate:
    case TypeKind::kTime:
    case TypeKind::kBytes:
      if (!j.is_string()) return expected(type_name(kind));
      return from_wire(Value{j.get<std::string>()}, Type{kind, true});
    default:
      return expected(type_name(kind));
  }
}

}  // namespace

std::string timestamp_text(int64_t ms) {
  // Four digits of year at least (absl's %Y writes year 24 as "24").
  const int64_t floor_ms = ((ms % 1000) + 1000) % 1000;
  const absl::CivilSecond c = absl::ToCivilSecond(absl::FromUnixMillis(ms - floor_ms), absl::UTCTimeZone());
  return absl::StrFormat("%04d-%02d-%02d %02d:%02d:%02d.%03d", c.year(), c.month(), c.day(), c.hour(), c.minute(),
                         c.second(), floor_ms);
}

std::string date_text(int64_t days) { return absl::FormatCivilTime(kEpoch + days); }

absl::StatusOr<int64_t> parse_date(std::string_view text) {
  absl::CivilDay day;
  const std::string t(absl::StripAsciiWhitespace(absl::string_view(text.data(), text.size())));
  // Exactly yyyy-MM-dd (ParseCivilTime would also take a normalized
  // 2026-02-30 as March 2nd: refused by the round trip).
  if (t.size() != 10 || !absl::ParseCivilTime(t, &day) || absl::FormatCivilTime(day) != t) {
    return absl::InvalidArgumentError(shown(text) + " is not a DATE ('yyyy-MM-dd')");
  }
  return static_cast<int64_t>(day - kEpoch);
}

std::string time_text(int64_t ms) {
  const int64_t s = ms / 1000, frac = ms % 1000;
  std::string out = absl::StrFormat("%02d:%02d:%02d", s / 3600, s / 60 % 60, s % 60);
  if (frac != 0) absl::StrAppendFormat(&out, ".%03d", frac);
  return out;
}

absl::StatusOr<int64_t> parse_time(std::string_view text) {
  const std::string t(absl::StripAsciiWhitespace(absl::string_view(text.data(), text.size())));
  auto bad = [&] { return absl::InvalidArgumentError(shown(text) + " is not a TIME ('HH:mm:ss[.SSS]')"); };
  auto two = [&](size_t at, int limit, int64_t* out) {
    if (at + 2 > t.size() || !absl::ascii_isdigit(t[at]) || !absl::ascii_isdigit(t[at + 1])) return false;
    *out = (t[at] - '0') * 10 + (t[at + 1] - '0');
    return *out < limit;
  };
  int64_t h = 0, m = 0, s = 0, ms = 0;
  if (!two(0, 24, &h) || t.size() < 5 || t[2] != ':' || !two(3, 60, &m)) return bad();
  if (t.size() > 5) {
    if (t[5] != ':' || !two(6, 60, &s)) return bad();
    if (t.size() > 8) {
      if (t[8] != '.' || t.size() == 9 || t.size() > 18) return bad();
      int64_t scale = 100;
      for (size_t i = 9; i < t.size(); ++i) {
        if (!absl::ascii_isdigit(t[i])) return bad();
        ms += (t[i] - '0') * scale;
        scale /= 10;
      }
    }
  }
  return ((h * 60 + m) * 60 + s) * 1000 + ms;
}

std::string encode_elements(const std::vector<Value>& elements) {
  std::string out;
  ByteWriter w(&out);
  w.put_varint(elements.size());
  for (const Value& v : elements) Serializer<Value>::write(w, v);
  return out;
}

std::vector<Value> decode_elements(std::string_view bytes) {
  ByteReader r(bytes);
  const uint64_t n = r.get_varint();
  std::vector<Value> out;
  for (uint64_t i = 0; i < n && r.ok(); ++i) out.push_back(Serializer<Value>::read(r));
  return out;
}

absl::StatusOr<std::string> encode_map(std::vector<std::pair<Value, Value>> entries) {
  for (const auto& [k, v] : entries) {
    if (is_null(k)) return absl::InvalidArgumentError("a MAP key is NULL");
  }
  // Later entries win: a stable sort keeps their order among equal keys.
  std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Value> flat;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i + 1 < entries.size() && entries[i + 1].first == entries[i].first) continue;
    flat.push_back(std::move(entries[i].first));
    flat.push_back(std::move(entries[i].second));
  }
  return encode_elements(flat);
}

std::vector<std::pair<Value, Value>> decode_map(std::string_view bytes) {
  std::vector<Value> flat = decode_elements(bytes);
  std::vector<std::pair<Value, Value>> out;
  for (size_t i = 0; i + 1 < flat.size(); i += 2) out.emplace_back(std::move(flat[i]), std::move(flat[i + 1]));
  return out;
}

std::string value_text(const Value& v, const Type& t) {
  if (is_null(v)) return "NULL";
  switch (t.kind) {
    case TypeKind::kTimestamp: return timestamp_text(std::get<int64_t>(v));
    case TypeKind::kDate: return date_text(std::get<int64_t>(v));
    case TypeKind::kTime: return time_text(std::get<int64_t>(v));
    case TypeKind::kDecimal: return decimal_text(std::get<int64_t>(v), t.scale);
    case TypeKind::kArray: {
      std::string out = "[";
      const std::vector<Value> elements = decode_elements(std::get<std::string>(v));
      for (size_t i = 0; i < elements.size(); ++i) {
        absl::StrAppend(&out, i > 0 ? ", " : "", element_text(elements[i], t.element));
      }
      return out + "]";
    }
    case TypeKind::kMap: {
      std::string out = "{";
      bool first = true;
      for (const auto& [k, x] : decode_map(std::get<std::string>(v))) {
        absl::StrAppend(&out, first ? "" : ", ", element_text(k, t.key), "=", element_text(x, t.element));
        first = false;
      }
      return out + "}";
    }
    default: break;
  }
  if (const auto* b = std::get_if<bool>(&v)) return *b ? "TRUE" : "FALSE";
  if (const auto* d = std::get_if<double>(&v)) return absl::StrCat(*d);
  if (const auto* n = std::get_if<int64_t>(&v)) return absl::StrCat(*n);
  return std::get<std::string>(v);
}

bool has_wire_form(const Type& t) {
  switch (t.kind) {
    case TypeKind::kDecimal:
    case TypeKind::kDate:
    case TypeKind::kTime:
    case TypeKind::kBytes:
    case TypeKind::kArray:
    case TypeKind::kMap:
      return true;
    default:
      return false;
  }
}

FieldType wire_type(const Type& t) {
  switch (t.kind) {
    case TypeKind::kBoolean: return FieldType::kBool;
    case TypeKind::kDouble: return FieldType::kDouble;
    case TypeKind::kTimestamp: return FieldType::kTimestamp;
    case TypeKind::kArray:
    case TypeKind::kMap: return FieldType::kJson;
    case TypeKind::kBigInt:
    case TypeKind::kInterval: return FieldType::kInt64;
    default: return FieldType::kString;  // VARCHAR; DECIMAL, DATE, TIME, BYTES as their text
  }
}

absl::StatusOr<Value> from_wire(const Value& v, const Type& t) {
  if (is_null(v)) return v;
  const auto* text = std::get_if<std::string>(&v);
  switch (t.kind) {
    case TypeKind::kDecimal: {
      absl::StatusOr<int64_t> d = absl::InvalidArgumentError("not a DECIMAL");
      if (text != nullptr) d = parse_decimal(*text, t.scale);
      else if (const auto* x = std::get_if<double>(&v)) d = double_to_decimal(*x, t.scale);
      else if (const auto* n = std::get_if<int64_t>(&v)) d = rescale(*n, 0, t.scale);
      if (!d.ok()) return d.status();
      return Value{*d};
    }
    case TypeKind::kDate:
    case TypeKind::kTime: {
      if (std::holds_alternative<int64_t>(v)) return v;
      if (text == nullptr) break;
      auto n = t.kind == TypeKind::kDate ? parse_date(*text) : parse_time(*text);
      if (!n.ok()) return n.status();
      return Value{*n};
    }
    case TypeKind::kTimestamp: {
      if (std::holds_alternative<int64_t>(v)) return v;
      if (text == nullptr) break;
      auto ms = parse_timestamp_text(*text);
      if (!ms) return absl::InvalidArgumentError(shown(*text) + " is not a TIMESTAMP(3) ('yyyy-MM-dd HH:mm:ss.SSS')");
      return Value{*ms};
    }
    case TypeKind::kBytes: {
      if (text == nullptr) break;
      std::string bytes;
      if (!absl::Base64Unescape(*text, &bytes)) return absl::InvalidArgumentError(shown(*text) + " is not base64 (BYTES)");
      return Value{std::move(bytes)};
    }
    case TypeKind::kArray:
    case TypeKind::kMap: {
      if (text == nullptr) break;
      nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
      if (t.kind == TypeKind::kArray) {
        if (!j.is_array()) return absl::InvalidArgumentError(shown(*text) + " is not a JSON array (" + t.to_string() + ")");
        std::vector<Value> elements;
        for (const nlohmann::json& e : j) {
          auto x = element_of_json(e, t.element);
          if (!x.ok()) return absl::InvalidArgumentError("an element: " + std::string(x.status().message()));
          elements.push_back(*std::move(x));
        }
        return Value{encode_elements(elements)};
      }
      if (!j.is_object()) return absl::InvalidArgumentError(shown(*text) + " is not a JSON object (" + t.to_string() + ")");
      std::vector<std::pair<Value, Value>> entries;
      for (auto it = j.begin(); it != j.end(); ++it) {
        // A key is text: a STRING's own, a number's or BOOLEAN's JSON
        // ("12", "true"), a time's text.
        absl::StatusOr<Value> k = Value{it.key()};
        if (t.key == TypeKind::kBigInt || t.key == TypeKind::kDouble || t.key == TypeKind::kBoolean) {
          const nlohmann::json key = nlohmann::json::parse(it.key(), nullptr, /*allow_exceptions=*/false);
          k = key.is_discarded() || key.is_null() ? absl::InvalidArgumentError("expected " + std::string(type_name(t.key)))
                                                  : element_of_json(key, t.key);
        } else if (t.key != TypeKind::kVarchar) {
          k = from_wire(Value{it.key()}, Type{t.key, true});
        }
        if (!k.ok()) return absl::InvalidArgumentError("the key " + shown(it.key()) + ": " + std::string(k.status().message()));
        auto x = element_of_json(it.value(), t.element);
        if (!x.ok()) return absl::InvalidArgumentError("the value of " + shown(it.key()) + ": " + std::string(x.status().message()));
        entries.emplace_back(*std::move(k), *std::move(x));
      }
      auto m = encode_map(std::move(entries));
      if (!m.ok()) return m.status();
      return Value{*std::move(m)};
    }
    default:
      return v;
  }
  return absl::InvalidArgumentError("expected " + t.to_string() + " as text");
}

Value to_wire(const Value& v, const Type& t) {
  if (is_null(v)) return v;
  switch (t.kind) {
    case TypeKind::kDecimal:
    case TypeKind::kDate:
    case TypeKind::kTime:
      return value_text(v, t);
    case TypeKind::kBytes: return absl::Base64Escape(std::get<std::string>(v));
    case TypeKind::kArray: {
      nlohmann::json j = nlohmann::json::array();
      for (const Value& e : decode_elements(std::get<std::string>(v))) j.push_back(element_json(e, t.element));
      return j.dump();
    }
    case TypeKind::kMap: {
      nlohmann::json j = nlohmann::json::object();
      for (const auto& [k, x] : decode_map(std::get<std::string>(v))) {
        // A key as JSON has it: a string's own text, another value's JSON.
        const nlohmann::json key = element_json(k, t.key);
        j[key.is_string() ? key.get<std::string>() : key.dump()] = element_json(x, t.element);
      }
      return j.dump();
    }
    default:
      return v;
  }
}

}  // namespace weir::sql
