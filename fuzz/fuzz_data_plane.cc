// What a data-plane peer sends: the hello, and the payloads of open, serve
// and event frames.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "network/data_plane.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  (void)weir::network::check_hello(bytes, "cluster-secret");
  (void)weir::network::decode_open(bytes);
  auto serve = weir::network::decode_serve(bytes);
  if (serve && serve->second.empty()) __builtin_trap();  // a reply address is required
  auto ev = weir::network::decode_event(bytes);
  if (ev && ev->kind == weir::network::EventKind::kBuffer) __builtin_trap();  // never an event
  return 0;
}
