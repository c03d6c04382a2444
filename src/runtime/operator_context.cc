#include "runtime/operator_context.h"

#include "weir/detail/operators.h"

namespace weir::detail {

absl::Status restore_operator_state(OperatorContext& ctx, const OperatorRestore* restore) {
  if (restore == nullptr) return absl::OkStatus();
  auto& rt = static_cast<runtime::RuntimeOperatorContext&>(ctx);
  rt.state() = restore->operator_state;
  return absl::OkStatus();
}

OperatorStateMap capture_operator_state(OperatorContext& ctx) {
  return static_cast<runtime::RuntimeOperatorContext&>(ctx).state();
}

}  // namespace weir::detail
