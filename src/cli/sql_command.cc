#include "cli/sql_command.h"

#include <spdlog/spdlog.h>

#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/embedded.h"
#include "cli/exit_codes.h"
#include "cli/jobs.h"
#include "sql/planner.h"

namespace weir::cli {

struct SqlCommand::Flags {
  CLI::App* command = nullptr;
  std::string file;
  bool explain = false;
  JobFlags job;
};

SqlCommand::SqlCommand(CLI::App& app) : f_(std::make_unique<Flags>()) {
  f_->command = app.add_subcommand("sql", "Run a SQL script (CREATE TABLE, INSERT INTO ... SELECT) as one job");
  f_->command->add_option("file", f_->file, "The script, or - for standard input")->required()->type_name("FILE");
  f_->command->add_flag("--explain", f_->explain, "Print each INSERT's plan instead of running the job");
  f_->job.add_to(f_->command);
}

SqlCommand::~SqlCommand() = default;

std::optional<int> SqlCommand::run() {
  if (!f_->command->parsed()) return std::nullopt;
  const Flags& f = *f_;
  if (f.job.verbose) spdlog::set_level(spdlog::level::info);
  std::string text;
  if (f.file == "-") {
    std::ostringstream in;
    in << std::cin.rdbuf();
    text = in.str();
  } else {
    std::ifstream in(f.file);
    if (!in) return fail(kBadInput, "cannot read " + f.file + ": " + std::strerror(errno));
    std::ostringstream all;
    all << in.rdbuf();
    text = all.str();
  }
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
