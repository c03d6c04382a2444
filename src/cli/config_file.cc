#include "cli/config_file.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <vector>

#include "cli/s3_options.h"

namespace weir::cli {
namespace {

// Gives `opt` the item's value unless the command line gave it one.
absl::Status set_option(CLI::Option* opt, const CLI::ConfigItem& item, const std::string& path,
                        const std::string& key) {
  if (opt->count() > 0) return absl::OkStatus();
  try {
    for (const auto& v : item.inputs) opt->add_result(v);
    opt->run_callback();
  } catch (const CLI::Error& e) {
    return absl::InvalidArgumentError("config file " + path + ": '" + key + "': " + e.what());
  }
  return absl::OkStatus();
}

}  // namespace

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
  static const std::set<std::string> kSections = {"jobmanager", "taskmanager", "client", "job", "s3"};
  static const std::set<std::string> kTopLevel = {"secret-file", "verbose", "tls-cert", "tls-key", "tls-ca"};
  for (const auto& item : items) {
    if (item.name == "++" || item.name == "--") continue;  // section markers
    // Job settings by Flink's keys: cli/job_settings.h reads them.
    if (!item.parents.empty() && item.parents[0] == "job") continue;
    const std::string key = item.fullname();
    // The S3 connection: every command that takes --s3-KEY.
    if (item.parents.size() == 1 && item.parents[0] == "s3") {
      const std::string flag = "--s3-" + item.name;
      const auto& names = s3_option_names();
      if (std::find(names.begin(), names.end(), flag) == names.end()) {
        return absl::InvalidArgumentError("config file " + path + ": '" + key +
                                          "' is not an S3 setting (endpoint, region, access-key, secret-key-file, "
                                          "ca-file)");
      }
      CLI::Option* opt = command->get_option_no_throw(flag);
      if (opt == nullptr) continue;  // not this command's
      absl::Status s = set_option(opt, item, path, key);
      if (!s.ok()) return s;
      continue;
    }
    if (role == kS3Only) continue;
    if (item.parents.size() > 1 || (item.parents.size() == 1 && kSections.count(item.parents[0]) == 0)) {
      return absl::InvalidArgumentError("config file " + path + ": unknown section of '" + key +
                                        "' (sections: jobmanager, taskmanager, client, job, s3)");
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
    absl::Status s = set_option(opt, item, path, key);
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace weir::cli
