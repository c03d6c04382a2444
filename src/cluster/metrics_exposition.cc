#include "cluster/metrics_exposition.h"

#include <openssl/evp.h>
#include <prometheus/text_serializer.h>

#include <sstream>

namespace weir::cluster {

prometheus::ClientMetric& MetricFamilies::add(std::string_view name, std::string_view help,
                                              prometheus::MetricType type, const MetricLabels& labels) {
  // A name one operator gave a counter and another a gauge: the second
  // kind's samples go under the name with the kind after it.
  std::string key(name);
  auto it = index_.find(key);
  if (it != index_.end() && families_[it->second].type != type) {
    key += type == prometheus::MetricType::Counter ? "_counter"
           : type == prometheus::MetricType::Gauge ? "_gauge"
                                                   : "_summary";
    it = index_.find(key);
  }
  if (it == index_.end()) {
    prometheus::MetricFamily f;
    f.name = key;
    f.help = std::string(help);
    f.type = type;
    families_.push_back(std::move(f));
    it = index_.emplace(key, families_.size() - 1).first;
  }
  prometheus::ClientMetric& m = families_[it->second].metric.emplace_back();
  for (const auto& [k, v] : labels) m.label.push_back({k, v});
  return m;
}

void MetricFamilies::counter(std::string_view name, std::string_view help, const MetricLabels& labels,
                             double value) {
  add(name, help, prometheus::MetricType::Counter, labels).counter.value = value;
}

void MetricFamilies::gauge(std::string_view name, std::string_view help, const MetricLabels& labels,
                           double value) {
  add(name, help, prometheus::MetricType::Gauge, labels).gauge.value = value;
}

void MetricFamilies::summary(std::string_view name, std::string_view help, const MetricLabels& labels,
                             const Histogram::Statistics& stats) {
  prometheus::ClientMetric& m = add(name, help, prometheus::MetricType::Summary, labels);
  m.summary.sample_count = static_cast<uint64_t>(stats.count);
  m.summary.sample_sum = stats.sum;
  for (const auto& [q, v] : stats.quantiles) m.summary.quantile.push_back({q, v});
}

std::string MetricFamilies::text() const {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families_);
  return out.str();
}

std::string prometheus_name(std::string_view name) {
  std::string out;
  out.reserve(name.size() + 1);
  if (!name.empty() && name[0] >= '0' && name[0] <= '9') out += '_';
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == ':';
    out += ok ? c : '_';
  }
  return out;
}

namespace {

// 32 hex digits of the operator's uid, stable across runs: its MD5 (Flink
// hashes a uid to its 16-byte OperatorID the same way, with Murmur3).
std::string operator_id(const std::string& uid) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(uid.data(), uid.size(), md, &len, EVP_md5(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 0xF];
  }
  return out;
}

}  // namespace

MetricLabels task_labels(const TaskScope& s) {
  const std::string vertex = std::to_string(s.vertex), subtask = std::to_string(s.subtask),
                    attempt = std::to_string(s.attempt);
  return {{"host", s.host},
          {"tm_id", s.tm_id},
          {"job_id", s.job_id},
          {"job_name", s.job_name},
          {"task_id", vertex},
          {"task_attempt_id", s.job_id + "_" + vertex + "_" + subtask + "_" + attempt},
          {"task_name", s.task_name},
          {"task_attempt_num", attempt},
          {"subtask_index", subtask}};
}

