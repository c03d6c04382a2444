// What a task has done, counted by its thread and read by anyone: records
// and bytes through its inputs and outputs, the time it spent waiting for
// output space (backpressured) or for input (idle), the rest of its time
// busy, its input and output watermarks, and its operators' own metrics
// (weir/metrics.h). Counters only grow; rates are differences over time.
#ifndef WEIR_COMMON_TASK_METRICS_H_
#define WEIR_COMMON_TASK_METRICS_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "weir/metrics.h"

namespace weir {

struct TaskMetricsSnapshot {
  int64_t records_in = 0;   // records read from input channels
  int64_t records_out = 0;  // records written to output channels (once per channel)
  int64_t bytes_in = 0;     // buffer bytes read from input channels
  int64_t bytes_out = 0;    // buffer bytes written to output channels
  int64_t backpressured_ms = 0;
  int64_t idle_ms = 0;
  // Event time: the watermark the task's inputs have reached and the last it
  // sent on (INT64_MIN: none yet; a source has no input watermark).
  int64_t input_watermark = INT64_MIN;
  int64_t output_watermark = INT64_MIN;
  // The counters and gauges of the task's operators by name, rounded
  // (OperatorContext::metrics, set_gauge), for example a Kafka source's lag.
  std::map<std::string, int64_t> gauges;
  // Every metric of each operator, by operator uid; only when asked for
  // (TaskMetrics::snapshot(true)): histograms take a sort.
  std::map<std::string, MetricGroup::Values> operators;
  // How full the task's channels are now (Flink's buffers metrics): data
  // buffers queued in its input and output channels, those as a share of
  // what the channels hold at most, and whether an output channel is full
  // (the task waits, or will, for its consumer: isBackPressured). Filled
  // by Task::metrics(); not summed.
  int64_t input_queue_length = 0;
  int64_t output_queue_length = 0;
  double in_pool_usage = 0;
  double out_pool_usage = 0;
  bool backpressured = false;

  // Sums a vertex's subtasks: counts and gauges add up (watermarks and
  // operators are not summed).
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
  std::atomic<int64_t> input_watermark{INT64_MIN};
  std::atomic<int64_t> output_watermark{INT64_MIN};

  // The operator at the head of the task's chain: of the operators' record
  // counts (numRecordsIn, numRecordsOut), only its own go into the
  // snapshot's summed `gauges` (a source vertex's head's numRecordsOut is
  // the records its source emitted). Before the task runs.
  void set_chain_head(std::string uid) {
    std::lock_guard<std::mutex> lock(groups_mu_);
    head_ = std::move(uid);
  }

  // The metric group of the operator `uid` (made on first use; any thread).
  MetricGroup& group(std::string_view uid) {
    std::lock_guard<std::mutex> lock(groups_mu_);
    auto it = groups_.find(uid);
    if (it == groups_.end()) it = groups_.emplace(std::string(uid), std::make_unique<MetricGroup>()).first;
    return *it->second;
  }

  TaskMetricsSnapshot snapshot(bool with_operators = false) const {
    TaskMetricsSnapshot s;
    s.records_in = records_in.load(std::memory_order_relaxed);
    s.records_out = records_out.load(std::memory_order_relaxed);
    s.bytes_in = bytes_in.load(std::memory_order_relaxed);
    s.bytes_out = bytes_out.load(std::memory_order_relaxed);
    s.backpressured_ms = backpressured_ns.load(std::memory_order_relaxed) / 1000000;
    s.idle_ms = idle_ns.load(std::memory_order_relaxed) / 1000000;
    s.input_watermark = input_watermark.load(std::memory_order_relaxed);
    s.output_watermark = output_watermark.load(std::memory_order_relaxed);
    std::lock_guard<std::mutex> lock(groups_mu_);
    for (const auto& [uid, g] : groups_) {
      MetricGroup::Values v = g->values(with_operators);
      for (const auto& [name, c] : v.counters) {
        if (uid != head_ && (name == kRecordsIn || name == kRecordsOut)) continue;
        s.gauges[name] += c;
      }
      for (const auto& [name, x] : v.gauges) s.gauges[name] += std::llround(x);
      if (with_operators) s.operators.emplace(uid, std::move(v));
    }
    return s;
  }

 private:
  // detail::kRecordsInMetric and kRecordsOutMetric (weir/detail/operator.h).
  static constexpr std::string_view kRecordsIn = "numRecordsIn";
  static constexpr std::string_view kRecordsOut = "numRecordsOut";

  mutable std::mutex groups_mu_;
  std::map<std::string, std::unique_ptr<MetricGroup>, std::less<>> groups_;
  std::string head_;
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
