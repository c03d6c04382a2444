// Nexmark queries joining two inputs: q3, q4, q6, q8, q9, q20.
#include <algorithm>
#include <fstream>
#include <map>
#include <optional>

#include "examples/nexmark/query_util.h"
#include "weir/joins.h"
#include "weir/windowed_stream.h"

namespace weir::nexmark::internal {
// ---- joins ------------------------------------------------------------------

// person, and the auctions still waiting for theirs.
class LocalItems final : public KeyedCoProcessFunction<int64_t, Auction, Person, std::string> {
 public:
  absl::Status open(KeyedRuntimeContext<int64_t>& ctx) override {
    person_ = &ctx.get_state(ValueStateDescriptor<Person>{"person"});
    waiting_ = &ctx.get_list_state(ListStateDescriptor<int64_t>{"waiting-auctions"});
    return absl::OkStatus();
  }
  void process_element1(const Auction& a, Context&, Collector<std::string>& out) override {
    if (auto p = person_->value()) {
      emit(*p, a.id, out);
    } else {
      waiting_->add(a.id);
    }
  }
  void process_element2(const Person& p, Context&, Collector<std::string>& out) override {
    person_->update(p);
    for (int64_t id : waiting_->get()) emit(p, id, out);
    waiting_->clear();
  }

 private:
  static void emit(const Person& p, int64_t auction, Collector<std::string>& out) {
    std::string s;
    add(s, p.name), add(s, p.city), add(s, p.state), add(s, auction);
    out.collect(finish(std::move(s)));
  }
  ValueState<Person>* person_ = nullptr;
  ListState<int64_t>* waiting_ = nullptr;
};

void q3(StreamEnvironment& env, const QueryOptions& o) {
  auto ev = events(env, o);
  auto a = auctions(ev).filter([](const Auction& a) { return a.category == 10; });
  auto p = persons(ev).filter([](const Person& p) {
    return p.state == "OR" || p.state == "ID" || p.state == "CA";
  });
  auto joined = a.connect(p)
                    .key_by([](const Auction& a) { return a.seller; }, [](const Person& p) { return p.id; })
                    .process<std::string>([] { return std::make_unique<LocalItems>(); }, "local-items");
  joined.uid("local-items");
  sink(joined, o);
}

// q8: persons who opened an auction in the 10 s tumbling window in which
// they were created; one row per (person, window). A window join of new
// persons with the sellers of new auctions.
void q8(StreamEnvironment& env, const QueryOptions& o) {
  auto ev = events(env, o);
  auto people = persons(ev).map([](const Person& p) { return std::make_pair(p.id, p.name); }, "person-name");
  auto sellers = auctions(ev).map([](const Auction& a) { return a.seller; }, "auction-seller");
  auto joined = people.join(sellers)
                    .where([](const std::pair<int64_t, std::string>& p) { return p.first; })
                    .equal_to([](const int64_t& seller) { return seller; })
                    .window(TumblingEventTimeWindows::of(Duration(10 * kSecond)))
                    .co_group<std::string>(
                        [](const int64_t& id, const TimeWindow& w,
                           const std::vector<std::pair<int64_t, std::string>>& people,
                           const std::vector<int64_t>& sellers, Collector<std::string>& out) {
                          if (sellers.empty()) return;
                          for (const auto& p : people) {
                            std::string s;
                            add(s, id), add(s, p.second), add(s, w.start);
                            out.collect(finish(std::move(s)));
                          }
                        },
                        "new-sellers");
  joined.uid("new-sellers");
  sink(joined, o);
}

// q20: bids joined with their auction when it is of category 10. Bids wait
// for an auction not seen yet; bids of an auction of another category are
// dropped at once.
class ExpandBid final : public KeyedCoProcessFunction<int64_t, Bid, Auction, std::string> {
 public:
  absl::Status open(KeyedRuntimeContext<int64_t>& ctx) override {
    auction_ = &ctx.get_state(ValueStateDescriptor<Auction>{"auction"});
    other_ = &ctx.get_state(ValueStateDescriptor<bool>{"other-category"});
    waiting_ = &ctx.get_list_state(ListStateDescriptor<Bid>{"waiting-bids"});
    return absl::OkStatus();
  }
  // The auction read in place (peek): a copy would copy its strings per bid.
  void process_element1(const Bid& b, Context&, Collector<std::string>& out) override {
    if (const Auction* a = auction_->peek()) {
      emit(b, *a, out);
    } else if (const bool* other = other_->peek(); other == nullptr || !*other) {
      waiting_->add(b);
    }
  }
  void process_element2(const Auction& a, Context&, Collector<std::string>& out) override {
    if (a.category != 10) {
      other_->update(true);
    } else {
      auction_->update(a);
      for (const Bid& b : waiting_->get()) emit(b, a, out);
    }
    waiting_->clear();
  }

