// The window operator: per key, its windows with their accumulators (keyed
// state, so per key group and checkpointed; WindowSlots below), timers at
// each window's end and at its cleanup time, merging for session windows,
// and counting for count windows. The semantics are documented in
// include/weir/window.h.
//
// Session windows keep their timers lazily: a record that extends a session
// (the common case: a key's next event inside its gap) adds to the
// session's accumulator where it lies and leaves the session's timer where
// it is, at or before the session's new end. When a timer fires, each of the
// key's sessions not due then gets a timer at its next due time again (see
// on_timer), so a session still fires exactly at its end.
//
// Sliced sliding windows (event time, an aggregate with merge, size a
// multiple of the slide) keep slices and their accumulators instead, in a
// state of its own ("_window/slices"): a record costs one accumulator
// update. A key has one timer, at the next time one of its windows ends or
// one of its slices expires; when it fires, the window ending then fires by
// merging its slices, the slices whose last window is past its lateness
// leave, and the timer moves to the key's next due time (as Flink SQL's
// slicing window operator does).
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
#include "weir/detail/state_table.h"
#include "weir/detail/timers.h"
#include "weir/window.h"

namespace weir::detail {

// The windows of one key with their accumulators, in window order. A
// sorted vector: a key has a handful (its sessions, the slices of a sliding
// window, its open tumbling windows), and a record mostly touches the
// newest, so a short scan from the back beats a hash map per key, which
// costs a probe and a heap block more. Encoded as a map from window to
// accumulator, the bytes and type signature of the
// absl::flat_hash_map<TimeWindow, Acc> that held them before, so
// checkpoints of either restore into the other.
template <typename Acc>
class WindowSlots {
 public:
  using Slot = std::pair<TimeWindow, Acc>;
  using iterator = typename std::vector<Slot>::iterator;
  using const_iterator = typename std::vector<Slot>::const_iterator;

  bool empty() const { return slots_.empty(); }
  size_t size() const { return slots_.size(); }
  iterator begin() { return slots_.begin(); }
  iterator end() { return slots_.end(); }
  const_iterator begin() const { return slots_.begin(); }
  const_iterator end() const { return slots_.end(); }
  Slot& operator[](size_t i) { return slots_[i]; }
  const Slot& operator[](size_t i) const { return slots_[i]; }

  // The first slot whose window is not before `w`.
  iterator lower_bound(const TimeWindow& w) {
    if (slots_.empty() || slots_.back().first < w) return slots_.end();
    return std::lower_bound(slots_.begin(), slots_.end(), w,
                            [](const Slot& s, const TimeWindow& x) { return s.first < x; });
  }
  iterator find(const TimeWindow& w) {
    auto it = lower_bound(w);
    return it != slots_.end() && it->first == w ? it : slots_.end();
  }
  const_iterator find(const TimeWindow& w) const { return const_cast<WindowSlots*>(this)->find(w); }
  // The slot of `w`, holding `make()` when it was missing (then true).
  template <typename Make>
  std::pair<iterator, bool> try_emplace(const TimeWindow& w, const Make& make) {
    auto it = lower_bound(w);
    if (it != slots_.end() && it->first == w) return {it, false};
    return {slots_.emplace(it, w, make()), true};
  }
  // Inserts `w` before `pos` (the caller keeps the order).
  iterator insert(const_iterator pos, const TimeWindow& w, Acc acc) { return slots_.emplace(pos, w, std::move(acc)); }
  iterator erase(const_iterator first, const_iterator last) { return slots_.erase(first, last); }
  iterator erase(const_iterator it) { return slots_.erase(it); }
  template <typename Pred>
  void erase_if(Pred p) {
    std::erase_if(slots_, p);
  }

 private:
  friend struct weir::Serializer<WindowSlots>;
  std::vector<Slot> slots_;
};

}  // namespace weir::detail

