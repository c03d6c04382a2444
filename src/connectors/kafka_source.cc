// KafkaSource: one consumer per subtask, assigned its partitions by hand (no
// group rebalancing), positions in union operator state. See weir/kafka.h.
#include <algorithm>
#include <map>
#include <regex>
#include <set>

#include "connectors/kafka_client.h"
#include "spdlog/spdlog.h"
#include "weir/connectors.h"
#include "weir/kafka.h"

namespace weir {

absl::Status KafkaSourceOptions::validate() const {
  if (bootstrap_servers.empty()) return absl::InvalidArgumentError("kafka source: no bootstrap servers");
  if (topics.empty() == topic_pattern.empty()) {
    return absl::InvalidArgumentError("kafka source: give either topics or a topic pattern");
  }
  if (!topic_pattern.empty()) {
    try {
      std::regex re(topic_pattern);
    } catch (const std::regex_error& e) {
      return absl::InvalidArgumentError("kafka source: topic pattern '" + topic_pattern + "': " + e.what());
    }
  }
  if (start_from == KafkaStartFrom::kCommitted && group_id.empty()) {
    return absl::InvalidArgumentError("kafka source: starting from committed offsets needs a group id");
  }
  if (start_from == KafkaStartFrom::kTimestamp && start_timestamp_ms < 0) {
    return absl::InvalidArgumentError("kafka source: the start timestamp must be >= 0");
  }
  if (max_records_per_second < 0) return absl::InvalidArgumentError("kafka source: the rate limit must be >= 0");
  if (partition_discovery.count() < 0) {
    return absl::InvalidArgumentError("kafka source: the partition discovery interval must be >= 0");
  }
  return absl::OkStatus();
}

SourceFactory<KafkaRecord> KafkaSource::Builder::build() const {
  KafkaSourceOptions o = o_;
  return [o] { return std::make_unique<KafkaSource>(o); };
}

int KafkaSource::subtask_for(const std::string& topic, int32_t partition, int parallelism) {
  const uint64_t start = hash_bytes(topic.data(), topic.size()) % static_cast<uint64_t>(parallelism);
  return static_cast<int>((start + static_cast<uint64_t>(partition)) % static_cast<uint64_t>(parallelism));
}

class KafkaSource::Impl {
 public:
  explicit Impl(KafkaSourceOptions o) : o_(std::move(o)), rate_(o_.max_records_per_second) {
    if (!o_.topic_pattern.empty()) pattern_ = std::regex(o_.topic_pattern);
  }

  absl::Status open(OperatorContext& ctx) {
    absl::Status valid = o_.validate();
    if (!valid.ok()) return valid;
    ctx_ = &ctx;
    clock_ = &ctx.processing_time();
    rate_.start(clock_);
    std::map<std::string, std::string> settings = {
        {"enable.auto.commit", "false"},
        {"enable.auto.offset.store", "false"},
        {"enable.partition.eof", "true"},
        {"isolation.level", o_.read_committed ? "read_committed" : "read_uncommitted"},
        {"group.id", o_.group_id.empty() ? "weir-" + ctx.operator_uid() : o_.group_id},
        {"client.id", "weir-" + ctx.operator_uid() + "-" + std::to_string(ctx.subtask_index())},
        // The prefetch queue of this subtask (librdkafka: 64 MB by default): bounded and small.
        {"queued.max.messages.kbytes", "16384"},
    };
    auto client = kafka::make_client(RD_KAFKA_CONSUMER, o_.bootstrap_servers, settings, o_.properties, &errors_);
    if (!client.ok()) return client.status();
    rk_ = std::move(*client);
    rd_kafka_poll_set_consumer(rk_.get());

    state_ = std::make_unique<OperatorListState<KafkaPartitionPosition>>(ctx, "kafka-partitions",
                                                                          detail::Redistribution::kUnion);
    if (ctx.is_restored()) {
      bool corrupt = false;
      std::vector<KafkaPartitionPosition> all = state_->get(&corrupt);
      if (corrupt) return absl::DataLossError("kafka source: restored partition positions are corrupt");
      std::vector<KafkaPartitionPosition> ours;
      for (KafkaPartitionPosition& p : all) {
        if (!wanted(p.topic)) continue;  // the job no longer reads this topic
        if (subtask_for(p.topic, p.partition, ctx.parallelism()) != ctx.subtask_index()) continue;
        ours.push_back(std::move(p));
      }
      // A bounded run restoring an unbounded one's checkpoint stops at the
      // end the partitions have now.
      if (o_.bounded) {
        absl::Status s = resolve_missing_stops(ours);
        if (!s.ok()) return s;
      }
      for (KafkaPartitionPosition& p : ours) add(std::move(p));
    }
    // Fresh start: every partition of ours. Restored: only partitions the
    // checkpoint did not know (created since), unless bounded.
    if (!ctx.is_restored() || !o_.bounded) {
      absl::Status s = discover(/*fresh=*/!ctx.is_restored());
      if (!s.ok()) return s;
    }
    next_discovery_ms_ = clock_->now_ms() + o_.partition_discovery.count();
    return assign();
  }