 private:
  static void emit(const Bid& b, const Auction& a, Collector<std::string>& out) {
    std::string s;
    add(s, b.auction), add(s, b.bidder), add(s, b.price), add(s, b.channel), add(s, b.url),
        add(s, b.date_time), add(s, b.extra), add(s, a.item_name), add(s, a.description),
        add(s, a.initial_bid), add(s, a.reserve), add(s, a.date_time), add(s, a.expires),
        add(s, a.seller), add(s, a.category), add(s, a.extra);
    out.collect(finish(std::move(s)));
  }
  ValueState<Auction>* auction_ = nullptr;
  ValueState<bool>* other_ = nullptr;
  ListState<Bid>* waiting_ = nullptr;
};

void q20(StreamEnvironment& env, const QueryOptions& o) {
  auto ev = events(env, o);
  auto b = ev.filter([](const Event& e) { return e.type == EventType::kBid; }, "bids")
               .map([](const Event& e) { return e.bid; }, "bid");
  auto joined = b.connect(auctions(ev))
                    .key_by([](const Bid& b) { return b.auction; }, [](const Auction& a) { return a.id; })
                    .process<std::string>([] { return std::make_unique<ExpandBid>(); }, "expand-bid");
  joined.uid("expand-bid");
  sink(joined, o);
}

template <typename Out>
class AuctionBids : public KeyedCoProcessFunction<int64_t, Auction, Bid, Out> {
 public:
  using Ctx = KeyedContext<int64_t>;
  absl::Status open(KeyedRuntimeContext<int64_t>& ctx) override {
    auction_ = &ctx.get_state(ValueStateDescriptor<Auction>{"auction"});
    best_ = &ctx.get_state(ValueStateDescriptor<Bid>{"best"});
    waiting_ = &ctx.get_list_state(ListStateDescriptor<Bid>{"waiting-bids"});
    return absl::OkStatus();
  }
  void process_element1(const Auction& a, Ctx&, Collector<Out>& out) override {
    auction_->update(a);
    for (const Bid& b : waiting_->get()) offer(a, b, out);
    waiting_->clear();
  }
  void process_element2(const Bid& b, Ctx&, Collector<Out>& out) override {
    if (const Auction* a = auction_->peek()) {  // in place: no copy of its strings per bid
      offer(*a, b, out);
    } else {
      waiting_->add(b);
    }
  }

 protected:
  // A qualifying bid better than the current best arrived.
  virtual void improved(const Auction& a, const std::optional<Bid>& old, const Bid& now,
                        Collector<Out>& out) = 0;

 private:
  void offer(const Auction& a, const Bid& b, Collector<Out>& out) {
    if (!in_auction(b, a)) return;
    auto old = best_->value();
    if (!better(b, old)) return;
    best_->update(b);
    improved(a, old, b, out);
  }
  ValueState<Auction>* auction_ = nullptr;
  ValueState<Bid>* best_ = nullptr;
  ListState<Bid>* waiting_ = nullptr;
};

class WinningBid final : public AuctionBids<std::string> {
 protected:
  void improved(const Auction& a, const std::optional<Bid>& old, const Bid& now,
                Collector<std::string>& out) override {
    changed(old ? std::optional<std::string>(row(a, *old)) : std::nullopt, row(a, now), out);
  }

