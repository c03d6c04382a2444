// What a running operator subtask knows about itself, and its non-keyed
// (operator) list state. One OperatorContext per operator subtask, owned by
// the task, confined to the task thread.
#ifndef WEIR_CONTEXT_H_
#define WEIR_CONTEXT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "weir/detail/operator.h"
#include "weir/key_group.h"
#include "weir/metrics.h"
#include "weir/operator_state.h"
#include "weir/processing_time.h"
#include "weir/serializer.h"

namespace weir {
class OperatorContext;
template <Serializable T>
class OperatorListState;
namespace detail {
class KvStore;
struct NativeRestore;

// Where the keyed state of an operator lives: the stores of the job's state
// backend. The engine's side of an OperatorContext, reached by the keyed
// backend through keyed_stores(ctx), not by jobs.
class KeyedStoreFactory {
 public:
  virtual ~KeyedStoreFactory() = default;
  // The store for keyed state the job's state backend asks for: null for
  // the heap backend, a fresh RocksDB instance for the RocksDB backend.
  virtual absl::StatusOr<std::shared_ptr<KvStore>> create_keyed_store() = 0;
  // True when create_keyed_store() makes RocksDB stores.
  virtual bool keyed_store_is_native() const = 0;
  // A RocksDB store opened on a copy of a native snapshot's files, in a
  // fresh working directory (removed when the store goes).
  virtual absl::StatusOr<std::shared_ptr<KvStore>> open_native_store(const NativeRestore& from) = 0;
};
KeyedStoreFactory& keyed_stores(OperatorContext& ctx);
}  // namespace detail

class OperatorContext {
 public:
  virtual ~OperatorContext() = default;

  virtual int subtask_index() const = 0;
  virtual int parallelism() const = 0;
  virtual int max_parallelism() const = 0;
  // Restart count of the job: 0 for the first attempt.
  virtual int attempt() const = 0;
  virtual const std::string& operator_uid() const = 0;
  virtual KeyGroupRange key_group_range() const = 0;
  // True when state was restored from a checkpoint.
  virtual bool is_restored() const = 0;
  // The task's processing-time clock and timer callbacks.
  virtual ProcessingTimeService& processing_time() = 0;
  // The operator subtask's own counters, gauges and histograms
  // (weir/metrics.h), exported with the task's metrics.
  virtual MetricGroup& metrics() = 0;
  // metrics().gauge(name).set(value): a value under `name` in the task's
  // metrics (REST: the subtask's and the vertex's "gauges", a vertex summing
  // its subtasks' values of a name). It looks the name up: for values that
  // change now and then (a lag, a queue length); keep the Gauge& for more.
  void set_gauge(std::string_view name, int64_t value) { metrics().gauge(name).set(static_cast<double>(value)); }

 private:
  template <Serializable T>
  friend class OperatorListState;
  // The entries of operator list state `name`, serialized: OperatorListState's.
  virtual detail::OperatorListStateData& raw_list_state(std::string_view name, Redistribution mode) = 0;
  friend detail::KeyedStoreFactory& detail::keyed_stores(OperatorContext& ctx);
  virtual detail::KeyedStoreFactory& keyed_store_factory() = 0;
};

inline detail::KeyedStoreFactory& detail::keyed_stores(OperatorContext& ctx) { return ctx.keyed_store_factory(); }

// A list of T that survives failures with the operator (for example a
// source's read positions). Stored serialized; get() decodes, update()
// replaces. Cheap enough for small lists; not for per-record use.
template <Serializable T>
class OperatorListState {
 public:
  OperatorListState(OperatorContext& ctx, std::string_view name,
                    Redistribution mode = Redistribution::kEvenSplit)
      : data_(&ctx.raw_list_state(name, mode)) {}

  // Entries, or an error message naming the state when one does not decode.
  std::vector<T> get(bool* corrupt = nullptr) const {
    std::vector<T> out;
    out.reserve(data_->entries.size());
    for (const std::string& e : data_->entries) {
      auto v = deserialize_from_string<T>(e);
      if (!v) {
        if (corrupt) *corrupt = true;
        continue;
      }
      out.push_back(std::move(*v));
    }
    return out;
  }
  void update(const std::vector<T>& values) {
    data_->entries.clear();
    for (const T& v : values) data_->entries.push_back(serialize_to_string(v));
  }
  void add(const T& v) { data_->entries.push_back(serialize_to_string(v)); }
  void clear() { data_->entries.clear(); }

 private:
  detail::OperatorListStateData* data_;  // owned by the context
};

}  // namespace weir

#endif  // WEIR_CONTEXT_H_
