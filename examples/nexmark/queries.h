// The Nexmark queries as weir jobs, written with the public API only. Each
// query reads the generated events, computes its rows and writes them as CSV
// lines (columns as in docs/nexmark.md) to an exactly-once file sink, or
// counts them (blackhole).
#ifndef WEIR_EXAMPLES_NEXMARK_QUERIES_H_
#define WEIR_EXAMPLES_NEXMARK_QUERIES_H_

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "examples/nexmark/generator.h"
#include "examples/nexmark/source.h"
#include "weir/stream.h"

namespace weir::nexmark {

struct QueryOptions {
  std::string query;  // "q0", "q1", ...
  SourceOptions source;
  GeneratorConfig generator;
  // Watermark = newest event time seen per source subtask minus this.
  // Default: 4 s, as in the published runs.
  int64_t watermark_slack_ms = 4000;
  // Directory for the exactly-once result files; empty: count rows only.
  // q10 writes partition subdirectories dt=<day>/hm=<HH:mm> there.
  std::string output_dir;
  // Counts rows when output_dir is empty. Must outlive the job.
  std::atomic<int64_t>* rows = nullptr;
  // q13's side input: lines "<key>,<value>".
  std::string side_input;
  // Events from a Kafka topic instead of the generator (as written by
  // build_nexmark_producer): the value is the serialized Event, the
  // record's timestamp its event time. `events_read`, if given, counts them.
  std::string kafka_brokers;
  std::string kafka_topic;
  bool kafka_bounded = true;  // stop at the end the topic had when the job first started
  std::atomic<int64_t>* events_read = nullptr;
};

// A job that writes the generated events (source and generator of
// `options`) to `topic`: value the serialized Event, timestamp its event
// time, each sink subtask cycling through the partitions, at least once.
// A partition mixes the subtasks' events, each subtask's in event-time
// order, so its disorder is the skew between the producing subtasks.
void build_nexmark_producer(StreamEnvironment& env, const QueryOptions& options, const std::string& topic);

// Writes q13's default side input (10 000 lines "<i>,<i>") to `path`.
absl::Status write_default_side_input(const std::string& path);

// The queries build_query() knows.
const std::vector<std::string>& implemented_queries();

// Adds the query's job to `env`; an unknown query is an error.
absl::Status build_query(StreamEnvironment& env, const QueryOptions& options);

// Prefix of the result part files in output_dir.
inline constexpr char kResultPrefix[] = "result";

}  // namespace weir::nexmark

#endif  // WEIR_EXAMPLES_NEXMARK_QUERIES_H_
