// The commands that run the example jobs in this process (`weir example
// running-sum`, `weir example orders`, `weir nexmark`), write their input
// (`weir generate`) and check their output (`weir verify running-sum`):
// each prints what it did and returns an exit code (cli/exit_codes.h).
// examples/commands.cc parses their flags.
#ifndef WEIR_EXAMPLES_EXAMPLE_RUNS_H_
#define WEIR_EXAMPLES_EXAMPLE_RUNS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "cli/jobs.h"
#include "examples/commands.h"
#include "examples/components/components.h"
#include "examples/orders/orders.h"
#include "examples/running_sum/running_sum.h"

namespace weir::examples {

int run_running_sum(const RunningSumOptions& opts, const cli::JobFlags& flags);
int run_orders(const OrdersOptions& opts, const cli::JobFlags& flags);
// A query, or with --produce-to the generated events into a topic.
int run_nexmark(const NexmarkFlags& nf, const cli::JobFlags& flags);
// `weir generate orders`: JSON orders into a Kafka topic.
int run_order_producer(const std::string& brokers, const std::string& topic, const GeneratedOrders& g, bool quiet);
// `weir generate running-sum-input`: key,value lines into a file.
int run_input_generator(const std::string& path, int64_t lines, int64_t keys, int64_t bad_every, uint64_t seed,
                        bool quiet);
int run_components(const ComponentsOptions& opts, const cli::JobFlags& flags);
// `weir generate graph`: random `u v` edge lines into a file.
int run_graph_generator(const std::string& path, int64_t vertices, int64_t edges, int64_t bad_every, uint64_t seed);
// `weir verify connected-components`: the committed labels against the
// components of the input graph.
int run_verify_components(const std::string& input, const std::string& output);
// `weir verify running-sum`: the committed output against the input, for
// the guarantee the job ran with.
enum class Guarantee { kExactlyOnce, kAtLeastOnce, kAtMostOnce };
int run_verify(const std::vector<std::string>& inputs, const std::string& output, Guarantee guarantee, bool quiet);

}  // namespace weir::examples

#endif  // WEIR_EXAMPLES_EXAMPLE_RUNS_H_
