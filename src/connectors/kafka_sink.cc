// KafkaSink. Exactly-once is a write-ahead design over Kafka transactions
// (docs/kafka.md): a checkpoint's records are kept in the checkpoint and
// written in one transaction once it completes, together with a marker that
// tells a restored subtask whether that transaction committed.
#include <algorithm>
#include <random>
#include <string_view>

#include "common/test_points.h"
#include "connectors/kafka_client.h"
#include "spdlog/spdlog.h"
#include "weir/kafka.h"

namespace weir {

absl::StatusOr<KafkaDelivery> parse_kafka_delivery(std::string_view s) {
  if (s == "exactly-once") return KafkaDelivery::kExactlyOnce;
  if (s == "at-least-once") return KafkaDelivery::kAtLeastOnce;
  if (s == "none") return KafkaDelivery::kNone;
  return absl::InvalidArgumentError("kafka sink delivery '" + std::string(s) +
                                    "': expected exactly-once, at-least-once or none");
}

absl::Status KafkaSinkOptions::validate() const {
  if (bootstrap_servers.empty()) return absl::InvalidArgumentError("kafka sink: no bootstrap servers");
  if (topic.empty()) return absl::InvalidArgumentError("kafka sink: no topic");
  if (delivery == KafkaDelivery::kExactlyOnce && transactional_id_prefix.empty()) {
    return absl::InvalidArgumentError(
        "kafka sink to '" + topic + "': exactly-once needs a transactional id prefix, unique to this sink");
  }
  if (max_transaction_bytes <= 0) return absl::InvalidArgumentError("kafka sink: max transaction bytes must be > 0");
  if (transaction_timeout.count() < 1000) {
    return absl::InvalidArgumentError("kafka sink: the transaction timeout must be at least 1s");
  }
  return absl::OkStatus();
}

SinkFactory<KafkaRecord> KafkaSink::Builder::build() const {
  KafkaSinkOptions o = o_;
  return [o] { return std::make_unique<KafkaSink>(o); };
}

namespace {

// The records one sink subtask received for one checkpoint, waiting for
// that checkpoint to complete (exactly-once state).
struct PendingBatch {
  int64_t checkpoint_id = 0;
  int32_t writer = 0;    // the subtask that received them: whose marker group records the commit
  uint64_t lineage = 0;  // the writer's attempt, so a marker of another run never counts
  // Where the marker of this batch, once committed, can be: at or after this
  // offset of the writer's marker partition (after the writer's previous marker).
  int64_t marker_from = 0;
  std::string records;   // Serializer<KafkaRecord> encodings, one after another
  auto weir_fields() { return std::tie(checkpoint_id, writer, lineage, marker_from, records); }
};

}  // namespace

class KafkaSink::Impl {
 public:
  explicit Impl(KafkaSinkOptions o) : o_(std::move(o)) {}

