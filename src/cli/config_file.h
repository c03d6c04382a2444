// The config file of the cluster commands (`--config FILE`, $WEIR_CONFIG).
#ifndef WEIR_CLI_CONFIG_FILE_H_
#define WEIR_CLI_CONFIG_FILE_H_

#include <CLI/CLI.hpp>
#include <istream>
#include <string>

#include "absl/status/status.h"

namespace weir::cli {

// Options from a config file (TOML subset, docs/cli.md): the top-level keys
// secret-file and verbose, and per role the sections [jobmanager],
// [taskmanager] and [client], whose keys are the long options of those
// commands ([job] holds job settings by Flink's keys: cli/job_settings.h).
// The [s3] section gives every command that takes them its --s3-KEY options
// (cli/s3_options.h); with `role` kS3Only nothing else is applied (the
// embedded job commands). An option given on the command line wins.
// Unknown sections and keys are errors naming the file and the key.
inline constexpr char kS3Only[] = "s3-only";
absl::Status apply_config(const std::string& path, CLI::App* command, const std::string& role);
// The same, read from `in`; `path` names it in errors.
absl::Status apply_config(std::istream& in, const std::string& path, CLI::App* command, const std::string& role);

}  // namespace weir::cli

#endif  // WEIR_CLI_CONFIG_FILE_H_
