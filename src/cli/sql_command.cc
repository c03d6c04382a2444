#include "cli/sql_command.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/embedded.h"
#include "cli/exit_codes.h"
#include "cli/jobs.h"
#include "cli/sql_shell.h"
#include "sql/planner.h"

namespace weir::cli {

struct SqlCommand::Flags {
  CLI::App* command = nullptr;
  std::string file;
  bool explain = false;
  JobFlags job;
};

SqlCommand::SqlCommand(CLI::App& app) : f_(std::make_unique<Flags>()) {
  f_->command = app.add_subcommand(
      "sql", "Run a SQL script (CREATE TABLE, INSERT INTO ... SELECT) as one job, or without one the SQL shell");
  f_->command->add_option("file", f_->file, "The script, or - for standard input; none: the interactive shell")
      ->type_name("FILE");
  f_->command->add_flag("--explain", f_->explain, "Print each INSERT's plan instead of running the job");
  f_->job.add_to(f_->command);
}

SqlCommand::~SqlCommand() = default;

namespace {

// The script in `file` (- for standard input), or false having said why.
bool read_script(const std::string& file, std::string* text) {
  std::ostringstream all;
  if (file == "-") {
    all << std::cin.rdbuf();
  } else {
    std::ifstream in(file);
    if (!in) {
      fail(kBadInput, "cannot read " + file + ": " + std::strerror(errno));
      return false;
    }
    all << in.rdbuf();
  }
  *text = all.str();
  return true;
}

}  // namespace

std::optional<int> sql_script_for_cluster(std::vector<std::string>* args) {
  std::vector<std::string>& a = *args;
  if (a.size() < 3 || a[1] != "sql") return std::nullopt;
  if (std::find(a.begin(), a.end(), "--jobmanager") == a.end()) return std::nullopt;
  if (a[2].rfind('-', 0) == 0 && a[2] != "-") {
    return fail(kBadArguments,
                "sql --jobmanager: the script comes first (weir sql FILE [FLAGS] --jobmanager HOST:PORT); the "
                "interactive shell runs its queries in this process");
  }
  if (std::find(a.begin(), a.end(), "--explain") != a.end()) return std::nullopt;
  std::string text;
  if (!read_script(a[2], &text)) return kBadInput;
  const std::string name = a[2] == "-" ? "<stdin>" : a[2];
  auto script = sql::parse_script(text);
  if (!script.ok()) return fail(kBadArguments, name + ": " + std::string(script.status().message()));
  auto planned = sql::plan_script(*script);
  if (!planned.ok()) return fail(kBadArguments, name + ": " + std::string(planned.status().message()));
  a[2] = std::move(text);
  a.insert(a.begin() + 2, "--script");
  return std::nullopt;
}

std::optional<int> SqlCommand::run() {
  if (!f_->command->parsed()) return std::nullopt;
  const Flags& f = *f_;
  if (f.job.verbose) spdlog::set_level(spdlog::level::info);
  if (f.file.empty()) {
    if (f.explain) return fail(kBadArguments, "sql --explain: which script? (weir sql FILE --explain)");
    return run_sql_shell(f.job, std::cin, isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1);
  }
  std::string text;
  if (!read_script(f.file, &text)) return kBadInput;
  const std::string name = f.file == "-" ? "<stdin>" : f.file;
  if (f.explain) {
    auto script = sql::parse_script(std::move(text));
    if (!script.ok()) return fail(kBadArguments, name + ": " + std::string(script.status().message()));
    auto planned = sql::plan_script(*script);
    if (!planned.ok()) return fail(kBadArguments, name + ": " + std::string(planned.status().message()));
    std::fputs(sql::explain(*planned).c_str(), stdout);
    return kOk;
  }
  auto config = f.job.to_config();
  if (!config.ok()) return fail(kBadArguments, std::string(config.status().message()));
  JobConsole console(f.job.quiet, f.job.default_savepoint_dir(), f.job.drain);
  StreamEnvironment env(*config);
  absl::Status built = build_sql_job(name, std::move(text), env);
  if (!built.ok()) return fail(kBadArguments, std::string(built.message()));
  return finish_run(console.run(env, "sql " + name));
}

}  // namespace weir::cli
