// Keyed timers of one operator subtask, in event time and processing time.
//
// Timers are keyed state: each key's pending timestamps live in a state
// table per time domain ("_timers/event", "_timers/proc"), so they are
// stored and snapshotted per key group like any other state, and restored
// with it. An in-memory index ordered by time decides what fires; it is
// rebuilt from the tables after a restore. A (key, timestamp) pair is
// registered at most once.
//
// Confined to the task thread.
#ifndef WEIR_DETAIL_TIMERS_H_
#define WEIR_DETAIL_TIMERS_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"

#include "weir/detail/keyed_backend.h"
#include "weir/detail/operator.h"

namespace weir::detail {

template <typename K>
class InternalTimerService {
 public:
  // Called with the key set as the backend's current key.
  using FireFn = std::function<void(TimeDomain, int64_t timestamp, const K& key)>;

  InternalTimerService(KeyedBackend<K>* backend, ProcessingTimeService* clock, int max_parallelism)
      : backend_(backend), clock_(clock), max_parallelism_(max_parallelism) {}

  // Registers the timer tables (taking restored timers) and rebuilds the
  // index. Call once, after the backend was restored.
  absl::Status open(FireFn fire) {
    fire_ = std::move(fire);
    for (int d = 0; d < 2; ++d) {
      auto t = backend_->core().template table<K, std::vector<int64_t>>(
          d == 0 ? "_timers/event" : "_timers/proc", StateKind::kList);
      if (!t.ok()) return t.status();
      domains_[d].table = *t;
      (*t)->for_each([&](const K& key, const std::vector<int64_t>& ts) {
        for (int64_t x : ts) domains_[d].index[x].insert(key);
      });
    }
    schedule_processing();
    return absl::OkStatus();
  }

  int64_t current_watermark() const { return watermark_; }
  int64_t current_processing_time() const { return clock_->now_ms(); }

  void register_timer(TimeDomain d, int64_t ts) {
    Domain& dom = domains_[static_cast<int>(d)];
    const std::vector<int64_t>* have = dom.table->find(backend_->current_key_group(), backend_->current_key());
    if (have && std::binary_search(have->begin(), have->end(), ts)) return;
    add(d, ts);
  }

  // Makes sure the current key has a timer in `d` at or before `ts`:
  // registers one at `ts` unless an earlier (or that) one is pending. For
  // an operator that keeps one timer per key at the next time it is due
  // and registers the one after when it fires (the window operator's
  // sessions and slices): one lookup, and no timer for every later time.
  void register_timer_by(TimeDomain d, int64_t ts) {
    Domain& dom = domains_[static_cast<int>(d)];
    const std::vector<int64_t>* have = dom.table->find(backend_->current_key_group(), backend_->current_key());
    if (have && !have->empty() && have->front() <= ts) return;
    add(d, ts);
  }

  void delete_timer(TimeDomain d, int64_t ts) {
    Domain& dom = domains_[static_cast<int>(d)];
    const K& key = backend_->current_key();
    if (!remove_from_table(dom, backend_->current_key_group(), key, ts)) return;
    auto it = dom.index.find(ts);
    if (it == dom.index.end()) return;
    it->second.erase(key);
    if (it->second.empty()) dom.index.erase(it);
  }

  // Event time advanced: fires every event-time timer at or before `wm`.
  void advance_watermark(int64_t wm) {
    watermark_ = wm;
    fire_due(domains_[0], TimeDomain::kEventTime, wm);
  }

  // Batch execution, at the end of a key's sorted input: fires its timers of
  // both domains as the end of input would (event time +infinity, every
  // processing-time timer), then lets event time start over for the next
  // key.
  void end_key_block() {
    advance_watermark(kMaxWatermark);
    fire_due(domains_[1], TimeDomain::kProcessingTime, INT64_MAX);
    watermark_ = kMinWatermark;
  }

 private:
  struct Domain {
    StateTable<K, std::vector<int64_t>>* table = nullptr;
    // Timestamp -> keys with a timer then: registering and deleting one
    // timer cost O(log timestamps) whatever the number of keys sharing a
    // timestamp. A timestamp's keys fire together: its set leaves the index
    // first, so timers registered meanwhile go to a new set.
    std::map<int64_t, absl::flat_hash_set<K>> index;
  };

  // Adds timer `ts`, which the current key does not have.
  void add(TimeDomain d, int64_t ts) {
    Domain& dom = domains_[static_cast<int>(d)];
    const K& key = backend_->current_key();
    std::vector<int64_t>& v = dom.table->get_or_create(backend_->current_key_group(), key);
    v.insert(std::upper_bound(v.begin(), v.end(), ts), ts);
    dom.index[ts].insert(key);
    if (d == TimeDomain::kProcessingTime) schedule_processing();
  }

  // `keep_empty`: a key's last timer leaves an empty list behind, for the
  // caller to erase (fire_due: a handler that registers the key's next
  // timer then fills it, instead of the entry leaving and coming back).
  bool remove_from_table(Domain& dom, int kg, const K& key, int64_t ts, bool keep_empty = false) {
    const std::vector<int64_t>* have = dom.table->find(kg, key);
    if (!have || !std::binary_search(have->begin(), have->end(), ts)) return false;
    if (have->size() == 1 && !keep_empty) {
      dom.table->erase(kg, key);
    } else {
      std::vector<int64_t>& v = dom.table->get_or_create(kg, key);
      v.erase(std::lower_bound(v.begin(), v.end(), ts));
    }
    return true;
  }

  void fire_due(Domain& dom, TimeDomain d, int64_t upto) {
    while (!dom.index.empty() && dom.index.begin()->first <= upto) {
      auto due = dom.index.extract(dom.index.begin());
      const int64_t ts = due.key();
      for (const K& key : due.mapped()) {
        int kg = key_group_of(key, max_parallelism_);
        // Deleted while its timestamp fired (by an earlier key's timer).
        if (!remove_from_table(dom, kg, key, ts, /*keep_empty=*/true)) continue;
        backend_->set_current_key(&key, kg);
        current_timestamp() = d == TimeDomain::kEventTime ? ts : kNoTimestamp;
        fire_(d, ts, key);
        if (const std::vector<int64_t>* left = dom.table->find(kg, key); left && left->empty()) {
          dom.table->erase(kg, key);
        }
      }
    }
  }

  void schedule_processing() {
    Domain& dom = domains_[1];
    if (dom.index.empty()) return;
    int64_t first = dom.index.begin()->first;
    if (first >= scheduled_at_) return;
    scheduled_at_ = first;
    clock_->schedule(first, [this] {
      scheduled_at_ = INT64_MAX;
      fire_due(domains_[1], TimeDomain::kProcessingTime, clock_->now_ms());
      schedule_processing();
    });
  }

  KeyedBackend<K>* backend_;
  ProcessingTimeService* clock_;
  const int max_parallelism_;
  FireFn fire_;
  Domain domains_[2];
  int64_t watermark_ = kMinWatermark;
  int64_t scheduled_at_ = INT64_MAX;
};

// The timer services of the most common key types, and their tables, are
// compiled once in the engine (src/state/instantiations.cc), not in every
// job's translation units.
extern template class InternalTimerService<int64_t>;
extern template class InternalTimerService<std::string>;
extern template class HeapTable<int64_t, std::vector<int64_t>>;
extern template class HeapTable<std::string, std::vector<int64_t>>;
extern template class KvTable<int64_t, std::vector<int64_t>>;
extern template class KvTable<std::string, std::vector<int64_t>>;

}  // namespace weir::detail

#endif  // WEIR_DETAIL_TIMERS_H_