  absl::Status open(OperatorContext& ctx) {
    absl::Status valid = o_.validate();
    if (!valid.ok()) return valid;
    ctx_ = &ctx;
    subtask_ = ctx.subtask_index();
    sent_ = &ctx.metrics().counter(kSinkRecordsSent);
    committed_records_ = &ctx.metrics().counter(kSinkRecordsCommitted);
    committed_transactions_ = &ctx.metrics().counter(kSinkTransactionsCommitted);
    std::random_device rd;
    lineage_ = (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ static_cast<uint64_t>(subtask_);

    std::map<std::string, std::string> settings = {
        {"client.id", "weir-" + ctx.operator_uid() + "-" + std::to_string(subtask_)},
        {"partitioner", "murmur2_random"},
    };
    if (o_.delivery == KafkaDelivery::kExactlyOnce) {
      settings["transactional.id"] = transactional_id(subtask_);
      settings["transaction.timeout.ms"] = std::to_string(o_.transaction_timeout.count());
    } else if (o_.delivery == KafkaDelivery::kAtLeastOnce) {
      settings["enable.idempotence"] = "true";
    }
    auto client = kafka::make_client(RD_KAFKA_PRODUCER, o_.bootstrap_servers, settings, o_.properties, &errors_,
                                     &Impl::on_delivery);
    if (!client.ok()) return client.status();
    rk_ = std::move(*client);

    auto topics = kafka::list_topics(rk_.get(), o_.bootstrap_servers);
    if (!topics.ok()) return topics.status();
    auto it = topics->find(o_.topic);
    if (it == topics->end()) {
      return absl::NotFoundError("kafka sink: topic '" + o_.topic + "' does not exist on " + o_.bootstrap_servers);
    }
    partitions_ = it->second;
    if (o_.delivery != KafkaDelivery::kExactlyOnce) return absl::OkStatus();

    marker_topic_ = o_.topic + ".weir-markers";
    auto markers = topics->find(marker_topic_);
    if (markers == topics->end()) {
      absl::Status s = create_marker_topic();
      if (!s.ok()) return s;
      marker_partitions_ = 1;
    } else {
      marker_partitions_ = markers->second;
    }
    int64_t low = 0;
    rd_kafka_resp_err_t q = rd_kafka_query_watermark_offsets(rk_.get(), marker_topic_.c_str(), marker_partition(subtask_),
                                                             &low, &marker_next_, timeout_ms());
    if (q != RD_KAFKA_RESP_ERR_NO_ERROR) return kafka::error(o_.bootstrap_servers, "offsets of " + marker_topic_, q);

    // Fences an earlier instance of this transactional id and aborts the
    // transaction it left open.
    rd_kafka_error_t* e = rd_kafka_init_transactions(rk_.get(), timeout_ms());
    if (e != nullptr) return kafka::error(o_.bootstrap_servers, "initialising " + transactional_id(subtask_), e);

    pending_state_ = std::make_unique<OperatorListState<PendingBatch>>(ctx, "kafka-pending");
    writers_state_ = std::make_unique<OperatorListState<int32_t>>(ctx, "kafka-writers", detail::Redistribution::kUnion);
    if (!ctx.is_restored()) return absl::OkStatus();

    // Writers of the earlier run that no longer exist (a lower parallelism):
    // abort what they may have left open, so read_committed consumers are
    // not held back until the transaction times out.
    bool corrupt = false;
    for (int32_t w : writers_state_->get(&corrupt)) {
      if (w < ctx.parallelism() || w % ctx.parallelism() != subtask_) continue;
      absl::Status s = fence(w);
      if (!s.ok()) return s;
    }
    std::vector<PendingBatch> restored = pending_state_->get(&corrupt);
    if (corrupt) return absl::DataLossError("kafka sink to '" + o_.topic + "': restored transactions are corrupt");
    std::sort(restored.begin(), restored.end(),
              [](const PendingBatch& a, const PendingBatch& b) { return a.checkpoint_id < b.checkpoint_id; });
    for (const PendingBatch& b : restored) {
      auto committed = has_marker(b);
      if (!committed.ok()) return committed.status();
      if (*committed) continue;
      absl::Status s = commit(b);
      if (!s.ok()) return s;
    }
    if (!restored.empty()) WEIR_CRASH_POINT(CrashPoint::kSinkRecovered);
    return absl::OkStatus();
  }

  absl::Status write(const KafkaRecord& r) {
    if (!delivery_error_.empty()) return failed();
    std::string fatal = errors_.fatal();
    if (!fatal.empty()) return absl::UnavailableError("kafka sink " + o_.bootstrap_servers + ": " + fatal);
    if (o_.delivery == KafkaDelivery::kExactlyOnce) {
      ByteWriter w(&open_);
      Serializer<KafkaRecord>::write(w, r);
      if (static_cast<int64_t>(open_.size()) + pending_bytes_ > o_.max_transaction_bytes) {
        return absl::ResourceExhaustedError(
            "kafka sink to '" + o_.topic + "': more than " + std::to_string(o_.max_transaction_bytes) +
            " bytes of records await a completed checkpoint; checkpoint more often or raise the sink's "
            "max transaction bytes");
      }
      return absl::OkStatus();
    }
    absl::Status s = produce(r);
    if (s.ok()) {
      sent_->inc();
      ++unflushed_;
    }
    return s;
  }

  // End of input. Exactly-once: the final checkpoint covers the rest. The
  // others deliver everything now, so a finished task has lost nothing.
  absl::Status finish() {
    if (o_.delivery == KafkaDelivery::kExactlyOnce) return absl::OkStatus();
    return flush("at the end of input");
  }

  absl::Status snapshot_state(int64_t checkpoint_id) {
    if (o_.delivery == KafkaDelivery::kAtLeastOnce) return flush("at the barrier");
    if (o_.delivery != KafkaDelivery::kExactlyOnce) return absl::OkStatus();
    PendingBatch b;
    b.checkpoint_id = checkpoint_id;
    b.writer = subtask_;
    b.lineage = lineage_;
    b.marker_from = marker_next_;
    pending_bytes_ += static_cast<int64_t>(open_.size());
    b.records = std::move(open_);
    open_.clear();
    pending_.push_back(std::move(b));
    pending_state_->update(pending_);
    writers_state_->update({subtask_});
    WEIR_CRASH_POINT(CrashPoint::kSinkPreCommitted);
    return absl::OkStatus();
  }

  void notify_checkpoint_complete(int64_t checkpoint_id) {
    if (o_.delivery != KafkaDelivery::kExactlyOnce) return;
    size_t done = 0;
    for (; done < pending_.size() && pending_[done].checkpoint_id <= checkpoint_id; ++done) {
      absl::Status s = commit(pending_[done]);
      if (!s.ok()) {
        // Kept: the next completed checkpoint tries again, and a restore
        // finishes it (the marker tells whether it committed).
        spdlog::warn("kafka sink {}: checkpoint {} not committed yet: {}", ctx_->operator_uid(),
                     pending_[done].checkpoint_id, std::string(s.message()));
        break;
      }
    }
    if (done == 0) return;
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<ptrdiff_t>(done));
    pending_bytes_ = 0;
    for (const PendingBatch& b : pending_) pending_bytes_ += static_cast<int64_t>(b.records.size());
    WEIR_CRASH_POINT(CrashPoint::kSinkPublished);
  }

