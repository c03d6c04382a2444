// running-sum over Kafka: input lines from a topic, sums to a topic.
#include <charconv>

#include "examples/running_sum/running_sum.h"
#include "weir/kafka.h"

namespace weir::examples {

DataStream<TextLine> kafka_lines(StreamEnvironment& env, const RunningSumOptions& o) {
  auto records = env.from_source<KafkaRecord>(KafkaSource::builder()
                                                  .bootstrap_servers(o.kafka_brokers)
                                                  .topics({o.input_topic})
                                                  .bounded(o.kafka_bounded)
                                                  .max_records_per_second(o.rate)
                                                  .build(),
                                              "kafka-source");
  records.uid("kafka-source").parallelism(o.parallelism);
  auto lines = records.map(
      [](const KafkaRecord& r) {
        TextLine l;
        int64_t n = 0;
        auto [end, ec] = std::from_chars(r.key.data(), r.key.data() + r.key.size(), n);
        l.line_number = ec == std::errc() && end == r.key.data() + r.key.size() && !r.key.empty() ? n : r.offset + 1;
        l.text = r.value;
        return l;
      },
      "kafka-lines");
  lines.uid("kafka-lines").parallelism(o.parallelism);
  return lines;
}

void sink_to_kafka(const DataStream<std::string>& sums, const RunningSumOptions& o) {
  auto delivery = parse_kafka_delivery(o.kafka_delivery);
  if (!delivery.ok()) {
    sums.environment()->record_error(delivery.status());
    return;
  }
  auto records = sums.map(
      [](const std::string& line) {
        KafkaRecord r;
        r.key = line.substr(0, line.find(','));
        r.value = line;
        return r;
      },
      "to-kafka-record");
  records.uid("to-kafka-record").parallelism(o.parallelism);
  records
      .sink_to(KafkaSink::builder()
                   .bootstrap_servers(o.kafka_brokers)
                   .topic(o.output_topic)
                   .delivery(*delivery)
                   .transactional_id_prefix("weir-running-sum-" + o.output_topic)
                   .build(),
               "kafka-sink")
      .uid("kafka-sink")
      .parallelism(o.parallelism);
}

}  // namespace weir::examples