namespace weir {

template <typename Acc>
struct Serializer<detail::WindowSlots<Acc>> {
  using Slots = detail::WindowSlots<Acc>;
  static void write(ByteWriter& out, const Slots& m) {
    out.put_varint(m.size());
    for (const auto& [w, acc] : m) {
      Serializer<TimeWindow>::write(out, w);
      Serializer<Acc>::write(out, acc);
    }
  }
  static std::string signature() { return type_signature<absl::flat_hash_map<TimeWindow, Acc>>(); }
  // A map's entries come in any order; a window given twice keeps the last.
  static Slots read(ByteReader& in) {
    Slots m;
    uint64_t n = in.get_length();
    m.slots_.reserve(n);
    for (uint64_t i = 0; i < n && in.ok(); ++i) {
      TimeWindow w = Serializer<TimeWindow>::read(in);
      Acc acc = Serializer<Acc>::read(in);
      m.slots_.emplace_back(w, std::move(acc));
    }
    detail::sort_keeping_last(m.slots_);
    return m;
  }
};

}  // namespace weir

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
    Windows* m = nullptr;
    for (const TimeWindow& w : a.assign(ts)) {
      if (is_late(w)) continue;
      if (m == nullptr) m = &contents_->get_or_create(kg, key);
      auto [it, inserted] = m->try_emplace(w, spec_.create);
      spec_.add(it->second, r);
      // A window's timers are registered with it and stay until they fire.
      if (inserted) register_timers(w);
      if (a.event_time && w.max_timestamp() <= timers_->current_watermark()) fire(key, w, it->second);
    }
    if (m == nullptr) late(r);
  }

  void process_watermark(int64_t wm) override {
    // The windows a watermark fires see one processing time: the clock is
    // read once, not once per window.
    firing_now_ = clock_->now_ms();
    absl::Cleanup done = [this] { firing_now_ = kUnread; };
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
      if (m == nullptr) continue;
      auto it = m->find(w);
      if (it == m->end()) continue;
      fire(key, w, it->second);
      // Fired for good: its timer, due while the job waits for its final
      // checkpoint, must not fire it again (a session's earlier, lazy timer
      // may: it finds the window gone).
      delete_timers(w);
      Windows& wm = contents_->get_or_create(kg, key);
      wm.erase(wm.find(w));
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
  using Windows = WindowSlots<Acc>;

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
    const int64_t now = firing_now_ != kUnread ? firing_now_ : clock_->now_ms();
    emit_(key, w, acc, timers_->current_watermark(), now, *out_);
  }

  void on_timer(TimeDomain d, int64_t ts, const K& key) {
    if (sliced_) return on_slice_timer(ts, key);
    int kg = backend_->current_key_group();
    const Windows* m = contents_->find(kg, key);
    if (m == nullptr) return;
    bool drop = false;
    for (const auto& [w, acc] : *m) {
      if (w.max_timestamp() == ts) fire(key, w, acc);
      drop = drop || cleanup_time(w) <= ts;
    }
    if (spec_.assigner.is_merging()) {
      // This may have been the lazy timer of a session that grew since
      // (see the top of the file): each session left gets a timer at its
      // next due time (a no-op where it has one).
      for (const auto& [w, acc] : *m) {
        if (w.max_timestamp() > ts) {
          timers_->register_timer(d, w.max_timestamp());
        } else if (cleanup_time(w) > ts) {
          timers_->register_timer(d, cleanup_time(w));
        }
      }
    }
    if (!drop) return;
    Windows& wm = contents_->get_or_create(kg, key);
    wm.erase_if([&](const auto& slot) { return cleanup_time(slot.first) <= ts; });
    if (wm.empty()) contents_->erase(kg, key);
  }

  // Session windows: the new session `w` of record `r` merges with the
  // sessions it touches. A key's sessions are disjoint (touching ones were
  // merged) and sorted, so those are one run of them. Timers are lazy (see
  // the top of the file): the merged session keeps the timers of its first
  // part, which are at or before its end.
  void add_to_session(const K& key, int kg, const In& r, TimeWindow w) {
    Windows& m = contents_->get_or_create(kg, key);
    size_t first = m.size();
    while (first > 0 && m[first - 1].first.end >= w.start) --first;
    size_t last = first;
    while (last < m.size() && m[last].first.start <= w.end) ++last;
    TimeWindow merged = w;
    if (first < last) merged = merged.cover(m[first].first).cover(m[last - 1].first);
    if (is_late(merged)) {
      if (m.empty()) contents_->erase(kg, key);
      late(r);
      return;
    }
    const int64_t wm = timers_->current_watermark();
    auto& [window, acc] = [&]() -> typename Windows::Slot& {
      if (first == last) {
        auto it = m.insert(m.begin() + static_cast<std::ptrdiff_t>(first), w, spec_.create());
        register_timers(w);
        return *it;
      }
      typename Windows::Slot& kept = m[first];
      // A part that already fired at its end (late, within the lateness)
      // waits only for its cleanup timer; the merged session, still open,
      // needs its end timer.
      if (spec_.assigner.event_time && kept.first.max_timestamp() <= wm && merged.max_timestamp() > wm) {
        register_timers(merged);
      }
      kept.first = merged;
      for (size_t i = first + 1; i < last; ++i) kept.second = spec_.merge(kept.second, m[i].second);
      m.erase(m.begin() + static_cast<std::ptrdiff_t>(first + 1), m.begin() + static_cast<std::ptrdiff_t>(last));
      return m[first];
    }();
    spec_.add(acc, r);
    if (spec_.assigner.event_time && window.max_timestamp() <= wm) fire(key, window, acc);
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

  // The key's next due time after `t` for `slice`: the end of the next of
  // its windows to fire, or its cleanup; INT64_MAX when neither is left.
  int64_t slice_due_after(const TimeWindow& slice, int64_t t) const {
    const int64_t slide = spec_.assigner.slide;
    int64_t end = slice.end;
    // The first window end e over the slice with e - 1 > t.
    if (end - 1 <= t) end += (t + 2 - end + slide - 1) / slide * slide;
    const TimeWindow last = last_window_over(slice);
    if (end <= last.end) return end - 1;
    const int64_t cleanup = cleanup_time(last);
    return cleanup > t ? cleanup : INT64_MAX;
  }

  void add_to_slice(const K& key, int kg, const In& r, int64_t ts) {
    const TimeWindow slice = spec_.assigner.slice_of(ts);
    const TimeWindow last = last_window_over(slice);
    if (is_late(last)) return late(r);  // so is every window over it
    Windows& m = contents_->get_or_create(kg, key);
    auto [it, inserted] = m.try_emplace(slice, spec_.create);
    const int64_t wm = timers_->current_watermark();
    // Windows whose end the watermark passed fire on their records below.
    if (inserted) timers_->register_timer_by(TimeDomain::kEventTime, slice_due_after(slice, wm));
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
    auto it = std::find_if(m.begin(), m.end(), [&](const auto& slot) { return slot.first.start >= w.start; });
    if (it == m.end() || it->first.end > w.end) return;
    Acc acc = it->second;
    for (++it; it != m.end() && it->first.end <= w.end; ++it) acc = spec_.merge(acc, it->second);
    fire(key, w, acc);
  }

  // The key's timer at `ts`: the window ending at ts + 1 fires if `ts` is a
  // window's last millisecond, the slices whose last window is past its
  // lateness leave, and the timer moves to the key's next due time. (A
  // restore of a checkpoint that kept a timer per window fires each; the
  // ones without a window end of the key fire nothing.)
  void on_slice_timer(int64_t ts, const K& key) {
    int kg = backend_->current_key_group();
    const Windows* m = contents_->find(kg, key);
    if (m == nullptr) return;
    const WindowAssigner& a = spec_.assigner;
    if (a.slice_of(ts).max_timestamp() == ts) fire_slices(key, *m, TimeWindow{ts + 1 - a.size, ts + 1});
    bool expired = false;
    int64_t next = INT64_MAX;
    for (const auto& [slice, acc] : *m) {
      if (cleanup_time(last_window_over(slice)) <= ts) {
        expired = true;
      } else {
        next = std::min(next, slice_due_after(slice, ts));
      }
    }
    if (next != INT64_MAX) timers_->register_timer_by(TimeDomain::kEventTime, next);
    if (!expired) return;
    Windows& wm = contents_->get_or_create(kg, key);
    wm.erase_if([&](const auto& slot) { return cleanup_time(last_window_over(slot.first)) <= ts; });
    if (wm.empty()) contents_->erase(kg, key);
  }

  void add_to_count_window(const K& key, int kg, const In& r) {
    const TimeWindow global{INT64_MIN, INT64_MAX};
    Windows& m = contents_->get_or_create(kg, key);
    auto it = m.try_emplace(global, spec_.create).first;
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
  // The processing time of the firings of one watermark; kUnread outside.
  static constexpr int64_t kUnread = INT64_MIN;
  int64_t firing_now_ = kUnread;
  int64_t late_records_ = 0;
  std::unique_ptr<OutputBase> owned_out_;
  Output<Out>* out_ = &discard_;
  DiscardingOutput<Out> discard_;
};

}  // namespace weir::detail

#endif  // WEIR_DETAIL_WINDOW_OPERATOR_H_
