// Metrics in Prometheus' text format (docs/metrics.md), as the JobManager
// and each TaskManager serve them on GET /metrics. Names follow Flink's
// Prometheus reporter with "weir" for "flink": the scope, then Flink's
// metric name (weir_taskmanager_job_task_numRecordsIn), the rest of the
// scope as labels (job_id, task_name, subtask_index, ...). prometheus-cpp
// writes the text; this builds its metric families.
#ifndef WEIR_CLUSTER_METRICS_EXPOSITION_H_
#define WEIR_CLUSTER_METRICS_EXPOSITION_H_

#include <prometheus/metric_family.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cluster/job_metrics.h"
#include "common/task_metrics.h"
#include "weir/metrics.h"

namespace weir::cluster {

// The content type of the text format.
inline constexpr const char* kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

// Metric families under construction: samples added by name go to the
// family of that name (made on first use with its help and type).
class MetricFamilies {
 public:
  void counter(std::string_view name, std::string_view help, const MetricLabels& labels, double value);
  void gauge(std::string_view name, std::string_view help, const MetricLabels& labels, double value);
  // A histogram as a summary: quantiles over its window, count and sum.
  void summary(std::string_view name, std::string_view help, const MetricLabels& labels,
               const Histogram::Statistics& stats);

  // The families in the text format.
  std::string text() const;

 private:
  prometheus::ClientMetric& add(std::string_view name, std::string_view help, prometheus::MetricType type,
                                const MetricLabels& labels);

  std::vector<prometheus::MetricFamily> families_;
  std::map<std::string, size_t, std::less<>> index_;
};

// `name` as a Prometheus metric name: characters other than letters,
// digits, '_' and ':' become '_', and a leading digit gets a '_' before it.
std::string prometheus_name(std::string_view name);

// Where a task runs: the labels of its series, Flink's task scope (host,
// tm_id, job_id, job_name, task_id, task_attempt_id, task_name,
// task_attempt_num, subtask_index). task_id is the job vertex's id (as the
// REST API gives it), so two tasks of one name (the job graph makes vertex
// names unique, but a scope built elsewhere need not be) never share a series.
struct TaskScope {
  std::string host;
  std::string tm_id;
  std::string job_id;
  std::string job_name;
  std::string task_name;
  int vertex = 0;
  int subtask = 0;
  int attempt = 0;
};
MetricLabels task_labels(const TaskScope& scope);

// One task's metrics on a TaskManager: its counters, rates (when `rates` is
// not null), watermarks, and its operators' own metrics (`m.operators`),
// labelled with `labels` (the task's scope) and, for operator metrics,
// operator_id (a hash of the operator's uid, 32 hex digits as Flink's) and
// operator_name.
void add_task_metrics(MetricFamilies& out, const MetricLabels& labels, const TaskMetricsSnapshot& m,
                      const JobMetrics::Rates* rates);

}  // namespace weir::cluster

#endif  // WEIR_CLUSTER_METRICS_EXPOSITION_H_
