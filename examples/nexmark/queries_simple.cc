// Nexmark queries without state: q0, q1, q2, q10, q13, q14, q21, q22.
#include <algorithm>
#include <fstream>
#include <map>
#include <optional>

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
