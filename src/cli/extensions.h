// What the weir executable adds to the engine's own command line: built-in
// jobs (`weir run NAME`, and the job each process of a cluster builds from
// the same name and arguments), command groups (`weir example ...`), and
// SQL table sources. The example jobs of examples/ come in this way
// (examples/commands.h); the cli layer names none of them.
//
// Registered once at start, before the command line is parsed and before
// any thread is started; read only after.
#ifndef WEIR_CLI_EXTENSIONS_H_
#define WEIR_CLI_EXTENSIONS_H_

#include <CLI/CLI.hpp>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "sql/job_builder.h"
#include "weir/stream.h"

namespace weir::cli {

struct JobFlags;

// Some of weir's subcommands: made with the app, which they add themselves
// to; run() returns the exit code when one of them was parsed, else
// nothing.
class CommandGroup {
 public:
  virtual ~CommandGroup() = default;
  virtual std::optional<int> run() = 0;
};

using CommandGroupFactory = std::function<std::unique_ptr<CommandGroup>(CLI::App& app)>;

// One command line of a built-in job: its options, added to a job's
// command line beside the job flags, and the job they define.
class JobDefinition {
 public:
  virtual ~JobDefinition() = default;
  virtual void add_options(CLI::App* app) = 0;
  // What the parser cannot check (options that need each other), named:
  // InvalidArgument.
  virtual absl::Status validate() const { return absl::OkStatus(); }
  // The job into `env`, configured by `flags` (its parallelism, ...).
  virtual absl::Status build(StreamEnvironment& env, const JobFlags& flags) = 0;
};

struct BuiltinJob {
  std::string name;
  std::function<std::unique_ptr<JobDefinition>()> make;
};

// A command that runs a built-in job in this process, `weir WORDS ARGS`
// (e.g. `weir example running-sum ARGS`): given --jobmanager HOST:PORT, it
// is submitted as `weir run JOB ARGS` instead; without, its ARGS take job
// settings (-D KEY=VALUE, $WEIR_CONFIG's [job]) as `weir run` does.
struct EmbeddedJobCommand {
  std::vector<std::string> words;
  std::string job;
};

struct Extensions {
  std::vector<BuiltinJob> jobs;
  std::vector<EmbeddedJobCommand> embedded_job_commands;
  std::vector<CommandGroupFactory> command_groups;
  std::map<std::string, sql::TableSource> table_sources;
};

// The process's extensions, to fill at start.
Extensions& extensions();

// The built-in job `name`'s definition, or nullptr.
std::unique_ptr<JobDefinition> builtin_job(const std::string& name);

}  // namespace weir::cli

#endif  // WEIR_CLI_EXTENSIONS_H_
