// `weir sql FILE|-`: runs a SQL script (CREATE TABLE statements, then one or
// more INSERT INTO ... SELECT, all one job) embedded, with the job flags
// every job takes; `--explain` prints each INSERT's plan instead. A SQL
// error is one line naming line and column, exit 2, and nothing runs.
//
// `weir sql FILE [FLAGS] --jobmanager HOST:PORT` submits the script to a
// cluster instead: it is planned here first (a SQL error: exit 2, nothing
// submitted), then runs as the built-in job `sql --script TEXT`, as `weir
// run` would submit it. `weir sql --jobmanager HOST:PORT [FLAGS]` (no
// script) is the shell with its queries on that cluster.
#ifndef WEIR_CLI_SQL_COMMAND_H_
#define WEIR_CLI_SQL_COMMAND_H_

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/extensions.h"

namespace weir::cli {

// For `weir sql FILE ... --jobmanager HOST:PORT` (not --explain): `args`
// become `weir sql --script TEXT ...`, the built-in job with its flags, for
// the submission to a cluster; an exit code if the file cannot be read or
// its SQL is wrong. For `weir sql --jobmanager ...` without a script: runs
// the shell on that cluster and returns its exit code. Other arguments are
// left alone.
std::optional<int> sql_script_for_cluster(std::vector<std::string>* args);

class SqlCommand final : public CommandGroup {
 public:
  explicit SqlCommand(CLI::App& app);
  ~SqlCommand() override;
  // The exit code when `weir sql` was the command, else nothing.
  std::optional<int> run() override;

 private:
  struct Flags;
  std::unique_ptr<Flags> f_;
};

}  // namespace weir::cli

#endif  // WEIR_CLI_SQL_COMMAND_H_
