// The cluster commands' config file, applied to a command with options of
// each kind.
#include <CLI/CLI.hpp>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>

#include "cli/config_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  CLI::App app("fuzz");
  CLI::App* jm = app.add_subcommand("jobmanager");
  std::string bind, secret;
  int port = 0;
  bool verbose = false;
  std::vector<std::string> list;
  jm->add_option("--bind", bind);
  jm->add_option("--rest-port", port)->check(CLI::Range(0, 65535));
  jm->add_option("--secret-file", secret);
  jm->add_flag("--verbose", verbose);
  jm->add_option("--list", list);
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size));
  (void)weir::cli::apply_config(in, "fuzz.toml", jm, "jobmanager");
  return 0;
}
