// Metrics an operator defines for itself: counters, gauges and histograms,
// registered by name on its OperatorContext's metric group. The engine
// exports them with its own task metrics: on a TaskManager's /metrics
// (Prometheus text, labelled with the job, task, subtask and operator;
// docs/metrics.md), and counters and gauges also in the REST API's
// "gauges" of the subtask and its vertex.
//
//   void open(OperatorContext& ctx) override {
//     late_ = &ctx.metrics().counter("late_records");
//     size_ = &ctx.metrics().histogram("batch_size");
//   }
//   ... late_->inc(); size_->update(batch.size());
//
// Updates come from the task thread (the thread that calls the operator),
// as every other use of the OperatorContext; exporters read from other
// threads. A counter or gauge update is a relaxed atomic store, cheap
// enough for every record; a histogram update takes an uncontended lock.
#ifndef WEIR_METRICS_H_
#define WEIR_METRICS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace weir {

// A count that only grows (Flink's Counter). One writer: the task thread.
class Counter {
 public:
  void inc(int64_t n = 1) { count_.store(count_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed); }
  int64_t count() const { return count_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> count_{0};
};

// A value set now and then: a queue length, a lag, a cache size.
class Gauge {
 public:
  void set(double value) { value_.store(value, std::memory_order_relaxed); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

// The distribution of values: how many, their sum, and quantiles over the
// last `window` values (Flink's DescriptiveStatisticsHistogram). Exported
// as a Prometheus summary.
class Histogram {
 public:
  struct Statistics {
    int64_t count = 0;  // values ever updated
    double sum = 0;     // and their sum
    // (quantile, value) for 0.5, 0.75, 0.95, 0.98, 0.99, 0.999 over the
    // window; empty when no value came yet.
    std::vector<std::pair<double, double>> quantiles;
  };

  explicit Histogram(int window = 1024);
  void update(int64_t value);
  Statistics statistics() const;

 private:
  const size_t capacity_;
  mutable std::mutex mu_;
  std::vector<int64_t> window_;  // a ring of the last capacity_ values
  size_t next_ = 0;
  int64_t count_ = 0;
  double sum_ = 0;
};

// The counters a sink to another system keeps in its operator's metrics,
// Flink's sink metric names where Flink has one: records handed to the
// system, records it made visible (in committed transactions; delivered,
// for at-least-once) and transactions (or files) committed. Like every
// metric they count one attempt; a transaction found already committed is
// not counted again (docs/metrics.md).
inline constexpr std::string_view kSinkRecordsSent = "numRecordsSend";
inline constexpr std::string_view kSinkRecordsCommitted = "numRecordsCommitted";
inline constexpr std::string_view kSinkTransactionsCommitted = "numCommittablesSuccess";

// An operator subtask's metrics, by name. Asking again for a name returns
// the metric registered first under it. A name is letters, digits, '_',
// '.' and '-', starting with a letter, at most 128 characters, and one kind of
// metric a name; otherwise registration throws std::invalid_argument naming
// it (the task fails with that message).
class MetricGroup {
 public:
  MetricGroup() = default;
  MetricGroup(const MetricGroup&) = delete;
  MetricGroup& operator=(const MetricGroup&) = delete;

  Counter& counter(std::string_view name);
  // The counter `name` of this group, shared: `other.share_counter(name2,
  // c)` makes it also `other`'s counter `name2` (the engine's way of
  // counting a record once where one operator's output is the next one's
  // input).
  std::shared_ptr<Counter> shared_counter(std::string_view name);
  // Registers `counter` under `name`; throws when `name` is taken.
  void share_counter(std::string_view name, std::shared_ptr<Counter> counter);
  Gauge& gauge(std::string_view name);
  Histogram& histogram(std::string_view name, int window = 1024);

  // Every metric's name and current value, for exporters (any thread);
  // histograms only when asked for (their quantiles take a sort).
  struct Values {
    std::map<std::string, int64_t> counters;
    std::map<std::string, double> gauges;
    std::map<std::string, Histogram::Statistics> histograms;
  };
  Values values(bool with_histograms = true) const;

 private:
  enum class Kind { kCounter, kGauge, kHistogram };
  // Throws when `name` is malformed or taken by another kind.
  void check_name(std::string_view name, Kind kind) const;

  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Counter>, std::less<>> counters_;
  std::map<std::string, std::unique_ptr<Gauge>, std::less<>> gauges_;
  std::map<std::string, std::unique_ptr<Histogram>, std::less<>> histograms_;
};

}  // namespace weir

#endif  // WEIR_METRICS_H_
