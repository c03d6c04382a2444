// `weir`'s command line: the engine's commands (the cluster's, `weir run`,
// `weir sql`) and those of cli/extensions.h, parsed and run. The exit codes
// are cli/exit_codes.h's (docs/cli.md).
#ifndef WEIR_CLI_COMMAND_LINE_H_
#define WEIR_CLI_COMMAND_LINE_H_

namespace weir::cli {

// Runs the command `argv` names; its exit code.
int run_command_line(int argc, char** argv);

}  // namespace weir::cli

#endif  // WEIR_CLI_COMMAND_LINE_H_
