#include "cli/jobs.h"

#include <algorithm>
#include <charconv>

#include "cli/extensions.h"
#include "cli/help.h"
#include "cli/job_settings.h"
#include "cli/sql_collect.h"
#include "cli/suggest.h"
#include "sql/job_builder.h"
#include "sql/planner.h"
#include "weir/job_args.h"

namespace weir::cli {

CLI::Validator whole_number(int64_t lo, int64_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        int64_t v = 0;
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (ec != std::errc() || end != text.data() + text.size() || v < lo || v > hi) {
          return text + " is not a whole number from " + std::to_string(lo) + " to " + std::to_string(hi);
        }
        return "";
      },
      "INT in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
}

namespace {

// A job's command line: the job flags and the options of the job `name`
// (or, for a library, whatever it takes).
struct JobCommandLine {
  CLI::App app;
  JobFlags flags;
  std::unique_ptr<JobDefinition> job;  // a built-in job's but sql's
  std::string sql_script;
  std::string sql_collect;

  explicit JobCommandLine(const std::string& name) : app("The job " + name + ": its options and weir's job flags", "weir run " + name) {
    setup_help(&app);
  }

  absl::Status add_options(const std::string& name, const cluster::JobLibrary* library) {
    flags.add_to(&app);
    if (library != nullptr) {
      app.allow_extras();  // the library's own arguments
    } else if (name == "sql") {
      app.add_option("--script", sql_script,
                     "The SQL script itself, not a file (e.g. --script \"$(cat job.sql)\"): CREATE TABLE "
                     "statements, then INSERT INTO ... SELECT; docs/sql.md")
          ->required()
          ->type_name("SQL");
      app.add_option("--collect", sql_collect,
                     "The script ends with a bare SELECT whose rows go to the JobManager's query result ID, for "
                     "the client that opened it (what the SQL shell on a cluster submits; docs/rest-api.md)")
          ->type_name("ID");
    } else if ((job = builtin_job(name)) != nullptr) {
      job->add_options(&app);
    } else {
      return absl::InvalidArgumentError("unknown job '" + name + "' (built-in jobs: " + builtin_job_names() +
                                        "; or the path of a job library)");
    }
    return absl::OkStatus();
  }
};

}  // namespace

absl::StatusOr<std::string> job_help(const std::string& name, const cluster::JobLibrary* library) {
  JobCommandLine cl(name);
  absl::Status s = cl.add_options(name, library);
  if (!s.ok()) return s;
  if (library == nullptr) return cl.app.help();
  cl.app.description("The job " + library->name() + " of " + name +
                     ": the options below are weir's job flags; the job's build function gets every other argument");
  // Its own options: those its build function reads through weir::JobArgs,
  // listed by running it once without arguments (the job is built, not
  // run; what it says of the missing ones is not shown).
  JobArgs::Listing listing;
  {
    StreamEnvironment env(JobConfig{});
    (void)library->build(env, {});
  }
  return cl.app.help() + "\nThe job's own options" +
         (listing.text().empty() ? ": its build function reads none through weir::JobArgs (see its documentation)\n"
                                 : " (read by its build function through weir::JobArgs):\n" + listing.text());
}

absl::StatusOr<std::unique_ptr<StreamEnvironment>> build_job(const std::string& name,
                                                             const std::vector<std::string>& args,
                                                             const cluster::JobLibrary* library,
                                                             JobFlags* flags_out) {
  JobCommandLine cl(name);
  absl::Status added = cl.add_options(name, library);
  if (!added.ok()) return added;
  CLI::App& app = cl.app;
  JobFlags& flags = cl.flags;
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them last first
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return absl::InvalidArgumentError(name + ": " + parse_error_message(e, app));
  }
  if (cl.job != nullptr) {
    absl::Status s = cl.job->validate();
    if (!s.ok()) return s;
  }
  if (library == nullptr && name == "sql") {  // the script's SET 'parallelism.default' = ..., unless given
    absl::Status s = apply_job_settings(sql_job_settings(cl.sql_script),
                                        [&](const std::string& flag) {
                                          const CLI::Option* o = app.get_option_no_throw(flag);
                                          return o != nullptr && o->count() > 0;
                                        },
                                        &flags);
    if (!s.ok()) return absl::InvalidArgumentError("sql: " + std::string(s.message()));
  }
  auto config = flags.to_config();
  if (!config.ok()) return config.status();
  // A result shown is not taken back: a failed query ends.
  if (!cl.sql_collect.empty()) config->restart.kind = RestartStrategyKind::kNone;
  auto env = std::make_unique<StreamEnvironment>(*config);
  if (flags_out != nullptr) *flags_out = flags;
  absl::Status built = library != nullptr ? library->build(*env, app.remaining())
                       : cl.job != nullptr ? cl.job->build(*env, flags)
                                           : build_sql_job("sql --script", cl.sql_script, *env, cl.sql_collect);
  if (!built.ok()) return built;
  if (!env->build_error().ok()) return env->build_error();
  return env;
}

