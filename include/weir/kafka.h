// Kafka connectors (librdkafka): a replayable source whose partition offsets
// are checkpointed state, and a sink with exactly-once output through Kafka
// transactions. docs/kafka.md describes both designs, the recovery of the
// sink's transactions and what each failure does.
//
//   auto records = env.from_source<KafkaRecord>(
//       KafkaSource::builder().bootstrap_servers("b1:9092").topics({"orders"}).build(), "orders");
//   results.sink_to(KafkaSink::builder().bootstrap_servers("b1:9092").topic("totals")
//                       .transactional_id_prefix("totals-job").build(), "totals");
//
// KafkaSource: partitions are the source's splits. Partition p of topic t
// goes to subtask (start(t) + p) % parallelism, start(t) derived from the
// topic's name, so the assignment depends only on the parallelism; after a
// restore at any parallelism each subtask takes the checkpointed offsets of
// the partitions it now owns. The consumer group's committed offsets are
// written when a checkpoint completes, for monitoring only: a restore always
// starts from the checkpoint. Each partition is a split for watermarks (a
// partition without records holds the watermark back unless the strategy has
// an idleness timeout). Bounded mode stops at the offsets that were the end of
// each partition when the job first started (kept in the checkpoint, so a
// restored bounded job stops at the same place).
//
// KafkaSink, exactly-once: the records a subtask receives between two
// checkpoint barriers are kept, and written to Kafka in one transaction when
// the checkpoint that covers them completes. The same transaction commits a
// marker (the checkpoint id, as the offset of a per-subtask consumer group),
// so after a failure the restored subtask knows whether the records of the
// restored checkpoint reached Kafka and writes them again only if not. A
// read_committed consumer sees each record exactly once. At-least-once:
// records are sent as they come and flushed at every barrier. None: sent as
// they come.
#ifndef WEIR_KAFKA_H_
#define WEIR_KAFKA_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "weir/functions.h"

namespace weir {

// One Kafka record, as read or to be written. For the sink: an empty `topic`
// means the sink's topic, `partition` < 0 lets the sink's partitioner choose,
// `timestamp` < 0 lets the producer stamp it.
struct KafkaRecord {
  std::string topic;
  int32_t partition = -1;
  int64_t offset = -1;
  int64_t timestamp = -1;  // milliseconds since the epoch
  std::string key;
  std::string value;
  std::vector<std::pair<std::string, std::string>> headers;
  // No value at all (Kafka's null, not an empty one): on a compacted
  // topic, the deletion of its key. `value` is then empty.
  bool tombstone = false;
  auto weir_fields() { return std::tie(topic, partition, offset, timestamp, key, value, headers, tombstone); }
};
// For decode_rows (weir/formats.h): the value is the record's bytes.
inline std::string_view bytes_of(const KafkaRecord& r) { return r.value; }
inline std::string origin_of(const KafkaRecord& r) {
  return "topic " + r.topic + " partition " + std::to_string(r.partition) + " offset " + std::to_string(r.offset);
}

// Where a source subtask reads a partition (KafkaSource state).
struct KafkaPartitionPosition {
  std::string topic;
  int32_t partition = 0;
  int64_t next_offset = 0;
  int64_t stop_offset = -1;  // bounded mode: stop before this offset; -1: unbounded
  auto weir_fields() { return std::tie(topic, partition, next_offset, stop_offset); }
};

enum class KafkaStartFrom : uint8_t {
  kEarliest,   // the first offset the broker still has
  kLatest,     // the end of each partition when the job first starts
  kCommitted,  // the group's committed offsets (earliest where none)
  kTimestamp,  // the first record at or after start_timestamp_ms
  kOffsets,    // start_offsets (earliest for partitions not listed)
};

struct KafkaSourceOptions {
  std::string bootstrap_servers;
  std::vector<std::string> topics;
  std::string topic_pattern;  // an ECMAScript regular expression over topic names, instead of topics
  std::string group_id;       // offsets committed on checkpoint completion; empty: none
  KafkaStartFrom start_from = KafkaStartFrom::kEarliest;
  int64_t start_timestamp_ms = 0;
  std::map<std::pair<std::string, int32_t>, int64_t> start_offsets;
  bool bounded = false;
  bool read_committed = true;
  // How often each subtask looks for new partitions (and, with a pattern, new
  // topics), which it reads from their start; 0: never. Not in bounded mode.
  std::chrono::milliseconds partition_discovery{10'000};
  // At most this many records per second per subtask (0: no limit).
  int64_t max_records_per_second = 0;
  // Passed to librdkafka as they are (for example security.protocol).
  std::map<std::string, std::string> properties;

  // Refuses contradictory or missing settings, naming them.
  absl::Status validate() const;
};

class KafkaSource final : public Source<KafkaRecord> {
 public:
  class Builder {
   public:
    Builder& bootstrap_servers(std::string s) { o_.bootstrap_servers = std::move(s); return *this; }
    Builder& topics(std::vector<std::string> t) { o_.topics = std::move(t); return *this; }
    Builder& topic_pattern(std::string p) { o_.topic_pattern = std::move(p); return *this; }
    Builder& group_id(std::string g) { o_.group_id = std::move(g); return *this; }
    Builder& start_from(KafkaStartFrom s) { o_.start_from = s; return *this; }
    Builder& start_from_timestamp(int64_t ms) {
      o_.start_from = KafkaStartFrom::kTimestamp;
      o_.start_timestamp_ms = ms;
      return *this;
    }
    Builder& start_from_offsets(std::map<std::pair<std::string, int32_t>, int64_t> offsets) {
      o_.start_from = KafkaStartFrom::kOffsets;
      o_.start_offsets = std::move(offsets);
      return *this;
    }
    Builder& bounded(bool b = true) { o_.bounded = b; return *this; }
    Builder& read_committed(bool r) { o_.read_committed = r; return *this; }
    Builder& partition_discovery(std::chrono::milliseconds every) { o_.partition_discovery = every; return *this; }
    Builder& max_records_per_second(int64_t n) { o_.max_records_per_second = n; return *this; }
    Builder& property(std::string k, std::string v) { o_.properties[std::move(k)] = std::move(v); return *this; }
    const KafkaSourceOptions& options() const { return o_; }
    // The factory for from_source. Invalid options make every subtask fail
    // open() with validate()'s message; call validate() to see it earlier.
    SourceFactory<KafkaRecord> build() const;

