#include "weir/metrics.h"

#include <algorithm>
#include <stdexcept>

namespace weir {

Histogram::Histogram(int window) : capacity_(window < 1 ? 1 : static_cast<size_t>(window)) {
  if (window < 1) throw std::invalid_argument("histogram window must be at least 1, not " + std::to_string(window));
  window_.reserve(capacity_);
}

void Histogram::update(int64_t value) {
  std::lock_guard<std::mutex> lock(mu_);
  if (window_.size() < capacity_) {
    window_.push_back(value);
  } else {
    window_[next_] = value;
    next_ = (next_ + 1) % window_.size();
  }
  ++count_;
  sum_ += static_cast<double>(value);
}

Histogram::Statistics Histogram::statistics() const {
  std::vector<int64_t> sorted;
  Statistics s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    sorted = window_;
    s.count = count_;
    s.sum = sum_;
  }
  if (sorted.empty()) return s;
  std::sort(sorted.begin(), sorted.end());
  // The nearest rank: the smallest value with at least q of the window at
  // or below it.
  for (double q : {0.5, 0.75, 0.95, 0.98, 0.99, 0.999}) {
    size_t rank = static_cast<size_t>(q * static_cast<double>(sorted.size()) + 0.999999);
    rank = std::clamp<size_t>(rank, 1, sorted.size());
    s.quantiles.emplace_back(q, static_cast<double>(sorted[rank - 1]));
  }
  return s;
}

namespace {

const char* kind_name(int kind) {
  switch (kind) {
    case 0: return "counter";
    case 1: return "gauge";
    default: return "histogram";
  }
}

template <typename Map>
bool holds(const Map& m, std::string_view name) {
  return m.find(name) != m.end();
}

}  // namespace

void MetricGroup::check_name(std::string_view name, Kind kind) const {
  auto bad = [&](const std::string& why) {
    throw std::invalid_argument("metric \"" + std::string(name) + "\": " + why);
  };
  if (name.empty()) bad("a name is needed");
  if (name.size() > 128) bad("longer than 128 characters");
  const auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  if (!letter(name[0])) bad("must start with a letter");
  for (char c : name) {
    if (!letter(c) && !(c >= '0' && c <= '9') && c != '_' && c != '.' && c != '-') {
      bad("only letters, digits, '_', '.' and '-' may appear in a name");
    }
  }
  const int taken = holds(counters_, name) ? 0 : holds(gauges_, name) ? 1 : holds(histograms_, name) ? 2 : -1;
  if (taken >= 0 && taken != static_cast<int>(kind)) {
    bad(std::string("already registered as a ") + kind_name(taken) + ", asked for as a " +
        kind_name(static_cast<int>(kind)));
  }
}

Counter& MetricGroup::counter(std::string_view name) { return *shared_counter(name); }

std::shared_ptr<Counter> MetricGroup::shared_counter(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = counters_.find(name); it != counters_.end()) return it->second;
  check_name(name, Kind::kCounter);
  return counters_.emplace(std::string(name), std::make_shared<Counter>()).first->second;
}

void MetricGroup::share_counter(std::string_view name, std::shared_ptr<Counter> counter) {
  std::lock_guard<std::mutex> lock(mu_);
  check_name(name, Kind::kCounter);
  if (counters_.count(name) != 0) throw std::invalid_argument("metric '" + std::string(name) + "' is taken");
  counters_.emplace(std::string(name), std::move(counter));
}

Gauge& MetricGroup::gauge(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = gauges_.find(name); it != gauges_.end()) return *it->second;
  check_name(name, Kind::kGauge);
  return *gauges_.emplace(std::string(name), std::make_unique<Gauge>()).first->second;
}

Histogram& MetricGroup::histogram(std::string_view name, int window) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = histograms_.find(name); it != histograms_.end()) return *it->second;
  check_name(name, Kind::kHistogram);
  return *histograms_.emplace(std::string(name), std::make_unique<Histogram>(window)).first->second;
}

MetricGroup::Values MetricGroup::values(bool with_histograms) const {
  Values v;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [name, c] : counters_) v.counters.emplace(name, c->count());
  for (const auto& [name, g] : gauges_) v.gauges.emplace(name, g->value());
  if (!with_histograms) return v;
  for (const auto& [name, h] : histograms_) v.histograms.emplace(name, h->statistics());
  return v;
}

}  // namespace weir
