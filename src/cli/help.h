// How weir's --help reads: every option with a plain word for its value
// (N, DURATION, SIZE, ...) instead of the parser's types and ranges, and
// its default after the description. setup_help() gives an App (and the
// subcommands added to it afterwards) this format and has every option
// added afterwards record its default.
#ifndef WEIR_CLI_HELP_H_
#define WEIR_CLI_HELP_H_

#include <CLI/CLI.hpp>

#include <string>

namespace weir::cli {

class HelpFormatter : public CLI::Formatter {
 public:
  HelpFormatter() { column_width(34); }
  std::string make_option_opts(const CLI::Option* opt) const override;
  std::string make_option_desc(const CLI::Option* opt) const override;
};

void setup_help(CLI::App* app);

// The value word of `option` (its longest name): its type name without the
// checks CLI11 appends (INT:INT in [0 - 9] -> N); for text, DURATION, SIZE,
// PATH or HOST:PORT by what the option names, else VALUE.
std::string value_word(const std::string& option, const std::string& type_name);

}  // namespace weir::cli

#endif  // WEIR_CLI_HELP_H_
