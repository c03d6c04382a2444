#include "cli/suggest.h"

#include <algorithm>
#include <sstream>
#include <vector>

namespace weir::cli {
namespace {

size_t distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

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
  std::string best;
  size_t best_distance = std::max<size_t>(2, word.size() / 3) + 1;
  for (const std::string& c : candidates) {
    const size_t d = distance(word, c);
    if (d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  return best;
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
