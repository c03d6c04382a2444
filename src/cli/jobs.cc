#include "cli/jobs.h"

#include <algorithm>
#include <charconv>

#include "cli/help.h"
#include "cli/job_settings.h"
#include "examples/nexmark/queries.h"
#include "examples/nexmark/sql_tables.h"
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

void add_running_sum_options(CLI::App* app, examples::RunningSumOptions& o) {
  app->add_option("--input", o.inputs, "Input file of key,value lines (repeat for a union)");
  app->add_option("--kafka-brokers", o.kafka_brokers, "Kafka bootstrap servers, for the topics below");
  app->add_option("--input-topic", o.input_topic, "Read the lines from this Kafka topic (instead of or beside --input)");
  app->add_flag("--kafka-bounded", o.kafka_bounded, "Stop at the end the input topic had when the job first started");
  app->add_option("--output-topic", o.output_topic, "Write the sums to this Kafka topic instead of --output");
  app->add_option("--kafka-delivery", o.kafka_delivery, "exactly-once | at-least-once | none")->capture_default_str();
  app->add_option("--postgres", o.postgres, "PostgreSQL connection string (libpq), for --output-table");
  app->add_option("--output-table", o.output_table,
                  "Write the sums as rows (key, sum, count) into this PostgreSQL table, exactly-once");
  app->add_flag("--postgres-upsert", o.postgres_upsert,
                "Upsert the latest sum and count of each key into --output-table (primary key: key)");
  app->add_option("--output", o.output_dir, "Output directory")->required();
  app->add_option("--fail-every", o.fail_every, "Inject a task failure every ~N records")
      ->check(whole_number(0));
  app->add_option("--seed", o.seed, "Seed for failure positions");
  app->add_option("--rate", o.rate, "Read at most this many lines (or records) per second per source subtask (0: unlimited)")
      ->check(whole_number(0));
  app->add_option("--sink-parallelism", o.sink_parallelism,
                  "Give the output sink this parallelism behind a rebalance (0: chained to the sums)")
      ->check(whole_number(0));
  app->add_option("--fail-sink-subtask", o.fail_sink_subtask,
                  "This output sink subtask fails once, in its first attempt (-1: none)")
      ->capture_default_str();
  app->add_option("--fail-sink-after", o.fail_sink_after, "...after writing this many lines")
      ->capture_default_str()
      ->check(whole_number(1));
}

absl::Status validate_running_sum_options(const examples::RunningSumOptions& o) {
  if (o.inputs.empty() && o.input_topic.empty()) {
    return absl::InvalidArgumentError("running-sum: give --input FILE or --input-topic TOPIC");
  }
  if ((!o.input_topic.empty() || !o.output_topic.empty()) && o.kafka_brokers.empty()) {
    return absl::InvalidArgumentError("running-sum: --input-topic and --output-topic need --kafka-brokers");
  }
  if (!o.output_table.empty() && o.postgres.empty()) {
    return absl::InvalidArgumentError("running-sum: --output-table needs --postgres CONNINFO");
  }
  if (o.postgres_upsert && o.output_table.empty()) {
    return absl::InvalidArgumentError("running-sum: --postgres-upsert needs --output-table");
  }
  if (!o.output_table.empty() && !o.output_topic.empty()) {
    return absl::InvalidArgumentError("running-sum: give --output-topic or --output-table, not both");
  }
  if ((o.sink_parallelism > 0 || o.fail_sink_subtask >= 0) && (!o.output_table.empty() || !o.output_topic.empty())) {
    return absl::InvalidArgumentError(
        "running-sum: --sink-parallelism and --fail-sink-subtask apply to the file sink (--output), not to "
        "--output-topic or --output-table");
  }
  return absl::OkStatus();
}

