// The weir command line.
//
// Exit codes (documented in docs/cli.md):
//   0  success
//   1  `weir verify`: the output is not what the input implies
//   2  bad arguments
//   3  unusable input, output or checkpoint (unreadable file, no or broken
//      checkpoint to restore, state that does not fit the job)
//   4  the job failed and its restart strategy gave up
#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <csignal>
#include <thread>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "examples/nexmark/dump.h"
#include "examples/nexmark/queries.h"
#include "cli/cluster_commands.h"
#include "cli/config_file.h"
#include "cli/embedded.h"
#include "cli/jobs.h"
#include "cli/help.h"
#include "cli/exit_codes.h"
#include "cli/job_settings.h"
#include "cli/logging.h"
#include "cli/progress.h"
#include "cli/s3_options.h"
#include "cli/sql_command.h"
#include "cli/suggest.h"
#include "examples/nexmark/sql_tables.h"
#include "examples/running_sum/running_sum.h"
#include "weir/connectors.h"
#include "weir/version.h"
#include "weir/weir.h"

namespace {

using weir::cli::fail;
using weir::cli::JobFlags;
using weir::cli::kBadArguments;
using weir::cli::kBadInput;
using weir::cli::kJobFailed;
using weir::cli::kMismatch;
using weir::cli::kOk;
using weir::cli::NexmarkFlags;

int exit_code_for(const absl::Status& s) {
  if (absl::IsInvalidArgument(s)) return kBadArguments;
  return kBadInput;
}

int run_running_sum(const weir::examples::RunningSumOptions& opts, const JobFlags& flags) {
  auto config = flags.to_config();
  if (!config.ok()) return fail(kBadArguments, std::string(config.status().message()));
  absl::Status valid = weir::cli::validate_running_sum_options(opts);
  if (!valid.ok()) return fail(kBadArguments, std::string(valid.message()));
  for (const auto& in : opts.inputs) {
    if (::access(in.c_str(), R_OK) != 0) {
      return fail(kBadInput, "cannot read input " + in + ": " + std::strerror(errno));
    }
    if (std::filesystem::is_directory(in)) return fail(kBadInput, "input " + in + " is a directory");
  }
  std::error_code ec;
  std::filesystem::create_directories(opts.output_dir, ec);
  if (ec) return fail(kBadInput, "cannot create output directory " + opts.output_dir + ": " + ec.message());
  weir::cli::JobConsole console(flags.quiet, flags.default_savepoint_dir(), flags.drain);
  weir::StreamEnvironment env(*config);
  weir::examples::build_running_sum(env, opts);
  auto result = console.run(env, "running-sum");
  if (!result.ok()) return fail(exit_code_for(result.status()), std::string(result.status().message()));
  weir::cli::print_result(*result, stdout);
  if (result->status != weir::JobStatus::kFinished) {
    return fail(kJobFailed, "job failed: " + result->failure);
  }
  // The part files in the output directory; sums that went to Kafka or
  // PostgreSQL are counted by their sink's line above, not here.
  const bool files = opts.output_topic.empty() && opts.output_table.empty();
  int64_t output = 0, rejects = 0;
  auto counted = files ? weir::for_each_published_line(opts.output_dir, weir::examples::kOutputPrefix,
                                                       [&](std::string_view) { ++output; })
                       : absl::OkStatus();
  auto rejected = weir::for_each_published_line(opts.output_dir, weir::examples::kRejectsPrefix,
                                                [&](std::string_view) { ++rejects; });
  if (counted.ok() && rejected.ok()) {
    if (files) std::printf("output records: %lld, ", static_cast<long long>(output));
    std::printf("rejected lines: %lld\n", static_cast<long long>(rejects));
  }
  return kOk;
}

int run_orders(const weir::examples::OrdersOptions& opts, const JobFlags& flags) {
  auto config = flags.to_config();
  if (!config.ok()) return fail(kBadArguments, std::string(config.status().message()));
  absl::Status valid = weir::examples::validate_orders_options(opts);
  if (!valid.ok()) return fail(kBadArguments, std::string(valid.message()));
  weir::cli::JobConsole console(flags.quiet, flags.default_savepoint_dir(), flags.drain);
  weir::StreamEnvironment env(*config);
  weir::examples::build_orders(env, opts);
  auto result = console.run(env, "orders");
  if (!result.ok()) return fail(exit_code_for(result.status()), std::string(result.status().message()));
  weir::cli::print_result(*result, stdout);
  if (result->status != weir::JobStatus::kFinished) return fail(kJobFailed, "job failed: " + result->failure);
  return kOk;
}

// Runs a job that fills a topic to its end; kOk with `*result`, or the
// failure, printed, with its exit code.
int run_producer(weir::StreamEnvironment& env, const std::string& name, bool quiet, weir::JobResult* result) {
  weir::cli::JobConsole console(quiet, std::nullopt);
  auto r = console.run(env, name);
  if (!r.ok()) return fail(exit_code_for(r.status()), std::string(r.status().message()));
  if (r->status != weir::JobStatus::kFinished) return fail(kJobFailed, "job failed: " + r->failure);
  *result = std::move(*r);
  return kOk;
}

int run_order_producer(const std::string& brokers, const std::string& topic,
                       const weir::examples::GeneratedOrders& g, bool quiet) {
  if (brokers.empty()) return fail(kBadArguments, "generate orders: give --kafka-brokers HOST:PORT");
  weir::JobConfig config;
  config.checkpoint.interval = weir::Duration(1000);
  weir::StreamEnvironment env(config);
  weir::examples::build_order_producer(env, brokers, topic, g);
  weir::JobResult result;
  if (int code = run_producer(env, "order-producer", quiet, &result); code != kOk) return code;
  std::printf("produced %lld orders to %s\n", static_cast<long long>(g.count), topic.c_str());
  return kOk;
}

double cpu_seconds() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

int run_nexmark_producer(const NexmarkFlags& nf, weir::JobConfig config, bool quiet) {
  weir::nexmark::QueryOptions o = nf.to_query_options();
  weir::StreamEnvironment env(config);
  weir::nexmark::build_nexmark_producer(env, o, nf.produce_to);
  weir::JobResult result;
  if (int code = run_producer(env, "nexmark-producer", quiet, &result); code != kOk) return code;
  std::printf("produced %lld events to %s in %.3f s\n", static_cast<long long>(nf.events), nf.produce_to.c_str(),
              result.wall_time.count() / 1000.0);
  return kOk;
}

int run_nexmark(const NexmarkFlags& nf, const JobFlags& flags) {
  auto config = flags.to_config();
  if (!config.ok()) return fail(kBadArguments, std::string(config.status().message()));
  absl::Status valid = nf.validate();
  if (!valid.ok()) return fail(kBadArguments, std::string(valid.message()));
  if (!nf.produce_to.empty()) return run_nexmark_producer(nf, *config, flags.quiet);
  weir::nexmark::QueryOptions o = nf.to_query_options();
  std::atomic<int64_t> events_read{0};
  o.events_read = &events_read;
  std::string generated_side_input;  // removed on return
  absl::Cleanup remove_side_input = [&generated_side_input] {
    std::error_code ec;
    if (!generated_side_input.empty()) std::filesystem::remove(generated_side_input, ec);
  };
  if (nf.query == "q13" && o.side_input.empty()) {
    generated_side_input = (std::filesystem::temp_directory_path() /
                            ("weir-nexmark-side-input-" + std::to_string(::getpid()) + ".csv"))
                               .string();
    o.side_input = generated_side_input;
    auto s = weir::nexmark::write_default_side_input(o.side_input);
    if (!s.ok()) return fail(kBadInput, std::string(s.message()));
  }
  std::atomic<int64_t> rows{0};
  o.rows = &rows;
  // Results go to FILE.parts and are concatenated into FILE at the end;
  // q10's partitioned output stays a directory tree at FILE.
  std::string parts;
  const bool partitioned = nf.query == "q10";
  if (nf.output != "blackhole") {
    parts = partitioned ? nf.output : nf.output + ".parts";
    std::error_code ec;
    std::filesystem::remove_all(parts, ec);
    o.output_dir = parts;
  }
  if (!nf.dump_dir.empty()) {
    weir::nexmark::Generator gen(o.generator);
    auto s = weir::nexmark::dump_events(gen, nf.events, nf.dump_dir);
    if (!s.ok()) return fail(kBadInput, std::string(s.message()));
  }
  weir::cli::JobConsole console(flags.quiet, flags.default_savepoint_dir(), flags.drain);
  weir::StreamEnvironment env(*config);
  auto s = nf.api == "sql" ? weir::nexmark::build_query_sql(env, o) : weir::nexmark::build_query(env, o);
  if (!s.ok()) return fail(kBadArguments, std::string(s.message()));
  double cpu0 = cpu_seconds();
  auto result = console.run(env, "nexmark-" + nf.query);
  double cpu = cpu_seconds() - cpu0;
  if (!result.ok()) return fail(exit_code_for(result.status()), std::string(result.status().message()));
  if (result->status != weir::JobStatus::kFinished) {
    weir::cli::print_result(*result, stdout);
    return fail(kJobFailed, "job failed: " + result->failure);
  }
  int64_t out_rows = rows.load();
  if (!parts.empty() && partitioned) {
    out_rows = 0;
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(parts, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      if (it->path().filename().string().rfind(weir::nexmark::kResultPrefix, 0) != 0) continue;
      std::ifstream in(it->path());
      out_rows += std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n');
    }
  } else if (!parts.empty()) {
    auto lines = weir::read_published_lines(parts, weir::nexmark::kResultPrefix);
    if (!lines.ok()) return fail(kBadInput, std::string(lines.status().message()));
    std::ofstream out(nf.output, std::ios::trunc);
    for (const auto& l : *lines) out << l << '\n';
    out.close();
    if (!out) return fail(kBadInput, "cannot write " + nf.output);
    out_rows = static_cast<int64_t>(lines->size());
    std::error_code ec;
    std::filesystem::remove_all(parts, ec);
  }
  double wall = result->wall_time.count() / 1000.0;
  weir::cli::print_result(*result, stdout);
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  if (!result->stopped_with_savepoint.empty()) {
    // Stopped part-way: the number of events read is not the configured one.
    std::printf("query: %s\nevents: stopped before %lld\nrows: %lld\nwall time: %.3f s\n"
                "cpu time: %.3f s (%.2f cores)\npeak rss: %.1f MB\n",
                nf.query.c_str(), static_cast<long long>(nf.events), static_cast<long long>(out_rows), wall, cpu,
                cpu / wall, ru.ru_maxrss / 1024.0);
  } else {
    // From Kafka: the events the job read (the topic's), not --events.
    const double events = o.kafka_topic.empty() ? static_cast<double>(nf.events) : events_read.load();
    std::printf("query: %s\nevents: %.0f\nrows: %lld\nwall time: %.3f s\nevents/s: %.0f\n"
                "cpu time: %.3f s (%.2f cores)\nevents/s per core: %.0f\npeak rss: %.1f MB\n",
                nf.query.c_str(), events, static_cast<long long>(out_rows), wall, events / wall, cpu, cpu / wall,
                events / cpu, ru.ru_maxrss / 1024.0);
  }
  for (const auto& c : result->checkpoints) {
    std::printf("checkpoint %lld: %lld ms, %llu bytes (%llu new)%s\n", static_cast<long long>(c.id),
                static_cast<long long>(c.duration.count()), static_cast<unsigned long long>(c.state_bytes),
                static_cast<unsigned long long>(c.new_bytes),
                c.is_savepoint ? " (savepoint)" : c.is_final ? " (final)" : "");
  }
  return kOk;
}

}  // namespace

