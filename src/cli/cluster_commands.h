// The cluster commands of `weir`: jobmanager, taskmanager, and the client
// commands run, list, cancel, savepoint, stop, checkpoints, overview.
#ifndef WEIR_CLI_CLUSTER_COMMANDS_H_
#define WEIR_CLI_CLUSTER_COMMANDS_H_

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>

namespace weir::cli {

// Exit codes of the cluster commands, beside the common ones (docs/cli.md).
inline constexpr int kClusterUnreachable = 5;  // no JobManager at the address
inline constexpr int kClusterRefused = 6;      // the secret was missing or wrong

class ClusterCommands {
 public:
  explicit ClusterCommands(CLI::App& app);
  ~ClusterCommands();
  // The exit code when one of these commands was parsed, else nothing.
  std::optional<int> run();

 private:
  struct Flags;
  std::unique_ptr<Flags> f_;
};

}  // namespace weir::cli

#endif  // WEIR_CLI_CLUSTER_COMMANDS_H_