 private:
  static std::string row(const Auction& a, const Bid& b) {
    std::string s;
    add(s, a.id), add(s, a.item_name), add(s, a.description), add(s, a.initial_bid),
        add(s, a.reserve), add(s, a.date_time), add(s, a.expires), add(s, a.seller),
        add(s, a.category), add(s, a.extra), add(s, b.auction), add(s, b.bidder), add(s, b.price),
        add(s, b.date_time), add(s, b.extra);
    return finish(std::move(s));
  }
};

void q9(StreamEnvironment& env, const QueryOptions& o) {
  auto ev = events(env, o);
  auto b = ev.filter([](const Event& e) { return e.type == EventType::kBid; }, "bids")
               .map([](const Event& e) { return e.bid; }, "bid");
  auto rows = auctions(ev)
                  .connect(b)
                  .key_by([](const Auction& a) { return a.id; }, [](const Bid& b) { return b.auction; })
                  .process<std::string>([] { return std::make_unique<WinningBid>(); }, "winning-bid");
  rows.uid("winning-bid");
  sink(rows, o);
}

// q4 stage 1: an auction's maximum qualifying price changed. Only the
// columns q4 reads travel and stay in state (a SQL planner prunes the rest
// the same way): per auction its time span and category, its best price,
// and the bids that arrived before it.
struct AuctionSpan {
  int64_t id = 0;
  int64_t date_time = 0;
  int64_t expires = 0;
  int64_t category = 0;
  auto weir_fields() { return std::tie(id, date_time, expires, category); }
};

struct PriceAt {
  int64_t auction = 0;
  int64_t date_time = 0;
  int64_t price = 0;
  auto weir_fields() { return std::tie(auction, date_time, price); }
};

struct MaxChange {
  int64_t category = 0;
  int64_t old_max = -1;  // -1: the auction had none
  int64_t new_max = 0;
  auto weir_fields() { return std::tie(category, old_max, new_max); }
};

class AuctionMaxPrice final : public KeyedCoProcessFunction<int64_t, AuctionSpan, PriceAt, MaxChange> {
 public:
  absl::Status open(KeyedRuntimeContext<int64_t>& ctx) override {
    auction_ = &ctx.get_state(ValueStateDescriptor<AuctionSpan>{"auction"});
    max_ = &ctx.get_state(ValueStateDescriptor<int64_t>{"max-price"});
    waiting_ = &ctx.get_list_state(ListStateDescriptor<PriceAt>{"waiting-bids"});
    return absl::OkStatus();
  }
  void process_element1(const AuctionSpan& a, Context&, Collector<MaxChange>& out) override {
    auction_->update(a);
    for (const PriceAt& b : waiting_->get()) offer(a, b, out);
    waiting_->clear();
  }
  void process_element2(const PriceAt& b, Context&, Collector<MaxChange>& out) override {
    if (auto a = auction_->value()) {
      offer(*a, b, out);
    } else {
      waiting_->add(b);
    }
  }

 private:
  // A higher qualifying price changes the maximum; an equal one does not.
  void offer(const AuctionSpan& a, const PriceAt& b, Collector<MaxChange>& out) {
    if (b.date_time < a.date_time || b.date_time > a.expires) return;
    const int64_t old = max_->value_or(-1);
    if (b.price <= old) return;
    max_->update(b.price);
    out.collect({a.category, old, b.price});
  }
  ValueState<AuctionSpan>* auction_ = nullptr;
  ValueState<int64_t>* max_ = nullptr;
  ListState<PriceAt>* waiting_ = nullptr;
};

// q4 stage 2: per category, the (integer) average of the auctions' maxima.
struct SumCount {
  int64_t sum = 0;
  int64_t count = 0;
  auto weir_fields() { return std::tie(sum, count); }
};

class CategoryAverage final : public KeyedProcessFunction<int64_t, MaxChange, std::string> {
 public:
  absl::Status open(KeyedRuntimeContext<int64_t>& ctx) override {
    acc_ = &ctx.get_state(ValueStateDescriptor<SumCount>{"sum-count"});
    return absl::OkStatus();
  }
  void process_element(const MaxChange& m, Context& ctx, Collector<std::string>& out) override {
    auto old = acc_->value();
    SumCount s = old.value_or(SumCount{});
    if (m.old_max < 0) {
      s.count++;
      s.sum += m.new_max;
    } else {
      s.sum += m.new_max - m.old_max;
    }
    acc_->update(s);
    auto row = [&](const SumCount& x) { return std::to_string(ctx.current_key()) + "," + std::to_string(x.sum / x.count); };
    changed(old ? std::optional<std::string>(row(*old)) : std::nullopt, row(s), out);
  }

