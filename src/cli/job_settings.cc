#include "cli/job_settings.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "weir/config.h"

namespace weir::cli {
namespace {

enum class Kind { kNumber, kDuration, kPath, kBool, kChoice };

// One key: the flag it sets and how its value is read. For kChoice,
// `choices` maps Flink's spellings (lower case, '_' as '-') to the flag's;
// for kBool, `flag` is given when the value is `when`.
struct Setting {
  const char* key;
  const char* flag;
  Kind kind;
  std::vector<std::pair<std::string, std::string>> choices = {};
  bool when = true;
};

const std::vector<Setting>& settings() {
  static const std::vector<Setting> kSettings = {
      {"parallelism.default", "--parallelism", Kind::kNumber},
      {"pipeline.max-parallelism", "--max-parallelism", Kind::kNumber},
      {"execution.checkpointing.interval", "--checkpoint-interval", Kind::kDuration},
      {"execution.checkpointing.mode", "--mode", Kind::kChoice,
       {{"exactly-once", "exactly-once"}, {"at-least-once", "at-least-once"}, {"at-most-once", "at-most-once"},
        {"none", "none"}}},
      {"execution.checkpointing.unaligned.enabled", "--checkpointing", Kind::kChoice,
       {{"true", "unaligned"}, {"false", "aligned"}}},
      {"execution.checkpointing.unaligned", "--checkpointing", Kind::kChoice,
       {{"true", "unaligned"}, {"false", "aligned"}}},
      {"execution.checkpointing.aligned-checkpoint-timeout", "--aligned-checkpoint-timeout", Kind::kDuration},
      {"taskmanager.network.memory.buffer-debloat.enabled", "--buffer-debloat", Kind::kBool},
      {"taskmanager.network.memory.buffer-debloat.target", "--buffer-debloat-target", Kind::kDuration},
      {"execution.checkpointing.dir", "--checkpoint-dir", Kind::kPath},
      {"state.checkpoints.dir", "--checkpoint-dir", Kind::kPath},
      {"execution.checkpointing.savepoint-dir", "--savepoint-dir", Kind::kPath},
      {"state.savepoints.dir", "--savepoint-dir", Kind::kPath},
      {"execution.checkpointing.num-retained", "--retained-checkpoints", Kind::kNumber},
      {"state.checkpoints.num-retained", "--retained-checkpoints", Kind::kNumber},
      {"execution.checkpointing.tolerable-failed-checkpoints", "--tolerable-checkpoint-failures", Kind::kNumber},
      {"execution.checkpointing.incremental", "--incremental", Kind::kBool},
      {"state.backend.incremental", "--incremental", Kind::kBool},
      {"state.backend.changelog.enabled", "--changelog", Kind::kBool},
      {"state.backend.changelog.periodic-materialize.interval", "--changelog-materialize-interval", Kind::kDuration},
      {"state.backend.type", "--state", Kind::kChoice, {{"hashmap", "heap"}, {"heap", "heap"}, {"rocksdb", "rocksdb"}}},
      {"state.backend", "--state", Kind::kChoice, {{"hashmap", "heap"}, {"heap", "heap"}, {"rocksdb", "rocksdb"}}},
      {"state.backend.local-recovery", "--no-local-recovery", Kind::kBool, {}, /*when=*/false},
      {"state.backend.rocksdb.localdir", "--state-dir", Kind::kPath},
      {"restart-strategy.type", "--restart-strategy", Kind::kChoice,
       {{"fixed-delay", "fixed-delay"}, {"fixeddelay", "fixed-delay"}, {"exponential-delay", "exponential-delay"},
        {"exponentialdelay", "exponential-delay"}, {"failure-rate", "failure-rate"}, {"failurerate", "failure-rate"},
        {"none", "none"}, {"off", "none"}, {"disable", "none"}}},
      {"restart-strategy.fixed-delay.attempts", "--restart-attempts", Kind::kNumber},
      {"restart-strategy.fixed-delay.delay", "--restart-delay", Kind::kDuration},
      {"restart-strategy.exponential-delay.initial-backoff", "--restart-delay", Kind::kDuration},
      {"restart-strategy.failure-rate.delay", "--restart-delay", Kind::kDuration},
      {"restart-strategy.failure-rate.max-failures-per-interval", "--failure-rate-max", Kind::kNumber},
      {"restart-strategy.failure-rate.failure-rate-interval", "--failure-rate-interval", Kind::kDuration},
      {"jobmanager.execution.failover-strategy", "--failover", Kind::kChoice,
       {{"region", "region"}, {"full", "full"}, {"task", "task"}}},
      {"execution.runtime-mode", "--runtime-mode", Kind::kChoice, {{"streaming", "streaming"}, {"batch", "batch"}}},
      {"slot.request.timeout", "--slot-timeout", Kind::kDuration},
  };
  return kSettings;
}

std::string lower(std::string s) {
  for (char& c : s) c = c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Whether `args` give `flag` (or -p for --parallelism) themselves.
bool given(const std::vector<std::string>& args, const std::string& flag) {
  for (const std::string& a : args) {
    if (a == flag || a.rfind(flag + "=", 0) == 0) return true;
    if (flag == "--parallelism" && a.rfind("-p", 0) == 0) return true;
  }
  return false;
}

// The flag's arguments for `value` of `s`: {flag, value}, {flag} or {}.
absl::StatusOr<std::vector<std::string>> as_flag(const Setting& s, const std::string& value) {
  auto bad = [&](const std::string& expected) {
    return absl::InvalidArgumentError("job setting " + std::string(s.key) + "=" + value + ": expected " + expected);
  };
  switch (s.kind) {
    case Kind::kNumber:
      if (!all_digits(value) && !(value.size() > 1 && value[0] == '-' && all_digits(value.substr(1)))) {
        return bad("a whole number");
      }
      return std::vector<std::string>{s.flag, value};
    case Kind::kDuration: {
      // Flink reads a bare number as milliseconds.
      const std::string text = all_digits(value) ? value + "ms" : value;
      if (!parse_duration(text).ok()) return bad("a duration (500ms, 30 s, 1 min, 1h30m)");
      return std::vector<std::string>{s.flag, text};
    }
    case Kind::kPath: {
      std::string path = value.rfind("file://", 0) == 0 ? value.substr(7) : value;
      if (path.empty() || path.find("://") != std::string::npos) return bad("a local path or file:// URI");
      return std::vector<std::string>{s.flag, path};
    }
    case Kind::kBool: {
      const std::string v = lower(value);
      if (v != "true" && v != "false") return bad("true or false");
      if ((v == "true") == s.when) return std::vector<std::string>{s.flag};
      return std::vector<std::string>{};
    }
    case Kind::kChoice: {
      const std::string v = lower(value);
      std::string names;
      for (const auto& [from, to] : s.choices) {
        if (v == from) return std::vector<std::string>{s.flag, to};
        names += (names.empty() ? "" : " | ") + from;
      }
      return bad(names);
    }
  }
  return bad("a value");
}

}  // namespace

absl::Status take_settings(std::vector<std::string>* args, JobSettings* out) {
  std::vector<std::string> kept;
  for (size_t i = 0; i < args->size(); ++i) {
    const std::string& a = (*args)[i];
    if (a.rfind("-D", 0) != 0) {
      kept.push_back(a);
      continue;
    }
    std::string setting = a.substr(2);
    if (setting.empty()) {
      if (i + 1 == args->size()) return absl::InvalidArgumentError("-D needs key=value (e.g. -D parallelism.default=4)");
      setting = (*args)[++i];
    }
    const size_t eq = setting.find('=');
    if (eq == std::string::npos || eq == 0) {
      return absl::InvalidArgumentError("-D " + setting + ": expected key=value (e.g. -D parallelism.default=4)");
    }
    out->emplace_back(setting.substr(0, eq), setting.substr(eq + 1));
  }
  *args = std::move(kept);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> settings_as_flags(const JobSettings& in, const std::vector<std::string>& args) {
  // The last setting of a flag wins, whichever key set it.
  std::vector<std::pair<std::string, std::vector<std::string>>> flags;
  for (const auto& setting : in) {
    const std::string& key = setting.first;
    const std::string& value = setting.second;
    auto s = std::find_if(settings().begin(), settings().end(), [&](const Setting& x) { return key == x.key; });
    if (s == settings().end()) {
      return absl::InvalidArgumentError("unknown job setting '" + key + "' (known: " + known_setting_keys() + ")");
    }
    auto f = as_flag(*s, value);
    if (!f.ok()) return f.status();
    flags.erase(std::remove_if(flags.begin(), flags.end(), [&](const auto& x) { return x.first == s->flag; }),
                flags.end());
    flags.emplace_back(s->flag, *std::move(f));
  }
  std::vector<std::string> out;
  for (const auto& [flag, words] : flags) {
    if (!given(args, flag)) out.insert(out.end(), words.begin(), words.end());
  }
  return out;
}

absl::StatusOr<JobSettings> config_job_settings(const std::string& path) {
  JobSettings out;
  if (path.empty()) return out;
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError("cannot read config file " + path + ": " + std::strerror(errno));
  std::vector<CLI::ConfigItem> items;
  try {
    items = CLI::ConfigTOML().from_config(in);
  } catch (const CLI::Error& e) {
    return absl::InvalidArgumentError("config file " + path + ": " + e.what());
  }
  for (const auto& item : items) {
    if (item.parents.empty() || item.parents[0] != "job" || item.name == "++" || item.name == "--") continue;
    // A dotted key (execution.checkpointing.interval = "1s") arrives split
    // into parents; a quoted one too, with its quotes.
    std::string key;
    for (size_t i = 1; i < item.parents.size(); ++i) key += item.parents[i] + ".";
    key += item.name;
    if (key.size() >= 2 && (key.front() == '"' || key.front() == '\'') && key.back() == key.front()) {
      key = key.substr(1, key.size() - 2);
    }
    if (item.inputs.size() != 1) {
      return absl::InvalidArgumentError("config file " + path + ": 'job." + key + "' needs one value");
    }
    out.emplace_back(key, item.inputs[0]);
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> with_job_settings(const std::vector<std::string>& job_args,
                                                           const std::string& config_path) {
  std::vector<std::string> args = job_args;
  auto settings = config_job_settings(config_path);
  if (!settings.ok()) return settings.status();
  if (absl::Status s = take_settings(&args, &*settings); !s.ok()) return s;
  auto flags = settings_as_flags(*settings, args);
  if (!flags.ok()) {
    return absl::InvalidArgumentError(std::string(flags.status().message()) +
                                      (config_path.empty() ? "" : " (-D or config file " + config_path + ")"));
  }
  flags->insert(flags->end(), args.begin(), args.end());
  return flags;
}

absl::Status check_job_setting(const std::string& key, const std::string& value) {
  auto s = std::find_if(settings().begin(), settings().end(), [&](const Setting& x) { return key == x.key; });
  if (s == settings().end()) return absl::NotFoundError("unknown job setting '" + key + "'");
  auto f = as_flag(*s, value);
  if (!f.ok()) return f.status();
  return absl::OkStatus();
}

std::vector<std::string> setting_keys() {
  std::vector<std::string> out;
  for (const Setting& s : settings()) out.emplace_back(s.key);
  return out;
}

std::string known_setting_keys() {
  std::string out;
  for (const Setting& s : settings()) out += (out.empty() ? "" : ", ") + std::string(s.key);
  return out;
}

}  // namespace weir::cli
