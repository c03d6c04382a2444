#include "cli/help.h"

#include <memory>
#include <sstream>

namespace weir::cli {

namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

std::string value_word(const std::string& option, const std::string& type_name) {
  std::string word = type_name.substr(0, type_name.find(':'));
  if (word == "INT" || word == "UINT") return "N";
  if (word == "FLOAT") return "X";
  if (word != "TEXT") return word;
  // Text by what the option names.
  for (const char* t : {"-interval", "-timeout", "-delay"}) {
    if (ends_with(option, t)) return "DURATION";
  }
  for (const char* t : {"-memory", "-size"}) {
    if (ends_with(option, t)) return "SIZE";
  }
  for (const char* t : {"-dir", "-file", "input", "output", "restore", "config"}) {
    if (ends_with(option, t)) return "PATH";
  }
  if (ends_with(option, "jobmanager") || ends_with(option, "bind")) return "HOST:PORT";
  return "VALUE";
}

std::string HelpFormatter::make_option_opts(const CLI::Option* opt) const {
  if (!opt->get_option_text().empty()) return " " + opt->get_option_text();
  std::ostringstream out;
  if (opt->get_type_size() != 0) {
    const std::string word = value_word(opt->get_name(/*positional=*/false, /*all_options=*/false), opt->get_type_name());
    if (!word.empty()) out << " " << word;
    if (opt->get_expected_max() == CLI::detail::expected_max_vector_size) out << " ...";
    if (opt->get_required()) out << " (required)";
  }
  return out.str();
}

std::string HelpFormatter::make_option_desc(const CLI::Option* opt) const {
  std::string desc = opt->get_description();
  // Flags (no value) have nothing to show; "" and "[]" mean no default.
  const std::string def = opt->get_default_str();
  if (opt->get_type_size() != 0 && !opt->get_required() && !def.empty() && def != "[]" &&
      desc.find("default") == std::string::npos && desc.find("(else ") == std::string::npos) {
    desc += " (default: " + def + ")";
  }
  return desc;
}

void setup_help(CLI::App* app) {
  app->formatter(std::make_shared<HelpFormatter>());
  app->option_defaults()->always_capture_default();
}

}  // namespace weir::cli
