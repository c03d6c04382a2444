// SQL values at a connector (sql/values.h): a source's text for a DATE,
// TIME, BYTES, ARRAY or MAP column either reads or gets a reason; a value
// read writes to text that reads back to the same value.
#include <cstddef>
#include <cstdint>
#include <string>

#include "sql/values.h"

namespace {

using weir::sql::Type;
using weir::sql::TypeKind;

void check(const std::string& text, const Type& t) {
  absl::StatusOr<weir::Value> v = weir::sql::from_wire(weir::Value{text}, t);
  if (!v.ok()) {
    if (v.status().message().empty()) __builtin_trap();
    return;
  }
  const weir::Value written = weir::sql::to_wire(*v, t);
  absl::StatusOr<weir::Value> again = weir::sql::from_wire(written, t);
  if (!again.ok()) __builtin_trap();
  // A DOUBLE element that is not finite is written as null: compare the
  // written forms, which a round trip must keep.
  if (weir::sql::to_wire(*again, t) != written) __builtin_trap();
  (void)weir::sql::value_text(*v, t);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Type kTypes[] = {
      Type{TypeKind::kDate, true},
      Type{TypeKind::kTime, true},
      Type{TypeKind::kBytes, true},
      Type::array(TypeKind::kBigInt, true),
      Type::array(TypeKind::kVarchar, true),
      Type::array(TypeKind::kDouble, true),
      Type::map(TypeKind::kVarchar, TypeKind::kTimestamp, true),
      Type::map(TypeKind::kBigInt, TypeKind::kDate, true),
      Type::map(TypeKind::kBoolean, TypeKind::kBytes, true),
  };
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (const Type& t : kTypes) check(text, t);
  return 0;
}
