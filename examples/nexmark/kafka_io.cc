// Nexmark events through Kafka: a producer job that fills a topic with the
// generated events, and the events of a topic as the queries' input.
#include "examples/nexmark/queries.h"
#include "examples/nexmark/query_util.h"
#include "spdlog/spdlog.h"
#include "weir/kafka.h"

namespace weir::nexmark {
namespace internal {

DataStream<Event> kafka_events(StreamEnvironment& env, const QueryOptions& o) {
  auto wm = WatermarkStrategy<KafkaRecord>::for_bounded_out_of_orderness(
      Duration(o.watermark_slack_ms), [](const KafkaRecord& r) { return r.timestamp; });
  auto records = env.from_source<KafkaRecord>(KafkaSource::builder()
                                                  .bootstrap_servers(o.kafka_brokers)
                                                  .topics({o.kafka_topic})
                                                  .bounded(o.kafka_bounded)
                                                  .max_records_per_second(o.source.rate_limit)
                                                  .build(),
                                              "nexmark-kafka", wm);
  records.uid("nexmark-kafka");
  std::atomic<int64_t>* counter = o.events_read;
  std::string topic = o.kafka_topic;
  auto events = records.flat_map<Event>(
      [counter, topic, bad = int64_t{0}](const KafkaRecord& r, Collector<Event>& out) mutable {
        std::optional<Event> e = deserialize_from_string<Event>(r.value);
        if (!e) {
          // Not an event of build_nexmark_producer: counted and logged
          // (each power of two), never a silent drop.
          ++bad;
          if ((bad & (bad - 1)) == 0) {
            spdlog::warn("nexmark: {} records of topic {} are not events, the last at partition {} offset {}", bad,
                         topic, r.partition, r.offset);
          }
          return;
        }
        if (counter != nullptr) counter->fetch_add(1, std::memory_order_relaxed);
        out.collect(*e);
      },
      "decode-events");
  events.uid("decode-events");
  return events;
}

}  // namespace internal

void build_nexmark_producer(StreamEnvironment& env, const QueryOptions& o, const std::string& topic) {
  auto gen = std::make_shared<const Generator>(o.generator);
  SourceOptions so = o.source;
  auto events = env.from_source<Event>([gen, so] { return std::make_unique<NexmarkSource>(gen, so); }, "nexmark");
  events.uid("nexmark-source");
  auto records = events.map(
      [](const Event& e) {
        KafkaRecord r;
        r.value = serialize_to_string(e);
        r.timestamp = e.date_time();
        return r;
      },
      "to-kafka-record");
  records.uid("to-kafka-record");
  records
      .sink_to(KafkaSink::builder()
                   .bootstrap_servers(o.kafka_brokers)
                   .topic(topic)
                   .delivery(KafkaDelivery::kAtLeastOnce)
                   .partitioning(KafkaPartitioning::kRoundRobin)
                   .build(),
               "kafka-events")
      .uid("kafka-events");
}

}  // namespace weir::nexmark
