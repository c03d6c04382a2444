// Checkpoint `_metadata` files: any bytes decode to metadata or an error.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "checkpoint/format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto meta = weir::checkpoint::decode_metadata(bytes, "fuzz/_metadata");
  if (meta.ok()) {
    // What was decoded encodes again and decodes to the same.
    std::string again = weir::checkpoint::encode_metadata(*meta);
    auto twice = weir::checkpoint::decode_metadata(again, "fuzz/_metadata");
    if (!twice.ok() || weir::checkpoint::encode_metadata(*twice) != again) __builtin_trap();
  }
  return 0;
}
