// Test support for keyed state: a Harness that drives a keyed backend as a
// keyed operator would (one backend, a current key, a manual clock), and the
// BackendTest fixture whose tests run on both backends (instantiated once,
// in src/state/keyed_backend_test.cc, for the tests of every file).
#ifndef WEIR_TESTING_KEYED_STATE_HARNESS_H_
#define WEIR_TESTING_KEYED_STATE_HARNESS_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "runtime/operator_context.h"
#include "state/rocksdb_store.h"
#include "weir/detail/keyed_backend.h"
#include "weir/functions.h"

namespace weir::detail {

inline constexpr int kMaxP = 16;

inline std::shared_ptr<KvStore> make_store(StateBackendKind kind) {
  if (kind == StateBackendKind::kHeap) return nullptr;
  static std::atomic<int> next{0};
  auto dir = std::filesystem::temp_directory_path() /
             ("weir-backend-test-" + std::to_string(::getpid())) / std::to_string(next++);
  auto store = state::open_rocksdb_store(dir, 64 << 20);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? *store : nullptr;
}

// Processing time that moves only when told to.
class ManualClock final : public ProcessingTimeService {
 public:
  int64_t now_ms() const override { return now; }
  void schedule(int64_t, std::function<void()>) override {}
  int64_t now = 0;
};

// Drives keyed state as a keyed operator would: one backend, a current key.
class Harness {
 public:
  explicit Harness(KeyGroupRange range, StateBackendKind kind = StateBackendKind::kHeap)
      : op_(runtime::RuntimeOperatorContext::Info{0, 1, kMaxP, 0, "op", range, false, &clock_, "", nullptr}),
        store_(make_store(kind)),
        backend_(range, store_),
        ctx_(&op_, &backend_) {}
  ManualClock& clock() { return clock_; }
  KvStore* store() { return store_.get(); }

  void set_key(const std::string& k) {
    key_ = k;
    backend_.set_current_key(&key_, key_group_of(key_, kMaxP));
  }
  KeyedRuntimeContext<std::string>& ctx() { return ctx_; }
  KeyedBackend<std::string>& backend() { return backend_; }

  // Serializes every key group of a snapshot, as the async writer does.
  static std::map<int, std::string> write(const KeyedStateSnapshot& snap) {
    std::map<int, std::string> out;
    for (int kg = snap.range().start; kg < snap.range().end; ++kg) {
      ByteWriter w(&out[kg]);
      snap.write_key_group(kg, w);
    }
    return out;
  }
  void restore(const std::map<int, std::string>& groups) {
    for (const auto& [kg, bytes] : groups) {
      if (backend_.core().range().contains(kg)) {
        ASSERT_TRUE(backend_.core().restore_key_group(kg, bytes).ok());
      }
    }
  }

 private:
  ManualClock clock_;
  runtime::RuntimeOperatorContext op_;
  std::shared_ptr<KvStore> store_;
  KeyedBackend<std::string> backend_;
  KeyedRuntimeContext<std::string> ctx_;
  std::string key_;
};

inline const KeyGroupRange kAll{0, kMaxP};

inline StateTtlConfig ttl_of(int64_t ms, StateTtlConfig::UpdateType u = StateTtlConfig::UpdateType::kOnCreateAndWrite,
                      StateTtlConfig::Visibility v = StateTtlConfig::Visibility::kNeverReturnExpired) {
  StateTtlConfig c;
  c.ttl = std::chrono::milliseconds(ms);
  c.update_type = u;
  c.visibility = v;
  return c;
}

class BackendTest : public ::testing::TestWithParam<StateBackendKind> {
 protected:
  StateBackendKind kind() const { return GetParam(); }
  // The other backend: snapshots are restored into it too.
  StateBackendKind other() const {
    return kind() == StateBackendKind::kHeap ? StateBackendKind::kRocksDb : StateBackendKind::kHeap;
  }
};

}  // namespace weir::detail

#endif  // WEIR_TESTING_KEYED_STATE_HARNESS_H_
