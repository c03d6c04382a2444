// The exit codes of `weir` (docs/cli.md, "Exit codes") and the one-line
// error every command ends with.
#ifndef WEIR_CLI_EXIT_CODES_H_
#define WEIR_CLI_EXIT_CODES_H_

#include <cstdio>
#include <string>

namespace weir::cli {

inline constexpr int kOk = 0;
inline constexpr int kMismatch = 1;            // weir verify: the output is not what the input implies
inline constexpr int kBadArguments = 2;        // names the argument (or the SQL's line and column)
inline constexpr int kBadInput = 3;            // unusable input, output or checkpoint
inline constexpr int kJobFailed = 4;           // the restart strategy gave up, or a failure no restart fixes
inline constexpr int kClusterUnreachable = 5;  // no JobManager at the address
inline constexpr int kClusterRefused = 6;      // the secret was missing or wrong
inline constexpr int kInterrupted = 7;         // weir run (attached): SIGINT or SIGTERM

// Prints "weir: MESSAGE" on stderr; returns `code`.
inline int fail(int code, const std::string& message) {
  std::fprintf(stderr, "weir: %s\n", message.c_str());
  return code;
}

}  // namespace weir::cli

#endif  // WEIR_CLI_EXIT_CODES_H_
