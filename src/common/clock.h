// Time, injectable: production uses SystemClock, tests drive a ManualClock.
#ifndef WEIR_COMMON_CLOCK_H_
#define WEIR_COMMON_CLOCK_H_

#include <atomic>
#include <chrono>
#include <cstdint>

namespace weir {

// Whole milliseconds from `t` to now, on the steady clock.
inline int64_t ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t).count();
}

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic milliseconds, for intervals and timeouts.
  virtual int64_t now_ms() const = 0;
  // Milliseconds since the Unix epoch, for what is written down.
  virtual int64_t wall_ms() const = 0;
};

class SystemClock final : public Clock {
 public:
  int64_t now_ms() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  int64_t wall_ms() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  static SystemClock* instance() {
    static SystemClock clock;
    return &clock;
  }
};

// Thread-safe; time moves only when advanced.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(int64_t start_ms = 1'000'000) : now_(start_ms) {}
  int64_t now_ms() const override { return now_.load(); }
  int64_t wall_ms() const override { return now_.load(); }
  void advance(int64_t ms) { now_ += ms; }

 private:
  std::atomic<int64_t> now_;
};

}  // namespace weir

#endif  // WEIR_COMMON_CLOCK_H_
