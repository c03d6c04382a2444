// What a task has done, counted by its thread and read by anyone: records
// and bytes through its inputs and outputs, and the time it spent waiting
// for output space (backpressured) or for input (idle). The rest of its time
// it was busy. Counters only grow; rates are differences over time.
#ifndef WEIR_COMMON_TASK_METRICS_H_
#define WEIR_COMMON_TASK_METRICS_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

namespace weir {

struct TaskMetricsSnapshot {
  int64_t records_in = 0;   // records read from input channels
  int64_t records_out = 0;  // records written to output channels (once per channel)
  int64_t bytes_in = 0;     // buffer bytes read from input channels
  int64_t bytes_out = 0;    // buffer bytes written to output channels
  int64_t backpressured_ms = 0;
  int64_t idle_ms = 0;
  // Values the task's operators report by name (OperatorContext::set_gauge),
  // for example a Kafka source's lag per partition.
  std::map<std::string, int64_t> gauges;

  TaskMetricsSnapshot& operator+=(const TaskMetricsSnapshot& o) {
    records_in += o.records_in;
    records_out += o.records_out;
    bytes_in += o.bytes_in;
    bytes_out += o.bytes_out;
    backpressured_ms += o.backpressured_ms;
    idle_ms += o.idle_ms;
    for (const auto& [name, v] : o.gauges) gauges[name] += v;
    return *this;
  }
};

// On cache lines of its own: its writer is the task thread, and what sits
// next to it in a Task (its wakeup) is written by other threads.
class alignas(64) TaskMetrics {
 public:
  // Single writer (the task thread): a relaxed load and store, no locked
  // instruction per record.
  static void add(std::atomic<int64_t>& counter, int64_t n) {
    counter.store(counter.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }

  std::atomic<int64_t> records_in{0};
  std::atomic<int64_t> records_out{0};
  std::atomic<int64_t> bytes_in{0};
  std::atomic<int64_t> bytes_out{0};
  std::atomic<int64_t> backpressured_ns{0};
  std::atomic<int64_t> idle_ns{0};

  // Set now and then by the task thread, read with the counters.
  void set_gauge(std::string_view name, int64_t value) {
    std::lock_guard<std::mutex> lock(gauges_mu_);
    auto it = gauges_.find(name);
    if (it == gauges_.end()) {
      gauges_.emplace(std::string(name), value);
    } else {
      it->second = value;
    }
  }

  TaskMetricsSnapshot snapshot() const {
    TaskMetricsSnapshot s;
    s.records_in = records_in.load(std::memory_order_relaxed);
    s.records_out = records_out.load(std::memory_order_relaxed);
    s.bytes_in = bytes_in.load(std::memory_order_relaxed);
    s.bytes_out = bytes_out.load(std::memory_order_relaxed);
    s.backpressured_ms = backpressured_ns.load(std::memory_order_relaxed) / 1000000;
    s.idle_ms = idle_ns.load(std::memory_order_relaxed) / 1000000;
    std::lock_guard<std::mutex> lock(gauges_mu_);
    s.gauges.insert(gauges_.begin(), gauges_.end());
    return s;
  }

 private:
  mutable std::mutex gauges_mu_;
  std::map<std::string, int64_t, std::less<>> gauges_;
};

// Adds the time between its construction and its destruction to `counter`
// (nothing when null); for the one thread that writes the counter, around
// a wait.
class WaitTimer {
 public:
  explicit WaitTimer(std::atomic<int64_t>* counter)
      : counter_(counter), start_(counter != nullptr ? std::chrono::steady_clock::now()
                                                     : std::chrono::steady_clock::time_point()) {}
  ~WaitTimer() {
    if (counter_ == nullptr) return;
    TaskMetrics::add(*counter_, std::chrono::duration_cast<std::chrono::nanoseconds>(
                                    std::chrono::steady_clock::now() - start_)
                                    .count());
  }
  WaitTimer(const WaitTimer&) = delete;
  WaitTimer& operator=(const WaitTimer&) = delete;

 private:
  std::atomic<int64_t>* const counter_;
  const std::chrono::steady_clock::time_point start_;
};

}  // namespace weir

#endif  // WEIR_COMMON_TASK_METRICS_H_
