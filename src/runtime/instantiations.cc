// Explicit instantiations of the operator pieces for the record types nearly
// every job has (declared extern in weir/detail/operators.h and
// keyed_operators.h): compiled once here, so a job's translation units
// neither compile nor emit them.
#include <cstdint>
#include <string>

#include "weir/detail/keyed_operators.h"
#include "weir/detail/operators.h"

namespace weir::detail {

WEIR_RECORD_TYPE_TEMPLATES(, std::string);
WEIR_RECORD_TYPE_TEMPLATES(, int64_t);
template class SinkOperator<std::string>;
template class KeyedOperatorCore<int64_t>;
template class KeyedOperatorCore<std::string>;

}  // namespace weir::detail
