#include "cli/sql_collect.h"

#include <memory>
#include <stdexcept>

#include "cluster/result_uplink.h"
#include "weir/serializer.h"

namespace weir::cli {
namespace {

class CollectSink final : public Sink<Row> {
 public:
  explicit CollectSink(std::string result_id) : result_id_(std::move(result_id)) {}

  absl::Status open(OperatorContext& ctx) override {
    uplink_ = cluster::result_uplink();
    if (uplink_ == nullptr) {
      return absl::FailedPreconditionError("the result of a shell query on a cluster is sent by a TaskManager; this "
                                           "process runs none");
    }
    if (ctx.attempt() > 0) {
      return absl::FailedPreconditionError("a shell query's result cannot be sent again after a restart (the query "
                                           "failed)");
    }
    subtask_ = ctx.subtask_index();
    subtasks_ = ctx.parallelism();
    time_ = &ctx.processing_time();
    alive_ = std::make_shared<bool>(true);
    return absl::OkStatus();
  }

  absl::Status write(const Row& row) override {
    ByteWriter w(&pending_);
    Serializer<Row>::write(w, row);
    if (pending_.size() >= kBatchBytes) return flush(false);
    if (!armed_) {
      armed_ = true;
      const uint64_t batch = seq_;
      auto alive = alive_;
      time_->schedule(time_->now_ms() + kLatencyMs, [this, alive, batch] {
        if (!*alive || batch != seq_ || pending_.empty()) return;
        absl::Status s = flush(false);
        if (!s.ok()) throw std::runtime_error(std::string(s.message()));
      });
    }
    return absl::OkStatus();
  }

  absl::Status finish() override { return flush(true); }

  void close() override {
    if (alive_) *alive_ = false;
  }

 private:
  absl::Status flush(bool end) {
    cluster::ResultBatch b{result_id_, subtask_, subtasks_, static_cast<int64_t>(seq_), std::move(pending_), end};
    pending_.clear();
    armed_ = false;
    while (true) {
      auto taken = uplink_->push(b);
      if (!taken.ok()) {
        return absl::Status(taken.status().code(),
                            "query result " + result_id_ + ": " + std::string(taken.status().message()));
      }
      if (*taken) break;  // else its queue stayed full: the shell reads slowly
    }
    ++seq_;
    return absl::OkStatus();
  }

  const std::string result_id_;
  std::shared_ptr<cluster::ResultUplink> uplink_;
  int subtask_ = 0;
  int subtasks_ = 1;
  detail::ProcessingTimeService* time_ = nullptr;
  std::shared_ptr<bool> alive_;  // false once closed: a pending flush timer does nothing
  std::string pending_;          // encoded rows of the next batch
  uint64_t seq_ = 0;             // of the next batch
  bool armed_ = false;           // a flush is scheduled
};

}  // namespace

void add_collect_connector(sql::TableConnectors* connectors, const std::string& result_id) {
  connectors->sinks[kResultConnector] = [result_id](const DataStream<Row>& rows, bool, const sql::TableDef&,
                                                     const std::string& uid) {
    rows.sink_to([result_id] { return std::make_unique<CollectSink>(result_id); }, "result").uid(uid);
    return absl::OkStatus();
  };
}

absl::Status decode_result_batch(std::string_view batch, const std::function<void(Row&&)>& each) {
  ByteReader r(batch);
  while (!r.at_end()) {
    Row row = Serializer<Row>::read(r);
    if (!r.ok()) return absl::DataLossError("a query result's batch does not decode as rows");
    each(std::move(row));
  }
  return absl::OkStatus();
}

}  // namespace weir::cli
