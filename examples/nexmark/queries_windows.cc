// Nexmark queries over windows: q5, q7, q11, q12.
#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "examples/nexmark/query_util.h"
#include "weir/stream_operator.h"
#include "weir/windowed_stream.h"

namespace weir::nexmark::internal {

// Counts bids, each projected to the one column it is grouped by (the
// bidder, for q11 and q12; its time travels with it), so an 8-byte record
// crosses the exchange instead of a whole bid, as a SQL planner prunes the
// columns a query does not read.
AggregateFunction<int64_t, int64_t, int64_t> count_bids() {
  return {[] { return int64_t{0}; }, [](int64_t& n, const int64_t&) { ++n; },
          [](const int64_t& n) { return n; }, [](const int64_t& a, const int64_t& b) { return a + b; }};
}
int64_t identity(const int64_t& v) { return v; }

// ---- windowed queries ---------------------------------------------------------

struct AuctionCount {
  int64_t auction = 0;
  int64_t count = 0;
  int64_t window_end = 0;
  auto weir_fields() { return std::tie(auction, count, window_end); }
};

class EmitAuctionCount final : public ProcessWindowFunction<int64_t, int64_t, AuctionCount> {
 public:
  void process(const int64_t& auction, const Context& ctx, const std::vector<int64_t>& in,
               Collector<AuctionCount>& out) override {
    out.collect({auction, in[0], ctx.window.end});
  }
};

// Per window: the auctions with the most bids, kept incrementally (the
// highest count and the auctions that have it).
struct Hottest {
  int64_t count = -1;
  std::vector<int64_t> auctions;
  auto weir_fields() { return std::tie(count, auctions); }
};

AggregateFunction<AuctionCount, Hottest, Hottest> hottest_auctions() {
  auto offer = [](Hottest& h, int64_t count, int64_t auction) {
    if (count > h.count) {
      h.count = count;
      h.auctions.clear();
    }
    if (count == h.count) h.auctions.push_back(auction);
  };
  return {[] { return Hottest{}; }, [offer](Hottest& h, const AuctionCount& a) { offer(h, a.count, a.auction); },
          [](const Hottest& h) { return h; },
          [offer](const Hottest& a, const Hottest& b) {
            Hottest out = a;
            for (int64_t auction : b.auctions) offer(out, b.count, auction);
            return out;
          }};
}

class EmitHottest final : public ProcessWindowFunction<int64_t, Hottest, std::string> {
 public:
  void process(const int64_t&, const Context&, const std::vector<Hottest>& in,
               Collector<std::string>& out) override {
    const std::string count = "," + std::to_string(in[0].count);
    for (int64_t auction : in[0].auctions) out.collect(std::to_string(auction) + count);
  }
};

constexpr int64_t kQ5Size = 10 * kSecond;
constexpr int64_t kQ5Slide = 2 * kSecond;

// The bids of one auction in one slide of q5's windows, counted in one
// source subtask: what crosses the exchange instead of each bid.
struct SliceCount {
  int64_t auction = 0;
  int64_t count = 0;
  auto weir_fields() { return std::tie(auction, count); }
};

// Before the exchange, q5 counts each auction's bids per slide (Flink SQL's
// local window aggregation). The counts go on, each with its slide's start
// as timestamp, when a watermark comes (ahead of it, so none is late where
// the windows are) or when kMaxHeld are held; a checkpoint keeps the counts
// held in operator state.
class LocalSliceCounts final : public OneInputStreamOperator<Bid, SliceCount> {
 public:
  absl::Status open(OperatorContext& ctx) override {
    kept_ = std::make_unique<OperatorListState<std::tuple<int64_t, int64_t, int64_t>>>(ctx, "held-counts");
    bool corrupt = false;
    for (const auto& [slide, auction, count] : kept_->get(&corrupt)) held_[{slide, auction}] += count;
    if (corrupt) return absl::DataLossError("q5 local counts: a held count does not decode");
    return absl::OkStatus();
  }
  void process_element(const Bid& b, int64_t timestamp) override {
    ++held_[{timestamp - timestamp % kQ5Slide, b.auction}];
    if (held_.size() >= kMaxHeld) flush();
  }
  void process_watermark(int64_t watermark) override {
    flush();
    output().emit_watermark(watermark);
  }
  absl::Status snapshot_state(int64_t) override {
    std::vector<std::tuple<int64_t, int64_t, int64_t>> held;
    held.reserve(held_.size());
    for (const auto& [at, count] : held_) held.emplace_back(at.first, at.second, count);
    kept_->update(held);
    return absl::OkStatus();
  }
  absl::Status finish() override {
    flush();
    return absl::OkStatus();
  }

