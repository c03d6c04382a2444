// Processing time for one task: the wall clock, and callbacks run on the
// task thread once it has passed a given time. An operator reaches its
// task's through OperatorContext::processing_time() (weir/context.h).
#ifndef WEIR_PROCESSING_TIME_H_
#define WEIR_PROCESSING_TIME_H_

#include <cstdint>
#include <functional>

namespace weir {

// Confined to the task thread.
class ProcessingTimeService {
 public:
  virtual ~ProcessingTimeService() = default;
  // Milliseconds since the epoch.
  virtual int64_t now_ms() const = 0;
  // Runs `fn` on the task thread at or after `at_ms` (at once when past).
  virtual void schedule(int64_t at_ms, std::function<void()> fn) = 0;
};

}  // namespace weir

#endif  // WEIR_PROCESSING_TIME_H_
