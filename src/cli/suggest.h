// Parse errors of the command line with a suggestion: an option CLI11 did
// not expect ("--chekpoint-dir") named with the nearest one the command
// has ("did you mean --checkpoint-dir?"), as Flink's and git's CLIs do.
#ifndef WEIR_CLI_SUGGEST_H_
#define WEIR_CLI_SUGGEST_H_

#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

namespace weir::cli {

// The message of `e` as `app` (the command that was parsed) gives it, with
// " (did you mean --x?)" after it when an unexpected argument is an option
// within a few edits of one of the command's (or of its parsed
// subcommands').
std::string parse_error_message(const CLI::ParseError& e, const CLI::App& app);

// Of `candidates`, the one nearest `word` (common/nearest.h); else empty.
std::string nearest(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace weir::cli

#endif  // WEIR_CLI_SUGGEST_H_