   private:
    KafkaSourceOptions o_;
  };
  static Builder builder() { return Builder(); }

  explicit KafkaSource(KafkaSourceOptions options);
  ~KafkaSource() override;

  absl::Status open(OperatorContext& ctx) override;
  PollStatus poll(SourceOutput<KafkaRecord>& out, int max_records) override;
  absl::Status snapshot_state(int64_t checkpoint_id) override;
  void notify_checkpoint_complete(int64_t checkpoint_id) override;
  void close() override;
  // In bounded mode (it stops at the end offsets it saw first).
  bool bounded() const override { return bounded_; }

  // The subtask of `parallelism` that reads partition `partition` of `topic`.
  static int subtask_for(const std::string& topic, int32_t partition, int parallelism);

 private:
  class Impl;
  const bool bounded_;
  std::unique_ptr<Impl> impl_;
};

enum class KafkaDelivery : uint8_t { kExactlyOnce, kAtLeastOnce, kNone };

enum class KafkaPartitioning : uint8_t {
  kKeyHash,     // by the key (librdkafka's murmur2, as Java clients); records without a key spread randomly
  kFixed,       // sink subtask i writes to partition i % partitions
  kRoundRobin,  // each subtask cycles through the partitions
};

struct KafkaSinkOptions {
  std::string bootstrap_servers;
  std::string topic;
  KafkaDelivery delivery = KafkaDelivery::kExactlyOnce;
  KafkaPartitioning partitioning = KafkaPartitioning::kKeyHash;
  // Exactly-once: names the sink's transactional ids (<prefix>-<subtask>)
  // and marker groups; unique per sink of every job writing to the cluster,
  // and kept across restarts and rescaling of the same job.
  std::string transactional_id_prefix;
  // Exactly-once: a subtask holding more than this many bytes of records
  // for one checkpoint fails, naming the limit (checkpoint more often or
  // raise it). The records are part of the checkpoint until committed.
  int64_t max_transaction_bytes = 256 << 20;
  std::chrono::milliseconds transaction_timeout{60'000};
  std::map<std::string, std::string> properties;

  absl::Status validate() const;
};

class KafkaSink final : public Sink<KafkaRecord> {
 public:
  class Builder {
   public:
    Builder& bootstrap_servers(std::string s) { o_.bootstrap_servers = std::move(s); return *this; }
    Builder& topic(std::string t) { o_.topic = std::move(t); return *this; }
    Builder& delivery(KafkaDelivery d) { o_.delivery = d; return *this; }
    Builder& partitioning(KafkaPartitioning p) { o_.partitioning = p; return *this; }
    Builder& transactional_id_prefix(std::string p) { o_.transactional_id_prefix = std::move(p); return *this; }
    Builder& max_transaction_bytes(int64_t b) { o_.max_transaction_bytes = b; return *this; }
    Builder& transaction_timeout(std::chrono::milliseconds t) { o_.transaction_timeout = t; return *this; }
    Builder& property(std::string k, std::string v) { o_.properties[std::move(k)] = std::move(v); return *this; }
    const KafkaSinkOptions& options() const { return o_; }
    SinkFactory<KafkaRecord> build() const;

   private:
    KafkaSinkOptions o_;
  };
  static Builder builder() { return Builder(); }

  explicit KafkaSink(KafkaSinkOptions options);
  ~KafkaSink() override;

  absl::Status open(OperatorContext& ctx) override;
  absl::Status write(const KafkaRecord& record) override;
  absl::Status finish() override;
  absl::Status snapshot_state(int64_t checkpoint_id) override;
  void notify_checkpoint_complete(int64_t checkpoint_id) override;
  void close() override;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// Parses "exactly-once", "at-least-once", "none".
absl::StatusOr<KafkaDelivery> parse_kafka_delivery(std::string_view s);

}  // namespace weir

#endif  // WEIR_KAFKA_H_