 private:
  static constexpr size_t kMaxHeld = 1 << 16;
  void flush() {
    for (const auto& [at, count] : held_) output().collect(SliceCount{at.second, count}, at.first);
    held_.clear();
  }
  std::unique_ptr<OperatorListState<std::tuple<int64_t, int64_t, int64_t>>> kept_;
  absl::flat_hash_map<std::pair<int64_t, int64_t>, int64_t> held_;  // (slide start, auction) -> bids
};

void q5(StreamEnvironment& env, const QueryOptions& o) {
  AggregateFunction<SliceCount, int64_t, int64_t> sum_counts{
      [] { return int64_t{0}; }, [](int64_t& n, const SliceCount& c) { n += c.count; },
      [](const int64_t& n) { return n; }, [](const int64_t& a, const int64_t& b) { return a + b; }};
  auto local = bids(env, o).transform<SliceCount>("local-slice-counts",
                                                  [] { return std::make_unique<LocalSliceCounts>(); });
  local.uid("local-slice-counts");
  auto counts = local.key_by([](const SliceCount& c) { return c.auction; })
                    .window(SlidingEventTimeWindows::of(Duration(kQ5Size), Duration(kQ5Slide)))
                    .aggregate<int64_t, int64_t, AuctionCount>(
                        sum_counts, [] { return std::make_unique<EmitAuctionCount>(); }, "count-per-auction");
  counts.uid("count-per-auction");
  // A window's counts carry its last millisecond as timestamp, which falls
  // into the 2 s tumbling window that ends with it.
  auto hottest = counts.key_by([](const AuctionCount& a) { return a.window_end; })
                     .window(TumblingEventTimeWindows::of(Duration(2 * kSecond)))
                     .aggregate<Hottest, Hottest, std::string>(
                         hottest_auctions(), [] { return std::make_unique<EmitHottest>(); }, "hottest-per-window");
  hottest.uid("hottest-per-window");
  sink(hottest, o);
}

// The columns of a bid that q7 outputs (channel and URL are not).
struct OutBid {
  int64_t auction = 0;
  int64_t bidder = 0;
  int64_t price = 0;
  int64_t date_time = 0;
  std::string extra;
  auto weir_fields() { return std::tie(auction, bidder, price, date_time, extra); }
};

// The highest bids of one window (ties kept).
struct MaxBids {
  int64_t price = -1;
  std::vector<OutBid> bids;
  auto weir_fields() { return std::tie(price, bids); }
  void offer(const OutBid& b) {
    if (b.price > price) {
      price = b.price;
      bids.clear();
    }
    if (b.price == price) bids.push_back(b);
  }
};

struct WindowedBid {
  int64_t window = 0;
  OutBid bid;
  auto weir_fields() { return std::tie(window, bid); }
};

constexpr int64_t kQ7Window = 10 * kSecond;
// Stage 1 pre-aggregates per bucket of auctions, as Beam's Max.withFanout
// does: the state is one entry per (bucket, window), not per auction, and
// the buckets still spread over every subtask.
constexpr int64_t kQ7Fanout = 256;

// Stage 1, keyed by bucket: each bucket's highest bids per window.
class AuctionMax final : public KeyedProcessFunction<int64_t, OutBid, WindowedBid> {
 public:
  absl::Status open(KeyedRuntimeContext<int64_t>& ctx) override {
    max_ = &ctx.get_map_state(MapStateDescriptor<int64_t, MaxBids>{"max-per-window"});
    return absl::OkStatus();
  }
  void process_element(const OutBid& b, Context& ctx, Collector<WindowedBid>&) override {
    int64_t w = b.date_time - b.date_time % kQ7Window;
    std::optional<MaxBids> m = max_->get(w);
    if (m && b.price < m->price) return;  // nothing changes
    if (!m) {
      m.emplace();
      ctx.timer_service().register_event_time_timer(w + kQ7Window - 1);
    }
    m->offer(b);
    max_->put(w, std::move(*m));
  }
  void on_timer(int64_t ts, OnTimerContext&, Collector<WindowedBid>& out) override {
    int64_t w = ts + 1 - kQ7Window;
    if (auto m = max_->get(w)) {
      for (const OutBid& b : m->bids) out.collect({w, b});
    }
    max_->remove(w);
  }

