// Every implemented Nexmark query through `weir nexmark`, compared with an
// independent single-threaded computation over the events the command
// dumps as CSV: at parallelism 1 and 4, with and without injected failures.
#include <gtest/gtest.h>

#include <algorithm>
#include <cinttypes>
#include <ctime>
#include <fstream>
#include <map>
#include <random>
#include <filesystem>
#include <regex>
#include <set>
#include <sstream>

#include "examples/nexmark/queries.h"
#include "tests/changelog.h"
#include "tests/process.h"
#include "testing/seed.h"

namespace weir {
namespace nexmark_test {

struct BidRow {
  int64_t auction, bidder, price;
  std::string channel, url;
  int64_t date_time;
  std::string extra;
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string piece;
  while (std::getline(ss, piece, sep)) out.push_back(piece);
  if (!s.empty() && s.back() == sep) out.push_back("");
  return out;
}

std::vector<BidRow> read_bids(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);  // header
  std::vector<BidRow> out;
  while (std::getline(in, line)) {
    auto f = split(line, ',');
    out.push_back({std::stoll(f[0]), std::stoll(f[1]), std::stoll(f[2]), f[3], f[4], std::stoll(f[5]),
                   f.size() > 6 ? f[6] : ""});
  }
  return out;
}

struct PersonRow {
  int64_t id;
  std::string name, city, state;
  int64_t date_time;
};

struct AuctionRow {
  std::vector<std::string> f;  // the CSV fields
  int64_t id() const { return std::stoll(f[0]); }
  int64_t date_time() const { return std::stoll(f[5]); }
  int64_t seller() const { return std::stoll(f[7]); }
  int64_t category() const { return std::stoll(f[8]); }
};

std::vector<std::vector<std::string>> read_csv(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);  // header
  std::vector<std::vector<std::string>> out;
  while (std::getline(in, line)) out.push_back(split(line, ','));
  return out;
}

std::string dec3(int64_t milli) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%" PRId64 ".%03" PRId64, milli / 1000, milli % 1000);
  return buf;
}

std::string day(int64_t ms) {
  time_t secs = ms / 1000;
  std::tm tm;
  gmtime_r(&secs, &tm);
  char buf[16];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d", &tm);
  return buf;
}
std::string minute(int64_t ms) {
  time_t secs = ms / 1000;
  std::tm tm;
  gmtime_r(&secs, &tm);
  char buf[8];
  std::snprintf(buf, sizeof(buf), "%02d:%02d", tm.tm_hour, tm.tm_min);
  return buf;
}
int rank(int64_t price) { return price < 10000 ? 1 : price < 1000000 ? 2 : 3; }

using testing::apply_changelog;
bool is_updating(const std::string& q) { return testing::is_updating_nexmark_query(q); }

std::string join(std::initializer_list<std::string> cols) {
  std::string s;
  for (const auto& c : cols) s += (s.empty() ? "" : ",") + c;
  return s;
}
std::string str(int64_t v) { return std::to_string(v); }

