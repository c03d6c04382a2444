// The S3 connection flags of the commands whose process reads or writes
// s3:// storage (`weir jobmanager`, `weir taskmanager`, the embedded job
// commands): --s3-endpoint, --s3-region, --s3-access-key,
// --s3-secret-key-file, --s3-ca-file. The config file's [s3] section gives
// the same keys without the prefix (cli/config_file.h); the environment
// (AWS_*) fills what neither gives (checkpoint/s3_client.h).
#ifndef WEIR_CLI_S3_OPTIONS_H_
#define WEIR_CLI_S3_OPTIONS_H_

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "s3/s3_client.h"

namespace weir::cli {

void add_s3_options(CLI::App* command, s3::S3Options* options);

// The flags add_s3_options adds, with their leading dashes.
const std::vector<std::string>& s3_option_names();

}  // namespace weir::cli

#endif  // WEIR_CLI_S3_OPTIONS_H_