void add_orders_options(CLI::App* app, examples::OrdersOptions& o) {
  app->add_option("--kafka-brokers", o.kafka_brokers, "Kafka bootstrap servers")->required();
  app->add_option("--input-topic", o.input_topic, "Topic of the JSON orders")->capture_default_str();
  app->add_option("--output-topic", o.output_topic, "Topic of the totals (exactly-once)")->capture_default_str();
  app->add_option("--rejects-topic", o.rejects_topic, "Topic of the records that are not orders (default: INPUT-rejects)");
  app->add_flag("--kafka-bounded", o.bounded, "Stop at the end the input topic had when the job first started");
  app->add_option("--window-ms", o.window_ms, "Tumbling event-time window, in ms")
      ->capture_default_str()
      ->check(whole_number(1));
  app->add_option("--max-out-of-orderness-ms", o.max_out_of_orderness_ms, "How late an order may be, in ms")
      ->capture_default_str()
      ->check(whole_number(0));
  app->add_option("--postgres", o.postgres, "PostgreSQL connection string (libpq): also upsert the totals there");
  app->add_option("--output-table", o.output_table, "PostgreSQL table of the totals")->capture_default_str();
  app->add_option("--rate", o.rate, "Read at most this many records per second per source subtask (0: unlimited)")
      ->check(whole_number(0));
}

void add_nexmark_options(CLI::App* app, NexmarkFlags& f, bool dump) {
  app->add_option("--query", f.query, "q0 .. q22 (required unless --produce-to)");
  app->add_option("--api", f.api,
                  "datastream (the query in C++) | sql (from its SQL text, examples/nexmark/sql/QUERY.sql)")
      ->capture_default_str();
  app->add_option("--events", f.events, "Events to generate")->check(whole_number(1));
  app->add_option("--rate", f.rate, "Emit at most this many events/s (0: unlimited)")
      ->check(whole_number(0));
  app->add_option("--event-rate", f.event_rate, "Events per second of event time in the generator's clock")
      ->check(whole_number(1));
  app->add_option("--output", f.output, dump ? "FILE for the result rows, or blackhole"
                                             : "DIRECTORY for the result part files, or blackhole");
  if (dump) app->add_option("--dump-events", f.dump_dir, "Also write the events as CSV into DIR");
  app->add_option("--fail-every", f.fail_every, "Inject a source failure every ~N events")
      ->check(whole_number(0));
  app->add_option("--seed", f.seed, "Seed for failure positions");
  app->add_option("--side-input", f.side_input, "q13: lines <key>,<value>");
  app->add_option("--source", f.source, "generator | kafka (events from --topic)")->capture_default_str();
  app->add_option("--kafka-brokers", f.kafka_brokers, "Kafka bootstrap servers, for --source kafka and --produce-to");
  app->add_option("--topic", f.topic, "--source kafka: the topic of the events");
  app->add_flag("--kafka-unbounded", f.kafka_unbounded,
                "--source kafka: keep reading after the end the topic had at the start");
  if (dump) {
    app->add_option("--produce-to", f.produce_to, "Write the --events generated events to this Kafka topic and exit");
  }
}

absl::Status NexmarkFlags::validate() const {
  if (source != "generator" && source != "kafka") {
    return absl::InvalidArgumentError("nexmark: --source must be generator or kafka, not '" + source + "'");
  }
  if (!produce_to.empty()) {
    if (kafka_brokers.empty()) return absl::InvalidArgumentError("nexmark: --produce-to needs --kafka-brokers");
    if (source == "kafka") return absl::InvalidArgumentError("nexmark: --produce-to writes generated events, not --source kafka");
    return absl::OkStatus();
  }
  if (query.empty()) return absl::InvalidArgumentError("nexmark: --query is required");
  if (api != "datastream" && api != "sql") {
    return absl::InvalidArgumentError("nexmark: --api must be datastream or sql, not '" + api + "'");
  }
  if (api == "sql" && source == "kafka") return absl::InvalidArgumentError("nexmark: --api sql reads the generator, not --source kafka");
  if (source == "kafka" && (topic.empty() || kafka_brokers.empty())) {
    return absl::InvalidArgumentError("nexmark: --source kafka needs --topic and --kafka-brokers");
  }
  if (source != "kafka" && !topic.empty()) return absl::InvalidArgumentError("nexmark: --topic needs --source kafka");
  return absl::OkStatus();
}