  void close() {
    if (!rk_) return;
    if (o_.delivery != KafkaDelivery::kExactlyOnce) (void)rd_kafka_flush(rk_.get(), timeout_ms());
    rk_.reset();
  }

  // Delivery reports, on the task thread (inside rd_kafka_poll / flush).
  static void on_delivery(rd_kafka_t*, const rd_kafka_message_t* m, void*) {
    auto* self = static_cast<Impl*>(m->_private);
    if (self == nullptr) return;
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR && m->rkt != nullptr && self->marker_topic_ == rd_kafka_topic_name(m->rkt)) {
      self->marker_offset_ = m->offset;
    }
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR || !self->delivery_error_.empty()) return;
    self->delivery_error_ =
        std::string(rd_kafka_err2str(m->err)) + " (partition " + std::to_string(m->partition) + ")";
  }

 private:
  int timeout_ms() const { return static_cast<int>(kafka::kRequestTimeout.count()); }

  // Waits until every record sent was delivered or failed.
  // Delivered records count as committed (at-least-once).
  absl::Status flush(const char* when) {
    rd_kafka_resp_err_t e = rd_kafka_flush(rk_.get(), timeout_ms());
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) return kafka::error(o_.bootstrap_servers, std::string("flushing ") + when, e);
    if (!delivery_error_.empty()) return failed();
    committed_records_->inc(unflushed_);
    unflushed_ = 0;
    return absl::OkStatus();
  }
  std::string transactional_id(int32_t writer) const { return o_.transactional_id_prefix + "-" + std::to_string(writer); }
  int32_t marker_partition(int32_t writer) const { return writer % marker_partitions_; }
  std::string marker_key(int32_t writer) const { return transactional_id(writer); }
  static std::string marker_value(const PendingBatch& b) {
    return std::to_string(b.lineage) + " " + std::to_string(b.checkpoint_id);
  }

  absl::Status failed() const {
    return absl::UnavailableError("kafka sink to '" + o_.topic + "' on " + o_.bootstrap_servers +
                                  ": a record was not delivered: " + delivery_error_);
  }

  int32_t partition_for(const KafkaRecord& r) {
    if (r.partition >= 0) return r.partition;
    switch (o_.partitioning) {
      case KafkaPartitioning::kFixed: return subtask_ % partitions_;
      case KafkaPartitioning::kRoundRobin: return static_cast<int32_t>(next_partition_++ % partitions_);
      case KafkaPartitioning::kKeyHash: break;
    }
    return RD_KAFKA_PARTITION_UA;
  }

  // Sends one record; waits for queue space (backpressure) when the
  // producer's queue is full.
  absl::Status produce(const KafkaRecord& r) {
    const std::string& topic = r.topic.empty() ? o_.topic : r.topic;
    while (true) {
      rd_kafka_headers_t* hdrs = nullptr;
      if (!r.headers.empty()) {
        hdrs = rd_kafka_headers_new(r.headers.size());
        for (const auto& [k, v] : r.headers) {
          rd_kafka_header_add(hdrs, k.data(), static_cast<ssize_t>(k.size()), v.data(), static_cast<ssize_t>(v.size()));
        }
      }
      rd_kafka_resp_err_t e = rd_kafka_producev(
          rk_.get(), RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(partition_for(r)),
          RD_KAFKA_V_KEY(r.key.data(), r.key.size()), RD_KAFKA_V_VALUE(r.tombstone ? nullptr : const_cast<char*>(r.value.data()), r.tombstone ? 0 : r.value.size()),
          RD_KAFKA_V_TIMESTAMP(r.timestamp > 0 ? r.timestamp : 0), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
          RD_KAFKA_V_HEADERS(hdrs), RD_KAFKA_V_OPAQUE(this), RD_KAFKA_V_END);
      if (e == RD_KAFKA_RESP_ERR_NO_ERROR) break;
      if (hdrs != nullptr) rd_kafka_headers_destroy(hdrs);
      if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) return kafka::error(o_.bootstrap_servers, "producing to " + topic, e);
      rd_kafka_poll(rk_.get(), 10);
    }
    rd_kafka_poll(rk_.get(), 0);
    return delivery_error_.empty() ? absl::OkStatus() : failed();
  }

  // Writes one checkpoint's records and the writer's marker in one
  // transaction. On failure the transaction is aborted, so nothing of it is
  // visible, and the batch may be committed again later.
  absl::Status commit(const PendingBatch& b) {
    const absl::Status corrupt =
        absl::DataLossError("kafka sink to '" + o_.topic + "': the records of checkpoint " +
                            std::to_string(b.checkpoint_id) + " in the state are corrupt");
    // Tests kill at crash points, not inside a transaction (see docs/kafka.md).
    WEIR_CRASH_FENCE(no_crash_inside);
    rd_kafka_error_t* e = rd_kafka_begin_transaction(rk_.get());
    if (e != nullptr) return kafka::error(o_.bootstrap_servers, "beginning a transaction", e);
    delivery_error_.clear();
    absl::Status s;
    ByteReader in(b.records);
    int64_t records = 0;
    while (s.ok() && !in.at_end()) {
      KafkaRecord r = Serializer<KafkaRecord>::read(in);
      s = in.ok() ? produce(r) : corrupt;
      ++records;
    }
    sent_->inc(records);
    if (s.ok()) {
      // The marker, in the same transaction: visible exactly when the records are.
      KafkaRecord m;
      m.topic = marker_topic_;
      m.partition = marker_partition(b.writer);
      m.key = marker_key(b.writer);
      m.value = marker_value(b);
      marker_offset_ = -1;
      s = produce(m);
    }
    if (s.ok()) {
      e = rd_kafka_commit_transaction(rk_.get(), timeout_ms());
      if (e != nullptr) s = kafka::error(o_.bootstrap_servers, "committing checkpoint " + std::to_string(b.checkpoint_id), e);
      else if (!delivery_error_.empty()) s = failed();
      else if (b.writer == subtask_ && marker_offset_ >= 0) marker_next_ = marker_offset_ + 1;
    }
    if (s.ok()) {
      committed_records_->inc(records);
      committed_transactions_->inc();
    }
    if (!s.ok()) {
      rd_kafka_error_t* a = rd_kafka_abort_transaction(rk_.get(), timeout_ms());
      if (a != nullptr) rd_kafka_error_destroy(a);
    }
    return s;
  }

  // Whether the transaction of `b` committed: its marker is in the
  // writer's marker partition, read as a read_committed consumer from where
  // it can first be to the end.
  absl::StatusOr<bool> has_marker(const PendingBatch& b) {
    std::map<std::string, std::string> settings = {{"group.id", transactional_id(b.writer) + "-recovery"},
                                                   {"isolation.level", "read_committed"},
                                                   {"enable.auto.commit", "false"},
                                                   {"enable.partition.eof", "true"}};
    auto client = kafka::make_client(RD_KAFKA_CONSUMER, o_.bootstrap_servers, settings, o_.properties, nullptr);
    if (!client.ok()) return client.status();
    rd_kafka_t* rk = client->get();
    const int32_t part = marker_partition(b.writer);
    int64_t low = 0, high = 0;
    rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(rk, marker_topic_.c_str(), part, &low, &high, timeout_ms());
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) return kafka::error(o_.bootstrap_servers, "offsets of " + marker_topic_, e);
    const int64_t from = std::max(low, b.marker_from);
    if (from >= high) return false;
    kafka::PartitionList list(rd_kafka_topic_partition_list_new(1));
    rd_kafka_topic_partition_list_add(list.get(), marker_topic_.c_str(), part)->offset = from;
    e = rd_kafka_assign(rk, list.get());
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) return kafka::error(o_.bootstrap_servers, "reading " + marker_topic_, e);
    const std::string key = marker_key(b.writer), value = marker_value(b);
    const auto deadline = std::chrono::steady_clock::now() + kafka::kRequestTimeout;
    // To `high`, not to the first end of partition: a transaction another
    // writer left open (being aborted by its own restoring subtask) holds
    // read_committed reads back, and a marker may lie behind it.
    bool found = false;
    while (!found) {
      rd_kafka_position(rk, list.get());
      if (list->elems[0].offset >= high) break;
      if (std::chrono::steady_clock::now() > deadline) {
        return absl::DeadlineExceededError("kafka " + o_.bootstrap_servers + ": reading " + marker_topic_ +
                                           " to offset " + std::to_string(high) + " took longer than " +
                                           std::to_string(kafka::kRequestTimeout.count()) +
                                           " ms (a transaction left open holds it back?)");
      }
      rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 50);
      if (m == nullptr) continue;
      if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        found = std::string_view(static_cast<const char*>(m->key), m->key_len) == key &&
                std::string_view(static_cast<const char*>(m->payload), m->len) == value;
      } else if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        std::string text = rd_kafka_message_errstr(m);
        rd_kafka_message_destroy(m);
        return absl::UnavailableError("kafka " + o_.bootstrap_servers + ": reading " + marker_topic_ + ": " + text);
      }
      rd_kafka_message_destroy(m);
    }
    (void)rd_kafka_consumer_close(rk);
    return found;
  }

  // The topic of commit markers, made on first use (one partition).
  absl::Status create_marker_topic() {
    rd_kafka_NewTopic_t* t = rd_kafka_NewTopic_new(marker_topic_.c_str(), 1, -1, nullptr, 0);
    rd_kafka_queue_t* q = rd_kafka_queue_new(rk_.get());
    rd_kafka_CreateTopics(rk_.get(), &t, 1, nullptr, q);
    rd_kafka_event_t* ev = rd_kafka_queue_poll(q, timeout_ms());
    absl::Status s = absl::OkStatus();
    if (ev == nullptr) {
      s = absl::DeadlineExceededError("kafka " + o_.bootstrap_servers + ": creating " + marker_topic_ + " timed out");
    } else {
      size_t n = 0;
      const rd_kafka_topic_result_t** res = rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &n);
      rd_kafka_resp_err_t e = rd_kafka_event_error(ev);
      if (e == RD_KAFKA_RESP_ERR_NO_ERROR && n == 1) e = rd_kafka_topic_result_error(res[0]);
      if (e != RD_KAFKA_RESP_ERR_NO_ERROR && e != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
        s = kafka::error(o_.bootstrap_servers, "creating the marker topic " + marker_topic_ + " (create it by hand)", e);
      }
      rd_kafka_event_destroy(ev);
    }
    rd_kafka_queue_destroy(q);
    rd_kafka_NewTopic_destroy(t);
    return s;
  }

  // Aborts whatever transaction `writer`'s id left open.
  absl::Status fence(int32_t writer) {
    std::map<std::string, std::string> settings = {{"transactional.id", transactional_id(writer)},
                                                   {"transaction.timeout.ms", std::to_string(o_.transaction_timeout.count())}};
    auto client = kafka::make_client(RD_KAFKA_PRODUCER, o_.bootstrap_servers, settings, o_.properties, nullptr);
    if (!client.ok()) return client.status();
    rd_kafka_error_t* e = rd_kafka_init_transactions(client->get(), timeout_ms());
    if (e != nullptr) return kafka::error(o_.bootstrap_servers, "aborting transactions of " + transactional_id(writer), e);
    return absl::OkStatus();
  }

  const KafkaSinkOptions o_;
  OperatorContext* ctx_ = nullptr;
  int32_t subtask_ = 0;
  uint64_t lineage_ = 0;
  kafka::ErrorSink errors_;
  kafka::Handle rk_;
  int32_t partitions_ = 1;
  std::string marker_topic_;
  int32_t marker_partitions_ = 1;
  int64_t marker_next_ = 0;    // where this writer's next marker can first be
  int64_t marker_offset_ = -1;  // of the marker of the transaction being committed
  uint64_t next_partition_ = 0;
  std::string delivery_error_;
  // The sink's metrics (weir/metrics.h kSinkRecordsSent, ...), and the
  // records produced since the last flush (at-least-once).
  Counter* sent_ = nullptr;
  Counter* committed_records_ = nullptr;
  Counter* committed_transactions_ = nullptr;
  int64_t unflushed_ = 0;
  std::string open_;  // exactly-once: the records since the last barrier, serialized
  std::vector<PendingBatch> pending_;  // exactly-once: awaiting their checkpoints, oldest first
  int64_t pending_bytes_ = 0;
  std::unique_ptr<OperatorListState<PendingBatch>> pending_state_;
  std::unique_ptr<OperatorListState<int32_t>> writers_state_;
};

KafkaSink::KafkaSink(KafkaSinkOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
KafkaSink::~KafkaSink() { impl_->close(); }
absl::Status KafkaSink::open(OperatorContext& ctx) { return impl_->open(ctx); }
absl::Status KafkaSink::write(const KafkaRecord& r) { return impl_->write(r); }
absl::Status KafkaSink::finish() { return impl_->finish(); }
absl::Status KafkaSink::snapshot_state(int64_t id) { return impl_->snapshot_state(id); }
void KafkaSink::notify_checkpoint_complete(int64_t id) { impl_->notify_checkpoint_complete(id); }
void KafkaSink::close() { impl_->close(); }

}  // namespace weir
