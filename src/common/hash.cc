#include <xxhash.h>

#include "weir/key_group.h"

namespace weir {

uint64_t hash_bytes(const void* data, size_t n) { return XXH64(data, n, 0); }

}  // namespace weir
