// Explicit instantiations of the keyed-state templates that nearly every job
// uses (declared extern in weir/detail/timers.h): compiled once here, so a
// job's translation units neither compile nor emit them.
#include <cstdint>
#include <string>
#include <vector>

#include "weir/detail/timers.h"

namespace weir::detail {

template class InternalTimerService<int64_t>;
template class InternalTimerService<std::string>;
template class HeapTable<int64_t, std::vector<int64_t>>;
template class HeapTable<std::string, std::vector<int64_t>>;
template class KvTable<int64_t, std::vector<int64_t>>;
template class KvTable<std::string, std::vector<int64_t>>;

}  // namespace weir::detail