// The reference results, written straight from the query definitions.
std::vector<std::string> reference(const std::string& q, const std::vector<BidRow>& bids,
                                   const std::vector<PersonRow>& persons,
                                   const std::vector<AuctionRow>& auctions) {
  std::vector<std::string> out;
  if (q == "q10") {  // rows prefixed by their partition
    for (const auto& b : bids) {
      out.push_back("dt=" + day(b.date_time) + "/hm=" + minute(b.date_time) + "|" +
                    join({str(b.auction), str(b.bidder), str(b.price), str(b.date_time), b.extra}));
    }
  } else if (q == "q3") {
    for (const auto& a : auctions) {
      if (a.category() != 10) continue;
      for (const auto& p : persons) {
        if (p.id == a.seller() && (p.state == "OR" || p.state == "ID" || p.state == "CA")) {
          out.push_back(join({p.name, p.city, p.state, str(a.id())}));
        }
      }
    }
  } else if (q == "q8") {
    std::set<std::pair<int64_t, int64_t>> sellers;  // (seller, window)
    for (const auto& a : auctions) sellers.insert({a.seller(), a.date_time() / 10000 * 10000});
    for (const auto& p : persons) {
      int64_t w = p.date_time / 10000 * 10000;
      if (sellers.count({p.id, w})) out.push_back(join({str(p.id), p.name, str(w)}));
    }
  } else if (q == "q13") {
    for (const auto& b : bids) out.push_back(join({str(b.auction), str(b.bidder), str(b.price), str(b.date_time), str(b.auction % 10000)}));
  } else if (q == "q12") {
    // Processing-time windows are not reproducible: compare bids per bidder.
    std::map<int64_t, int64_t> n;
    for (const auto& b : bids) n[b.bidder]++;
    for (auto& [bidder, c] : n) out.push_back(join({str(bidder), str(c)}));
  } else if (q == "q9" || q == "q4") {
    std::map<int64_t, std::vector<const BidRow*>> by_auction;
    for (const auto& b : bids) by_auction[b.auction].push_back(&b);
    std::map<int64_t, std::pair<int64_t, int64_t>> category;  // sum, count of maxima
    for (const auto& a : auctions) {
      const BidRow* best = nullptr;
      for (const BidRow* b : by_auction[a.id()]) {
        if (b->date_time < a.date_time() || b->date_time > std::stoll(a.f[6])) continue;
        if (!best || b->price > best->price || (b->price == best->price && b->date_time < best->date_time)) best = b;
      }
      if (!best) continue;
      if (q == "q9") {
        const auto& f = a.f;
        out.push_back(join({f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], f.size() > 9 ? f[9] : "",
                            str(best->auction), str(best->bidder), str(best->price), str(best->date_time), best->extra}));
      } else {
        auto& sc = category[a.category()];
        sc.first += best->price;
        sc.second++;
      }
    }
    for (auto& [c, sc] : category) out.push_back(join({str(c), str(sc.first / sc.second)}));
  } else if (q == "q6") {
    std::map<int64_t, std::vector<const BidRow*>> by_auction;
    for (const auto& b : bids) by_auction[b.auction].push_back(&b);
    std::map<int64_t, std::vector<std::pair<int64_t, int64_t>>> wins;  // seller -> (time, price)
    for (const auto& a : auctions) {
      const BidRow* best = nullptr;
      for (const BidRow* b : by_auction[a.id()]) {
        if (b->date_time >= std::stoll(a.f[6]) || b->price < std::stoll(a.f[4])) continue;
        if (!best || b->price > best->price || (b->price == best->price && b->date_time < best->date_time)) best = b;
      }
      if (best) wins[a.seller()].push_back({best->date_time, best->price});
    }
    for (auto& [seller, w] : wins) {
      std::sort(w.begin(), w.end());
      size_t from = w.size() > 10 ? w.size() - 10 : 0;
      int64_t sum = 0, n = 0;
      for (size_t i = from; i < w.size(); ++i) sum += w[i].second, ++n;
      out.push_back(join({str(seller), str(static_cast<int64_t>(std::llround(static_cast<double>(sum) / n)))}));
    }
  } else if (q == "q17") {
    struct S { int64_t n = 0, r[4] = {0, 0, 0, 0}, min = INT64_MAX, max = INT64_MIN, sum = 0; };
    std::map<std::pair<int64_t, std::string>, S> stats;
    for (const auto& b : bids) {
      S& s = stats[{b.auction, day(b.date_time)}];
      s.n++;
      s.r[rank(b.price)]++;
      s.min = std::min(s.min, b.price);
      s.max = std::max(s.max, b.price);
      s.sum += b.price;
    }
    for (auto& [k, s] : stats) {
      out.push_back(join({str(k.first), k.second, str(s.n), str(s.r[1]), str(s.r[2]), str(s.r[3]), str(s.min),
                          str(s.max), str(s.sum / s.n), str(s.sum)}));
    }
  } else if (q == "q18") {
    std::map<std::pair<int64_t, int64_t>, const BidRow*> last;
    for (const auto& b : bids) {
      auto& l = last[{b.bidder, b.auction}];
      if (!l || l->date_time <= b.date_time) l = &b;
    }
    for (auto& [k, b] : last) {
      out.push_back(join({str(b->auction), str(b->bidder), str(b->price), b->channel, b->url, str(b->date_time), b->extra}));
    }
  } else if (q == "q19") {
    std::map<int64_t, std::vector<const BidRow*>> per;
    for (const auto& b : bids) per[b.auction].push_back(&b);
    for (auto& [a, list] : per) {
      std::stable_sort(list.begin(), list.end(), [](const BidRow* x, const BidRow* y) {
        return x->price != y->price ? x->price > y->price : x->date_time < y->date_time;
      });
      for (size_t i = 0; i < list.size() && i < 10; ++i) {
        const BidRow* b = list[i];
        out.push_back(join({str(b->auction), str(b->bidder), str(b->price), b->channel, b->url, str(b->date_time),
                            b->extra, str(static_cast<int64_t>(i + 1))}));
      }
    }
  } else if (q == "q15" || q == "q16") {
    struct S {
      int64_t n[4] = {0, 0, 0, 0};
      std::set<int64_t> bidders[4], auctions[4];
      std::string minute;
    };
    std::map<std::string, S> groups;
    for (const auto& b : bids) {
      std::string key = q == "q15" ? day(b.date_time) : b.channel + "," + day(b.date_time);
      S& s = groups[key];
      int r = rank(b.price);
      for (int i : {0, r}) {
        s.n[i]++;
        s.bidders[i].insert(b.bidder);
        s.auctions[i].insert(b.auction);
      }
      s.minute = std::max(s.minute, minute(b.date_time));
    }
    for (auto& [k, s] : groups) {
      std::string row = k;
      if (q == "q16") row += "," + s.minute;
      for (int i = 0; i < 4; ++i) row += "," + str(s.n[i]);
      for (int i = 0; i < 4; ++i) row += "," + str(static_cast<int64_t>(s.bidders[i].size()));
      for (int i = 0; i < 4; ++i) row += "," + str(static_cast<int64_t>(s.auctions[i].size()));
      out.push_back(row);
    }
  } else if (q == "q20") {
    std::map<int64_t, const AuctionRow*> cat10;
    for (const auto& a : auctions) if (a.category() == 10) cat10[a.id()] = &a;
    for (const auto& b : bids) {
      auto it = cat10.find(b.auction);
      if (it == cat10.end()) continue;
      const auto& f = it->second->f;
      out.push_back(join({str(b.auction), str(b.bidder), str(b.price), b.channel, b.url, str(b.date_time), b.extra,
                          f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], f.size() > 9 ? f[9] : ""}));
    }
  }
  if (q == "q0") {
    for (const auto& b : bids) out.push_back(join({str(b.auction), str(b.bidder), str(b.price), str(b.date_time), b.extra}));
  } else if (q == "q1") {
    for (const auto& b : bids) out.push_back(join({str(b.auction), str(b.bidder), dec3(b.price * 908), str(b.date_time), b.extra}));
  } else if (q == "q2") {
    for (const auto& b : bids) if (b.auction % 123 == 0) out.push_back(join({str(b.auction), str(b.price)}));
  } else if (q == "q14") {
    for (const auto& b : bids) {
      if (b.price < 1101322 || b.price > 55066079) continue;
      time_t secs = b.date_time / 1000;
      std::tm tm;
      gmtime_r(&secs, &tm);
      std::string type = tm.tm_hour >= 8 && tm.tm_hour <= 18 ? "dayTime"
                         : (tm.tm_hour <= 6 || tm.tm_hour >= 20) ? "nightTime" : "otherTime";
      out.push_back(join({str(b.auction), str(b.bidder), dec3(b.price * 908), type, str(b.date_time), b.extra,
                          str(std::count(b.extra.begin(), b.extra.end(), 'c'))}));
    }
  } else if (q == "q21") {
    static const std::regex re("(&|^)channel_id=([^&]*)");
    for (const auto& b : bids) {
      std::string lc = b.channel;
      std::transform(lc.begin(), lc.end(), lc.begin(), ::tolower);
      std::map<std::string, std::string> hot = {{"apple", "0"}, {"google", "1"}, {"facebook", "2"}, {"baidu", "3"}};
      std::smatch m;
      bool has = std::regex_search(b.url, m, re);
      if (!has && !hot.count(lc)) continue;
      out.push_back(join({str(b.auction), str(b.bidder), str(b.price), b.channel, hot.count(lc) ? hot[lc] : m[2].str()}));
    }
  } else if (q == "q22") {
    for (const auto& b : bids) {
      auto p = split(b.url, '/');
      out.push_back(join({str(b.auction), str(b.bidder), str(b.price), b.channel, p.at(3), p.at(4), p.at(5)}));
    }
  } else if (q == "q5") {
    std::map<int64_t, std::map<int64_t, int64_t>> counts;  // window start -> auction -> bids
    for (const auto& b : bids) {
      for (int64_t s = b.date_time - b.date_time % 2000; s > b.date_time - 10000; s -= 2000) counts[s][b.auction]++;
    }
    for (auto& [s, per] : counts) {
      int64_t max = 0;
      for (auto& [a, n] : per) max = std::max(max, n);
      for (auto& [a, n] : per) if (n == max) out.push_back(join({str(a), str(n)}));
    }
  } else if (q == "q7") {
    std::map<int64_t, std::vector<const BidRow*>> windows;
    for (const auto& b : bids) windows[b.date_time - b.date_time % 10000].push_back(&b);
    for (auto& [w, list] : windows) {
      int64_t max = -1;
      for (auto* b : list) max = std::max(max, b->price);
      for (auto* b : list) {
        if (b->price == max) out.push_back(join({str(b->auction), str(b->bidder), str(b->price), str(b->date_time), b->extra}));
      }
    }
  } else if (q == "q11") {
    std::map<int64_t, std::vector<int64_t>> times;
    for (const auto& b : bids) times[b.bidder].push_back(b.date_time);
    for (auto& [bidder, ts] : times) {
      std::sort(ts.begin(), ts.end());
      int64_t start = ts[0], last = ts[0], n = 0;
      for (int64_t t : ts) {
        if (t > last + 10000) {  // touching sessions merge
          out.push_back(join({str(bidder), str(n), str(start), str(last + 10000)}));
          start = t;
          n = 0;
        }
        last = t;
        ++n;
      }
      out.push_back(join({str(bidder), str(n), str(start), str(last + 10000)}));
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The file's lines in file order.
std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

struct Case {
  std::string query;
  int parallelism;
  bool failures;
  std::string state = "heap";
  bool batch = false;  // --runtime-mode batch
};

class NexmarkTest : public ::testing::TestWithParam<Case> {};

TEST_P(NexmarkTest, MatchesTheReference) {
  const Case& c = GetParam();
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  testing::TempDir dir("nexmark-" + c.query + "-" + std::to_string(c.parallelism) + (c.failures ? "-f-" : "-") +
                      c.state + (c.batch ? "-batch" : ""));
  std::vector<std::string> args = {"nexmark", "--query", c.query, "--events", "60000", "--event-rate", "1000",
                                   "--parallelism", std::to_string(c.parallelism), "--checkpoint-interval", "20ms",
                                   "--output", dir.path("result.csv"), "--dump-events", dir.path("events"),
                                   "--seed", std::to_string(seed), "--state", c.state};
  if (c.batch) {
    // Stages run one after another; a failure re-runs the failed source
    // subtask alone, from the start of its split.
    for (const char* a : {"--runtime-mode", "batch", "--result-dir", "results"}) args.push_back(a);
    args.back() = dir.path("results");
    if (c.failures) {
      for (const char* a : {"--fail-every", "6000"}) args.push_back(a);
    }
  } else if (c.failures) {
    // Slow enough that checkpoints complete between failures.
    for (const char* a : {"--fail-every", "6000", "--rate", "150000"}) args.push_back(a);
  }
  auto r = testing::run_weir(args, dir.path("run"));
  ASSERT_EQ(r.code, 0) << r.err;
  if (c.failures) {
    EXPECT_EQ(r.out.find("restarts: 0"), std::string::npos) << "no failure was injected";
  }
  std::vector<PersonRow> persons;
  for (auto& f : read_csv(dir.path("events/persons.csv"))) {
    persons.push_back({std::stoll(f[0]), f[1], f[4], f[5], std::stoll(f[6])});
  }
  std::vector<AuctionRow> auctions;
  for (auto& f : read_csv(dir.path("events/auctions.csv"))) auctions.push_back({f});
  auto want = reference(c.query, read_bids(dir.path("events/bids.csv")), persons, auctions);
  // Updating queries write a changelog; each key's changes are in order
  // within one part file (one key, one subtask).
  std::vector<std::string> got;
  if (c.query == "q10") {
    // Published part files under <partition>/, each line tagged with it.
    namespace fs = std::filesystem;
    fs::path root = dir.path("result.csv");
    for (auto it = fs::recursive_directory_iterator(root); it != fs::recursive_directory_iterator(); ++it) {
      std::string name = it->path().filename().string();
      if (name.rfind("result-", 0) != 0) continue;
      std::string partition = fs::relative(it->path().parent_path(), root).string();
      for (const auto& l : read_lines(it->path().string())) got.push_back(partition + "|" + l);
    }
  } else {
    got = read_lines(dir.path("result.csv"));
  }
  if (is_updating(c.query)) got = apply_changelog(got);
  if (c.query == "q12") {  // bidder,count,start,end -> bidder,total count
    std::map<int64_t, int64_t> n;
    for (const auto& row : got) {
      auto f = split(row, ',');
      n[std::stoll(f[0])] += std::stoll(f[1]);
    }
    got.clear();
    for (auto& [bidder, count] : n) got.push_back(join({str(bidder), str(count)}));
  }
  std::sort(got.begin(), got.end());
  ASSERT_FALSE(want.empty());
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << "row " << i;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const auto& q : nexmark::implemented_queries()) {
    for (int p : {1, 4}) {
      for (bool f : {false, true}) out.push_back({q, p, f});
    }
    out.push_back({q, 4, true, "rocksdb"});
    out.push_back({q, 4, true, "heap", /*batch=*/true});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Queries, NexmarkTest, ::testing::ValuesIn(cases()), [](const auto& info) {
  return info.param.query + "_p" + std::to_string(info.param.parallelism) +
         (info.param.failures ? "_failures" : "") + (info.param.state == "heap" ? "" : "_" + info.param.state) +
         (info.param.batch ? "_batch" : "");
});

}  // namespace nexmark_test
}  // namespace weir
