// Nexmark queries with updating results (changelogs): q15 to q19.
#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <string_view>

#include "examples/nexmark/query_util.h"

namespace weir::nexmark::internal {
struct AuctionStats {
  int64_t bids = 0, rank[4] = {0, 0, 0, 0}, min = INT64_MAX, max = INT64_MIN, sum = 0;
  auto weir_fields() { return std::tie(bids, rank[1], rank[2], rank[3], min, max, sum); }
};

using AuctionDay = std::pair<int64_t, std::string>;

// q17: per (auction, day) bid statistics. Only the columns q17 reads cross
// the exchange.
struct PricedBid {
  int64_t auction = 0;
  int64_t date_time = 0;
  int64_t price = 0;
  auto weir_fields() { return std::tie(auction, date_time, price); }
};

class AuctionDayStats final : public KeyedProcessFunction<AuctionDay, PricedBid, std::string> {
 public:
  absl::Status open(KeyedRuntimeContext<AuctionDay>& ctx) override {
    stats_ = &ctx.get_state(ValueStateDescriptor<AuctionStats>{"stats"});
    return absl::OkStatus();
  }
  // The changelog rows of changed(), each formatted once straight into the
  // string emitted, and the statistics changed in place: every bid changes
  // its row (the count grows), so it emits -U and +U, or +I for the first.
  void process_element(const PricedBid& b, Context& ctx, Collector<std::string>& out) override {
    const AuctionDay& key = ctx.current_key();
    const AuctionStats* old = stats_->peek();
    const bool first = old == nullptr;
    if (!first) out.collect(row("-U,", key, *old));
    AuctionStats& s = stats_->modify();
    s.bids++;
    s.rank[rank_of(b.price)]++;
    s.min = std::min(s.min, b.price);
    s.max = std::max(s.max, b.price);
    s.sum += b.price;
    out.collect(row(first ? "+I," : "+U,", key, s));
  }

 private:
  static std::string row(std::string_view kind, const AuctionDay& k, const AuctionStats& s) {
    std::string r;
    r.reserve(128);
    r.append(kind);
    add(r, k.first), add(r, k.second), add(r, s.bids), add(r, s.rank[1]), add(r, s.rank[2]),
        add(r, s.rank[3]), add(r, s.min), add(r, s.max), add(r, s.sum / s.bids), add(r, s.sum);
    return finish(std::move(r));
  }
  ValueState<AuctionStats>* stats_ = nullptr;
};

void q17(StreamEnvironment& env, const QueryOptions& o) {
  auto rows = bids(env, o)
                  .map([](const Bid& b) { return PricedBid{b.auction, b.date_time, b.price}; }, "bid-price")
                  .key_by([](const PricedBid& b) { return AuctionDay{b.auction, day_of(b.date_time)}; })
                  .process<std::string>([] { return std::make_unique<AuctionDayStats>(); }, "auction-stats");
  rows.uid("auction-stats");
  sink(rows, o);
}

// q18: the latest bid per (bidder, auction) by event time; an equal time
// replaces (the later arrival wins), an older one is ignored.
class LastBid final : public KeyedProcessFunction<std::pair<int64_t, int64_t>, Bid, std::string> {
 public:
  absl::Status open(KeyedRuntimeContext<std::pair<int64_t, int64_t>>& ctx) override {
    last_ = &ctx.get_state(ValueStateDescriptor<Bid>{"last"});
    return absl::OkStatus();
  }
  void process_element(const Bid& b, Context&, Collector<std::string>& out) override {
    const Bid* old = last_->peek();
    if (old && old->date_time > b.date_time) return;
    std::optional<std::string> before = old ? std::optional<std::string>(row(*old)) : std::nullopt;
    last_->modify() = b;  // in place: the strings' buffers are reused
    changed(std::move(before), row(b), out);
  }

 private:
  static std::string row(const Bid& b) {
    std::string s;
    add(s, b.auction), add(s, b.bidder), add(s, b.price), add(s, b.channel), add(s, b.url),
        add(s, b.date_time), add(s, b.extra);
    return finish(std::move(s));
  }
  ValueState<Bid>* last_ = nullptr;
};

void q18(StreamEnvironment& env, const QueryOptions& o) {
  auto rows = bids(env, o)
                  .key_by([](const Bid& b) { return std::make_pair(b.bidder, b.auction); })
                  .process<std::string>([] { return std::make_unique<LastBid>(); }, "last-bid");
  rows.uid("last-bid");
  sink(rows, o);
}

// q19: the 10 highest bids per auction with their rank; at an equal price
// the earlier bid (by event time, then arrival) ranks higher.
class TopBids final : public KeyedProcessFunction<int64_t, Bid, std::string> {
 public:
  absl::Status open(KeyedRuntimeContext<int64_t>& ctx) override {
    top_ = &ctx.get_state(ValueStateDescriptor<std::vector<Bid>>{"top"});
    return absl::OkStatus();
  }
  void process_element(const Bid& b, Context&, Collector<std::string>& out) override {
    const std::vector<Bid>* have = top_->peek();
    size_t pos = 0;
    while (have != nullptr && pos < have->size() &&
           ((*have)[pos].price > b.price || ((*have)[pos].price == b.price && (*have)[pos].date_time <= b.date_time))) {
      ++pos;
    }
    if (pos >= 10) return;
    std::vector<Bid>& top = top_->modify();  // in place, no copy out and back
    // Rows at pos.. move one rank down; the 10th falls out.
    for (size_t i = top.size(); i-- > pos;) {
      if (i + 1 >= 10) {
        out.collect("-D," + row(top[i], i + 1));
      } else {
        out.collect("-U," + row(top[i], i + 1));
        out.collect("+U," + row(top[i], i + 2));
      }
    }
    if (top.size() == 10) top.pop_back();
    top.insert(top.begin() + static_cast<std::ptrdiff_t>(pos), b);
    out.collect("+I," + row(b, pos + 1));
  }