nexmark::QueryOptions NexmarkFlags::to_query_options() const {
  nexmark::QueryOptions o;
  o.query = query;
  o.source.events = events;
  o.source.rate_limit = rate;
  o.source.fail_every = fail_every;
  o.source.seed = seed;
  o.generator.event_rate = event_rate;
  o.side_input = side_input;
  o.kafka_brokers = kafka_brokers;
  if (source == "kafka") o.kafka_topic = topic;
  o.kafka_bounded = !kafka_unbounded;
  return o;
}

namespace {

// A job's command line: the job flags and the options of the job `name`
// (or, for a library, whatever it takes).
struct JobCommandLine {
  CLI::App app;
  JobFlags flags;
  examples::RunningSumOptions rs;
  examples::OrdersOptions orders;
  examples::LineCopyOptions lc;
  NexmarkFlags nx;
  std::string sql_script;
  std::string sql_collect;

  explicit JobCommandLine(const std::string& name) : app("The job " + name + ": its options and weir's job flags", "weir run " + name) {
    setup_help(&app);
  }

  absl::Status add_options(const std::string& name, const cluster::JobLibrary* library) {
    flags.add_to(&app);
    if (library != nullptr) {
      app.allow_extras();  // the library's own arguments
    } else if (name == "running-sum") {
      add_running_sum_options(&app, rs);
    } else if (name == "orders") {
      add_orders_options(&app, orders);
    } else if (name == "line-copy") {
      app.add_option("--input", lc.input, "Input file")->required();
      app.add_option("--output", lc.output_dir, "Output directory")->required();
      app.add_option("--rate", lc.rate, "Lines/s per subtask (0: unlimited)")->check(whole_number(0));
      app.add_option("--fail-subtask", lc.fail_subtask, "This subtask fails once, in its first attempt (-1: none)");
      app.add_option("--fail-after", lc.fail_after, "...after this many lines")->check(whole_number(1));
    } else if (name == "nexmark") {
      add_nexmark_options(&app, nx, /*dump=*/false);
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
    } else {
      return absl::InvalidArgumentError("unknown job '" + name + "' (built-in jobs: " + std::string(kBuiltinJobs) +
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
  examples::RunningSumOptions& rs = cl.rs;
  examples::OrdersOptions& orders = cl.orders;
  examples::LineCopyOptions& lc = cl.lc;
  NexmarkFlags& nx = cl.nx;
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them last first
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return absl::InvalidArgumentError(name + ": " + parse_error_message(e, app));
  }
  if (library == nullptr && name == "running-sum") {
    absl::Status s = validate_running_sum_options(rs);
    if (!s.ok()) return s;
  }
  if (library == nullptr && name == "nexmark") {
    absl::Status s = nx.validate();
    if (!s.ok()) return s;
  }
  if (library == nullptr && name == "orders") {
    absl::Status s = examples::validate_orders_options(orders);
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
  if (library != nullptr) {
    auto s = library->build(*env, app.remaining());
    if (!s.ok()) return s;
  } else if (name == "running-sum") {
    rs.parallelism = flags.parallelism;
    examples::build_running_sum(*env, rs);
  } else if (name == "orders") {
    orders.parallelism = flags.parallelism;
    examples::build_orders(*env, orders);
  } else if (name == "line-copy") {
    lc.parallelism = flags.parallelism;
    examples::build_line_copy(*env, lc);
  } else if (name == "sql") {
    absl::Status s = build_sql_job("sql --script", cl.sql_script, *env, cl.sql_collect);
    if (!s.ok()) return s;
  } else {
    nexmark::QueryOptions o = nx.to_query_options();
    if (nx.output != "blackhole") o.output_dir = nx.output;
    auto s = nx.api == "sql" ? nexmark::build_query_sql(*env, o) : nexmark::build_query(*env, o);
    if (!s.ok()) return absl::InvalidArgumentError(std::string(s.message()));
  }
  if (!env->build_error().ok()) return env->build_error();
  return env;
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
  connectors.sources["nexmark"] = nexmark::nexmark_table_source(nexmark::QueryOptions{});
  return connectors;
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
