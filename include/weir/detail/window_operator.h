// The window operator: per key, a map from window to accumulator (keyed
// state, so per key group and checkpointed), timers at each window's end and
// at its cleanup time, merging for session windows, and counting for count
// windows. The semantics are documented in include/weir/window.h.
//
// Sliced sliding windows (event time, an aggregate with merge, size a
// multiple of the slide) keep a map from slice to accumulator instead, in
// a state of its own ("_window/slices"): a record costs one accumulator
// update, and a slice registers the end timers of its size / slide windows
// once, when it is created. A window fires by merging its slices; a slice
// leaves when its last window is past its lateness.
//
// Confined to the task thread.
#ifndef WEIR_DETAIL_WINDOW_OPERATOR_H_
#define WEIR_DETAIL_WINDOW_OPERATOR_H_

#include <algorithm>
#include <functional>
#include <memory>
#include <stdexcept>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/container/flat_hash_map.h"
#include "weir/detail/keyed_backend.h"
#include "weir/detail/operator.h"
#include "weir/detail/operators.h"
#include "weir/detail/timers.h"
#include "weir/window.h"

namespace weir::detail {

template <typename K, typename In, typename Acc, typename Out>
class WindowOperator final : public OperatorBase, public Input<In> {
 public:
  using EmitFn = std::function<void(const K& key, const TimeWindow& w, const Acc& acc,
                                    int64_t watermark, int64_t now, Collector<Out>& out)>;
  struct Spec {
    WindowAssigner assigner;
    int64_t allowed_lateness = 0;
    std::string late_tag;  // side output for records past the lateness; empty: drop
    std::function<Acc()> create;
    std::function<void(Acc&, const In&)> add;
    std::function<Acc(const Acc&, const Acc&)> merge;  // required for session windows
    std::function<EmitFn()> make_emit;                  // one per subtask
    // Sliding windows may keep one accumulator per slide (needs merge).
    bool slice = false;
  };

  WindowOperator(std::function<K(const In&)> key_of, Spec spec)
      : key_of_(std::move(key_of)), spec_(std::move(spec)) {}

  void* input() override { return static_cast<Input<In>*>(this); }
  void set_output(std::unique_ptr<OutputBase> out) override {
    owned_out_ = std::move(out);
    out_ = owned_out_ ? static_cast<Output<Out>*>(owned_out_.get()) : &discard_;
  }

  absl::Status open(OperatorContext& ctx, const OperatorRestore* restore) override {
    max_parallelism_ = ctx.max_parallelism();
    range_ = ctx.key_group_range();
    clock_ = &ctx.processing_time();
    auto backend = open_keyed_backend<K>(ctx, restore);
    if (!backend.ok()) return backend.status();
    backend_ = std::move(*backend);
    absl::Cleanup restored = [this] { backend_->core().end_restore(); };
    // A restore of per-window state (taken before slicing) stays unsliced.
    sliced_ = spec_.slice && spec_.merge && spec_.assigner.is_sliceable() &&
              !backend_->core().has_unregistered("_window/contents");
    auto contents = backend_->core().template table<K, Windows>(
        sliced_ ? "_window/slices" : "_window/contents", StateKind::kMap);
    if (!contents.ok()) return contents.status();
    contents_ = *contents;
    auto counts = backend_->core().template table<K, int64_t>("_window/counts", StateKind::kValue);
    if (!counts.ok()) return counts.status();
    counts_ = *counts;
    emit_ = spec_.make_emit();
    timers_ = std::make_unique<InternalTimerService<K>>(backend_.get(), clock_, max_parallelism_);
    return timers_->open([this](TimeDomain d, int64_t ts, const K& key) { on_timer(d, ts, key); });
  }

