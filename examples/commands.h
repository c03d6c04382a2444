// The example jobs on weir's command line: the built-in jobs running-sum,
// orders, line-copy and nexmark (`weir run NAME`, and on every process of
// a cluster), the commands that run them in this process (`weir example
// running-sum`, `weir example orders`, `weir nexmark`), write their input
// (`weir generate`) and check their output (`weir verify running-sum`)
// (examples/example_runs.h runs those), and the Nexmark generator as the SQL
// connector 'nexmark'. The engine's
// command line (src/cli) knows none of them: register_examples() hands
// them to it (cli/extensions.h).
#ifndef WEIR_EXAMPLES_COMMANDS_H_
#define WEIR_EXAMPLES_COMMANDS_H_

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "examples/nexmark/queries.h"
#include "examples/orders/orders.h"
#include "examples/running_sum/running_sum.h"

namespace weir::examples {

// Adds the example jobs, their commands and the 'nexmark' SQL source to
// the command line's extensions; once, before it parses. Later calls do
// nothing.
void register_examples();

// Options of `running-sum`, and what CLI11 cannot check of them (an input
// is a file or a topic; topics need brokers).
void add_running_sum_options(CLI::App* app, RunningSumOptions& o);
absl::Status validate_running_sum_options(const RunningSumOptions& o);
// Flags of the orders job; the window and lateness in milliseconds.
void add_orders_options(CLI::App* app, OrdersOptions& o);

struct NexmarkFlags {
  std::string query;
  std::string api = "datastream";  // or "sql": the query from its SQL text
  int64_t events = 10'000'000;
  int64_t rate = 0;
  int64_t event_rate = 10'000'000;
  std::string output = "blackhole";
  std::string dump_dir;
  int64_t fail_every = 0;
  uint64_t seed = 0;
  std::string side_input;
  std::string source = "generator";  // or "kafka"
  std::string kafka_brokers;
  std::string topic;  // --source kafka: read the events from it
  bool kafka_unbounded = false;
  std::string produce_to;  // write the generated events to this topic instead of running a query

  // The query and its source; output and side input handling are the
  // caller's.
  nexmark::QueryOptions to_query_options() const;
  // Contradictory or missing flags, named.
  absl::Status validate() const;
};
// Options of `nexmark` (`embedded` adds --dump-events and --produce-to,
// which only `weir nexmark` has, and makes --output a file rather than a
// directory).
void add_nexmark_options(CLI::App* app, NexmarkFlags& f, bool embedded);

}  // namespace weir::examples

#endif  // WEIR_EXAMPLES_COMMANDS_H_
