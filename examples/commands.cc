#include "examples/commands.h"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/config_file.h"
#include "cli/exit_codes.h"
#include "cli/extensions.h"
#include "cli/jobs.h"
#include "cli/s3_options.h"
#include "examples/example_runs.h"
#include "examples/nexmark/sql_tables.h"
#include "weir/connectors.h"
#include "weir/weir.h"

namespace weir::examples {

using cli::whole_number;

void add_running_sum_options(CLI::App* app, RunningSumOptions& o) {
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
  app->add_option("--sink-rate", o.sink_rate,
                  "The output sink writes at most this many lines per second per subtask (0: unlimited): "
                  "a slow sink, to see backpressure")
      ->check(whole_number(0));
}

absl::Status validate_running_sum_options(const RunningSumOptions& o) {
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
  if ((o.sink_parallelism > 0 || o.fail_sink_subtask >= 0 || o.sink_rate > 0) &&
      (!o.output_table.empty() || !o.output_topic.empty())) {
    return absl::InvalidArgumentError(
        "running-sum: --sink-parallelism, --fail-sink-subtask and --sink-rate apply to the file sink (--output), not "
        "to --output-topic or --output-table");
  }
  return absl::OkStatus();
}

void add_orders_options(CLI::App* app, OrdersOptions& o) {
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

void add_nexmark_options(CLI::App* app, NexmarkFlags& f, bool embedded) {
  app->add_option("--query", f.query, "q0 .. q22 (required unless --produce-to)");
  app->add_option("--api", f.api,
                  "datastream (the query in C++) | sql (from its SQL text, examples/nexmark/sql/QUERY.sql)")
      ->capture_default_str();
  app->add_option("--events", f.events, "Events to generate")->check(whole_number(1));
  app->add_option("--rate", f.rate, "Emit at most this many events/s (0: unlimited)")
      ->check(whole_number(0));
  app->add_option("--event-rate", f.event_rate, "Events per second of event time in the generator's clock")
      ->check(whole_number(1));
  app->add_option("--output", f.output, embedded ? "FILE for the result rows, or blackhole"
                                             : "DIRECTORY for the result part files, or blackhole");
  if (embedded) app->add_option("--dump-events", f.dump_dir, "Also write the events as CSV into DIR");
  app->add_option("--fail-every", f.fail_every, "Inject a source failure every ~N events")
      ->check(whole_number(0));
  app->add_option("--seed", f.seed, "Seed for failure positions");
  app->add_option("--side-input", f.side_input, "q13: lines <key>,<value>");
  app->add_option("--source", f.source, "generator | kafka (events from --topic)")->capture_default_str();
  app->add_option("--kafka-brokers", f.kafka_brokers, "Kafka bootstrap servers, for --source kafka and --produce-to");
  app->add_option("--topic", f.topic, "--source kafka: the topic of the events");
  app->add_flag("--kafka-unbounded", f.kafka_unbounded,
                "--source kafka: keep reading after the end the topic had at the start");
  if (embedded) {
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

using cli::fail;
using cli::JobFlags;
using cli::kBadArguments;

// The built-in jobs, as `weir run NAME ARGS` and every process of a
// cluster build them.

class RunningSumJob final : public cli::JobDefinition {
 public:
  void add_options(CLI::App* app) override { add_running_sum_options(app, options_); }
  absl::Status validate() const override { return validate_running_sum_options(options_); }
  absl::Status build(StreamEnvironment& env, const JobFlags& flags) override {
    options_.parallelism = flags.parallelism;
    build_running_sum(env, options_);
    return absl::OkStatus();
  }

 private:
  RunningSumOptions options_;
};

void add_components_options(CLI::App* app, ComponentsOptions& o) {
  app->add_option("--input", o.input, "Input file of `u v` edge lines (weir generate graph)")->required();
  app->add_option("--output", o.output_dir, "Output directory")->required();
  app->add_option("--fail-every", o.fail_every, "Inject a task failure every ~N records")->check(whole_number(0));
  app->add_option("--seed", o.seed, "Seed for failure positions");
  app->add_option("--rate", o.rate, "Read at most this many lines per second per source subtask (0: unlimited)")
      ->check(whole_number(0));
}

class ComponentsJob final : public cli::JobDefinition {
 public:
  void add_options(CLI::App* app) override { add_components_options(app, options_); }
  absl::Status build(StreamEnvironment& env, const JobFlags& flags) override {
    options_.parallelism = flags.parallelism;
    build_components(env, options_);
    return absl::OkStatus();
  }

 private:
  ComponentsOptions options_;
};

class OrdersJob final : public cli::JobDefinition {
 public:
  void add_options(CLI::App* app) override { add_orders_options(app, options_); }
  absl::Status validate() const override { return validate_orders_options(options_); }
  absl::Status build(StreamEnvironment& env, const JobFlags& flags) override {
    options_.parallelism = flags.parallelism;
    build_orders(env, options_);
    return absl::OkStatus();
  }

 private:
  OrdersOptions options_;
};

// The forward-only job of examples/running_sum: independent pipelines, one
// region per subtask.
class LineCopyJob final : public cli::JobDefinition {
 public:
  void add_options(CLI::App* app) override {
    app->add_option("--input", options_.input, "Input file")->required();
    app->add_option("--output", options_.output_dir, "Output directory")->required();
    app->add_option("--rate", options_.rate, "Lines/s per subtask (0: unlimited)")->check(whole_number(0));
    app->add_option("--fail-subtask", options_.fail_subtask, "This subtask fails once, in its first attempt (-1: none)");
    app->add_option("--fail-after", options_.fail_after, "...after this many lines")->check(whole_number(1));
  }
  absl::Status build(StreamEnvironment& env, const JobFlags& flags) override {
    options_.parallelism = flags.parallelism;
    build_line_copy(env, options_);
    return absl::OkStatus();
  }

 private:
  LineCopyOptions options_;
};

// A Nexmark query; its --output a directory of part files.
class NexmarkJob final : public cli::JobDefinition {
 public:
  void add_options(CLI::App* app) override { add_nexmark_options(app, flags_, /*embedded=*/false); }
  absl::Status validate() const override { return flags_.validate(); }
  absl::Status build(StreamEnvironment& env, const JobFlags&) override {
    nexmark::QueryOptions o = flags_.to_query_options();
    if (flags_.output != "blackhole") o.output_dir = flags_.output;
    auto s = flags_.api == "sql" ? nexmark::build_query_sql(env, o) : nexmark::build_query(env, o);
    if (!s.ok()) return absl::InvalidArgumentError(std::string(s.message()));
    return absl::OkStatus();
  }

 private:
  NexmarkFlags flags_;
};

// weir example running-sum|connected-components|orders, weir nexmark, weir generate
// running-sum-input|graph|orders, weir verify running-sum|connected-components.
class ExampleCommands final : public cli::CommandGroup {
 public:
  explicit ExampleCommands(CLI::App& app) {
    CLI::App* example = app.add_subcommand("example", "Run a built-in example job");
    example->require_subcommand(1);
    running_sum_ = example->add_subcommand("running-sum", "Per-key running sum and count");
    add_running_sum_options(running_sum_, running_sum_options_);
    running_sum_flags_.add_to(running_sum_);
    components_ = example->add_subcommand(
        "connected-components", "Connected components of a graph's edges: an iteration, exactly-once");
    add_components_options(components_, components_options_);
    components_flags_.add_to(components_);
    orders_ = example->add_subcommand("orders", "JSON orders from Kafka, windowed totals to Kafka and PostgreSQL");
    add_orders_options(orders_, orders_options_);
    orders_flags_.add_to(orders_);

    nexmark_ = app.add_subcommand("nexmark", "Run a Nexmark query on generated events");
    add_nexmark_options(nexmark_, nexmark_options_, /*embedded=*/true);
    nexmark_flags_.add_to(nexmark_);

    CLI::App* generate = app.add_subcommand("generate", "Write test input");
    generate->require_subcommand(1);
    generate->add_flag("--quiet,-q", generate_quiet_, "No progress line (there is none unless stdout is a terminal)");
    input_ = generate->add_subcommand("running-sum-input", "key,value lines");
    input_->add_option("--output", input_path_, "File to write")->required();
    input_->add_option("--lines", input_lines_, "Number of lines")->check(whole_number(0));
    input_->add_option("--keys", input_keys_, "Number of distinct keys")->check(whole_number(1));
    input_->add_option("--bad-every", input_bad_every_, "Every N-th line malformed (0: none)")->check(whole_number(0));
    input_->add_option("--seed", input_seed_, "Seed");
    graph_ = generate->add_subcommand("graph", "`u v` edge lines of a random graph");
    graph_->add_option("--output", graph_path_, "File to write")->required();
    graph_->add_option("--vertices", graph_vertices_, "Number of vertex ids")->check(whole_number(1));
    graph_->add_option("--edges", graph_edges_, "Number of lines")->check(whole_number(0));
    graph_->add_option("--bad-every", graph_bad_every_, "Every N-th line malformed (0: none)")->check(whole_number(0));
    graph_->add_option("--seed", graph_seed_, "Seed");
    generated_orders_ = generate->add_subcommand("orders", "JSON orders into a Kafka topic");
    generated_orders_->add_option("--kafka-brokers", brokers_, "Kafka bootstrap servers")->required();
    generated_orders_->add_option("--topic", topic_, "Topic")->capture_default_str();
    generated_orders_->add_option("--count", orders_to_generate_.count, "Number of orders")
        ->capture_default_str()
        ->check(whole_number(0));
    generated_orders_->add_option("--customers", orders_to_generate_.customers, "Number of customers")
        ->capture_default_str()
        ->check(whole_number(1));
    generated_orders_->add_option("--bad-every", orders_to_generate_.bad_every, "Every N-th record not an order (0: none)")
        ->check(whole_number(0));
    generated_orders_->add_option("--seed", orders_to_generate_.seed, "Seed");

    CLI::App* verify = app.add_subcommand("verify", "Check a job's committed output against its input");
    verify->require_subcommand(1);
    verify->add_flag("--quiet,-q", verify_quiet_, "No progress line (there is none unless stdout is a terminal)");
    verify_ = verify->add_subcommand("running-sum", "Check running-sum output");
    verify_->add_option("--input", verify_inputs_, "Input file(s), as given to the job")->required();
    verify_->add_option("--output", verify_output_, "The job's output directory")->required();
    auto* at_least_once =
        verify_->add_flag("--at-least-once", verify_at_least_once_, "Only require that nothing was lost");
    verify_->add_flag("--at-most-once", verify_at_most_once_,
                      "Only require that nothing was committed twice and that the sums follow from the records "
                      "committed; print how many were lost")
        ->excludes(at_least_once);

    verify_components_ = verify->add_subcommand("connected-components", "Check connected-components output");
    verify_components_->add_option("--input", verify_components_input_, "The input file, as given to the job")
        ->required();
    verify_components_->add_option("--output", verify_output_, "The job's output directory")->required();

    // The S3 connection of the jobs run here (the cluster's processes have
    // their own).
    for (CLI::App* c : {running_sum_, components_, orders_, nexmark_}) cli::add_s3_options(c, &s3_options_);
  }

  std::optional<int> run() override {
    for (CLI::App* c : {running_sum_, components_, orders_, nexmark_}) {
      if (!c->parsed()) continue;
      const char* config = std::getenv("WEIR_CONFIG");
      if (config != nullptr && *config != '\0') {
        absl::Status s = cli::apply_config(config, c, cli::kS3Only);
        if (!s.ok()) return fail(kBadArguments, std::string(s.message()));
      }
      s3::set_s3_options(s3_options_);
    }
    if (running_sum_->parsed()) {
      if (running_sum_flags_.verbose) spdlog::set_level(spdlog::level::info);
      running_sum_options_.parallelism = running_sum_flags_.parallelism;
      return run_running_sum(running_sum_options_, running_sum_flags_);
    }
    if (components_->parsed()) {
      if (components_flags_.verbose) spdlog::set_level(spdlog::level::info);
      components_options_.parallelism = components_flags_.parallelism;
      return run_components(components_options_, components_flags_);
    }
    if (graph_->parsed()) {
      return run_graph_generator(graph_path_, graph_vertices_, graph_edges_, graph_bad_every_, graph_seed_);
    }
    if (verify_components_->parsed()) return run_verify_components(verify_components_input_, verify_output_);
    if (orders_->parsed()) {
      if (orders_flags_.verbose) spdlog::set_level(spdlog::level::info);
      orders_options_.parallelism = orders_flags_.parallelism;
      return run_orders(orders_options_, orders_flags_);
    }
    if (nexmark_->parsed()) {
      if (nexmark_flags_.verbose) spdlog::set_level(spdlog::level::info);
      return run_nexmark(nexmark_options_, nexmark_flags_);
    }
    if (generated_orders_->parsed()) return run_order_producer(brokers_, topic_, orders_to_generate_, generate_quiet_);
    if (input_->parsed()) {
      return run_input_generator(input_path_, input_lines_, input_keys_, input_bad_every_, input_seed_,
                                 generate_quiet_);
    }
    if (verify_->parsed()) {
      const Guarantee g = verify_at_least_once_ ? Guarantee::kAtLeastOnce
                          : verify_at_most_once_ ? Guarantee::kAtMostOnce
                                                 : Guarantee::kExactlyOnce;
      return run_verify(verify_inputs_, verify_output_, g, verify_quiet_);
    }
    return std::nullopt;
  }

 private:
  CLI::App* running_sum_ = nullptr;
  RunningSumOptions running_sum_options_;
  JobFlags running_sum_flags_;
  CLI::App* components_ = nullptr;
  ComponentsOptions components_options_;
  JobFlags components_flags_;
  CLI::App* graph_ = nullptr;
  std::string graph_path_;
  int64_t graph_vertices_ = 10000, graph_edges_ = 8000, graph_bad_every_ = 0;
  uint64_t graph_seed_ = 1;
  CLI::App* verify_components_ = nullptr;
  std::string verify_components_input_;
  CLI::App* orders_ = nullptr;
  OrdersOptions orders_options_;
  JobFlags orders_flags_;
  CLI::App* nexmark_ = nullptr;
  NexmarkFlags nexmark_options_;
  JobFlags nexmark_flags_;
  s3::S3Options s3_options_;

  bool generate_quiet_ = false;
  CLI::App* input_ = nullptr;
  std::string input_path_;
  int64_t input_lines_ = 100000, input_keys_ = 100, input_bad_every_ = 0;
  uint64_t input_seed_ = 1;
  CLI::App* generated_orders_ = nullptr;
  GeneratedOrders orders_to_generate_;
  std::string brokers_, topic_ = "orders";

  bool verify_quiet_ = false;
  CLI::App* verify_ = nullptr;
  std::vector<std::string> verify_inputs_;
  std::string verify_output_;
  bool verify_at_least_once_ = false;
  bool verify_at_most_once_ = false;
};

}  // namespace

void register_examples() {
  cli::Extensions& x = cli::extensions();
  for (const cli::BuiltinJob& job : x.jobs) {
    if (job.name == "running-sum") return;  // registered before
  }
  x.jobs.push_back({"running-sum", [] { return std::make_unique<RunningSumJob>(); }});
  x.jobs.push_back({"orders", [] { return std::make_unique<OrdersJob>(); }});
  x.jobs.push_back({"connected-components", [] { return std::make_unique<ComponentsJob>(); }});
  x.jobs.push_back({"line-copy", [] { return std::make_unique<LineCopyJob>(); }});
  x.jobs.push_back({"nexmark", [] { return std::make_unique<NexmarkJob>(); }});
  x.embedded_job_commands.push_back({{"example", "running-sum"}, "running-sum"});
  x.embedded_job_commands.push_back({{"example", "orders"}, "orders"});
  x.embedded_job_commands.push_back({{"example", "connected-components"}, "connected-components"});
  x.embedded_job_commands.push_back({{"nexmark"}, "nexmark"});
  x.command_groups.push_back([](CLI::App& app) { return std::make_unique<ExampleCommands>(app); });
  x.table_sources["nexmark"] = nexmark::nexmark_table_source(nexmark::QueryOptions{});
}

}  // namespace weir::examples
