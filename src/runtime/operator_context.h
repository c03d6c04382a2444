// The runtime's OperatorContext: identity of an operator subtask and its
// operator state store. Owned by the task, confined to the task thread.
#ifndef WEIR_RUNTIME_OPERATOR_CONTEXT_H_
#define WEIR_RUNTIME_OPERATOR_CONTEXT_H_

#include <filesystem>
#include <string>

#include "common/task_metrics.h"
#include "weir/config.h"
#include "weir/context.h"

namespace weir::runtime {

class RuntimeOperatorContext final : public OperatorContext, private detail::KeyedStoreFactory {
 public:
  struct Info {
    int subtask = 0;
    int parallelism = 1;
    int max_parallelism = kDefaultMaxParallelism;
    int attempt = 0;
    std::string uid;
    KeyGroupRange key_groups;
    bool restored = false;
    detail::ProcessingTimeService* processing_time = nullptr;  // the task's
    std::string job_id;
    const StateBackendConfig* state_backend = nullptr;  // the job's
    TaskMetrics* metrics = nullptr;                     // the task's
  };
  explicit RuntimeOperatorContext(Info info)
      : info_(std::move(info)),
        metrics_(info_.metrics != nullptr ? &info_.metrics->group(info_.uid) : &own_metrics_) {}

  int subtask_index() const override { return info_.subtask; }
  int parallelism() const override { return info_.parallelism; }
  int max_parallelism() const override { return info_.max_parallelism; }
  int attempt() const override { return info_.attempt; }
  const std::string& operator_uid() const override { return info_.uid; }
  KeyGroupRange key_group_range() const override { return info_.key_groups; }
  bool is_restored() const override { return info_.restored; }
  detail::ProcessingTimeService& processing_time() override { return *info_.processing_time; }
  MetricGroup& metrics() override { return *metrics_; }
  detail::OperatorListStateData& raw_list_state(std::string_view name,
                                                detail::Redistribution mode) override {
    auto [it, inserted] = state_.try_emplace(std::string(name));
    if (inserted) it->second.mode = mode;
    return it->second;
  }
  detail::OperatorStateMap& state() { return state_; }

 private:
  detail::KeyedStoreFactory& keyed_store_factory() override { return *this; }
  absl::StatusOr<std::shared_ptr<detail::KvStore>> create_keyed_store() override;
  bool keyed_store_is_native() const override {
    return info_.state_backend != nullptr && info_.state_backend->kind == StateBackendKind::kRocksDb;
  }
  absl::StatusOr<std::shared_ptr<detail::KvStore>> open_native_store(const detail::NativeRestore& from) override;

  // The working directory of a store: <root>/<job>/<uid>-<subtask>-a<attempt><suffix>.
  std::filesystem::path store_dir(const std::string& suffix) const;

  const Info info_;
  MetricGroup own_metrics_;  // when the task keeps no metrics (info_.metrics null)
  MetricGroup* const metrics_;
  int stores_opened_ = 0;
  detail::OperatorStateMap state_;
};

// The name of an operator subtask's snapshot files and directories: the uid
// (characters other than letters and digits as '_') and the subtask index.
std::string snapshot_owner(const std::string& uid, int subtask);

}  // namespace weir::runtime

#endif  // WEIR_RUNTIME_OPERATOR_CONTEXT_H_