  void process(const In& r) override {
    K key = key_of_(r);
    int kg = key_group_of(key, max_parallelism_);
    backend_->set_current_key(&key, kg);
    const WindowAssigner& a = spec_.assigner;
    if (a.kind == WindowAssigner::Kind::kGlobal) return add_to_count_window(key, kg, r);
    int64_t ts = a.event_time ? current_timestamp() : clock_->now_ms();
    if (ts == kNoTimestamp) {
      throw std::runtime_error(
          "a record without a timestamp reached an event-time window; give its source a "
          "WatermarkStrategy");
    }
    if (a.is_merging()) return add_to_session(key, kg, r, TimeWindow{ts, ts + a.gap});
    if (sliced_) return add_to_slice(key, kg, r, ts);
    bool placed = false;
    for (const TimeWindow& w : a.assign(ts)) {
      if (is_late(w)) continue;
      placed = true;
      Windows& m = contents_->get_or_create(kg, key);
      auto [it, inserted] = m.try_emplace(w);
      if (inserted) it->second = spec_.create();
      spec_.add(it->second, r);
      register_timers(w);
      if (a.event_time && w.max_timestamp() <= timers_->current_watermark()) fire(key, w, it->second);
    }
    if (!placed) late(r);
  }

  void process_watermark(int64_t wm) override {
    timers_->advance_watermark(wm);
    current_timestamp() = kNoTimestamp;
    out_->emit_watermark(wm);
    this->side_outputs_watermark(wm);
  }
  void process_idle(bool idle) override {
    out_->emit_idle(idle);
    this->side_outputs_idle(idle);
  }
  // Batch execution: the keys' windows fire (event-time ones at their end
  // timers, processing-time ones at once), then their state goes.
  bool supports_key_blocks() const override { return true; }
  void end_key_block(int key_group) override {
    timers_->end_key_block();
    backend_->core().clear_key_group(key_group);
  }