 private:
  static std::string row(const Bid& b, size_t rank) {
    std::string s;
    add(s, b.auction), add(s, b.bidder), add(s, b.price), add(s, b.channel), add(s, b.url),
        add(s, b.date_time), add(s, b.extra), add(s, static_cast<int64_t>(rank));
    return finish(std::move(s));
  }
  ValueState<std::vector<Bid>>* top_ = nullptr;
};

void q19(StreamEnvironment& env, const QueryOptions& o) {
  auto rows = bids(env, o)
                  .key_by([](const Bid& b) { return b.auction; })
                  .process<std::string>([] { return std::make_unique<TopBids>(); }, "top-bids");
  rows.uid("top-bids");
  sink(rows, o);
}

// q15 / q16: bid counts and distinct bidders and auctions, overall and per
// price rank. A bidder or auction counts once per rank it had a bid in:
// each value keeps a bitmask of the ranks seen (bit 0: any).
struct DistinctStats {
  int64_t bids[4] = {0, 0, 0, 0};
  int64_t bidders[4] = {0, 0, 0, 0};
  int64_t auctions[4] = {0, 0, 0, 0};
  std::string minute;  // q16: latest HH:mm seen
  auto weir_fields() {
    return std::tie(bids[0], bids[1], bids[2], bids[3], bidders[0], bidders[1], bidders[2],
                    bidders[3], auctions[0], auctions[1], auctions[2], auctions[3], minute);
  }
};

template <typename K>
class DistinctReport final : public KeyedProcessFunction<K, Bid, std::string> {
 public:
  using typename KeyedProcessFunction<K, Bid, std::string>::Context;
  explicit DistinctReport(bool by_channel) : by_channel_(by_channel) {}
  absl::Status open(KeyedRuntimeContext<K>& ctx) override {
    stats_ = &ctx.get_state(ValueStateDescriptor<DistinctStats>{"stats"});
    bidders_ = &ctx.get_map_state(MapStateDescriptor<int64_t, uint8_t>{"bidder-ranks"});
    auctions_ = &ctx.get_map_state(MapStateDescriptor<int64_t, uint8_t>{"auction-ranks"});
    return absl::OkStatus();
  }
  void process_element(const Bid& b, Context& ctx, Collector<std::string>& out) override {
    auto old = stats_->value();
    DistinctStats s = old.value_or(DistinctStats{});
    int r = rank_of(b.price);
    s.bids[0]++;
    s.bids[r]++;
    count_distinct(bidders_, b.bidder, r, s.bidders);
    count_distinct(auctions_, b.auction, r, s.auctions);
    std::string minute = minute_of(b.date_time);
    if (minute > s.minute) s.minute = minute;
    stats_->update(s);
    std::string prefix = key_columns(ctx.current_key());
    changed(old ? std::optional<std::string>(prefix + row(*old)) : std::nullopt, prefix + row(s), out);
  }

 private:
  static void count_distinct(MapState<int64_t, uint8_t>* seen, int64_t v, int rank, int64_t* counts) {
    uint8_t mask = seen->get(v).value_or(0);
    uint8_t add_bits = static_cast<uint8_t>(1u | (1u << rank));
    if ((mask & add_bits) == add_bits) return;
    if (!(mask & 1u)) counts[0]++;
    if (!(mask & (1u << rank))) counts[rank]++;
    seen->put(v, static_cast<uint8_t>(mask | add_bits));
  }
  std::string key_columns(const K& k) const {
    if constexpr (std::is_same_v<K, std::string>) {
      return k + ",";
    } else {
      return k.first + "," + k.second + ",";
    }
  }
  std::string row(const DistinctStats& s) const {
    std::string r;
    if (by_channel_) add(r, s.minute);
    for (int i = 0; i < 4; ++i) add(r, s.bids[i]);
    for (int i = 0; i < 4; ++i) add(r, s.bidders[i]);
    for (int i = 0; i < 4; ++i) add(r, s.auctions[i]);
    return finish(std::move(r));
  }

  const bool by_channel_;
  ValueState<DistinctStats>* stats_ = nullptr;
  MapState<int64_t, uint8_t>* bidders_ = nullptr;
  MapState<int64_t, uint8_t>* auctions_ = nullptr;
};

void q15(StreamEnvironment& env, const QueryOptions& o) {
  auto rows = bids(env, o)
                  .key_by([](const Bid& b) { return day_of(b.date_time); })
                  .process<std::string>([] { return std::make_unique<DistinctReport<std::string>>(false); },
                                        "daily-report");
  rows.uid("daily-report");
  sink(rows, o);
}

void q16(StreamEnvironment& env, const QueryOptions& o) {
  using ChannelDay = std::pair<std::string, std::string>;
  auto rows = bids(env, o)
                  .key_by([](const Bid& b) { return ChannelDay{b.channel, day_of(b.date_time)}; })
                  .process<std::string>([] { return std::make_unique<DistinctReport<ChannelDay>>(true); },
                                        "channel-report");
  rows.uid("channel-report");
  sink(rows, o);
}

}  // namespace weir::nexmark::internal