// `weir example running-sum ARGS --jobmanager HOST:PORT`, `weir nexmark
// ARGS --jobmanager HOST:PORT` and `weir sql FILE ARGS --jobmanager
// HOST:PORT` (its script read and planned first) submit the job to a cluster instead of running
// it here: they become `weir run --jobmanager HOST:PORT JOB ARGS` (with
// --secret-file, --config and --detached passed on). Empty when not asked for.
std::vector<std::string> as_cluster_submission(std::vector<std::string> args) {
  size_t job_at = 0;
  if (args.size() > 2 && args[1] == "example" && (args[2] == "running-sum" || args[2] == "orders")) job_at = 2;
  if (args.size() > 1 && (args[1] == "nexmark" || args[1] == "sql")) job_at = 1;  // sql: with --script TEXT
  if (job_at == 0 || std::find(args.begin(), args.end(), "--jobmanager") == args.end()) return {};
  std::vector<std::string> run = {args[0], "run"};
  std::vector<std::string> job_args;
  for (size_t i = job_at + 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    const auto& s3 = weir::cli::s3_option_names();
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
  run.push_back(args[job_at]);
  run.insert(run.end(), job_args.begin(), job_args.end());
  return run;
}

int main(int argc, char** argv) {
  // A peer that closes a connection is an error to handle, not the end of
  // the process (TLS writes cannot ask for MSG_NOSIGNAL).
  std::signal(SIGPIPE, SIG_IGN);
  std::vector<std::string> given(argv, argv + argc);
  if (std::optional<int> failed = weir::cli::sql_script_for_cluster(&given)) return *failed;
  std::vector<std::string> submission = as_cluster_submission(given);
  std::vector<char*> submission_argv;
  for (auto& a : submission) submission_argv.push_back(a.data());
  if (!submission.empty()) {
    argc = static_cast<int>(submission_argv.size());
    argv = submission_argv.data();
  }
  // weir example JOB / weir nexmark in this process: their -D settings
  // (and the [job] section of $WEIR_CONFIG) become job flags.
  std::vector<std::string> embedded = submission.empty() ? std::vector<std::string>(argv, argv + argc)
                                                         : std::vector<std::string>{};
  const size_t job_args_at = embedded.size() > 2 && embedded[1] == "example" ? 3
                             : embedded.size() > 1 && embedded[1] == "nexmark" ? 2
                                                                                : 0;
  std::vector<char*> embedded_argv;
  if (job_args_at > 0) {
    const char* config = std::getenv("WEIR_CONFIG");
    auto args = weir::cli::with_job_settings(
        std::vector<std::string>(embedded.begin() + job_args_at, embedded.end()), config != nullptr ? config : "");
    if (!args.ok()) return fail(kBadArguments, std::string(args.status().message()));
    embedded.resize(job_args_at);
    embedded.insert(embedded.end(), args->begin(), args->end());
    for (auto& a : embedded) embedded_argv.push_back(a.data());
    argc = static_cast<int>(embedded_argv.size());
    argv = embedded_argv.data();
  }
  CLI::App app{"weir: a stateful stream processing engine"};
  weir::cli::setup_help(&app);
  app.require_subcommand(1);
  app.set_version_flag("--version", "weir " WEIR_VERSION, "Print weir's version and exit");
  if (argc == 1) return fail(kBadArguments, "give a command (weir --help lists them)");
  // Logs go to stderr at warn (or $WEIR_LOG_LEVEL); stdout carries results.
  // The cluster commands set their own (--log-level, --log-file).
  if (absl::Status logging = weir::cli::configure_logging({}); !logging.ok()) {
    return fail(kBadArguments, std::string(logging.message()));
  }

  // weir example running-sum
  auto* example = app.add_subcommand("example", "Run a built-in example job");
  example->require_subcommand(1);
  auto* rs = example->add_subcommand("running-sum", "Per-key running sum and count");
  weir::examples::RunningSumOptions rs_opts;
  JobFlags rs_flags;
  weir::cli::add_running_sum_options(rs, rs_opts);
  rs_flags.add_to(rs);

  auto* orders = example->add_subcommand("orders", "JSON orders from Kafka, windowed totals to Kafka and PostgreSQL");
  weir::examples::OrdersOptions orders_opts;
  JobFlags orders_flags;
  weir::cli::add_orders_options(orders, orders_opts);
  orders_flags.add_to(orders);

  // weir nexmark
  auto* nx = app.add_subcommand("nexmark", "Run a Nexmark query on generated events");
  NexmarkFlags nx_flags;
  JobFlags nx_job;
  weir::cli::add_nexmark_options(nx, nx_flags, /*dump=*/true);
  nx_job.add_to(nx);

  // weir generate running-sum-input
  auto* gen = app.add_subcommand("generate", "Write test input");
  gen->require_subcommand(1);
  auto* gen_rs = gen->add_subcommand("running-sum-input", "key,value lines");
  std::string gen_path;
  int64_t gen_lines = 100000, gen_keys = 100, gen_bad_every = 0;
  uint64_t gen_seed = 1;
  gen_rs->add_option("--output", gen_path, "File to write")->required();
  gen_rs->add_option("--lines", gen_lines, "Number of lines")->check(weir::cli::whole_number(0));
  gen_rs->add_option("--keys", gen_keys, "Number of distinct keys")->check(weir::cli::whole_number(1));
  gen_rs->add_option("--bad-every", gen_bad_every, "Every N-th line malformed (0: none)")
      ->check(weir::cli::whole_number(0));
  gen_rs->add_option("--seed", gen_seed, "Seed");
  bool gen_quiet = false;
  gen->add_flag("--quiet,-q", gen_quiet, "No progress line (there is none unless stdout is a terminal)");

  auto* gen_orders = gen->add_subcommand("orders", "JSON orders into a Kafka topic");
  weir::examples::GeneratedOrders gen_o;
  std::string gen_brokers, gen_topic = "orders";
  gen_orders->add_option("--kafka-brokers", gen_brokers, "Kafka bootstrap servers")->required();
  gen_orders->add_option("--topic", gen_topic, "Topic")->capture_default_str();
  gen_orders->add_option("--count", gen_o.count, "Number of orders")->capture_default_str()->check(weir::cli::whole_number(0));
  gen_orders->add_option("--customers", gen_o.customers, "Number of customers")
      ->capture_default_str()
      ->check(weir::cli::whole_number(1));
  gen_orders->add_option("--bad-every", gen_o.bad_every, "Every N-th record not an order (0: none)")
      ->check(weir::cli::whole_number(0));
  gen_orders->add_option("--seed", gen_o.seed, "Seed");

  // weir verify running-sum
  auto* verify = app.add_subcommand("verify", "Check a job's committed output against its input");
  verify->require_subcommand(1);
  auto* ver_rs = verify->add_subcommand("running-sum", "Check running-sum output");
  std::vector<std::string> ver_inputs;
  std::string ver_output;
  bool ver_at_least_once = false;
  ver_rs->add_option("--input", ver_inputs, "Input file(s), as given to the job")->required();
  ver_rs->add_option("--output", ver_output, "The job's output directory")->required();
  ver_rs->add_flag("--at-least-once", ver_at_least_once, "Only require that nothing was lost");
  bool ver_quiet = false;
  verify->add_flag("--quiet,-q", ver_quiet, "No progress line (there is none unless stdout is a terminal)");

  // The S3 connection of the embedded job commands (the cluster commands
  // add their own).
  weir::s3::S3Options s3_options;
  for (CLI::App* c : {rs, orders, nx}) weir::cli::add_s3_options(c, &s3_options);

  weir::cli::ClusterCommands cluster(app);
  weir::cli::SqlCommand sql(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    return fail(kBadArguments, weir::cli::parse_error_message(e, app));
  }

  if (auto code = cluster.run()) return *code;
  if (auto code = sql.run()) return *code;
  for (CLI::App* c : {rs, orders, nx}) {
    if (!c->parsed()) continue;
    const char* config = std::getenv("WEIR_CONFIG");
    if (config != nullptr && *config != '\0') {
      absl::Status s = weir::cli::apply_config(config, c, weir::cli::kS3Only);
      if (!s.ok()) return fail(kBadArguments, std::string(s.message()));
    }
    weir::s3::set_s3_options(s3_options);
  }
  if (rs->parsed()) {
    if (rs_flags.verbose) spdlog::set_level(spdlog::level::info);
    rs_opts.parallelism = rs_flags.parallelism;
    return run_running_sum(rs_opts, rs_flags);
  }
  if (orders->parsed()) {
    if (orders_flags.verbose) spdlog::set_level(spdlog::level::info);
    orders_opts.parallelism = orders_flags.parallelism;
    return run_orders(orders_opts, orders_flags);
  }
  if (gen_orders->parsed()) return run_order_producer(gen_brokers, gen_topic, gen_o, gen_quiet);
  if (nx->parsed()) {
    if (nx_job.verbose) spdlog::set_level(spdlog::level::info);
    return run_nexmark(nx_flags, nx_job);
  }
  if (gen_rs->parsed()) {
    std::atomic<int64_t> written{0};
    weir::cli::ProgressLine line(gen_quiet);
    line.tick([&](weir::cli::ProgressLine::Clock::duration elapsed) {
      return fmt::format("writing  {} of {} lines  {}", written.load(), gen_lines, weir::cli::format_elapsed(elapsed));
    });
    auto s = weir::examples::generate_running_sum_input(gen_path, gen_lines, gen_keys, gen_bad_every,
                                                        gen_seed, &written);
    line.stop();
    if (!s.ok()) return fail(kBadInput, std::string(s.message()));
    return kOk;
  }
  if (ver_rs->parsed()) {
    std::atomic<int64_t> looked_at{0};
    weir::cli::ProgressLine line(ver_quiet);
    line.tick([&](weir::cli::ProgressLine::Clock::duration elapsed) {
      return fmt::format("checking  {} input and output lines  {}", looked_at.load(),
                         weir::cli::format_elapsed(elapsed));
    });
    auto c = weir::examples::check_running_sum(ver_inputs, ver_output, nullptr, &looked_at);
    line.stop();
    if (!c.ok()) return fail(kBadInput, std::string(c.status().message()));
    std::printf("input lines: %lld (valid %lld over %lld keys, malformed %lld)\n",
                static_cast<long long>(c->input_lines), static_cast<long long>(c->valid_records),
                static_cast<long long>(c->keys), static_cast<long long>(c->expected_rejects));
    std::printf("committed output lines: %lld, rejects: %lld\n",
                static_cast<long long>(c->output_lines), static_cast<long long>(c->reject_lines));
    for (const auto& p : c->problems) std::printf("  %s\n", p.c_str());
    bool ok = ver_at_least_once ? c->nothing_lost : c->exactly_once;
    std::printf("%s: %s\n", ver_at_least_once ? "nothing lost" : "exactly-once",
                ok ? "yes" : "NO");
    return ok ? kOk : kMismatch;
  }
  return kBadArguments;
}