  PollStatus poll(SourceOutput<KafkaRecord>& out, int max_records) {
    check_client_errors();
    if (!o_.bounded && o_.partition_discovery.count() > 0 && clock_->now_ms() >= next_discovery_ms_) {
      next_discovery_ms_ = clock_->now_ms() + o_.partition_discovery.count();
      size_t before = parts_.size();
      absl::Status s = discover(/*fresh=*/false);
      if (!s.ok()) {
        spdlog::warn("kafka source {}: partition discovery failed: {}", ctx_->operator_uid(), std::string(s.message()));
      } else if (parts_.size() != before) {
        absl::Status a = assign();
        if (!a.ok()) throw std::runtime_error(std::string(a.message()));
      }
    }
    // Every partition of the subtask is a split from the start, so one that
    // has not delivered yet holds the watermark back (until it turns idle).
    for (Part& p : parts_) {
      if (p.registered || p.done) continue;
      out.split(p.split);
      p.registered = true;
    }
    if (clock_->now_ms() >= next_lag_ms_) report_lag();
    if (o_.bounded && remaining_ == 0) return PollStatus::kEndOfInput;
    max_records = rate_.allow(max_records);
    if (max_records == 0) return PollStatus::kIdle;
    int emitted = 0;
    while (emitted < max_records) {
      rd_kafka_message_t* m = rd_kafka_consumer_poll(rk_.get(), 0);
      if (m == nullptr) break;
      Part* part = m->rkt ? find(rd_kafka_topic_name(m->rkt), m->partition) : nullptr;
      if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        // Everything before m->offset was delivered or was not data
        // (transaction markers, aborted records).
        if (part != nullptr) {
          part->pos.next_offset = std::max(part->pos.next_offset, m->offset);
          finish_if_done(*part, out);
        }
        rd_kafka_message_destroy(m);
        continue;
      }
      if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        std::string what = m->rkt ? std::string(rd_kafka_topic_name(m->rkt)) + "[" + std::to_string(m->partition) + "]"
                                  : std::string("consumer");
        std::string text = rd_kafka_message_errstr(m);
        rd_kafka_resp_err_t err = m->err;
        rd_kafka_message_destroy(m);
        if (err == RD_KAFKA_RESP_ERR__TRANSPORT || err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN) continue;
        throw std::runtime_error("kafka source " + o_.bootstrap_servers + ": " + what + ": " + text);
      }
      if (part == nullptr || part->done || m->offset < part->pos.next_offset) {
        rd_kafka_message_destroy(m);  // a partition no longer ours, or a record before our position
        continue;
      }
      if (o_.bounded && m->offset >= part->pos.stop_offset) {
        part->pos.next_offset = part->pos.stop_offset;
        rd_kafka_message_destroy(m);
        finish_if_done(*part, out);
        continue;
      }
      fill(m, &scratch_);
      part->pos.next_offset = m->offset + 1;
      rd_kafka_message_destroy(m);
      out.split(part->split).collect(scratch_);
      ++emitted;
      finish_if_done(*part, out);
    }
    if (o_.bounded && remaining_ == 0) return PollStatus::kEndOfInput;
    return emitted > 0 ? PollStatus::kMore : PollStatus::kIdle;
  }

  absl::Status snapshot_state(int64_t checkpoint_id) {
    std::vector<KafkaPartitionPosition> positions;
    positions.reserve(parts_.size());
    for (const Part& p : parts_) positions.push_back(p.pos);
    state_->update(positions);
    if (!o_.group_id.empty()) {
      pending_commits_[checkpoint_id] = positions;
      while (pending_commits_.size() > 16) pending_commits_.erase(pending_commits_.begin());
    }
    return absl::OkStatus();
  }

  void notify_checkpoint_complete(int64_t checkpoint_id) {
    auto it = pending_commits_.find(checkpoint_id);
    if (it == pending_commits_.end()) return;
    // For monitoring (consumer lag tools) only: never read back on restore.
    kafka::PartitionList list(rd_kafka_topic_partition_list_new(static_cast<int>(it->second.size())));
    for (const auto& p : it->second) {
      rd_kafka_topic_partition_list_add(list.get(), p.topic.c_str(), p.partition)->offset = p.next_offset;
    }
    if (list->cnt > 0) (void)rd_kafka_commit(rk_.get(), list.get(), /*async=*/1);
    pending_commits_.erase(pending_commits_.begin(), std::next(it));
  }

  void close() {
    if (rk_) {
      (void)rd_kafka_consumer_close(rk_.get());
      rk_.reset();
    }
  }

 private:
  struct Part {
    KafkaPartitionPosition pos;
    int64_t split = 0;
    bool done = false;
    bool registered = false;  // with the source's watermark tracking
  };

  bool wanted(const std::string& topic) const {
    if (!o_.topic_pattern.empty()) return std::regex_search(topic, pattern_);
    return std::find(o_.topics.begin(), o_.topics.end(), topic) != o_.topics.end();
  }

  Part* find(const char* topic, int32_t partition) {
    for (Part& p : parts_) {
      if (p.pos.partition == partition && p.pos.topic == topic) return &p;
    }
    return nullptr;
  }

  void add(KafkaPartitionPosition pos) {
    Part p;
    p.pos = std::move(pos);
    p.split = next_split_++;
    p.done = o_.bounded && p.pos.next_offset >= p.pos.stop_offset;
    if (!p.done) ++remaining_;
    parts_.push_back(std::move(p));
  }

  // Adds the partitions of wanted topics that belong to this subtask and are
  // not known yet, at their start position (`fresh`: the configured one; a
  // partition found later starts at its beginning).
  absl::Status discover(bool fresh) {
    auto topics = kafka::list_topics(rk_.get(), o_.bootstrap_servers);
    if (!topics.ok()) return topics.status();
    if (fresh && o_.topic_pattern.empty()) {
      for (const std::string& t : o_.topics) {
        if (topics->count(t) == 0) {
          return absl::NotFoundError("kafka source: topic '" + t + "' does not exist on " + o_.bootstrap_servers);
        }
      }
    }
    std::vector<KafkaPartitionPosition> found;
    for (const auto& [topic, count] : *topics) {
      if (!wanted(topic)) continue;
      for (int32_t p = 0; p < count; ++p) {
        if (subtask_for(topic, p, ctx_->parallelism()) != ctx_->subtask_index()) continue;
        if (find(topic.c_str(), p) != nullptr) continue;
        KafkaPartitionPosition pos;
        pos.topic = topic;
        pos.partition = p;
        found.push_back(std::move(pos));
      }
    }
    if (found.empty()) return absl::OkStatus();
    absl::Status s = resolve_start(found, fresh);
    if (!s.ok()) return s;
    for (auto& pos : found) add(std::move(pos));
    return absl::OkStatus();
  }

  // The low and high watermark offsets of a partition (its first offset and
  // the one after its last record).
  absl::StatusOr<std::pair<int64_t, int64_t>> watermarks(const KafkaPartitionPosition& p) {
    std::pair<int64_t, int64_t> marks;
    rd_kafka_resp_err_t e =
        rd_kafka_query_watermark_offsets(rk_.get(), p.topic.c_str(), p.partition, &marks.first, &marks.second,
                                         static_cast<int>(kafka::kRequestTimeout.count()));
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return kafka::error(o_.bootstrap_servers, "offsets of " + p.topic + "[" + std::to_string(p.partition) + "]", e);
    }
    return marks;
  }

  // Restored positions without a stop offset (an unbounded run's) get the
  // partition's end now.
  absl::Status resolve_missing_stops(std::vector<KafkaPartitionPosition>& restored) {
    for (KafkaPartitionPosition& p : restored) {
      if (p.stop_offset >= 0) continue;
      auto marks = watermarks(p);
      if (!marks.ok()) return marks.status();
      p.stop_offset = marks->second;
    }
    return absl::OkStatus();
  }

  // Turns the start position of each new partition into an offset (and its
  // stop offset in bounded mode), so the checkpoint holds plain offsets.
  absl::Status resolve_start(std::vector<KafkaPartitionPosition>& found, bool fresh) {
    std::vector<std::pair<int64_t, int64_t>> marks(found.size());
    for (size_t i = 0; i < found.size(); ++i) {
      auto m = watermarks(found[i]);
      if (!m.ok()) return m.status();
      marks[i] = *m;
      found[i].next_offset = marks[i].first;
      found[i].stop_offset = o_.bounded ? marks[i].second : -1;
    }
    if (!fresh) return absl::OkStatus();  // discovered later: from the beginning
    switch (o_.start_from) {
      case KafkaStartFrom::kEarliest: break;
      case KafkaStartFrom::kLatest:
        for (size_t i = 0; i < found.size(); ++i) found[i].next_offset = marks[i].second;
        break;
      case KafkaStartFrom::kOffsets:
        for (auto& f : found) {
          auto it = o_.start_offsets.find({f.topic, f.partition});
          if (it != o_.start_offsets.end()) f.next_offset = it->second;
        }
        break;
      case KafkaStartFrom::kCommitted:
      case KafkaStartFrom::kTimestamp: {
        const int timeout = static_cast<int>(kafka::kRequestTimeout.count());
        kafka::PartitionList list(rd_kafka_topic_partition_list_new(static_cast<int>(found.size())));
        for (auto& f : found) {
          rd_kafka_topic_partition_list_add(list.get(), f.topic.c_str(), f.partition)->offset =
              o_.start_from == KafkaStartFrom::kTimestamp ? o_.start_timestamp_ms : RD_KAFKA_OFFSET_INVALID;
        }
        rd_kafka_resp_err_t e = o_.start_from == KafkaStartFrom::kTimestamp
                                    ? rd_kafka_offsets_for_times(rk_.get(), list.get(), timeout)
                                    : rd_kafka_committed(rk_.get(), list.get(), timeout);
        if (e != RD_KAFKA_RESP_ERR_NO_ERROR) return kafka::error(o_.bootstrap_servers, "start offsets", e);
        for (size_t i = 0; i < found.size(); ++i) {
          int64_t off = list->elems[i].offset;
          // No committed offset: the beginning; no record at or after the
          // timestamp: the end.
          if (off >= 0) found[i].next_offset = off;
          else if (o_.start_from == KafkaStartFrom::kTimestamp) found[i].next_offset = marks[i].second;
        }
        break;
      }
    }
    return absl::OkStatus();
  }

  absl::Status assign() {
    kafka::PartitionList list(rd_kafka_topic_partition_list_new(static_cast<int>(parts_.size())));
    for (const Part& p : parts_) {
      if (p.done) continue;
      rd_kafka_topic_partition_list_add(list.get(), p.pos.topic.c_str(), p.pos.partition)->offset = p.pos.next_offset;
    }
    rd_kafka_resp_err_t e = rd_kafka_assign(rk_.get(), list.get());
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) return kafka::error(o_.bootstrap_servers, "assigning partitions", e);
    return absl::OkStatus();
  }

  // The lag of each partition (records between the position and the end
  // the client last heard of; no request is made), and their sum, in the
  // task's metrics: "kafka.lag.<topic>.<partition>", "kafka.lag". At most
  // once a second; a partition appears once the client fetched from it.
  void report_lag() {
    next_lag_ms_ = clock_->now_ms() + 1000;
    int64_t total = 0;
    for (const Part& p : parts_) {
      int64_t lo = -1, hi = -1;
      int64_t lag = 0;
      if (!p.done) {
        // Unknown until the client fetched from the partition: not reported.
        if (rd_kafka_get_watermark_offsets(rk_.get(), p.pos.topic.c_str(), p.pos.partition, &lo, &hi) !=
                RD_KAFKA_RESP_ERR_NO_ERROR ||
            hi < 0) {
          continue;
        }
        lag = std::max<int64_t>(0, hi - p.pos.next_offset);
      }
      total += lag;
      ctx_->set_gauge("kafka.lag." + p.pos.topic + "." + std::to_string(p.pos.partition), lag);
    }
    ctx_->set_gauge("kafka.lag", total);
    // Flink's name for a source's backlog (FLIP-33), where dashboards look.
    ctx_->set_gauge("pendingRecords", total);
  }

  void finish_if_done(Part& p, SourceOutput<KafkaRecord>& out) {
    if (!o_.bounded || p.done || p.pos.next_offset < p.pos.stop_offset) return;
    p.done = true;
    --remaining_;
    out.release_split(p.split);
  }

  void check_client_errors() {
    std::string fatal = errors_.fatal();
    if (!fatal.empty()) throw std::runtime_error("kafka source " + o_.bootstrap_servers + ": " + fatal);
  }

  static void fill(const rd_kafka_message_t* m, KafkaRecord* r) {
    r->topic = rd_kafka_topic_name(m->rkt);
    r->partition = m->partition;
    r->offset = m->offset;
    rd_kafka_timestamp_type_t type;
    r->timestamp = rd_kafka_message_timestamp(m, &type);
    r->key.assign(static_cast<const char*>(m->key), m->key_len);
    r->tombstone = m->payload == nullptr;
    r->value.assign(r->tombstone ? "" : static_cast<const char*>(m->payload), r->tombstone ? 0 : m->len);
    r->headers.clear();
    rd_kafka_headers_t* hdrs = nullptr;
    if (rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR) {
      const char* name;
      const void* value;
      size_t size;
      for (size_t i = 0; rd_kafka_header_get_all(hdrs, i, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR; ++i) {
        r->headers.emplace_back(name, std::string(static_cast<const char*>(value), value ? size : 0));
      }
    }
  }

  const KafkaSourceOptions o_;
  RateLimiter rate_;
  std::regex pattern_;
  OperatorContext* ctx_ = nullptr;
  detail::ProcessingTimeService* clock_ = nullptr;
  kafka::ErrorSink errors_;
  kafka::Handle rk_;
  std::unique_ptr<OperatorListState<KafkaPartitionPosition>> state_;
  std::vector<Part> parts_;
  int64_t next_split_ = 0;
  int64_t next_lag_ms_ = 0;
  int64_t remaining_ = 0;  // bounded: partitions not done
  int64_t next_discovery_ms_ = 0;
  std::map<int64_t, std::vector<KafkaPartitionPosition>> pending_commits_;
  KafkaRecord scratch_;
};

KafkaSource::KafkaSource(KafkaSourceOptions options)
    : bounded_(options.bounded), impl_(std::make_unique<Impl>(std::move(options))) {}
KafkaSource::~KafkaSource() { impl_->close(); }
absl::Status KafkaSource::open(OperatorContext& ctx) { return impl_->open(ctx); }
PollStatus KafkaSource::poll(SourceOutput<KafkaRecord>& out, int max_records) { return impl_->poll(out, max_records); }
absl::Status KafkaSource::snapshot_state(int64_t id) { return impl_->snapshot_state(id); }
void KafkaSource::notify_checkpoint_complete(int64_t id) { impl_->notify_checkpoint_complete(id); }
void KafkaSource::close() { impl_->close(); }

}  // namespace weir
