#include "sql/local_aggregate.h"

#include <stdexcept>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "weir/context.h"
#include "weir/detail/operators.h"

namespace weir::sql {
namespace {

// A group's partial state, as operator state keeps it between checkpoints.
struct Partial {
  std::string key;
  AggregateState state;
  auto weir_fields() { return std::tie(key, state); }
};

class LocalAggregate final : public detail::OneOutputOperator<Row>, public detail::Input<Row> {
 public:
  LocalAggregate(std::shared_ptr<const KeyEncoder> keys, std::shared_ptr<const Aggregates> aggregates,
                 bool changelog, int64_t batch_rows, int64_t latency_ms)
      : keys_(std::move(keys)), aggregates_(std::move(aggregates)), changelog_(changelog), batch_rows_(batch_rows),
        latency_ms_(latency_ms) {}
  ~LocalAggregate() override { *alive_ = false; }

  void* input() override { return static_cast<detail::Input<Row>*>(this); }

  absl::Status open(OperatorContext& ctx, const detail::OperatorRestore* restore) override {
    ctx_ = &ctx;
    absl::Status s = detail::restore_operator_state(ctx, restore);
    if (!s.ok()) return s;
    kept_ = std::make_unique<OperatorListState<Partial>>(ctx, "local-partials");
    bool corrupt = false;
    for (Partial& p : kept_->get(&corrupt)) merge(std::move(p));
    if (corrupt) return absl::DataLossError("GROUP BY " + ctx.operator_uid() + ": a kept partial does not decode");
    if (!partials_.empty()) arm();
    return absl::OkStatus();
  }
  void process(const Row& row) override {
    std::string key = keys_->encode(row);
    auto it = partials_.find(key);
    if (it == partials_.end()) it = partials_.emplace(std::move(key), aggregates_->create()).first;
    absl::Status s;
    if (changelog_) {
      const bool retract = row.kind == RowKind::kUpdateBefore || row.kind == RowKind::kDelete;
      s = aggregates_->update_partial(it->second, row, retract ? -1 : 1);
    } else {
      s = aggregates_->add(it->second, row);
    }
    if (!s.ok()) throw std::runtime_error("GROUP BY: " + std::string(s.message()));
    if (++rows_ >= batch_rows_) {
      flush();
    } else {
      arm();
    }
  }
  absl::StatusOr<detail::OperatorSnapshot> snapshot(const detail::SnapshotOptions&) override {
    std::vector<Partial> kept;
    kept.reserve(partials_.size());
    for (const auto& [key, state] : partials_) kept.push_back({key, state});
    kept_->update(kept);
    return detail::OperatorSnapshot{detail::capture_operator_state(*ctx_), nullptr};
  }
  void process_watermark(int64_t wm) override {
    flush();
    detail::OneOutputOperator<Row>::process_watermark(wm);
  }
  absl::Status finish() override {
    flush();
    return absl::OkStatus();
  }

 private:
  void merge(Partial p) {
    auto it = partials_.find(p.key);
    if (it == partials_.end()) {
      partials_.emplace(std::move(p.key), std::move(p.state));
      return;
    }
    absl::Status s = aggregates_->merge(it->second, p.state, /*partial=*/true);
    if (!s.ok()) throw std::runtime_error("GROUP BY: " + std::string(s.message()));
  }
  // A flush `latency_ms_` after the first row of the batch.
  void arm() {
    if (armed_) return;
    armed_ = true;
    const uint64_t batch = batch_;
    auto alive = alive_;
    ctx_->processing_time().schedule(ctx_->processing_time().now_ms() + latency_ms_, [this, alive, batch] {
      if (*alive && batch == batch_) flush();
    });
  }
  void flush() {
    for (auto& [key, state] : partials_) {
      Row r;
      r.values.reserve(2);
      r.values.emplace_back(key);
      r.values.emplace_back(serialize_to_string(state));
      out_->collect(r);
    }
    partials_.clear();
    rows_ = 0;
    armed_ = false;
    ++batch_;
  }

  const std::shared_ptr<const KeyEncoder> keys_;
  const std::shared_ptr<const Aggregates> aggregates_;
  const bool changelog_;  // rows are added and retracted (+I, -U, +U, -D)
  const int64_t batch_rows_, latency_ms_;
  OperatorContext* ctx_ = nullptr;
  std::unique_ptr<OperatorListState<Partial>> kept_;
  std::unordered_map<std::string, AggregateState> partials_;
  int64_t rows_ = 0;
  bool armed_ = false;
  uint64_t batch_ = 0;  // flushes so far: a timer of an earlier batch does nothing
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace

DataStream<Row> local_aggregate(const DataStream<Row>& in, std::shared_ptr<const KeyEncoder> keys,
                                std::shared_ptr<const Aggregates> aggregates, bool changelog,
                                const Settings& settings, const std::string& uid) {
  const int64_t rows = settings.mini_batch_rows, latency = settings.mini_batch_latency_ms;
  DataStream<Row> out =
      detail::GraphBuilder::add<Row>(in, "local-aggregate", [keys, aggregates, changelog, rows, latency]() {
        return std::make_unique<LocalAggregate>(keys, aggregates, changelog, rows, latency);
      });
  out.uid(uid + "local-aggregate");
  return out;
}

AggregateState partial_state(const Row& row) {
  auto state = deserialize_from_string<AggregateState>(std::get<std::string>(row.values[1]));
  if (!state) throw std::runtime_error("GROUP BY: a partial state does not decode");
  return *std::move(state);
}

}  // namespace weir::sql