void add_task_metrics(MetricFamilies& out, const MetricLabels& labels, const TaskMetricsSnapshot& m,
                      const JobMetrics::Rates* rates) {
  const std::string task = "weir_taskmanager_job_task_";
  out.counter(task + "numRecordsIn", "Records the task read from its input channels.", labels, m.records_in);
  out.counter(task + "numRecordsOut", "Records the task wrote to its output channels (once per channel).", labels,
              m.records_out);
  out.counter(task + "numBytesIn", "Buffer bytes the task read from its input channels.", labels, m.bytes_in);
  out.counter(task + "numBytesOut", "Buffer bytes the task wrote to its output channels.", labels, m.bytes_out);
  out.counter(task + "accumulatedBackPressuredTimeMs", "Time the task waited for output buffers or channel space.",
              labels, m.backpressured_ms);
  out.counter(task + "accumulatedIdleTimeMs", "Time the task waited for input.", labels, m.idle_ms);
  if (rates != nullptr) {
    out.gauge(task + "numRecordsInPerSecond", "Records read per second, over the last second or so.", labels,
              rates->records_in);
    out.gauge(task + "numRecordsOutPerSecond", "Records written per second, over the last second or so.", labels,
              rates->records_out);
    out.gauge(task + "numBytesInPerSecond", "Bytes read per second, over the last second or so.", labels,
              rates->bytes_in);
    out.gauge(task + "numBytesOutPerSecond", "Bytes written per second, over the last second or so.", labels,
              rates->bytes_out);
    out.gauge(task + "backPressuredTimeMsPerSecond", "Milliseconds of each second the task was backpressured.",
              labels, rates->backpressured_ms);
    out.gauge(task + "idleTimeMsPerSecond", "Milliseconds of each second the task waited for input.", labels,
              rates->idle_ms);
    out.gauge(task + "busyTimeMsPerSecond", "Milliseconds of each second the task was neither idle nor backpressured.",
              labels, rates->busy_ms);
  }
  out.gauge(task + "isBackPressured", "1 while an output channel of the task is full, else 0.", labels,
            m.backpressured ? 1 : 0);
  // Flink registers each buffers metric twice: under "buffers" (older
  // dashboards) and under "Shuffle.Netty.Input/Output.Buffers".
  struct Buffers {
    const char* name;
    const char* shuffle;
    const char* help;
    double value;
  };
  for (const Buffers& b : {
           Buffers{"inputQueueLength", "Shuffle_Netty_Input_Buffers_", "Data buffers queued in the input channels.",
                   static_cast<double>(m.input_queue_length)},
           Buffers{"outputQueueLength", "Shuffle_Netty_Output_Buffers_", "Data buffers queued in the output channels.",
                   static_cast<double>(m.output_queue_length)},
           Buffers{"inPoolUsage", "Shuffle_Netty_Input_Buffers_",
                   "Queued input buffers as a share of what the input channels hold at most.", m.in_pool_usage},
           Buffers{"outPoolUsage", "Shuffle_Netty_Output_Buffers_",
                   "Queued output buffers as a share of what the output channels hold at most.", m.out_pool_usage},
       }) {
    out.gauge(task + "buffers_" + b.name, b.help, labels, b.value);
    out.gauge(task + b.shuffle + b.name, b.help, labels, b.value);
  }
  if (m.input_watermark != INT64_MIN) {
    out.gauge(task + "currentInputWatermark", "The event time (ms) the task's inputs have reached.", labels,
              static_cast<double>(m.input_watermark));
  }
  if (m.output_watermark != INT64_MIN) {
    out.gauge(task + "currentOutputWatermark", "The last watermark (ms) the task sent downstream.", labels,
              static_cast<double>(m.output_watermark));
  }
  const std::string op = task + "operator_";
  for (const auto& [uid, values] : m.operators) {
    MetricLabels ol = labels;
    ol.emplace_back("operator_id", operator_id(uid));
    ol.emplace_back("operator_name", uid);
    for (const auto& [name, v] : values.counters) {
      out.counter(op + prometheus_name(name), "A counter of the operator (OperatorContext::metrics).", ol, v);
    }
    for (const auto& [name, v] : values.gauges) {
      out.gauge(op + prometheus_name(name), "A gauge of the operator (OperatorContext::metrics).", ol, v);
    }
    for (const auto& [name, h] : values.histograms) {
      out.summary(op + prometheus_name(name), "A histogram of the operator (OperatorContext::metrics).", ol, h);
    }
  }
}

}  // namespace weir::cluster
