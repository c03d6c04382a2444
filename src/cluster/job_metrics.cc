#include "cluster/job_metrics.h"

#include <algorithm>
#include <cmath>

namespace weir::cluster {

void JobMetrics::report(const runtime::ExecutionId& id, const TaskMetricsSnapshot& m, int64_t now_ms) {
  absl::MutexLock lock(&mu_);
  auto [it, fresh] = subtasks_.try_emplace({id.vertex, id.subtask});
  Subtask& s = it->second;
  if (!fresh && id.attempt < s.attempt) return;  // a late report of an older attempt
  if (fresh || id.attempt > s.attempt) {
    const int64_t earlier_in = fresh ? 0 : s.earlier_records_in + s.now.records_in;
    const int64_t earlier_out = fresh ? 0 : s.earlier_records_out + s.now.records_out;
    s = Subtask{};
    s.attempt = id.attempt;
    s.earlier_records_in = earlier_in;
    s.earlier_records_out = earlier_out;
    s.now = s.base = m;
    s.base_ms = now_ms;
    return;
  }
  s.now = m;
  const int64_t dt = now_ms - s.base_ms;
  if (dt < 1000) return;
  auto per_s = [dt](int64_t a, int64_t b) { return static_cast<double>(a - b) * 1000.0 / static_cast<double>(dt); };
  s.rates.records_in = per_s(m.records_in, s.base.records_in);
  s.rates.records_out = per_s(m.records_out, s.base.records_out);
  s.rates.bytes_in = per_s(m.bytes_in, s.base.bytes_in);
  s.rates.bytes_out = per_s(m.bytes_out, s.base.bytes_out);
  s.rates.backpressured_ms = std::clamp(per_s(m.backpressured_ms, s.base.backpressured_ms), 0.0, 1000.0);
  s.rates.idle_ms = std::clamp(per_s(m.idle_ms, s.base.idle_ms), 0.0, 1000.0 - s.rates.backpressured_ms);
  s.rates.busy_ms = 1000.0 - s.rates.backpressured_ms - s.rates.idle_ms;
  s.has_rates = true;
  s.base = m;
  s.base_ms = now_ms;
}

std::optional<JobMetrics::Rates> JobMetrics::rates(int vertex, int subtask, int attempt) {
  absl::MutexLock lock(&mu_);
  auto it = subtasks_.find({vertex, subtask});
  if (it == subtasks_.end() || it->second.attempt != attempt || !it->second.has_rates) return std::nullopt;
  return it->second.rates;
}

nlohmann::json JobMetrics::subtask_json(int vertex, int subtask, int attempt) {
  absl::MutexLock lock(&mu_);
  auto it = subtasks_.find({vertex, subtask});
  if (it == subtasks_.end() || it->second.attempt != attempt) return nullptr;
  return to_json(it->second.now, it->second.rates, it->second.has_rates);
}

nlohmann::json JobMetrics::vertex_json(int vertex) {
  absl::MutexLock lock(&mu_);
  TaskMetricsSnapshot sum;
  Rates rates;
  bool any = false, has_rates = false;
  int attempts = 1;
  int64_t all_in = 0, all_out = 0;
  for (const auto& [key, s] : subtasks_) {
    if (key.first != vertex) continue;
    attempts = std::max(attempts, s.attempt + 1);
    all_in += s.earlier_records_in + s.now.records_in;
    all_out += s.earlier_records_out + s.now.records_out;
    // The vertex's watermarks are its subtasks' lowest.
    const int64_t in_wm = any ? std::min(sum.input_watermark, s.now.input_watermark) : s.now.input_watermark;
    const int64_t out_wm = any ? std::min(sum.output_watermark, s.now.output_watermark) : s.now.output_watermark;
    any = true;
    sum += s.now;
    sum.input_watermark = in_wm;
    sum.output_watermark = out_wm;
    if (!s.has_rates) continue;
    has_rates = true;
    rates.records_in += s.rates.records_in;
    rates.records_out += s.rates.records_out;
    rates.bytes_in += s.rates.bytes_in;
    rates.bytes_out += s.rates.bytes_out;
    rates.backpressured_ms = std::max(rates.backpressured_ms, s.rates.backpressured_ms);
    rates.busy_ms = std::max(rates.busy_ms, s.rates.busy_ms);
    rates.idle_ms = std::max(rates.idle_ms, s.rates.idle_ms);
  }
  if (!any) return nullptr;
  nlohmann::json out = to_json(sum, rates, has_rates);
  // The counts above are the current attempts'; with restarts, all of them.
  if (attempts > 1) {
    out["all_attempts"] = {{"attempts", attempts}, {"records_in", all_in}, {"records_out", all_out}};
  }
  return out;
}

nlohmann::json JobMetrics::to_json(const TaskMetricsSnapshot& m, const Rates& r, bool has_rates) {
  nlohmann::json out = {{"records_in", m.records_in},     {"records_out", m.records_out},
                        {"bytes_in", m.bytes_in},         {"bytes_out", m.bytes_out},
                        {"backpressured_ms", m.backpressured_ms}, {"idle_ms", m.idle_ms},
                        {"gauges", nlohmann::json::object()}};
  for (const auto& [name, v] : m.gauges) out["gauges"][name] = v;
  auto watermark = [](int64_t w) { return w == INT64_MIN ? nlohmann::json() : nlohmann::json(w); };
  out["input_watermark"] = watermark(m.input_watermark);
  out["output_watermark"] = watermark(m.output_watermark);
  if (!has_rates) return out;  // one report so far: no rates yet
  out["records_in_per_s"] = std::llround(r.records_in);
  out["records_out_per_s"] = std::llround(r.records_out);
  out["bytes_in_per_s"] = std::llround(r.bytes_in);
  out["bytes_out_per_s"] = std::llround(r.bytes_out);
  out["backpressured_ms_per_s"] = std::llround(r.backpressured_ms);
  out["idle_ms_per_s"] = std::llround(r.idle_ms);
  out["busy_ms_per_s"] = std::llround(r.busy_ms);
  // The levels of Flink's web UI: up to 10% ok, up to 50% low, else high.
  out["backpressure"] = r.backpressured_ms <= 100 ? "ok" : r.backpressured_ms <= 500 ? "low" : "high";
  return out;
}

}  // namespace weir::cluster