 private:
  ValueState<SumCount>* acc_ = nullptr;
};

void q4(StreamEnvironment& env, const QueryOptions& o) {
  auto ev = events(env, o);
  auto b = ev.filter([](const Event& e) { return e.type == EventType::kBid; }, "bids")
               .map([](const Event& e) { return PriceAt{e.bid.auction, e.bid.date_time, e.bid.price}; }, "bid-price");
  auto spans = ev.filter([](const Event& e) { return e.type == EventType::kAuction; }, "auctions")
                   .map([](const Event& e) {
                     const Auction& a = e.auction;
                     return AuctionSpan{a.id, a.date_time, a.expires, a.category};
                   }, "auction-span");
  auto maxima = spans.connect(b)
                    .key_by([](const AuctionSpan& a) { return a.id; }, [](const PriceAt& b) { return b.auction; })
                    .process<MaxChange>([] { return std::make_unique<AuctionMaxPrice>(); }, "auction-max");
  maxima.uid("auction-max");
  auto rows = maxima.key_by([](const MaxChange& m) { return m.category; })
                  .process<std::string>([] { return std::make_unique<CategoryAverage>(); }, "category-average");
  rows.uid("category-average");
  sink(rows, o);
}

// ---- q6: average selling price by seller ---------------------------------------
//
// Winning bids (Beam's semantics): when an auction closes (the watermark
// reaches `expires`), its winner is the highest bid with dateTime < expires
// and price >= reserve, the earlier one at an equal price. Per seller, the
// average of the 10 most recent winning prices (by bid time, then price),
// rounded half up, updated after every win.

struct Win {
  int64_t seller = 0;
  int64_t price = 0;
  int64_t date_time = 0;
  auto weir_fields() { return std::tie(seller, price, date_time); }
};

class AuctionWinner final : public KeyedCoProcessFunction<int64_t, Auction, Bid, Win> {
 public:
  absl::Status open(KeyedRuntimeContext<int64_t>& ctx) override {
    auction_ = &ctx.get_state(ValueStateDescriptor<Auction>{"auction"});
    best_ = &ctx.get_state(ValueStateDescriptor<Bid>{"best"});
    waiting_ = &ctx.get_list_state(ListStateDescriptor<Bid>{"waiting-bids"});
    return absl::OkStatus();
  }
  void process_element1(const Auction& a, Context& ctx, Collector<Win>&) override {
    auction_->update(a);
    for (const Bid& b : waiting_->get()) offer(a, b);
    waiting_->clear();
    ctx.timer_service().register_event_time_timer(a.expires);
  }
  void process_element2(const Bid& b, Context&, Collector<Win>&) override {
    if (const Auction* a = auction_->peek()) {  // in place: no copy of its strings per bid
      offer(*a, b);
    } else {
      waiting_->add(b);
    }
  }
  void on_timer(int64_t, OnTimerContext&, Collector<Win>& out) override {
    auto a = auction_->value();
    auto best = best_->value();
    if (a && best) out.collect({a->seller, best->price, best->date_time});
    auction_->clear();
    best_->clear();
  }

 private:
  void offer(const Auction& a, const Bid& b) {
    if (b.date_time >= a.expires || b.price < a.reserve) return;
    if (better(b, best_->value())) best_->update(b);
  }
  ValueState<Auction>* auction_ = nullptr;
  ValueState<Bid>* best_ = nullptr;
  ListState<Bid>* waiting_ = nullptr;
};

class SellerAverage final : public KeyedProcessFunction<int64_t, Win, std::string> {
 public:
  absl::Status open(KeyedRuntimeContext<int64_t>& ctx) override {
    recent_ = &ctx.get_state(ValueStateDescriptor<std::vector<Win>>{"recent-wins"});
    return absl::OkStatus();
  }
  void process_element(const Win& w, Context& ctx, Collector<std::string>& out) override {
    std::vector<Win> recent = recent_->value_or({});
    std::optional<std::string> before;
    if (!recent.empty()) before = row(ctx.current_key(), recent);
    auto order = [](const Win& x, const Win& y) {
      return x.date_time != y.date_time ? x.date_time < y.date_time : x.price < y.price;
    };
    recent.insert(std::upper_bound(recent.begin(), recent.end(), w, order), w);
    if (recent.size() > 10) recent.erase(recent.begin());
    recent_->update(recent);
    changed(before, row(ctx.current_key(), recent), out);
  }

 private:
  static std::string row(int64_t seller, const std::vector<Win>& recent) {
    int64_t sum = 0;
    for (const Win& w : recent) sum += w.price;
    int64_t n = static_cast<int64_t>(recent.size());
    int64_t avg = (2 * sum + n) / (2 * n);  // round half up, sum >= 0
    return std::to_string(seller) + "," + std::to_string(avg);
  }
  ValueState<std::vector<Win>>* recent_ = nullptr;
};

void q6(StreamEnvironment& env, const QueryOptions& o) {
  auto ev = events(env, o);
  auto b = ev.filter([](const Event& e) { return e.type == EventType::kBid; }, "bids")
               .map([](const Event& e) { return e.bid; }, "bid");
  auto wins = auctions(ev)
                  .connect(b)
                  .key_by([](const Auction& a) { return a.id; }, [](const Bid& b) { return b.auction; })
                  .process<Win>([] { return std::make_unique<AuctionWinner>(); }, "winning-bids");
  wins.uid("winning-bids");
  auto rows = wins.key_by([](const Win& w) { return w.seller; })
                  .process<std::string>([] { return std::make_unique<SellerAverage>(); }, "seller-average");
  rows.uid("seller-average");
  sink(rows, o);
}

}  // namespace weir::nexmark::internal
