// Nexmark queries without state: q0, q1, q2, q10, q13, q14, q21, q22.
#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <optional>
#include <string_view>
#include <utility>

#include "examples/nexmark/query_util.h"
#include "weir/connectors.h"

namespace weir::nexmark::internal {
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
// the next '&'; empty when there is none.
std::optional<std::string_view> channel_id(std::string_view url) {
  constexpr std::string_view kKey = "channel_id=";
  for (size_t pos = url.find(kKey); pos != std::string_view::npos; pos = url.find(kKey, pos + 1)) {
    if (pos == 0 || url[pos - 1] == '&') {
      const size_t b = pos + kKey.size();
      const size_t e = url.find('&', b);
      return url.substr(b, e == std::string_view::npos ? std::string_view::npos : e - b);
    }
  }
  return std::nullopt;
}

// The id of a hot channel, named in any case; empty for the others.
std::optional<std::string_view> hot_channel(std::string_view channel) {
  static constexpr std::pair<std::string_view, std::string_view> kHot[] = {
      {"apple", "0"}, {"google", "1"}, {"facebook", "2"}, {"baidu", "3"}};
  for (const auto& [name, id] : kHot) {
    if (channel.size() == name.size() &&
        std::equal(name.begin(), name.end(), channel.begin(),
                   [](char a, char b) { return a == std::tolower(static_cast<unsigned char>(b)); })) {
      return id;
    }
  }
  return std::nullopt;
}

void q21(StreamEnvironment& env, const QueryOptions& o) {
  sink(bids(env, o).flat_map<std::string>([](const Bid& b, Collector<std::string>& out) {
    std::optional<std::string_view> id = hot_channel(b.channel);
    if (!id) id = channel_id(b.url);
    if (!id) return;
    std::string s;
    add(s, b.auction), add(s, b.bidder), add(s, b.price), add(s, b.channel), add(s, *id);
    out.collect(finish(std::move(s)));
  }), o);
}

// The URL's pieces 3, 4 and 5 between '/' (empty where it has fewer).
void q22(StreamEnvironment& env, const QueryOptions& o) {
  sink(bids(env, o).map([](const Bid& b) {
    std::string_view piece[3];
    std::string_view url = b.url;
    for (size_t i = 0, start = 0; i < 6 && start <= url.size(); ++i) {
      size_t end = url.find('/', start);
      if (end == std::string_view::npos) end = url.size();
      if (i >= 3) piece[i - 3] = url.substr(start, end - start);
      start = end + 1;
    }
    std::string s;
    add(s, b.auction), add(s, b.bidder), add(s, b.price), add(s, b.channel), add(s, piece[0]),
        add(s, piece[1]), add(s, piece[2]);
    return finish(std::move(s));
  }), o);
}

// ---- q13: lookup join with a static side input -------------------------------

static absl::StatusOr<std::shared_ptr<const std::vector<std::string>>> load_side_input(const std::string& path) {
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

// q10: every bid, written into partitions dt=<yyyy-MM-dd>/hm=<HH:mm> of its
// (UTC) event time under the output directory.
void q10(StreamEnvironment& env, const QueryOptions& o) {
  auto rows = bids(env, o).map([](const Bid& b) {
    std::string s;
    add(s, b.auction), add(s, b.bidder), add(s, b.price), add(s, b.date_time), add(s, b.extra);
    return finish(std::move(s));
  });
  if (o.output_dir.empty()) return sink(rows, o);
  std::string dir = o.output_dir;
  rows.sink_to(
          [dir] {
            return std::make_unique<ExactlyOnceFileSink>(
                dir, kResultPrefix, [](const std::string&, int64_t ts) {
                  return "dt=" + day_of(ts) + "/hm=" + minute_of(ts);
                });
          },
          "partitioned-files")
      .uid("sink");
}

}  // namespace weir::nexmark::internal
