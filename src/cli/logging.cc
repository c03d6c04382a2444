#include "cli/logging.h"

#include <spdlog/sinks/rotating_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <memory>

#include "cluster/log_tail.h"
#include "weir/config.h"

namespace weir::cli {
namespace {

constexpr const char* kLevels = "trace, debug, info, warn, error or off";

absl::Status parse_level(const std::string& text, const std::string& what, spdlog::level::level_enum* out) {
  static const std::pair<const char*, spdlog::level::level_enum> kNames[] = {
      {"trace", spdlog::level::trace}, {"debug", spdlog::level::debug},   {"info", spdlog::level::info},
      {"warn", spdlog::level::warn},   {"warning", spdlog::level::warn},  {"error", spdlog::level::err},
      {"off", spdlog::level::off}};
  for (const auto& [name, level] : kNames) {
    if (text == name) {
      *out = level;
      return absl::OkStatus();
    }
  }
  return absl::InvalidArgumentError(what + ": '" + text + "' is not a log level (" + kLevels + ")");
}

}  // namespace

absl::Status configure_logging(const LogOptions& o) {
  spdlog::level::level_enum level;
  absl::Status s;
  const char* env = std::getenv("WEIR_LOG_LEVEL");
  if (!o.level.empty()) {
    s = parse_level(o.level, "--log-level", &level);
  } else if (o.verbose) {
    level = spdlog::level::info;
  } else if (env != nullptr && *env != '\0') {
    s = parse_level(env, "WEIR_LOG_LEVEL", &level);
  } else {
    s = parse_level(o.default_level, "the default log level", &level);
  }
  if (!s.ok()) return s;
  std::shared_ptr<spdlog::logger> logger;
  if (o.file.empty()) {
    logger = std::make_shared<spdlog::logger>("weir", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
  } else {
    auto size = parse_memory_size(o.max_size);
    if (!size.ok()) return absl::InvalidArgumentError("--log-max-size: " + std::string(size.status().message()));
    if (*size < 4096) return absl::InvalidArgumentError("--log-max-size: " + o.max_size + " is below 4kb");
    if (o.max_files < 1 || o.max_files > 1000) {
      return absl::InvalidArgumentError("--log-max-files: " + std::to_string(o.max_files) +
                                        " is not between 1 and 1000");
    }
    try {
      logger = std::make_shared<spdlog::logger>(
          "weir", std::make_shared<spdlog::sinks::rotating_file_sink_mt>(o.file, static_cast<size_t>(*size),
                                                                         static_cast<size_t>(o.max_files)));
    } catch (const spdlog::spdlog_ex& e) {
      return absl::InvalidArgumentError("--log-file " + o.file + ": " + e.what());
    }
    // A line is on disk when it is logged: a process killed a moment later
    // keeps its last words.
    logger->flush_on(spdlog::level::trace);
  }
  // Its tail stays in memory too, for the REST API and the web UI.
  auto tail = std::make_shared<cluster::LogTail>();
  logger->sinks().push_back(tail);
  cluster::LogTail::set_process(tail);
  spdlog::set_default_logger(logger);
  spdlog::set_level(level);
  spdlog::set_pattern("%Y-%m-%d %H:%M:%S.%e %l %v");
  return absl::OkStatus();
}

}  // namespace weir::cli
