#include "examples/nexmark/query_util.h"

#include <charconv>
#include <cstdint>
#include <ctime>

#include "weir/connectors.h"

namespace weir::nexmark::internal {
namespace {

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

}  // namespace

void sink(const DataStream<std::string>& rows, const QueryOptions& o, const std::string& uid) {
  std::string dir = o.output_dir;
  std::atomic<int64_t>* counter = o.rows;
  if (dir.empty()) {
    rows.sink_to([counter] { return std::make_unique<CountingSink>(counter); }, "blackhole").uid(uid);
  } else {
    rows.sink_to([dir] { return std::make_unique<ExactlyOnceFileSink>(dir, kResultPrefix); }, "files")
        .uid(uid);
  }
}

DataStream<Event> events(StreamEnvironment& env, const QueryOptions& o, const std::string& uid) {
  if (!o.kafka_topic.empty()) return kafka_events(env, o);
  auto gen = std::make_shared<const Generator>(o.generator);
  SourceOptions so = o.source;
  auto wm = WatermarkStrategy<Event>::for_bounded_out_of_orderness(
      Duration(o.watermark_slack_ms), [](const Event& e) { return e.date_time(); });
  auto s = env.from_source<Event>([gen, so] { return std::make_unique<NexmarkSource>(gen, so); },
                                  "nexmark", wm);
  s.uid(uid);
  return s;
}

DataStream<Bid> bids(StreamEnvironment& env, const QueryOptions& o) {
  return events(env, o)
      .filter([](const Event& e) { return e.type == EventType::kBid; }, "bids")
      .map([](const Event& e) { return e.bid; }, "bid");
}

// Formatting helpers for CSV rows. A row is 100-200 bytes: room for it is
// made once, at its first column, instead of by doubling from empty; numbers
// are written in place instead of through a temporary string.
namespace {
constexpr size_t kRowReserve = 256;
}  // namespace

void add(std::string& s, int64_t v) {
  if (s.empty()) s.reserve(kRowReserve);
  char buf[24];
  // An int64_t has at most 20 characters: to_chars cannot run out of room.
  const std::to_chars_result r = std::to_chars(buf, buf + sizeof(buf), v);
  s.append(buf, static_cast<size_t>(r.ptr - buf));
  s += ',';
}
void add(std::string& s, std::string_view v) {
  if (s.empty()) s.reserve(kRowReserve);
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

// `ms` (since the epoch) formatted in UTC with strftime's `format`.
static std::string utc(int64_t ms, const char* format) {
  time_t secs = static_cast<time_t>(ms / 1000);
  std::tm tm;
  gmtime_r(&secs, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), format, &tm);
  return buf;
}

// Consecutive events nearly always fall on the same day, so each thread
// formats a day once and copies it after.
std::string day_of(int64_t ms) {
  constexpr int64_t kDayMs = 86'400'000;
  thread_local int64_t cached_day = INT64_MIN;
  thread_local std::string cached;
  const int64_t day = ms / kDayMs - (ms % kDayMs < 0 ? 1 : 0);
  if (day != cached_day) {
    cached = utc(ms, "%Y-%m-%d");
    cached_day = day;
  }
  return cached;
}
std::string minute_of(int64_t ms) { return utc(ms, "%H:%M"); }

// Price tertiles of q15-q17: rank 1 < $100, rank 2 < $10 000, rank 3 above.
int rank_of(int64_t price) { return price < 10'000 ? 1 : price < 1'000'000 ? 2 : 3; }

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

}  // namespace weir::nexmark::internal

WEIR_INSTANTIATE_RECORD_TYPE(weir::nexmark::Event)
WEIR_INSTANTIATE_RECORD_TYPE(weir::nexmark::Bid)
WEIR_INSTANTIATE_RECORD_TYPE(weir::nexmark::Auction)
WEIR_INSTANTIATE_RECORD_TYPE(weir::nexmark::Person)
