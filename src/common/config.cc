#include "weir/config.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include "weir/job_result.h"

namespace weir {

absl::StatusOr<Duration> parse_duration(std::string_view text) {
  auto invalid = [&](const std::string& why) {
    return absl::InvalidArgumentError("invalid duration '" + std::string(text) + "': " + why);
  };
  auto is_space = [](char c) { return c == ' ' || c == '\t'; };
  std::string_view rest = text;
  auto skip_spaces = [&] {
    while (!rest.empty() && is_space(rest.front())) rest.remove_prefix(1);
  };
  skip_spaces();
  if (rest.empty()) return invalid("expected a number with a unit (ms, s, min, h, d)");
  constexpr double kMaxMs = 100.0 * 365 * 24 * 3600 * 1000;
  double total_ms = 0;
  int parts = 0;
  while (!rest.empty()) {
    size_t n = 0;
    while (n < rest.size() && (std::isdigit(static_cast<unsigned char>(rest[n])) || rest[n] == '.')) ++n;
    double value = 0;
    auto [p, ec] = std::from_chars(rest.data(), rest.data() + n, value);
    if (n == 0 || ec != std::errc() || p != rest.data() + n) {
      return invalid("expected a number with a unit (ms, s, min, h, d)");
    }
    rest.remove_prefix(n);
    skip_spaces();
    size_t u = 0;
    while (u < rest.size() && std::isalpha(static_cast<unsigned char>(rest[u]))) ++u;
    std::string unit(rest.substr(0, u));
    rest.remove_prefix(u);
    skip_spaces();
    for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    double factor;
    if (unit.empty()) {
      // A plain number is milliseconds; in a sum every part names its unit.
      if (parts > 0 || !rest.empty()) return invalid("a number without a unit");
      factor = 1;
    } else if (unit == "ms" || unit == "milli" || unit == "millis" || unit == "millisecond" ||
               unit == "milliseconds") {
      factor = 1;
    } else if (unit == "s" || unit == "sec" || unit == "secs" || unit == "second" || unit == "seconds") {
      factor = 1000;
    } else if (unit == "m" || unit == "min" || unit == "mins" || unit == "minute" || unit == "minutes") {
      factor = 60 * 1000;
    } else if (unit == "h" || unit == "hour" || unit == "hours") {
      factor = 3600 * 1000;
    } else if (unit == "d" || unit == "day" || unit == "days") {
      factor = 24 * 3600 * 1000;
    } else {
      return invalid("unknown unit '" + unit + "'");
    }
    total_ms += value * factor;
    if (total_ms > kMaxMs) return invalid("more than 100 years");
    ++parts;
  }
  const double nearest = std::round(total_ms);
  if (std::abs(total_ms - nearest) > 1e-6 * std::max(1.0, total_ms)) return invalid("finer than a millisecond");
  return Duration(static_cast<int64_t>(nearest));
}

absl::StatusOr<int64_t> parse_memory_size(std::string_view text) {
  int64_t value = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  auto [p, ec] = std::from_chars(begin, end, value);
  auto invalid = [&](const std::string& why) {
    return absl::InvalidArgumentError("invalid memory size '" + std::string(text) + "': " + why);
  };
  if (ec != std::errc() || p == begin || value < 0) return invalid("expected a number of bytes with a unit (b, kb, mb, gb)");
  std::string unit(p, end);
  if (!unit.empty() && unit[0] == ' ') unit.erase(0, 1);
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  int shift;
  if (unit.empty() || unit == "b") {
    shift = 0;
  } else if (unit == "k" || unit == "kb" || unit == "kib") {
    shift = 10;
  } else if (unit == "m" || unit == "mb" || unit == "mib") {
    shift = 20;
  } else if (unit == "g" || unit == "gb" || unit == "gib") {
    shift = 30;
  } else {
    return invalid("unknown unit '" + unit + "'");
  }
  if (value > (INT64_MAX >> shift)) return invalid("too large");
  return value << shift;
}

std::string format_duration(Duration d) {
  const int64_t ms = d.count();
  if (ms != 0 && ms % (60 * 1000) == 0) return std::to_string(ms / (60 * 1000)) + "min";
  if (ms != 0 && ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

absl::StatusOr<RestartStrategyKind> parse_restart_strategy(std::string_view text) {
  if (text == "fixed-delay") return RestartStrategyKind::kFixedDelay;
  if (text == "exponential-delay") return RestartStrategyKind::kExponentialDelay;
  if (text == "failure-rate") return RestartStrategyKind::kFailureRate;
  if (text == "none") return RestartStrategyKind::kNone;
  return absl::InvalidArgumentError("invalid --restart-strategy '" + std::string(text) +
                                    "': expected fixed-delay, exponential-delay, failure-rate or none");
}

std::string_view to_string(RestartStrategyKind kind) {
  switch (kind) {
    case RestartStrategyKind::kFixedDelay: return "fixed-delay";
    case RestartStrategyKind::kExponentialDelay: return "exponential-delay";
    case RestartStrategyKind::kFailureRate: return "failure-rate";
    case RestartStrategyKind::kNone: return "none";
  }
  return "?";
}

std::string_view to_string(FailoverStrategy strategy) {
  switch (strategy) {
    case FailoverStrategy::kRegion: return "region";
    case FailoverStrategy::kFull: return "full";
    case FailoverStrategy::kTask: return "task";
  }
  return "?";
}

absl::StatusOr<CheckpointingMode> parse_checkpointing_mode(std::string_view text) {
  if (text == "exactly-once") return CheckpointingMode::kExactlyOnce;
  if (text == "at-least-once") return CheckpointingMode::kAtLeastOnce;
  if (text == "at-most-once") return CheckpointingMode::kAtMostOnce;
  if (text == "none") return CheckpointingMode::kNone;
  return absl::InvalidArgumentError("invalid mode '" + std::string(text) +
                                    "': expected exactly-once, at-least-once, at-most-once or none");
}

std::string_view to_string(CheckpointingMode mode) {
  switch (mode) {
    case CheckpointingMode::kExactlyOnce: return "exactly-once";
    case CheckpointingMode::kAtLeastOnce: return "at-least-once";
    case CheckpointingMode::kNone: return "none";
    case CheckpointingMode::kAtMostOnce: return "at-most-once";
  }
  return "?";
}

absl::StatusOr<FailoverStrategy> parse_failover_strategy(std::string_view text) {
  if (text == "region") return FailoverStrategy::kRegion;
  if (text == "full") return FailoverStrategy::kFull;
  if (text == "task") return FailoverStrategy::kTask;
  return absl::InvalidArgumentError("invalid failover strategy '" + std::string(text) +
                                    "': expected region, full or task");
}

absl::StatusOr<RuntimeMode> parse_runtime_mode(std::string_view text) {
  if (text == "streaming") return RuntimeMode::kStreaming;
  if (text == "batch") return RuntimeMode::kBatch;
  return absl::InvalidArgumentError("invalid runtime mode '" + std::string(text) + "': expected streaming or batch");
}

std::string_view to_string(RuntimeMode mode) {
  return mode == RuntimeMode::kBatch ? "batch" : "streaming";
}

absl::StatusOr<ExchangeMode> parse_exchange_mode(std::string_view text) {
  if (text == "pipelined") return ExchangeMode::kPipelined;
  if (text == "blocking") return ExchangeMode::kBlocking;
  if (text == "persisted") return ExchangeMode::kPersisted;
  return absl::InvalidArgumentError("invalid exchange mode '" + std::string(text) +
                                    "': expected pipelined, blocking or persisted");
}

std::string_view to_string(ExchangeMode mode) {
  switch (mode) {
    case ExchangeMode::kPipelined: return "pipelined";
    case ExchangeMode::kBlocking: return "blocking";
    case ExchangeMode::kPersisted: return "persisted";
  }
  return "?";
}

absl::StatusOr<StateBackendKind> parse_state_backend(std::string_view text) {
  if (text == "heap") return StateBackendKind::kHeap;
  if (text == "rocksdb") return StateBackendKind::kRocksDb;
  return absl::InvalidArgumentError("invalid state backend '" + std::string(text) +
                                    "': expected heap or rocksdb");
}

std::string_view to_string(StateBackendKind kind) {
  switch (kind) {
    case StateBackendKind::kHeap: return "heap";
    case StateBackendKind::kRocksDb: return "rocksdb";
  }
  return "?";
}

std::string_view to_string(JobStatus s) {
  switch (s) {
    case JobStatus::kCreated: return "CREATED";
    case JobStatus::kRunning: return "RUNNING";
    case JobStatus::kRestarting: return "RESTARTING";
    case JobStatus::kFinished: return "FINISHED";
    case JobStatus::kFailed: return "FAILED";
    case JobStatus::kCanceled: return "CANCELED";
  }
  return "?";
}

}  // namespace weir