  // End of input: event-time windows have fired (the final watermark is
  // +infinity); processing-time windows still open fire now, so a bounded
  // job loses none of its records.
  absl::Status finish() override {
    if (spec_.assigner.event_time || spec_.assigner.kind == WindowAssigner::Kind::kGlobal) {
      return absl::OkStatus();
    }
    std::vector<std::pair<K, TimeWindow>> open;
    contents_->for_each([&](const K& key, const Windows& m) {
      for (const auto& [w, acc] : m) open.emplace_back(key, w);
    });
    std::sort(open.begin(), open.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    for (const auto& [key, w] : open) {
      int kg = key_group_of(key, max_parallelism_);
      backend_->set_current_key(&key, kg);
      const Windows* m = contents_->find(kg, key);
      if (m == nullptr || !m->contains(w)) continue;
      fire(key, w, m->at(w));
      // Fired for good: its timer, due while the job waits for its final
      // checkpoint, must not fire it again.
      delete_timers(w);
      Windows& wm = contents_->get_or_create(kg, key);
      wm.erase(w);
      if (wm.empty()) contents_->erase(kg, key);
    }
    return absl::OkStatus();
  }

  absl::StatusOr<OperatorSnapshot> snapshot(const SnapshotOptions& options) override {
    return backend_->core().operator_snapshot(options);
  }
  void notify_checkpoint_complete(int64_t id) override { backend_->core().checkpoint_complete(id); }

  // Records dropped because every window they belonged to was past its
  // allowed lateness.
  int64_t late_records() const { return late_records_; }

 private:
  using Windows = absl::flat_hash_map<TimeWindow, Acc>;

  void late(const In& r) {
    ++late_records_;
    if (spec_.late_tag.empty()) return;
    if (OutputBase* o = this->side_output(spec_.late_tag)) static_cast<Output<In>*>(o)->collect(r);
  }

  bool is_late(const TimeWindow& w) const {
    return spec_.assigner.event_time &&
           w.max_timestamp() + spec_.allowed_lateness <= timers_->current_watermark();
  }
  TimeDomain domain() const {
    return spec_.assigner.event_time ? TimeDomain::kEventTime : TimeDomain::kProcessingTime;
  }
  int64_t cleanup_time(const TimeWindow& w) const {
    return spec_.assigner.event_time ? w.max_timestamp() + spec_.allowed_lateness : w.max_timestamp();
  }
  // A window whose end the watermark already passed fires on the record
  // itself (late firing), so only its cleanup needs a timer.
  void register_timers(const TimeWindow& w) {
    if (!spec_.assigner.event_time || w.max_timestamp() > timers_->current_watermark()) {
      timers_->register_timer(domain(), w.max_timestamp());
    }
    if (cleanup_time(w) != w.max_timestamp()) timers_->register_timer(domain(), cleanup_time(w));
  }
  void delete_timers(const TimeWindow& w) {
    timers_->delete_timer(domain(), w.max_timestamp());
    if (cleanup_time(w) != w.max_timestamp()) timers_->delete_timer(domain(), cleanup_time(w));
  }

  void fire(const K& key, const TimeWindow& w, const Acc& acc) {
    current_timestamp() = w.max_timestamp();
    emit_(key, w, acc, timers_->current_watermark(), clock_->now_ms(), *out_);
  }

  void on_timer(TimeDomain, int64_t ts, const K& key) {
    if (sliced_) return on_slice_timer(ts, key);
    int kg = backend_->current_key_group();
    const Windows* m = contents_->find(kg, key);
    if (m == nullptr) return;
    std::vector<TimeWindow> fire_now, drop;
    for (const auto& [w, acc] : *m) {
      if (w.max_timestamp() == ts) fire_now.push_back(w);
      if (cleanup_time(w) == ts) drop.push_back(w);
    }
    std::sort(fire_now.begin(), fire_now.end());
    for (const TimeWindow& w : fire_now) fire(key, w, m->at(w));
    if (drop.empty()) return;
    Windows& wm = contents_->get_or_create(kg, key);
    for (const TimeWindow& w : drop) wm.erase(w);
    if (wm.empty()) contents_->erase(kg, key);
  }

  void add_to_session(const K& key, int kg, const In& r, TimeWindow w) {
    const Windows* existing = contents_->find(kg, key);
    std::vector<TimeWindow> absorbed;
    if (existing != nullptr) {
      for (bool grew = true; grew;) {
        grew = false;
        for (const auto& [old, acc] : *existing) {
          if (std::find(absorbed.begin(), absorbed.end(), old) == absorbed.end() &&
              old.intersects(w)) {
            w = w.cover(old);
            absorbed.push_back(old);
            grew = true;
          }
        }
      }
    }
    if (is_late(w)) {
      late(r);
      return;
    }
    Acc acc = spec_.create();
    spec_.add(acc, r);
    if (!absorbed.empty()) {
      Windows& m = contents_->get_or_create(kg, key);
      for (const TimeWindow& old : absorbed) {
        acc = spec_.merge(m.at(old), acc);
        m.erase(old);
        delete_timers(old);
      }
    }
    Windows& m = contents_->get_or_create(kg, key);
    auto& slot = m[w];
    slot = std::move(acc);
    register_timers(w);
    if (spec_.assigner.event_time && w.max_timestamp() <= timers_->current_watermark()) {
      fire(key, w, slot);
    }
  }

  // Sliced windows (see the top of the file). The windows over `slice`
  // end at slice.end, slice.end + slide, ..., slice.start + size.
  TimeWindow last_window_over(const TimeWindow& slice) const {
    return {slice.start, slice.start + spec_.assigner.size};
  }
  template <typename F>
  void for_windows_over(const TimeWindow& slice, F f) const {
    const WindowAssigner& a = spec_.assigner;
    for (int64_t end = slice.end; end <= slice.start + a.size; end += a.slide) f(TimeWindow{end - a.size, end});
  }

  void add_to_slice(const K& key, int kg, const In& r, int64_t ts) {
    const TimeWindow slice = spec_.assigner.slice_of(ts);
    const TimeWindow last = last_window_over(slice);
    if (is_late(last)) return late(r);  // so is every window over it
    Windows& m = contents_->get_or_create(kg, key);
    auto [it, inserted] = m.try_emplace(slice);
    const int64_t wm = timers_->current_watermark();
    if (inserted) {
      it->second = spec_.create();
      // Windows whose end the watermark passed fire on their records below.
      for_windows_over(slice, [&](const TimeWindow& w) {
        if (w.max_timestamp() > wm) timers_->register_timer(TimeDomain::kEventTime, w.max_timestamp());
      });
      if (cleanup_time(last) != last.max_timestamp()) timers_->register_timer(TimeDomain::kEventTime, cleanup_time(last));
    }
    spec_.add(it->second, r);
    if (slice.max_timestamp() <= wm) {
      for_windows_over(slice, [&](const TimeWindow& w) {
        if (!is_late(w) && w.max_timestamp() <= wm) fire_slices(key, m, w);
      });
    }
  }

  // Fires `w` with its slices in `m` merged in time order; nothing when it
  // has none.
  void fire_slices(const K& key, const Windows& m, const TimeWindow& w) {
    std::vector<const typename Windows::value_type*> in;
    for (const auto& slot : m) {
      if (slot.first.start >= w.start && slot.first.end <= w.end) in.push_back(&slot);
    }
    if (in.empty()) return;
    std::sort(in.begin(), in.end(), [](const auto* a, const auto* b) { return a->first < b->first; });
    Acc acc = in[0]->second;
    for (size_t i = 1; i < in.size(); ++i) acc = spec_.merge(acc, in[i]->second);
    fire(key, w, acc);
  }

  // A timer at `ts`: the window ending at ts + 1 fires if `ts` is a
  // window's last millisecond, then the slices whose last window is past
  // its lateness leave.
  void on_slice_timer(int64_t ts, const K& key) {
    int kg = backend_->current_key_group();
    const Windows* m = contents_->find(kg, key);
    if (m == nullptr) return;
    const WindowAssigner& a = spec_.assigner;
    if (a.slice_of(ts).max_timestamp() == ts) fire_slices(key, *m, TimeWindow{ts + 1 - a.size, ts + 1});
    bool expired = false;
    for (const auto& [slice, acc] : *m) expired = expired || cleanup_time(last_window_over(slice)) <= ts;
    if (!expired) return;
    Windows& wm = contents_->get_or_create(kg, key);
    absl::erase_if(wm, [&](const auto& slot) { return cleanup_time(last_window_over(slot.first)) <= ts; });
    if (wm.empty()) contents_->erase(kg, key);
  }

  void add_to_count_window(const K& key, int kg, const In& r) {
    const TimeWindow global{INT64_MIN, INT64_MAX};
    Windows& m = contents_->get_or_create(kg, key);
    auto [it, inserted] = m.try_emplace(global);
    if (inserted) it->second = spec_.create();
    spec_.add(it->second, r);
    int64_t& n = counts_->get_or_create(kg, key);
    if (++n < spec_.assigner.count) return;
    int64_t ts = current_timestamp();
    emit_(key, global, it->second, timers_->current_watermark(), clock_->now_ms(), *out_);
    current_timestamp() = ts;
    contents_->erase(kg, key);
    counts_->erase(kg, key);
  }

  std::function<K(const In&)> key_of_;
  Spec spec_;
  EmitFn emit_;
  int max_parallelism_ = kDefaultMaxParallelism;
  KeyGroupRange range_;
  ProcessingTimeService* clock_ = nullptr;
  std::unique_ptr<KeyedBackend<K>> backend_;
  StateTable<K, Windows>* contents_ = nullptr;
  StateTable<K, int64_t>* counts_ = nullptr;
  std::unique_ptr<InternalTimerService<K>> timers_;
  bool sliced_ = false;
  int64_t late_records_ = 0;
  std::unique_ptr<OutputBase> owned_out_;
  Output<Out>* out_ = &discard_;
  DiscardingOutput<Out> discard_;
};

}  // namespace weir::detail

#endif  // WEIR_DETAIL_WINDOW_OPERATOR_H_
