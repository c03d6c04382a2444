// `weir sql FILE|-`: runs a SQL script (CREATE TABLE statements, then one or
// more INSERT INTO ... SELECT, all one job) embedded, with the job flags
// every job takes; `--explain` prints each INSERT's plan instead. A SQL
// error is one line naming line and column, exit 2, and nothing runs.
#ifndef WEIR_CLI_SQL_COMMAND_H_
#define WEIR_CLI_SQL_COMMAND_H_

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>

namespace weir::cli {

class SqlCommand {
 public:
  explicit SqlCommand(CLI::App& app);
  ~SqlCommand();
  // The exit code when `weir sql` was the command, else nothing.
  std::optional<int> run();

 private:
  struct Flags;
  std::unique_ptr<Flags> f_;
};

}  // namespace weir::cli

#endif  // WEIR_CLI_SQL_COMMAND_H_
