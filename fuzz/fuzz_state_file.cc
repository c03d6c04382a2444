// State files: the envelope check and the operator-state section decoder.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "checkpoint/format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  (void)weir::checkpoint::verify_state_file(bytes, "fuzz.state");
  (void)weir::checkpoint::decode_operator_state(bytes);
  return 0;
}
