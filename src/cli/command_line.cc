#include "cli/command_line.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/cluster_commands.h"
#include "cli/exit_codes.h"
#include "cli/extensions.h"
#include "cli/help.h"
#include "cli/job_settings.h"
#include "cli/logging.h"
#include "cli/s3_options.h"
#include "cli/sql_command.h"
#include "cli/suggest.h"
#include "weir/version.h"

namespace weir::cli {
namespace {

// Where the arguments of the embedded job command `args` names begin (0:
// it names none), and its built-in job.
size_t embedded_job_args(const std::vector<std::string>& args, std::string* job) {
  for (const EmbeddedJobCommand& c : extensions().embedded_job_commands) {
    if (args.size() > c.words.size() && std::equal(c.words.begin(), c.words.end(), args.begin() + 1)) {
      if (job != nullptr) *job = c.job;
      return c.words.size() + 1;
    }
  }
  return 0;
}

// An embedded job command given --jobmanager HOST:PORT (`weir example
// running-sum ARGS --jobmanager HOST:PORT`, and `weir sql FILE ARGS
// --jobmanager HOST:PORT` as sql_script_for_cluster rewrote it to `weir sql
// --script TEXT ARGS ...`) as the submission `weir run --jobmanager
// HOST:PORT JOB ARGS` (with --secret-file, --config, the S3 options and
// --detached passed on). Empty when `args` asks for none.
std::vector<std::string> as_cluster_submission(const std::vector<std::string>& args) {
  std::string job;
  size_t job_args_at = embedded_job_args(args, &job);
  if (job_args_at == 0 && args.size() > 1 && args[1] == "sql") {
    job = "sql";
    job_args_at = 2;
  }
  if (job_args_at == 0 || std::find(args.begin(), args.end(), "--jobmanager") == args.end()) return {};
  std::vector<std::string> run = {args[0], "run"};
  std::vector<std::string> job_args;
  const auto& s3 = s3_option_names();
  for (size_t i = job_args_at; i < args.size(); ++i) {
    const std::string& a = args[i];
    if ((a == "--jobmanager" || a == "--secret-file" || a == "--config" ||
         std::find(s3.begin(), s3.end(), a) != s3.end()) &&
        i + 1 < args.size()) {
      run.push_back(a);
      run.push_back(args[++i]);
    } else if (a == "--detached") {
      run.push_back(a);
    } else {
      job_args.push_back(a);
    }
  }
  run.push_back(job);
  run.insert(run.end(), job_args.begin(), job_args.end());
  return run;
}

// The arguments as given to argv's form (which CLI11 parses), kept alive.
class Arguments {
 public:
  explicit Arguments(std::vector<std::string> words) : words_(std::move(words)) {
    for (std::string& w : words_) pointers_.push_back(w.data());
  }
  int argc() { return static_cast<int>(pointers_.size()); }
  char** argv() { return pointers_.data(); }
  const std::vector<std::string>& words() const { return words_; }

 private:
  std::vector<std::string> words_;
  std::vector<char*> pointers_;
};

}  // namespace

int run_command_line(int argc, char** argv) {
  // A peer that closes a connection is an error to handle, not the end of
  // the process (TLS writes cannot ask for MSG_NOSIGNAL).
  std::signal(SIGPIPE, SIG_IGN);
  std::vector<std::string> given(argv, argv + argc);
  if (std::optional<int> failed = sql_script_for_cluster(&given)) return *failed;
  std::vector<std::string> submission = as_cluster_submission(given);
  if (submission.empty()) {
    // An embedded job command in this process: its -D settings (and the
    // [job] section of $WEIR_CONFIG) become job flags.
    if (const size_t at = embedded_job_args(given, nullptr); at > 0) {
      const char* config = std::getenv("WEIR_CONFIG");
      auto args = with_job_settings(std::vector<std::string>(given.begin() + at, given.end()),
                                    config != nullptr ? config : "");
      if (!args.ok()) return fail(kBadArguments, std::string(args.status().message()));
      given.resize(at);
      given.insert(given.end(), args->begin(), args->end());
    }
  } else {
    given = std::move(submission);
  }
  Arguments arguments(std::move(given));

  CLI::App app{"weir: a stateful stream processing engine"};
  setup_help(&app);
  app.require_subcommand(1);
  app.set_version_flag("--version", "weir " WEIR_VERSION, "Print weir's version and exit");
  if (arguments.argc() == 1) return fail(kBadArguments, "give a command (weir --help lists them)");
  // Logs go to stderr at warn (or $WEIR_LOG_LEVEL); stdout carries results.
  // The cluster commands set their own (--log-level, --log-file).
  if (absl::Status logging = configure_logging({}); !logging.ok()) {
    return fail(kBadArguments, std::string(logging.message()));
  }
  // The command table: the extensions' commands, then the engine's.
  std::vector<std::unique_ptr<CommandGroup>> groups;
  for (const CommandGroupFactory& make : extensions().command_groups) groups.push_back(make(app));
  groups.push_back(std::make_unique<ClusterCommands>(app));
  groups.push_back(std::make_unique<SqlCommand>(app));

  try {
    app.parse(arguments.argc(), arguments.argv());
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return fail(kBadArguments, parse_error_message(e, app));
  }
  for (const auto& group : groups) {
    if (std::optional<int> code = group->run()) return *code;
  }
  return kBadArguments;
}

}  // namespace weir::cli
