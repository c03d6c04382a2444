// The orders job, written against the public API only (weir/kafka.h,
// weir/postgres.h, weir/formats.h).
#include "examples/orders/orders.h"

#include "weir/connectors.h"
#include "weir/formats.h"
#include "weir/kafka.h"
#include "weir/postgres.h"
#include "weir/windowed_stream.h"

namespace weir::examples {
namespace {

constexpr int64_t kStartMs = 1767225600000;  // 2026-01-01T00:00:00Z

uint64_t mix(uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

const Schema kOrder{{"id", FieldType::kString, false},
                    {"customer", FieldType::kString, false},
                    {"amount", FieldType::kInt64, false},
                    {"ts", FieldType::kInt64, false}};
const Schema kTotal{{"customer", FieldType::kString, false},
                    {"window_start", FieldType::kInt64, false},
                    {"window_end", FieldType::kInt64, false},
                    {"orders", FieldType::kInt64, false},
                    {"amount", FieldType::kInt64, false}};
const Schema kReject{{"origin", FieldType::kString}, {"reason", FieldType::kString}, {"record", FieldType::kString}};

struct Sum {
  int64_t orders = 0;
  int64_t amount = 0;
  auto weir_fields() { return std::tie(orders, amount); }
};

class EmitTotal final : public ProcessWindowFunction<std::string, Sum, Row> {
 public:
  void process(const std::string& customer, const Context& ctx, const std::vector<Sum>& sums,
               Collector<Row>& out) override {
    for (const Sum& s : sums) {
      out.collect(Row{RowKind::kInsert, {customer, ctx.window.start, ctx.window.end, s.orders, s.amount}});
    }
  }
};

std::string rejects_topic(const OrdersOptions& o) {
  return o.rejects_topic.empty() ? o.input_topic + "-rejects" : o.rejects_topic;
}

// Rows to a Kafka topic as JSON values, exactly-once.
void to_kafka(const DataStream<Row>& rows, const OrdersOptions& o, const std::string& topic,
              std::shared_ptr<const Format> json, const std::string& name) {
  auto records = rows.map(
      [json](const Row& r) {
        KafkaRecord k;
        k.key = r.string(0);
        k.value = json->encode(r);
        return k;
      },
      "to-" + name);
  records.uid("to-" + name).parallelism(o.parallelism);
  records
      .sink_to(KafkaSink::builder()
                   .bootstrap_servers(o.kafka_brokers)
                   .topic(topic)
                   .transactional_id_prefix("weir-orders-" + topic)
                   .build(),
               name)
      .uid(name)
      .parallelism(o.parallelism);
}

}  // namespace

absl::Status validate_orders_options(const OrdersOptions& o) {
  if (o.kafka_brokers.empty()) return absl::InvalidArgumentError("orders: give --kafka-brokers HOST:PORT");
  if (o.input_topic.empty() || o.output_topic.empty()) {
    return absl::InvalidArgumentError("orders: the input and output topics must not be empty");
  }
  if (o.window_ms <= 0) return absl::InvalidArgumentError("orders: the window must be longer than 0 ms");
  if (o.max_out_of_orderness_ms < 0) return absl::InvalidArgumentError("orders: negative out-of-orderness");
  if (!o.postgres.empty() && o.output_table.empty()) {
    return absl::InvalidArgumentError("orders: --postgres needs --output-table");
  }
  return absl::OkStatus();
}

void build_orders(StreamEnvironment& env, const OrdersOptions& o) {
  absl::Status valid = validate_orders_options(o);
  if (!valid.ok()) {
    env.record_error(valid);
    return;
  }
  // Event time is the record's timestamp; a partition without records for
  // 10 s stops holding the watermark back.
  auto watermarks = WatermarkStrategy<KafkaRecord>::for_bounded_out_of_orderness(
                        Duration(o.max_out_of_orderness_ms), [](const KafkaRecord& r) { return r.timestamp; })
                        .with_idleness(Duration(10'000));
  auto records = env.from_source<KafkaRecord>(
      KafkaSource::builder()
          .bootstrap_servers(o.kafka_brokers)
          .topics({o.input_topic})
          .bounded(o.bounded)
          .max_records_per_second(o.rate)
          .build(),
      "orders", watermarks);
  records.uid("orders").parallelism(o.parallelism);

  OutputTag<Rejected> bad{"bad-orders"};
  auto orders = decode_rows(records, json_format(kOrder), bad, "decode-orders");
  orders.uid("decode-orders").parallelism(o.parallelism);
  auto rejects = orders.get_side_output(bad).map(
      [](const Rejected& r) { return Row{RowKind::kInsert, {r.origin, r.reason, r.bytes}}; }, "reject-rows");
  rejects.uid("reject-rows").parallelism(o.parallelism);
  to_kafka(rejects, o, rejects_topic(o), json_format(kReject), "rejects-sink");

  auto totals = orders.key_by([](const Row& r) { return r.string(1); })
                    .window(TumblingEventTimeWindows::of(Duration(o.window_ms)))
                    .aggregate<Sum, Sum, Row>(
                        AggregateFunction<Row, Sum, Sum>{
                            [] { return Sum{}; },
                            [](Sum& s, const Row& r) {
                              ++s.orders;
                              s.amount += r.int64(2);
                            },
                            [](const Sum& s) { return s; },
                            [](const Sum& a, const Sum& b) { return Sum{a.orders + b.orders, a.amount + b.amount}; }},
                        [] { return std::make_unique<EmitTotal>(); }, "totals");
  totals.uid("totals").parallelism(o.parallelism);
  to_kafka(totals, o, o.output_topic, json_format(kTotal), "totals-sink");

  if (!o.postgres.empty()) {
    // The totals of a customer come from one window subtask and reach the
    // sink through forward edges, in order.
    auto rows = totals.map([](const Row& r) { return PostgresRow::of(r); }, "to-postgres-row");
    rows.uid("to-postgres-row").parallelism(o.parallelism);
    rows.sink_to(PostgresUpsertSink::builder()
                     .conninfo(o.postgres)
                     .table(o.output_table)
                     .columns({"customer", "window_start", "window_end", "orders", "amount"})
                     .key_columns({"customer", "window_start"})
                     .build(),
                 "postgres-totals")
        .uid("postgres-totals")
        .parallelism(o.parallelism);
  }
}

std::string order_json(const GeneratedOrders& g, int64_t i, std::string* customer, int64_t* ts) {
  const uint64_t h = mix(g.seed * 0x100000001b3ull + static_cast<uint64_t>(i));
  *customer = "c-" + std::to_string(h % static_cast<uint64_t>(g.customers));
  *ts = kStartMs + i * 5 + static_cast<int64_t>((h >> 20) % 1000);
  const std::string id = "o-" + std::to_string(i);
  if (g.bad_every > 0 && (i + 1) % g.bad_every == 0) {
    if (((i + 1) / g.bad_every) % 2 == 0) return "{\"id\":\"" + id + "\",\"customer\":";  // cut short
    return "{\"id\":\"" + id + "\",\"customer\":\"" + *customer + "\",\"amount\":\"lots\",\"ts\":" +
           std::to_string(*ts) + "}";
  }
  const int64_t amount = 1 + static_cast<int64_t>((h >> 40) % 10'000);
  return json_format(kOrder)->encode(Row{RowKind::kInsert, {id, *customer, amount, *ts}});
}

void build_order_producer(StreamEnvironment& env, const std::string& brokers, const std::string& topic,
                          const GeneratedOrders& g) {
  auto records = env.from_source<KafkaRecord>([g] {
    return std::make_unique<GeneratorSource<KafkaRecord>>(
        [g](int64_t i) {
          KafkaRecord r;
          r.value = order_json(g, i, &r.key, &r.timestamp);
          return r;
        },
        g.count);
  }, "generated-orders");
  records.uid("generated-orders");
  records.sink_to(KafkaSink::builder()
                      .bootstrap_servers(brokers)
                      .topic(topic)
                      .delivery(KafkaDelivery::kAtLeastOnce)
                      .build(),
                  "orders-sink")
      .uid("orders-sink");
}

std::map<std::pair<std::string, int64_t>, std::pair<int64_t, int64_t>> expected_order_totals(
    const GeneratedOrders& g, int64_t window_ms) {
  std::map<std::pair<std::string, int64_t>, std::pair<int64_t, int64_t>> totals;
  auto json = json_format(kOrder);
  Row row;
  for (int64_t i = 0; i < g.count; ++i) {
    std::string customer;
    int64_t ts = 0;
    std::string value = order_json(g, i, &customer, &ts);
    if (!json->decode(value, &row).ok()) continue;
    auto& [orders, amount] = totals[{customer, ts - ts % window_ms}];
    ++orders;
    amount += row.int64(2);
  }
  return totals;
}

}  // namespace weir::examples
