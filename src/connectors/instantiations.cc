// Explicit instantiations of the operator pieces for the lines of a file
// source (declared extern in weir/connectors.h): compiled once here, so a
// job's translation units neither compile nor emit them.
#include "weir/connectors.h"
#include "weir/detail/operators.h"

namespace weir::detail {

WEIR_RECORD_TYPE_TEMPLATES(, TextLine);
template class SourceOperator<TextLine>;

}  // namespace weir::detail