std::string builtin_job_names() {
  std::string names;
  for (const BuiltinJob& job : extensions().jobs) names += job.name + ", ";
  return names + "sql";
}

absl::Status build_sql_job(const std::string& name, std::string text, StreamEnvironment& env,
                           const std::string& collect) {
  auto script = sql::parse_script(std::move(text));
  if (!script.ok()) return absl::InvalidArgumentError(name + ": " + std::string(script.status().message()));
  sql::PlanOptions options = sql_plan_options();
  sql::TableConnectors connectors = cli_table_connectors();
  if (!collect.empty()) {
    options.result_table = kResultTable;
    options.result_connector = kResultConnector;
    add_collect_connector(&connectors, collect);
  }
  auto planned = sql::plan_script(*script, options);
  if (!planned.ok()) return absl::InvalidArgumentError(name + ": " + std::string(planned.status().message()));
  absl::Status built = sql::build_job(*planned, connectors, env);
  if (!built.ok()) return absl::InvalidArgumentError(name + ": " + std::string(built.message()));
  return absl::OkStatus();
}

absl::StatusOr<std::string> explain_sql(const std::string& text) {
  auto script = sql::parse_script(text);
  if (!script.ok()) return script.status();
  auto planned = sql::plan_script(*script, sql_plan_options());
  if (!planned.ok()) return planned.status();
  return sql::explain(*planned);
}

sql::PlanOptions sql_plan_options() {
  sql::PlanOptions options;
  options.job_setting = check_job_setting;
  options.job_setting_keys = setting_keys();
  return options;
}

std::vector<std::pair<std::string, std::string>> sql_job_settings(const std::string& text) {
  auto script = sql::parse_script(text);
  if (!script.ok()) return {};
  sql::PlanOptions options = sql_plan_options();
  options.declarations_only = true;
  options.result_table = kResultTable;  // a bare SELECT (a query the shell submits) plans too
  options.result_connector = kResultConnector;
  auto planned = sql::plan_script(*script, options);
  if (!planned.ok()) return {};
  return planned->settings.job;
}

absl::Status apply_job_settings(const std::vector<std::pair<std::string, std::string>>& settings,
                                const std::function<bool(const std::string& flag)>& given, JobFlags* flags) {
  auto all = settings_as_flags(settings, {});
  if (!all.ok()) return all.status();
  // The words of the flags not given: each flag ("--x") with its value, if any.
  std::vector<std::string> kept;
  bool keep = false;
  for (const std::string& w : *all) {
    if (w.rfind("--", 0) == 0) keep = !given(w);
    if (keep) kept.push_back(w);
  }
  if (kept.empty()) return absl::OkStatus();
  CLI::App app("a SQL script's job settings");
  flags->add_to(&app);  // binds the same fields: only those parsed change
  std::vector<std::string> reversed(kept.rbegin(), kept.rend());  // CLI11 takes them last first
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return absl::InvalidArgumentError(std::string(e.what()).empty() ? e.get_name() : std::string(e.what()));
  }
  return absl::OkStatus();
}

sql::TableConnectors cli_table_connectors() {
  sql::TableConnectors connectors = sql::TableConnectors::built_in();
  for (const auto& [name, source] : extensions().table_sources) connectors.sources[name] = source;
  return connectors;
}

Extensions& extensions() {
  static Extensions* const kExtensions = new Extensions();
  return *kExtensions;
}

std::unique_ptr<JobDefinition> builtin_job(const std::string& name) {
  for (const BuiltinJob& job : extensions().jobs) {
    if (job.name == name) return job.make();
  }
  return nullptr;
}

cluster::JobCatalog builtin_job_catalog() {
  return [](const std::string& name, const std::vector<std::string>& args,
            const cluster::JobLibrary* library) -> absl::StatusOr<cluster::BuiltJob> {
    JobFlags flags;
    auto env = build_job(name, args, library, &flags);
    if (!env.ok()) return env.status();
    return cluster::BuiltJob{std::move(*env), flags.default_savepoint_dir()};
  };
}

}  // namespace weir::cli
