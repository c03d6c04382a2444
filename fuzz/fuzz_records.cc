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
  // The first byte splits the rest into two buffers; with its top bit set
  // the first buffer also continues (low 4 bits) bytes of an unseen record,
  // as on a channel joined mid-stream.
  const char* bytes = reinterpret_cast<const char*>(data) + 1;
  const size_t n = size - 1;
  const size_t cut = n == 0 ? 0 : data[0] % (n + 1);
  weir::network::RecordDeserializer d;
  auto each = [](std::string_view record) {
    (void)weir::deserialize_from_string<std::tuple<int64_t, std::string, double>>(record);
    (void)weir::deserialize_from_string<std::vector<std::string>>(record);
    return true;
  };
  const uint64_t continued = (data[0] & 0x80) != 0 ? data[0] & 0x0f : 0;
  if (!d.feed(bytes, cut, each, continued)) return 0;
  (void)d.feed(bytes + cut, n - cut, each);
  return 0;
}
