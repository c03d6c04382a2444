#include "cli/config_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <vector>

namespace weir::cli {

absl::Status apply_config(const std::string& path, CLI::App* command, const std::string& role) {
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError("cannot read config file " + path + ": " + std::strerror(errno));
  return apply_config(in, path, command, role);
}

absl::Status apply_config(std::istream& in, const std::string& path, CLI::App* command, const std::string& role) {
  std::vector<CLI::ConfigItem> items;
  try {
    items = CLI::ConfigTOML().from_config(in);
  } catch (const CLI::Error& e) {
    return absl::InvalidArgumentError("config file " + path + ": " + e.what());
  }
  static const std::set<std::string> kSections = {"jobmanager", "taskmanager", "client", "job"};
  static const std::set<std::string> kTopLevel = {"secret-file", "verbose", "tls-cert", "tls-key", "tls-ca"};
  for (const auto& item : items) {
    if (item.name == "++" || item.name == "--") continue;  // section markers
    // Job settings by Flink's keys: cli/job_settings.h reads them.
    if (!item.parents.empty() && item.parents[0] == "job") continue;
    const std::string key = item.fullname();
    if (item.parents.size() > 1 || (item.parents.size() == 1 && kSections.count(item.parents[0]) == 0)) {
      return absl::InvalidArgumentError("config file " + path + ": unknown section of '" + key +
                                        "' (sections: jobmanager, taskmanager, client, job)");
    }
    if (item.parents.empty() && kTopLevel.count(item.name) == 0) {
      return absl::InvalidArgumentError("config file " + path + ": '" + key +
                                        "' belongs in a section ([jobmanager], [taskmanager] or [client]); only "
                                        "secret-file, verbose and the tls- files stand at the top");
    }
    if (!item.parents.empty() && item.parents[0] != role) continue;  // another role's
    CLI::Option* opt = item.name == "config" ? nullptr : command->get_option_no_throw("--" + item.name);
    if (opt == nullptr && item.parents.empty()) continue;  // a top-level key this command does not take
    if (opt == nullptr) {
      return absl::InvalidArgumentError("config file " + path + ": '" + key + "' is not an option of weir " +
                                        command->get_name());
    }
    if (opt->count() > 0) continue;  // given on the command line
    try {
      for (const auto& v : item.inputs) opt->add_result(v);
      opt->run_callback();
    } catch (const CLI::Error& e) {
      return absl::InvalidArgumentError("config file " + path + ": '" + key + "': " + e.what());
    }
  }
  return absl::OkStatus();
}

}  // namespace weir::cli
