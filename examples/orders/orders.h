// The orders job: JSON orders from Kafka, totals per customer and event-time
// window, written to Kafka exactly-once and upserted into PostgreSQL.
//
//   orders (Kafka, JSON) -> decode -> key by customer -> tumbling window
//     -> count and sum -> order-totals (Kafka, JSON, exactly-once)
//                      -> PostgreSQL table, upserted by (customer, window_start)
//   records that are not orders -> <input topic>-rejects (Kafka, JSON, exactly-once)
//
// An order is {"id": "o-17", "customer": "c-3", "amount": 1250, "ts": ...}
// (amount in cents; ts in ms since the epoch, also the Kafka record's
// timestamp, which is the event time). A total is {"customer": "c-3",
// "window_start": ..., "window_end": ..., "orders": 4, "amount": 5230}.
#ifndef WEIR_EXAMPLES_ORDERS_ORDERS_H_
#define WEIR_EXAMPLES_ORDERS_ORDERS_H_

#include <cstdint>
#include <map>
#include <string>
#include <tuple>

#include "absl/status/status.h"
#include "weir/stream.h"

namespace weir::examples {

struct OrdersOptions {
  std::string kafka_brokers;
  std::string input_topic = "orders";
  std::string output_topic = "order-totals";
  std::string rejects_topic;  // default: <input_topic>-rejects
  bool bounded = false;       // stop at the end the input topic had at the first start
  int64_t window_ms = 10'000;
  int64_t max_out_of_orderness_ms = 2'000;
  std::string postgres;       // libpq connection string; empty: no PostgreSQL
  std::string output_table = "order_totals";
  int parallelism = 1;
  int64_t rate = 0;  // records per second per source subtask (0: as fast as it goes)
};

absl::Status validate_orders_options(const OrdersOptions& o);
void build_orders(StreamEnvironment& env, const OrdersOptions& o);

// Generated orders: order i of a run with `seed`, over `customers`
// customers, event times from a fixed start (2026-01-01) 5 ms apart with up
// to 1 s of disorder; every `bad_every`-th record (0: none) is not a valid
// order (alternately not JSON and an amount that is not a number).
struct GeneratedOrders {
  int64_t count = 10'000;
  int64_t customers = 100;
  int64_t bad_every = 0;
  uint64_t seed = 1;
};
// The Kafka value of order i (valid or not), its customer and event time.
std::string order_json(const GeneratedOrders& g, int64_t i, std::string* customer, int64_t* ts);
// A job that writes the orders to `topic` (keyed by customer, timestamped
// with the order's time), at least once: a failed run is repeated whole.
void build_order_producer(StreamEnvironment& env, const std::string& brokers, const std::string& topic,
                          const GeneratedOrders& g);

// What the orders job must produce from them: (orders, amount) by
// (customer, window start).
std::map<std::pair<std::string, int64_t>, std::pair<int64_t, int64_t>> expected_order_totals(
    const GeneratedOrders& g, int64_t window_ms);

}  // namespace weir::examples

#endif  // WEIR_EXAMPLES_ORDERS_ORDERS_H_
