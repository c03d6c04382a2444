// Records in the CSV and JSON formats (weir/formats.h): a record either
// decodes or gets a reason; a decoded row encodes to bytes that decode to
// the same row.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "weir/formats.h"

namespace {

const weir::Schema kSchema{{"s", weir::FieldType::kString},
                           {"i", weir::FieldType::kInt64},
                           {"d", weir::FieldType::kDouble, false},
                           {"b", weir::FieldType::kBool}};

void check(const weir::Format& f, std::string_view bytes) {
  weir::Row row, again;
  absl::Status s = f.decode(bytes, &row);
  if (!s.ok()) {
    if (s.message().empty()) __builtin_trap();
    return;
  }
  if (row.values.size() != kSchema.size()) __builtin_trap();
  std::string encoded = f.encode(row);
  if (!f.decode(encoded, &again).ok()) __builtin_trap();
  // NaN is not equal to itself; compare the encodings instead.
  if (f.encode(again) != encoded) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto csv = weir::csv_format(kSchema);
  static const auto changelog = weir::csv_format(kSchema, weir::CsvOptions{';', true});
  static const auto json = weir::json_format(kSchema, weir::JsonOptions{"op"});
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  check(*csv, bytes);
  check(*changelog, bytes);
  check(*json, bytes);
  return 0;
}
