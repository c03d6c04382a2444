#include "examples/example_runs.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "cli/embedded.h"
#include "cli/exit_codes.h"
#include "cli/progress.h"
#include "examples/nexmark/dump.h"
#include "examples/nexmark/sql_tables.h"
#include "weir/connectors.h"
#include "weir/weir.h"

namespace weir::examples {

using cli::fail;
using cli::JobFlags;
using cli::kBadArguments;
using cli::kBadInput;
using cli::kJobFailed;
using cli::kMismatch;
using cli::kOk;

namespace {

int exit_code_for(const absl::Status& s) {
  if (absl::IsInvalidArgument(s)) return kBadArguments;
  return kBadInput;
}

// Runs a job that fills a topic to its end; kOk with `*result`, or the
// failure, printed, with its exit code.
int run_producer(StreamEnvironment& env, const std::string& name, bool quiet, JobResult* result) {
  cli::JobConsole console(quiet, std::nullopt);
  auto r = console.run(env, name);
  if (!r.ok()) return fail(exit_code_for(r.status()), std::string(r.status().message()));
  if (r->status != JobStatus::kFinished) return fail(kJobFailed, "job failed: " + r->failure);
  *result = std::move(*r);
  return kOk;
}

double cpu_seconds() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

int run_nexmark_producer(const NexmarkFlags& nf, JobConfig config, bool quiet) {
  nexmark::QueryOptions o = nf.to_query_options();
  StreamEnvironment env(config);
  nexmark::build_nexmark_producer(env, o, nf.produce_to);
  JobResult result;
  if (int code = run_producer(env, "nexmark-producer", quiet, &result); code != kOk) return code;
  std::printf("produced %lld events to %s in %.3f s\n", static_cast<long long>(nf.events), nf.produce_to.c_str(),
              result.wall_time.count() / 1000.0);
  return kOk;
}

}  // namespace

int run_running_sum(const RunningSumOptions& opts, const JobFlags& flags) {
  auto config = flags.to_config();
  if (!config.ok()) return fail(kBadArguments, std::string(config.status().message()));
  absl::Status valid = validate_running_sum_options(opts);
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
  cli::JobConsole console(flags.quiet, flags.default_savepoint_dir(), flags.drain);
  StreamEnvironment env(*config);
  build_running_sum(env, opts);
  auto result = console.run(env, "running-sum");
  if (!result.ok()) return fail(exit_code_for(result.status()), std::string(result.status().message()));
  cli::print_result(*result, stdout);
  if (result->status != JobStatus::kFinished) {
    return fail(kJobFailed, "job failed: " + result->failure);
  }
  // The part files in the output directory; sums that went to Kafka or
  // PostgreSQL are counted by their sink's line above, not here.
  const bool files = opts.output_topic.empty() && opts.output_table.empty();
  int64_t output = 0, rejects = 0;
  auto counted = files ? for_each_published_line(opts.output_dir, kOutputPrefix,
                                                       [&](std::string_view) { ++output; })
                       : absl::OkStatus();
  auto rejected = for_each_published_line(opts.output_dir, kRejectsPrefix,
                                                [&](std::string_view) { ++rejects; });
  if (counted.ok() && rejected.ok()) {
    if (files) std::printf("output records: %lld, ", static_cast<long long>(output));
    std::printf("rejected lines: %lld\n", static_cast<long long>(rejects));
  }
  return kOk;
}

int run_components(const ComponentsOptions& opts, const JobFlags& flags) {
  auto config = flags.to_config();
  if (!config.ok()) return fail(kBadArguments, std::string(config.status().message()));
  if (::access(opts.input.c_str(), R_OK) != 0) {
    return fail(kBadInput, "cannot read input " + opts.input + ": " + std::strerror(errno));
  }
  if (std::filesystem::is_directory(opts.input)) return fail(kBadInput, "input " + opts.input + " is a directory");
  std::error_code ec;
  std::filesystem::create_directories(opts.output_dir, ec);
  if (ec) return fail(kBadInput, "cannot create output directory " + opts.output_dir + ": " + ec.message());
  cli::JobConsole console(flags.quiet, flags.default_savepoint_dir(), flags.drain);
  StreamEnvironment env(*config);
  build_components(env, opts);
  auto result = console.run(env, "connected-components");
  if (!result.ok()) return fail(exit_code_for(result.status()), std::string(result.status().message()));
  cli::print_result(*result, stdout);
  if (result->status != JobStatus::kFinished) return fail(kJobFailed, "job failed: " + result->failure);
  int64_t labels = 0;
  if (for_each_published_line(opts.output_dir, kComponentsPrefix, [&](std::string_view) { ++labels; }).ok()) {
    std::printf("label lines: %lld\n", static_cast<long long>(labels));
  }
  return kOk;
}

int run_graph_generator(const std::string& path, int64_t vertices, int64_t edges, int64_t bad_every, uint64_t seed) {
  absl::Status s = write_graph(path, vertices, edges, bad_every, seed);
  if (!s.ok()) return fail(kBadInput, std::string(s.message()));
  std::printf("wrote %lld edges over %lld vertices to %s\n", static_cast<long long>(edges),
              static_cast<long long>(vertices), path.c_str());
  return kOk;
}

int run_verify_components(const std::string& input, const std::string& output) {
  auto c = check_components(input, output);
  if (!c.ok()) return fail(kBadInput, std::string(c.status().message()));
  std::printf("input: %lld edges over %lld vertices in %lld components, %lld malformed lines\n",
              static_cast<long long>(c->edges), static_cast<long long>(c->vertices),
              static_cast<long long>(c->components), static_cast<long long>(c->rejects_expected));
  std::printf("committed label lines: %lld, rejects: %lld\n", static_cast<long long>(c->output_lines),
              static_cast<long long>(c->reject_lines));
  for (const auto& p : c->problems) std::printf("  %s\n", p.c_str());
  std::printf("exactly-once: %s\n", c->exactly_once ? "yes" : "NO");
  return c->exactly_once ? kOk : kMismatch;
}

int run_orders(const OrdersOptions& opts, const JobFlags& flags) {
  auto config = flags.to_config();
  if (!config.ok()) return fail(kBadArguments, std::string(config.status().message()));
  absl::Status valid = validate_orders_options(opts);
  if (!valid.ok()) return fail(kBadArguments, std::string(valid.message()));
  cli::JobConsole console(flags.quiet, flags.default_savepoint_dir(), flags.drain);
  StreamEnvironment env(*config);
  build_orders(env, opts);
  auto result = console.run(env, "orders");
  if (!result.ok()) return fail(exit_code_for(result.status()), std::string(result.status().message()));
  cli::print_result(*result, stdout);
  if (result->status != JobStatus::kFinished) return fail(kJobFailed, "job failed: " + result->failure);
  return kOk;
}

int run_order_producer(const std::string& brokers, const std::string& topic,
                       const GeneratedOrders& g, bool quiet) {
  if (brokers.empty()) return fail(kBadArguments, "generate orders: give --kafka-brokers HOST:PORT");
  JobConfig config;
  config.checkpoint.interval = Duration(1000);
  StreamEnvironment env(config);
  build_order_producer(env, brokers, topic, g);
  JobResult result;
  if (int code = run_producer(env, "order-producer", quiet, &result); code != kOk) return code;
  std::printf("produced %lld orders to %s\n", static_cast<long long>(g.count), topic.c_str());
  return kOk;
}

int run_nexmark(const NexmarkFlags& nf, const JobFlags& flags) {
  auto config = flags.to_config();
  if (!config.ok()) return fail(kBadArguments, std::string(config.status().message()));
  absl::Status valid = nf.validate();
  if (!valid.ok()) return fail(kBadArguments, std::string(valid.message()));
  if (!nf.produce_to.empty()) return run_nexmark_producer(nf, *config, flags.quiet);
  nexmark::QueryOptions o = nf.to_query_options();
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
    auto s = nexmark::write_default_side_input(o.side_input);
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
    nexmark::Generator gen(o.generator);
    auto s = nexmark::dump_events(gen, nf.events, nf.dump_dir);
    if (!s.ok()) return fail(kBadInput, std::string(s.message()));
  }
  cli::JobConsole console(flags.quiet, flags.default_savepoint_dir(), flags.drain);
  StreamEnvironment env(*config);
  auto s = nf.api == "sql" ? nexmark::build_query_sql(env, o) : nexmark::build_query(env, o);
  if (!s.ok()) return fail(kBadArguments, std::string(s.message()));
  double cpu0 = cpu_seconds();
  auto result = console.run(env, "nexmark-" + nf.query);
  double cpu = cpu_seconds() - cpu0;
  if (!result.ok()) return fail(exit_code_for(result.status()), std::string(result.status().message()));
  if (result->status != JobStatus::kFinished) {
    cli::print_result(*result, stdout);
    return fail(kJobFailed, "job failed: " + result->failure);
  }
  int64_t out_rows = rows.load();
  if (!parts.empty() && partitioned) {
    out_rows = 0;
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(parts, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      if (it->path().filename().string().rfind(nexmark::kResultPrefix, 0) != 0) continue;
      std::ifstream in(it->path());
      out_rows += std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n');
    }
  } else if (!parts.empty()) {
    auto lines = read_published_lines(parts, nexmark::kResultPrefix);
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
  cli::print_result(*result, stdout);
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

int run_input_generator(const std::string& path, int64_t lines, int64_t keys, int64_t bad_every, uint64_t seed,
                        bool quiet) {
  std::atomic<int64_t> written{0};
  cli::ProgressLine line(quiet);
  line.tick([&](cli::ProgressLine::Clock::duration elapsed) {
    return fmt::format("writing  {} of {} lines  {}", written.load(), lines, cli::format_elapsed(elapsed));
  });
  auto s = generate_running_sum_input(path, lines, keys, bad_every, seed, &written);
  line.stop();
  if (!s.ok()) return fail(kBadInput, std::string(s.message()));
  return kOk;
}

int run_verify(const std::vector<std::string>& inputs, const std::string& output, Guarantee guarantee, bool quiet) {
  std::atomic<int64_t> looked_at{0};
  cli::ProgressLine line(quiet);
  line.tick([&](cli::ProgressLine::Clock::duration elapsed) {
    return fmt::format("checking  {} input and output lines  {}", looked_at.load(), cli::format_elapsed(elapsed));
  });
  auto c = check_running_sum(inputs, output, nullptr, &looked_at);
  line.stop();
  if (!c.ok()) return fail(kBadInput, std::string(c.status().message()));
  std::printf("input lines: %lld (valid %lld over %lld keys, malformed %lld)\n", static_cast<long long>(c->input_lines),
              static_cast<long long>(c->valid_records), static_cast<long long>(c->keys),
              static_cast<long long>(c->expected_rejects));
  std::printf("committed output lines: %lld, rejects: %lld\n", static_cast<long long>(c->output_lines),
              static_cast<long long>(c->reject_lines));
  for (const auto& p : c->problems) std::printf("  %s\n", p.c_str());
  bool ok = c->exactly_once;
  const char* what = "exactly-once";
  if (guarantee == Guarantee::kAtLeastOnce) {
    ok = c->nothing_lost;
    what = "nothing lost";
  } else if (guarantee == Guarantee::kAtMostOnce) {
    ok = c->at_most_once;
    what = "at most once";
    std::printf("records lost: %lld (valid %lld, malformed %lld)\n",
                static_cast<long long>(c->lost_records + c->lost_rejects), static_cast<long long>(c->lost_records),
                static_cast<long long>(c->lost_rejects));
  }
  std::printf("%s: %s\n", what, ok ? "yes" : "NO");
  return ok ? kOk : kMismatch;
}

}  // namespace weir::examples
