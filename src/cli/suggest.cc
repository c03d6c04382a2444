#include "cli/suggest.h"

#include <sstream>
#include <vector>

#include "common/nearest.h"

namespace weir::cli {
namespace {

// The long options of `app` and of the subcommands that were parsed, as
// "--name".
void long_options(const CLI::App& app, std::vector<std::string>* out) {
  for (const CLI::Option* o : app.get_options()) {
    for (const std::string& name : o->get_lnames()) out->push_back("--" + name);
  }
  for (const CLI::App* sub : app.get_subcommands()) long_options(*sub, out);
}

}  // namespace

std::string nearest(std::string_view word, const std::vector<std::string>& candidates) {
  return nearest_name(word, candidates);
}

std::string parse_error_message(const CLI::ParseError& e, const CLI::App& app) {
  std::string message = e.what();
  if (message.empty()) message = e.get_name();
  if (dynamic_cast<const CLI::ExtrasError*>(&e) == nullptr) return message;
  std::vector<std::string> options;
  long_options(app, &options);
  // "The following argument(s) were not expected: --a --b"
  std::istringstream words(message.substr(message.find(':') + 1));
  for (std::string w; words >> w;) {
    const std::string bare = w.substr(0, w.find('='));
    if (bare.rfind("--", 0) != 0) continue;
    const std::string near = nearest(bare, options);
    if (!near.empty()) return message + " (did you mean " + near + "?)";
  }
  return message;
}

}  // namespace weir::cli
