// A blocking result file from any bytes: the reader returns its events or
// throws std::runtime_error naming the file (truncated, corrupt, no
// end-of-data); it never crashes, reads out of bounds or allocates more
// than a frame's limit.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "network/partition_writer.h"
#include "network/result_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const int fd = ::memfd_create("result-file", 0);
  if (fd < 0) return 0;
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) return 0;
  auto reader = weir::network::ResultFileReader::open("/proc/self/fd/" + std::to_string(fd));
  if (!reader.ok()) return 0;
  weir::network::RecordDeserializer records;
  try {
    while (auto ev = (*reader)->poll()) {
      if (ev->kind == weir::network::EventKind::kBuffer) {
        (void)records.feed(ev->buffer.data(), ev->buffer.size(), [](std::string_view) { return true; });
      }
    }
  } catch (const std::runtime_error&) {
    // A bad file is refused by name: that is the expected outcome.
  }
  return 0;
}
