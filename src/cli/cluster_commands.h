// The cluster commands of `weir`: jobmanager, taskmanager, and the client
// commands run, list, cancel, savepoint, stop, checkpoints, overview.
#ifndef WEIR_CLI_CLUSTER_COMMANDS_H_
#define WEIR_CLI_CLUSTER_COMMANDS_H_

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>

#include "cli/exit_codes.h"
#include "cli/extensions.h"

namespace weir::cli {

struct ClusterFlags;

class ClusterCommands final : public CommandGroup {
 public:
  explicit ClusterCommands(CLI::App& app);
  ~ClusterCommands() override;
  // The exit code when one of these commands was parsed, else nothing.
  std::optional<int> run() override;

 private:
  std::unique_ptr<ClusterFlags> f_;
};

}  // namespace weir::cli

#endif  // WEIR_CLI_CLUSTER_COMMANDS_H_
