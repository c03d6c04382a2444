// Shared pieces of the Nexmark query jobs: the event streams, the sink, CSV
// row formatting, changelog rows and a few query predicates. Internal to
// examples/nexmark.
#ifndef WEIR_EXAMPLES_NEXMARK_QUERY_UTIL_H_
#define WEIR_EXAMPLES_NEXMARK_QUERY_UTIL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "examples/nexmark/queries.h"
#include "weir/stream.h"

namespace weir::nexmark::internal {

inline constexpr int64_t kSecond = 1000;

// Reads the generated events; the watermark lags the newest event time by
// the configured slack. `uid`: the source's.
DataStream<Event> events(StreamEnvironment& env, const QueryOptions& o, const std::string& uid = "nexmark-source");
// The events of o.kafka_topic (examples/nexmark/kafka_io.cc).
DataStream<Event> kafka_events(StreamEnvironment& env, const QueryOptions& o);
DataStream<Bid> bids(StreamEnvironment& env, const QueryOptions& o);
DataStream<Person> persons(const DataStream<Event>& ev);
DataStream<Auction> auctions(const DataStream<Event>& ev);
// Writes the rows to the exactly-once file sink, or counts them.
void sink(const DataStream<std::string>& rows, const QueryOptions& o, const std::string& uid = "sink");

// CSV rows: add() appends a column and a comma, finish() drops the last comma.
void add(std::string& s, int64_t v);
void add(std::string& s, std::string_view v);
std::string finish(std::string s);
// A value with 3 implied decimals, as DECIMAL(23,3).
std::string decimal3(int64_t milli);

// Updating queries write changelog rows "<kind>,<columns>", kind one of +I
// (insert), -U (the row before an update), +U (the row after), -D (delete).
// Applying them in order, per key, rebuilds the result table. changed()
// emits what takes a key's row from `before` (none: +I) to `after`.
void changed(std::optional<std::string> before, const std::string& after, Collector<std::string>& out);

// UTC "yyyy-MM-dd" and "HH:mm" of a time in ms.
std::string day_of(int64_t ms);
std::string minute_of(int64_t ms);
// Price tertiles of q15-q17: 1 below $100, 2 below $10 000, 3 above.
int rank_of(int64_t price);

// Bid b may win auction a when a.dateTime <= b.dateTime <= a.expires.
bool in_auction(const Bid& b, const Auction& a);
// Higher price wins; at an equal price the earlier bid; then the first seen.
bool better(const Bid& b, const std::optional<Bid>& best);

// The queries, by group (queries_*.cc).
void q0(StreamEnvironment& env, const QueryOptions& o);
void q1(StreamEnvironment& env, const QueryOptions& o);
void q2(StreamEnvironment& env, const QueryOptions& o);
void q3(StreamEnvironment& env, const QueryOptions& o);
void q4(StreamEnvironment& env, const QueryOptions& o);
void q5(StreamEnvironment& env, const QueryOptions& o);
void q6(StreamEnvironment& env, const QueryOptions& o);
void q7(StreamEnvironment& env, const QueryOptions& o);
void q8(StreamEnvironment& env, const QueryOptions& o);
void q9(StreamEnvironment& env, const QueryOptions& o);
void q10(StreamEnvironment& env, const QueryOptions& o);
void q11(StreamEnvironment& env, const QueryOptions& o);
void q12(StreamEnvironment& env, const QueryOptions& o);
absl::Status q13(StreamEnvironment& env, const QueryOptions& o);
void q14(StreamEnvironment& env, const QueryOptions& o);
void q15(StreamEnvironment& env, const QueryOptions& o);
void q16(StreamEnvironment& env, const QueryOptions& o);
void q17(StreamEnvironment& env, const QueryOptions& o);
void q18(StreamEnvironment& env, const QueryOptions& o);
void q19(StreamEnvironment& env, const QueryOptions& o);
void q20(StreamEnvironment& env, const QueryOptions& o);
void q21(StreamEnvironment& env, const QueryOptions& o);
void q22(StreamEnvironment& env, const QueryOptions& o);

}  // namespace weir::nexmark::internal

// The event types every query file uses: their plumbing is compiled once,
// in query_util.cc.
WEIR_EXTERN_RECORD_TYPE(weir::nexmark::Event)
WEIR_EXTERN_RECORD_TYPE(weir::nexmark::Bid)
WEIR_EXTERN_RECORD_TYPE(weir::nexmark::Auction)
WEIR_EXTERN_RECORD_TYPE(weir::nexmark::Person)

#endif  // WEIR_EXAMPLES_NEXMARK_QUERY_UTIL_H_
