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
#include "cli/job_settings.h"
#include "cli/sql_shell.h"
#include "cluster/client.h"
#include "cluster/protocol.h"
#include "network/tls.h"
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

// `weir sql --jobmanager HOST:PORT [FLAGS]`: the shell with its queries on
// that cluster. Besides --jobmanager, --secret-file and --tls-ca (the
// client's), the arguments are the job flags of every query, checked here.
int sql_shell_on_cluster(const std::vector<std::string>& a) {
  std::string address, secret_file;
  network::TlsFiles tls;
  std::vector<std::string> job_args;
  for (size_t i = 2; i < a.size(); ++i) {
    std::string* client_option = a[i] == "--jobmanager"    ? &address
                                 : a[i] == "--secret-file" ? &secret_file
                                 : a[i] == "--tls-ca"      ? &tls.ca
                                                           : nullptr;
    if (client_option == nullptr) {
      if (a[i] == "--explain") return fail(kBadArguments, "sql --explain: which script? (weir sql FILE --explain)");
      job_args.push_back(a[i]);
    } else if (i + 1 == a.size()) {
      return fail(kBadArguments, "sql: " + a[i] + " needs a value");
    } else {
      *client_option = a[++i];
    }
  }
  auto expanded = with_job_settings(job_args, "");
  if (!expanded.ok()) return fail(kBadArguments, "sql: " + std::string(expanded.status().message()));
  JobFlags flags;
  CLI::App app("the SQL shell's job flags");
  flags.add_to(&app);
  std::vector<std::string> reversed(expanded->rbegin(), expanded->rend());  // CLI11 takes them last first
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return fail(kBadArguments, "sql: " + (std::string(e.what()).empty() ? e.get_name() : std::string(e.what())));
  }
  if (auto config = flags.to_config(); !config.ok()) {
    return fail(kBadArguments, "sql: " + std::string(config.status().message()));
  }
  auto secret = cluster::load_secret(secret_file);
  if (!secret.ok()) return fail(kBadArguments, std::string(secret.status().message()));
  cluster::ClusterClient client(address, *secret, network::tls_files_or_env(tls).ca);
  return run_sql_shell_on_cluster(client, *expanded, std::cin, isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1);
}

}  // namespace

std::optional<int> sql_script_for_cluster(std::vector<std::string>* args) {
  std::vector<std::string>& a = *args;
  if (a.size() < 3 || a[1] != "sql") return std::nullopt;
  if (std::find(a.begin(), a.end(), "--jobmanager") == a.end()) return std::nullopt;
  if (a[2].rfind('-', 0) == 0 && a[2] != "-") return sql_shell_on_cluster(a);
  if (std::find(a.begin(), a.end(), "--explain") != a.end()) return std::nullopt;
  std::string text;
  if (!read_script(a[2], &text)) return kBadInput;
  const std::string name = a[2] == "-" ? "<stdin>" : a[2];
  auto script = sql::parse_script(text);
  if (!script.ok()) return fail(kBadArguments, name + ": " + std::string(script.status().message()));
  auto planned = sql::plan_script(*script, sql_plan_options());
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
    auto plan = explain_sql(text);
    if (!plan.ok()) return fail(kBadArguments, name + ": " + std::string(plan.status().message()));
    std::fputs(plan->c_str(), stdout);
    return kOk;
  }
  // The script's SET 'parallelism.default' = ... and the like, unless the
  // command line gives that flag.
  JobFlags job = f.job;
  absl::Status settings = apply_job_settings(
      sql_job_settings(text), [&](const std::string& flag) {
        const CLI::Option* o = f_->command->get_option_no_throw(flag);
        return o != nullptr && o->count() > 0;
      },
      &job);
  if (!settings.ok()) return fail(kBadArguments, name + ": " + std::string(settings.message()));
  auto config = job.to_config();
  if (!config.ok()) return fail(kBadArguments, std::string(config.status().message()));
  JobConsole console(job.quiet, job.default_savepoint_dir(), job.drain);
  StreamEnvironment env(*config);
  absl::Status built = build_sql_job(name, std::move(text), env);
  if (!built.ok()) return fail(kBadArguments, std::string(built.message()));
  return finish_run(console.run(env, "sql " + name));
}

}  // namespace weir::cli
