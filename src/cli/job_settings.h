// Job settings by Flink's configuration keys: `-D key=value` on the job
// commands (weir run, weir example, weir nexmark) and the [job] section of
// the config file (docs/cli.md, "Job settings"). Each key stands for one of
// the job flags (execution.checkpointing.interval for --checkpoint-interval,
// state.backend.type for --state, ...) and its value is written as Flink
// writes it (EXACTLY_ONCE, hashmap, "30 s", file:///chk) or as the flag
// takes it. They become job flags placed before the job's own arguments:
// a flag given explicitly wins over -D, and -D over the config file. The
// cluster receives plain job flags.
#ifndef WEIR_CLI_JOB_SETTINGS_H_
#define WEIR_CLI_JOB_SETTINGS_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace weir::cli {

using JobSettings = std::vector<std::pair<std::string, std::string>>;  // key, value; later ones win

// Takes every -D out of `args` (`-D key=value`, `-Dkey=value`) and appends
// it to `settings`; a -D without key=value is an error.
absl::Status take_settings(std::vector<std::string>* args, JobSettings* settings);

// The job flags `settings` stand for, leaving out those `args` gives
// explicitly; an unknown key or a bad value is an error naming it.
absl::StatusOr<std::vector<std::string>> settings_as_flags(const JobSettings& settings,
                                                           const std::vector<std::string>& args);

// The [job] section of the config file at `path` ("" when none is given).
absl::StatusOr<JobSettings> config_job_settings(const std::string& path);

// take_settings on `job_args`, then the job flags of the config file's [job]
// section and the -D settings, ahead of the rest: what the job is built
// with.
absl::StatusOr<std::vector<std::string>> with_job_settings(const std::vector<std::string>& job_args,
                                                           const std::string& config_path);

// The keys known, for help and errors.
std::string known_setting_keys();
std::vector<std::string> setting_keys();

// Whether `key` is a job setting and `value` one it takes: NotFound for an
// unknown key, InvalidArgument naming what was expected for a bad value.
// (A SQL script's SET of a key that is not SQL's own.)
absl::Status check_job_setting(const std::string& key, const std::string& value);

}  // namespace weir::cli

#endif  // WEIR_CLI_JOB_SETTINGS_H_
