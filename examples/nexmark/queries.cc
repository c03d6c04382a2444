// Nexmark q0..q22 (those implemented so far) with the DataStream API.
#include "examples/nexmark/queries.h"

#include <ctime>
#include <fstream>
#include <functional>
#include <map>
#include <optional>

#include "weir/connectors.h"

namespace weir::nexmark {
namespace {

constexpr int64_t kSecond = 1000;

// Rows leave as CSV lines.
class CountingSink final : public Sink<std::string> {
 public:
  explicit CountingSink(std::atomic<int64_t>* rows) : rows_(rows) {}
  absl::Status open(OperatorContext&) override { return absl::OkStatus(); }
  absl::Status write(const std::string&) override {
    ++n_;
    return absl::OkStatus();
  }
  void close() override {
    if (rows_) *rows_ += n_;
  }

 private:
  std::atomic<int64_t>* rows_;
  int64_t n_ = 0;
};

void sink(const DataStream<std::string>& rows, const QueryOptions& o) {
  std::string dir = o.output_dir;
  std::atomic<int64_t>* counter = o.rows;
  if (dir.empty()) {
    rows.sink_to([counter] { return std::make_unique<CountingSink>(counter); }, "blackhole").uid("sink");
  } else {
    rows.sink_to([dir] { return std::make_unique<ExactlyOnceFileSink>(dir, kResultPrefix); }, "files")
        .uid("sink");
  }
}

DataStream<Event> events(StreamEnvironment& env, const QueryOptions& o) {
  auto gen = std::make_shared<const Generator>(o.generator);
  SourceOptions so = o.source;
  auto wm = WatermarkStrategy<Event>::for_bounded_out_of_orderness(
      Duration(o.watermark_slack_ms), [](const Event& e) { return e.date_time(); });
  auto s = env.from_source<Event>([gen, so] { return std::make_unique<NexmarkSource>(gen, so); },
                                  "nexmark", wm);
  s.uid("nexmark-source");
  return s;
}

DataStream<Bid> bids(StreamEnvironment& env, const QueryOptions& o) {
  return events(env, o)
      .filter([](const Event& e) { return e.type == EventType::kBid; }, "bids")
      .map([](const Event& e) { return e.bid; }, "bid");
}

// Formatting helpers for CSV rows.
void add(std::string& s, int64_t v) {
  s += std::to_string(v);
  s += ',';
}
void add(std::string& s, const std::string& v) {
  s += v;
  s += ',';
}
std::string finish(std::string s) {
  if (!s.empty()) s.pop_back();
  return s;
}
// A value with 3 implied decimals, as DECIMAL(23,3).
std::string decimal3(int64_t milli) {
  std::string frac = std::to_string(milli % 1000);
  return std::to_string(milli / 1000) + "." + std::string(3 - frac.size(), '0') + frac;
}

// ---- stateless queries --------------------------------------------------------

void q0(StreamEnvironment& env, const QueryOptions& o) {
  sink(bids(env, o).map([](const Bid& b) {
    std::string s;
    add(s, b.auction), add(s, b.bidder), add(s, b.price), add(s, b.date_time), add(s, b.extra);
    return finish(std::move(s));
  }), o);
}

void q1(StreamEnvironment& env, const QueryOptions& o) {
  sink(bids(env, o).map([](const Bid& b) {
    std::string s;
    add(s, b.auction), add(s, b.bidder), add(s, decimal3(b.price * 908)), add(s, b.date_time),
        add(s, b.extra);
    return finish(std::move(s));
  }), o);
}

void q2(StreamEnvironment& env, const QueryOptions& o) {
  sink(bids(env, o)
           .filter([](const Bid& b) { return b.auction % 123 == 0; })
           .map([](const Bid& b) { return std::to_string(b.auction) + "," + std::to_string(b.price); }),
       o);
}

void q14(StreamEnvironment& env, const QueryOptions& o) {
  sink(bids(env, o)
           // 1 000 000 < 0.908 * price < 50 000 000, in exact decimals.
           .filter([](const Bid& b) {
             return b.price * 908 > 1'000'000'000LL && b.price * 908 < 50'000'000'000LL;
           })
           .map([](const Bid& b) {
             int64_t hour = (b.date_time / 3'600'000) % 24;
             const char* type = hour >= 8 && hour <= 18 ? "dayTime"
                                : (hour <= 6 || hour >= 20) ? "nightTime"
                                                           : "otherTime";
             int64_t c = std::count(b.extra.begin(), b.extra.end(), 'c');
             std::string s;
             add(s, b.auction), add(s, b.bidder), add(s, decimal3(b.price * 908)), add(s, type),
                 add(s, b.date_time), add(s, b.extra), add(s, c);
             return finish(std::move(s));
           }),
       o);
}

// The text after "channel_id=" that starts the URL or follows '&', up to
// the next '&'; false when there is none.
bool channel_id(const std::string& url, std::string* out) {
  static const std::string kKey = "channel_id=";
  for (size_t pos = url.find(kKey); pos != std::string::npos; pos = url.find(kKey, pos + 1)) {
    if (pos == 0 || url[pos - 1] == '&') {
      size_t b = pos + kKey.size();
      size_t e = url.find('&', b);
      *out = url.substr(b, e == std::string::npos ? std::string::npos : e - b);
      return true;
    }
  }
  return false;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

void q21(StreamEnvironment& env, const QueryOptions& o) {
  sink(bids(env, o).flat_map<std::string>([](const Bid& b, Collector<std::string>& out) {
    static const std::map<std::string, std::string> kHot = {
        {"apple", "0"}, {"google", "1"}, {"facebook", "2"}, {"baidu", "3"}};
    std::string id;
    auto hot = kHot.find(lower(b.channel));
    if (hot != kHot.end()) {
      id = hot->second;
    } else if (!channel_id(b.url, &id)) {
      return;
    }
    std::string s;
    add(s, b.auction), add(s, b.bidder), add(s, b.price), add(s, b.channel), add(s, id);
    out.collect(finish(std::move(s)));
  }), o);
}

void q22(StreamEnvironment& env, const QueryOptions& o) {
  sink(bids(env, o).map([](const Bid& b) {
    std::vector<std::string> parts;
    size_t start = 0;
    for (size_t i = 0; i <= b.url.size(); ++i) {
      if (i == b.url.size() || b.url[i] == '/') {
        parts.push_back(b.url.substr(start, i - start));
        start = i + 1;
      }
    }
    auto piece = [&](size_t i) { return i < parts.size() ? parts[i] : std::string(); };
    std::string s;
    add(s, b.auction), add(s, b.bidder), add(s, b.price), add(s, b.channel), add(s, piece(3)),
        add(s, piece(4)), add(s, piece(5));
    return finish(std::move(s));
  }), o);
}

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

// Per window: the auctions with the most bids.
class HottestAuctions final : public ProcessWindowFunction<int64_t, AuctionCount, std::string> {
 public:
  void process(const int64_t&, const Context&, const std::vector<AuctionCount>& in,
               Collector<std::string>& out) override {
    int64_t max = 0;
    for (const auto& a : in) max = std::max(max, a.count);
    for (const auto& a : in) {
      if (a.count == max) out.collect(std::to_string(a.auction) + "," + std::to_string(a.count));
    }
  }
};

void q5(StreamEnvironment& env, const QueryOptions& o) {
  AggregateFunction<Bid, int64_t, int64_t> count{
      [] { return int64_t{0}; }, [](int64_t& n, const Bid&) { ++n; },
      [](const int64_t& n) { return n; }, [](const int64_t& a, const int64_t& b) { return a + b; }};
  auto counts = bids(env, o)
                    .key_by([](const Bid& b) { return b.auction; })
                    .window(SlidingEventTimeWindows::of(Duration(10 * kSecond), Duration(2 * kSecond)))
                    .aggregate<int64_t, int64_t, AuctionCount>(
                        count, [] { return std::make_unique<EmitAuctionCount>(); }, "count-per-auction");
  counts.uid("count-per-auction");
  // A window's counts carry its last millisecond as timestamp, which falls
  // into the 2 s tumbling window that ends with it.
  auto hottest = counts.key_by([](const AuctionCount& a) { return a.window_end; })
                     .window(TumblingEventTimeWindows::of(Duration(2 * kSecond)))
                     .process<std::string>([] { return std::make_unique<HottestAuctions>(); },
                                           "hottest-per-window");
  hottest.uid("hottest-per-window");
  sink(hottest, o);
}

// The highest bids of one window (ties kept).
struct MaxBids {
  int64_t price = -1;
  std::vector<Bid> bids;
  auto weir_fields() { return std::tie(price, bids); }
  void offer(const Bid& b) {
    if (b.price > price) {
      price = b.price;
      bids.clear();
    }
    if (b.price == price) bids.push_back(b);
  }
};

struct WindowedBid {
  int64_t window = 0;
  Bid bid;
  auto weir_fields() { return std::tie(window, bid); }
};

constexpr int64_t kQ7Window = 10 * kSecond;

// Stage 1, keyed by auction: each auction's highest bids per window.
class AuctionMax final : public KeyedProcessFunction<int64_t, Bid, WindowedBid> {
 public:
  absl::Status open(KeyedRuntimeContext<int64_t>& ctx) override {
    max_ = &ctx.get_map_state(MapStateDescriptor<int64_t, MaxBids>{"max-per-window"});
    return absl::OkStatus();
  }
  void process_element(const Bid& b, Context& ctx, Collector<WindowedBid>&) override {
    int64_t w = b.date_time - b.date_time % kQ7Window;
    MaxBids m = max_->get(w).value_or(MaxBids{});
    m.offer(b);
    max_->put(w, m);
    ctx.timer_service().register_event_time_timer(w + kQ7Window - 1);
  }
  void on_timer(int64_t ts, OnTimerContext&, Collector<WindowedBid>& out) override {
    int64_t w = ts + 1 - kQ7Window;
    if (auto m = max_->get(w)) {
      for (const Bid& b : m->bids) out.collect({w, b});
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
    max_->update(m);
    ctx.timer_service().register_event_time_timer(wb.window + kQ7Window - 1);
  }
  void on_timer(int64_t, OnTimerContext&, Collector<std::string>& out) override {
    if (auto m = max_->value()) {
      for (const Bid& b : m->bids) {
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

void q7(StreamEnvironment& env, const QueryOptions& o) {
  auto candidates = bids(env, o)
                        .key_by([](const Bid& b) { return b.auction; })
                        .process<WindowedBid>([] { return std::make_unique<AuctionMax>(); }, "auction-max");
  candidates.uid("auction-max");
  auto best = candidates.key_by([](const WindowedBid& w) { return w.window; })
                  .process<std::string>([] { return std::make_unique<WindowMax>(); }, "window-max");
  best.uid("window-max");
  sink(best, o);
}

class SessionRow final : public ProcessWindowFunction<int64_t, int64_t, std::string> {
 public:
  void process(const int64_t& bidder, const Context& ctx, const std::vector<int64_t>& in,
               Collector<std::string>& out) override {
    std::string s;
    add(s, bidder), add(s, in[0]), add(s, ctx.window.start), add(s, ctx.window.end);
    out.collect(finish(std::move(s)));
  }
};

void q11(StreamEnvironment& env, const QueryOptions& o) {
  AggregateFunction<Bid, int64_t, int64_t> count{
      [] { return int64_t{0}; }, [](int64_t& n, const Bid&) { ++n; },
      [](const int64_t& n) { return n; }, [](const int64_t& a, const int64_t& b) { return a + b; }};
  auto sessions = bids(env, o)
                      .key_by([](const Bid& b) { return b.bidder; })
                      .window(EventTimeSessionWindows::with_gap(Duration(10 * kSecond)))
                      .aggregate<int64_t, int64_t, std::string>(
                          count, [] { return std::make_unique<SessionRow>(); }, "sessions");
  sessions.uid("sessions");
  sink(sessions, o);
}

// ---- joins ------------------------------------------------------------------

DataStream<Person> persons(const DataStream<Event>& ev) {
  return ev.filter([](const Event& e) { return e.type == EventType::kPerson; }, "persons")
      .map([](const Event& e) { return e.person; }, "person");
}

DataStream<Auction> auctions(const DataStream<Event>& ev) {
  return ev.filter([](const Event& e) { return e.type == EventType::kAuction; }, "auctions")
      .map([](const Event& e) { return e.auction; }, "auction");
}

// q3: auctions of category 10 joined with their sellers from OR, ID or CA.
// Persons are unique, so each auction matches at most one person: keep the
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

constexpr int64_t kQ8Window = 10 * kSecond;

// q8: persons who opened an auction in the 10 s tumbling window in which
// they were created; one row per (person, window).
class NewSellers final : public KeyedCoProcessFunction<int64_t, Person, Auction, std::string> {
 public:
  absl::Status open(KeyedRuntimeContext<int64_t>& ctx) override {
    name_ = &ctx.get_map_state(MapStateDescriptor<int64_t, std::string>{"person-in-window"});
    sold_ = &ctx.get_map_state(MapStateDescriptor<int64_t, bool>{"auction-in-window"});
    return absl::OkStatus();
  }
  void process_element1(const Person& p, Context& ctx, Collector<std::string>& out) override {
    int64_t w = p.date_time - p.date_time % kQ8Window;
    name_->put(w, p.name);
    if (sold_->contains(w)) emit(p.id, p.name, w, out);
    ctx.timer_service().register_event_time_timer(w + kQ8Window - 1);
  }
  void process_element2(const Auction& a, Context& ctx, Collector<std::string>& out) override {
    int64_t w = a.date_time - a.date_time % kQ8Window;
    if (sold_->contains(w)) return;
    sold_->put(w, true);
    if (auto n = name_->get(w)) emit(a.seller, *n, w, out);
    ctx.timer_service().register_event_time_timer(w + kQ8Window - 1);
  }
  void on_timer(int64_t ts, OnTimerContext&, Collector<std::string>&) override {
    int64_t w = ts + 1 - kQ8Window;
    name_->remove(w);
    sold_->remove(w);
  }

 private:
  static void emit(int64_t id, const std::string& name, int64_t w, Collector<std::string>& out) {
    std::string s;
    add(s, id), add(s, name), add(s, w);
    out.collect(finish(std::move(s)));
  }
  MapState<int64_t, std::string>* name_ = nullptr;
  MapState<int64_t, bool>* sold_ = nullptr;
};

void q8(StreamEnvironment& env, const QueryOptions& o) {
  auto ev = events(env, o);
  auto joined = persons(ev)
                    .connect(auctions(ev))
                    .key_by([](const Person& p) { return p.id; }, [](const Auction& a) { return a.seller; })
                    .process<std::string>([] { return std::make_unique<NewSellers>(); }, "new-sellers");
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
  void process_element1(const Bid& b, Context&, Collector<std::string>& out) override {
    if (auto a = auction_->value()) {
      emit(b, *a, out);
    } else if (!other_->value_or(false)) {
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

// ---- updating queries: changelog rows "<kind>,<columns>" ---------------------
//
// kind is +I (insert), -U (update, the row before), +U (update, the row
// after) or -D (delete). Applying the changes in order, per key, rebuilds
// the result table: add the rows of +I/+U, remove those of -U/-D.

// Emits the changes that take a key's row from `before` to `after`.
void changed(std::optional<std::string> before, const std::string& after, Collector<std::string>& out) {
  if (before && *before == after) return;
  if (before) {
    out.collect("-U," + *before);
    out.collect("+U," + after);
  } else {
    out.collect("+I," + after);
  }
}

std::string day_of(int64_t ms) {
  time_t secs = static_cast<time_t>(ms / 1000);
  std::tm tm;
  gmtime_r(&secs, &tm);
  char buf[16];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d", &tm);
  return buf;
}

std::string minute_of(int64_t ms) {
  time_t secs = static_cast<time_t>(ms / 1000);
  std::tm tm;
  gmtime_r(&secs, &tm);
  char buf[8];
  std::strftime(buf, sizeof(buf), "%H:%M", &tm);
  return buf;
}

// Price tertiles of q15-q17: rank 1 < $100, rank 2 < $10 000, rank 3 above.
int rank_of(int64_t price) { return price < 10'000 ? 1 : price < 1'000'000 ? 2 : 3; }

struct AuctionStats {
  int64_t bids = 0, rank[4] = {0, 0, 0, 0}, min = INT64_MAX, max = INT64_MIN, sum = 0;
  auto weir_fields() { return std::tie(bids, rank[1], rank[2], rank[3], min, max, sum); }
};

using AuctionDay = std::pair<int64_t, std::string>;

// q17: per (auction, day) bid statistics.
class AuctionDayStats final : public KeyedProcessFunction<AuctionDay, Bid, std::string> {
 public:
  absl::Status open(KeyedRuntimeContext<AuctionDay>& ctx) override {
    stats_ = &ctx.get_state(ValueStateDescriptor<AuctionStats>{"stats"});
    return absl::OkStatus();
  }
  void process_element(const Bid& b, Context& ctx, Collector<std::string>& out) override {
    auto old = stats_->value();
    AuctionStats s = old.value_or(AuctionStats{});
    s.bids++;
    s.rank[rank_of(b.price)]++;
    s.min = std::min(s.min, b.price);
    s.max = std::max(s.max, b.price);
    s.sum += b.price;
    stats_->update(s);
    const AuctionDay& key = ctx.current_key();
    changed(old ? std::optional<std::string>(row(key, *old)) : std::nullopt, row(key, s), out);
  }

 private:
  static std::string row(const AuctionDay& k, const AuctionStats& s) {
    std::string r;
    add(r, k.first), add(r, k.second), add(r, s.bids), add(r, s.rank[1]), add(r, s.rank[2]),
        add(r, s.rank[3]), add(r, s.min), add(r, s.max), add(r, s.sum / s.bids), add(r, s.sum);
    return finish(std::move(r));
  }
  ValueState<AuctionStats>* stats_ = nullptr;
};

void q17(StreamEnvironment& env, const QueryOptions& o) {
  auto rows = bids(env, o)
                  .key_by([](const Bid& b) { return AuctionDay{b.auction, day_of(b.date_time)}; })
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
    auto old = last_->value();
    if (old && old->date_time > b.date_time) return;
    last_->update(b);
    changed(old ? std::optional<std::string>(row(*old)) : std::nullopt, row(b), out);
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
    std::vector<Bid> top = top_->value_or({});
    size_t pos = 0;
    while (pos < top.size() && (top[pos].price > b.price ||
                                (top[pos].price == b.price && top[pos].date_time <= b.date_time))) {
      ++pos;
    }
    if (pos >= 10) return;
    // Rows at pos.. move one rank down; the 10th falls out.
    for (size_t i = top.size(); i-- > pos;) {
      if (i + 1 >= 10) {
        out.collect("-D," + row(top[i], i + 1));
      } else {
        out.collect("-U," + row(top[i], i + 1));
        out.collect("+U," + row(top[i], i + 2));
      }
    }
    top.insert(top.begin() + static_cast<std::ptrdiff_t>(pos), b);
    if (top.size() > 10) top.pop_back();
    out.collect("+I," + row(b, pos + 1));
    top_->update(top);
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

// ---- q13: lookup join with a static side input -------------------------------

absl::StatusOr<std::shared_ptr<const std::vector<std::string>>> load_side_input(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError("cannot read side input " + path);
  auto table = std::make_shared<std::vector<std::string>>();
  std::string line;
  int64_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    size_t comma = line.find(',');
    char* end = nullptr;
    long long key = comma == std::string::npos ? -1 : std::strtoll(line.c_str(), &end, 10);
    if (comma == std::string::npos || end != line.c_str() + comma || key < 0 || key > 1'000'000) {
      return absl::InvalidArgumentError("side input " + path + " line " + std::to_string(n) +
                                        ": expected <key>,<value> with 0 <= key <= 1000000");
    }
    if (static_cast<size_t>(key) >= table->size()) table->resize(static_cast<size_t>(key) + 1);
    (*table)[static_cast<size_t>(key)] = line.substr(comma + 1);
  }
  return std::shared_ptr<const std::vector<std::string>>(std::move(table));
}

absl::Status q13(StreamEnvironment& env, const QueryOptions& o) {
  auto table = load_side_input(o.side_input);
  if (!table.ok()) return table.status();
  auto side = *table;
  sink(bids(env, o).map([side](const Bid& b) {
    size_t key = static_cast<size_t>(b.auction % 10000);
    std::string s;
    add(s, b.auction), add(s, b.bidder), add(s, b.price), add(s, b.date_time),
        add(s, key < side->size() ? (*side)[key] : std::string());
    return finish(std::move(s));
  }), o);
  return absl::OkStatus();
}

// ---- q9 / q4: auctions joined with the bids made while they were open -------

// Bid b may win auction a when a.dateTime <= b.dateTime <= a.expires.
bool in_auction(const Bid& b, const Auction& a) {
  return b.date_time >= a.date_time && b.date_time <= a.expires;
}

// Higher price wins; at an equal price the earlier bid; then the first seen.
bool better(const Bid& b, const std::optional<Bid>& best) {
  if (!best) return true;
  if (b.price != best->price) return b.price > best->price;
  return b.date_time < best->date_time;
}

// Keyed by auction id. Bids that come before their auction wait for it.
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
    if (auto a = auction_->value()) {
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

// q4 stage 1: an auction's maximum qualifying price changed.
struct MaxChange {
  int64_t category = 0;
  int64_t old_max = -1;  // -1: the auction had none
  int64_t new_max = 0;
  auto weir_fields() { return std::tie(category, old_max, new_max); }
};

class AuctionMaxPrice final : public AuctionBids<MaxChange> {
 protected:
  void improved(const Auction& a, const std::optional<Bid>& old, const Bid& now,
                Collector<MaxChange>& out) override {
    if (old && old->price == now.price) return;  // same maximum, earlier bid
    out.collect({a.category, old ? old->price : -1, now.price});
  }
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
               .map([](const Event& e) { return e.bid; }, "bid");
  auto maxima = auctions(ev)
                    .connect(b)
                    .key_by([](const Auction& a) { return a.id; }, [](const Bid& b) { return b.auction; })
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
    if (auto a = auction_->value()) {
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

// ---- q12: processing-time windows ---------------------------------------------

class BidderCount final : public ProcessWindowFunction<int64_t, int64_t, std::string> {
 public:
  void process(const int64_t& bidder, const Context& ctx, const std::vector<int64_t>& in,
               Collector<std::string>& out) override {
    std::string s;
    add(s, bidder), add(s, in[0]), add(s, ctx.window.start), add(s, ctx.window.end);
    out.collect(finish(std::move(s)));
  }
};

void q12(StreamEnvironment& env, const QueryOptions& o) {
  AggregateFunction<Bid, int64_t, int64_t> count{
      [] { return int64_t{0}; }, [](int64_t& n, const Bid&) { ++n; },
      [](const int64_t& n) { return n; }, [](const int64_t& a, const int64_t& b) { return a + b; }};
  auto rows = bids(env, o)
                  .key_by([](const Bid& b) { return b.bidder; })
                  .window(TumblingProcessingTimeWindows::of(Duration(10 * kSecond)))
                  .aggregate<int64_t, int64_t, std::string>(
                      count, [] { return std::make_unique<BidderCount>(); }, "bidder-count");
  rows.uid("bidder-count");
  sink(rows, o);
}

using Builder = std::function<absl::Status(StreamEnvironment&, const QueryOptions&)>;

// Adapts the builders that cannot fail.
template <void (*F)(StreamEnvironment&, const QueryOptions&)>
absl::Status ok(StreamEnvironment& env, const QueryOptions& o) {
  F(env, o);
  return absl::OkStatus();
}

const std::map<std::string, Builder>& builders() {
  static const auto* m = new std::map<std::string, Builder>{
      {"q0", ok<q0>},   {"q1", ok<q1>},   {"q2", ok<q2>},   {"q3", ok<q3>},   {"q4", ok<q4>},
      {"q5", ok<q5>},   {"q6", ok<q6>},   {"q7", ok<q7>},   {"q8", ok<q8>},   {"q9", ok<q9>},   {"q11", ok<q11>},
      {"q12", ok<q12>}, {"q13", q13},     {"q14", ok<q14>}, {"q15", ok<q15>}, {"q16", ok<q16>},
      {"q17", ok<q17>}, {"q18", ok<q18>}, {"q19", ok<q19>}, {"q20", ok<q20>}, {"q21", ok<q21>},
      {"q22", ok<q22>}};
  return *m;
}

}  // namespace

const std::vector<std::string>& implemented_queries() {
  static const auto* v = [] {
    auto* out = new std::vector<std::string>;
    for (const auto& [name, fn] : builders()) out->push_back(name);
    return out;
  }();
  return *v;
}

absl::Status build_query(StreamEnvironment& env, const QueryOptions& o) {
  auto it = builders().find(o.query);
  if (it == builders().end()) {
    std::string known;
    for (const auto& q : implemented_queries()) known += (known.empty() ? "" : ", ") + q;
    return absl::InvalidArgumentError("unknown or not yet implemented query '" + o.query +
                                      "' (implemented: " + known + ")");
  }
  return it->second(env, o);
}

absl::Status write_default_side_input(const std::string& path) {
  std::ofstream out(path, std::ios::trunc);
  for (int i = 0; i < 10000; ++i) out << i << ',' << i << '\n';
  out.close();
  if (!out) return absl::PermissionDeniedError("cannot write side input " + path);
  return absl::OkStatus();
}

}  // namespace weir::nexmark
