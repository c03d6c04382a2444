// Where weir's log goes and how much of it: stderr by default, or a file
// that rotates by size (`--log-file`); the level from `--log-level`, else
// `--verbose` (info), else $WEIR_LOG_LEVEL, else the command's default
// (info for the JobManager and TaskManagers, warn for the rest). Results
// go to stdout, never to the log.
#ifndef WEIR_CLI_LOGGING_H_
#define WEIR_CLI_LOGGING_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace weir::cli {

struct LogOptions {
  std::string level;                 // "" unless given: trace, debug, info, warn, error, off
  bool verbose = false;              // info, unless level is given
  std::string default_level = "warn";
  std::string file;                  // "" : stderr
  std::string max_size = "100mb";    // a file rotates when it would grow past this
  int max_files = 5;                 // rotated files kept beside it (FILE.1 .. FILE.N)
};

// Sets the process's logger; an error names the option (or variable) and
// what is wrong with it.
absl::Status configure_logging(const LogOptions& options);

}  // namespace weir::cli

#endif  // WEIR_CLI_LOGGING_H_