 private:
  MapState<int64_t, MaxBids>* max_ = nullptr;
};

// Stage 2, keyed by window: the window's highest bids over all auctions.
class WindowMax final : public KeyedProcessFunction<int64_t, WindowedBid, std::string> {
 public:
  absl::Status open(KeyedRuntimeContext<int64_t>& ctx) override {
    max_ = &ctx.get_state(ValueStateDescriptor<MaxBids>{"max"});
    return absl::OkStatus();
  }
  void process_element(const WindowedBid& wb, Context& ctx, Collector<std::string>&) override {
    MaxBids m = max_->value_or(MaxBids{});
    m.offer(wb.bid);
    max_->update(std::move(m));
    ctx.timer_service().register_event_time_timer(wb.window + kQ7Window - 1);
  }
  void on_timer(int64_t, OnTimerContext&, Collector<std::string>& out) override {
    if (auto m = max_->value()) {
      for (const OutBid& b : m->bids) {
        std::string s;
        add(s, b.auction), add(s, b.bidder), add(s, b.price), add(s, b.date_time), add(s, b.extra);
        out.collect(finish(std::move(s)));
      }
    }
    max_->clear();
  }

 private:
  ValueState<MaxBids>* max_ = nullptr;
};

// Before the exchange: a bid priced below the highest this subtask already
// passed on in the bid's window cannot be among that window's highest, so it
// stays here (a local pre-aggregation, as Flink SQL's local-global
// aggregation, that keeps no state: the maxima are a hint in memory, and
// after a restart, empty, they only filter less). Ties pass: every bid at
// the highest price is output.
class BelowLocalMax {
 public:
  bool operator()(const Bid& b) {
    const int64_t w = b.date_time - b.date_time % kQ7Window;
    auto it = std::find_if(max_.begin(), max_.end(), [w](const auto& e) { return e.first == w; });
    if (it == max_.end()) {
      // A few windows are open at a time (bids come nearly in time order):
      // the oldest gives way.
      if (max_.size() == kWindows) max_.erase(std::min_element(max_.begin(), max_.end()));
      max_.emplace_back(w, b.price);
      return true;
    }
    if (b.price < it->second) return false;
    it->second = b.price;
    return true;
  }

 private:
  static constexpr size_t kWindows = 4;
  std::vector<std::pair<int64_t, int64_t>> max_;  // window start, highest price passed
};

void q7(StreamEnvironment& env, const QueryOptions& o) {
  auto candidates = bids(env, o)
                        .filter(BelowLocalMax{}, "below-local-max")
                        .map([](const Bid& b) { return OutBid{b.auction, b.bidder, b.price, b.date_time, b.extra}; },
                             "bid-columns")
                        .key_by([](const OutBid& b) { return b.auction % kQ7Fanout; })
                        .process<WindowedBid>([] { return std::make_unique<AuctionMax>(); }, "auction-max");
  candidates.uid("auction-max");
  auto best = candidates.key_by([](const WindowedBid& w) { return w.window; })
                  .process<std::string>([] { return std::make_unique<WindowMax>(); }, "window-max");
  best.uid("window-max");
  sink(best, o);
}

// `bidder,bid_count,window start,window end`, for q11 and q12.
class BidderWindowRow final : public ProcessWindowFunction<int64_t, int64_t, std::string> {
 public:
  void process(const int64_t& bidder, const Context& ctx, const std::vector<int64_t>& in,
               Collector<std::string>& out) override {
    std::string s;
    add(s, bidder), add(s, in[0]), add(s, ctx.window.start), add(s, ctx.window.end);
    out.collect(finish(std::move(s)));
  }
};

// Bids per bidder in the windows of `assigner`.
void bids_per_bidder(StreamEnvironment& env, const QueryOptions& o, WindowAssigner assigner,
                     const std::string& name) {
  auto rows = bids(env, o)
                  .map([](const Bid& b) { return b.bidder; }, "bid-bidder")
                  .key_by(identity)
                  .window(assigner)
                  .aggregate<int64_t, int64_t, std::string>(
                      count_bids(), [] { return std::make_unique<BidderWindowRow>(); }, name);
  rows.uid(name);
  sink(rows, o);
}

void q11(StreamEnvironment& env, const QueryOptions& o) {
  bids_per_bidder(env, o, EventTimeSessionWindows::with_gap(Duration(10 * kSecond)), "sessions");
}

// q12: processing-time windows.
void q12(StreamEnvironment& env, const QueryOptions& o) {
  bids_per_bidder(env, o, TumblingProcessingTimeWindows::of(Duration(10 * kSecond)), "bidder-count");
}

}  // namespace weir::nexmark::internal
