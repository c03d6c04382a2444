// Records on an input channel: the framing of records across buffers and
// the deserialization of each record, from any bytes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "network/partition_writer.h"
#include "weir/serializer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  // The first byte splits the rest into two buffers.
  const char* bytes = reinterpret_cast<const char*>(data) + 1;
  const size_t n = size - 1;
  const size_t cut = n == 0 ? 0 : data[0] % (n + 1);
  weir::network::RecordDeserializer d;
  auto each = [](std::string_view record) {
    (void)weir::deserialize_from_string<std::tuple<int64_t, std::string, double>>(record);
    (void)weir::deserialize_from_string<std::vector<std::string>>(record);
    return true;
  };
  if (!d.feed(bytes, cut, each)) return 0;
  (void)d.feed(bytes + cut, n - cut, each);
  return 0;
}
