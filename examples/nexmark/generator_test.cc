// The generator against the published test vectors: single events and
// aggregate checks over the first 100 000 and 1 000 000 events at 10 000
// events/s.
#include "examples/nexmark/generator.h"

#include <gtest/gtest.h>

namespace weir::nexmark {
namespace {

TEST(JavaRandomTest, MatchesJavaUtilRandom) {
  EXPECT_EQ(JavaRandom(0).next_int(), -1155484576);
  EXPECT_DOUBLE_EQ(JavaRandom(0).next_double(), 0.730967787376657);
  JavaRandom r(42);
  EXPECT_EQ(r.next_int(10), 0);
  EXPECT_EQ(r.next_int(100), 63);
  EXPECT_EQ(r.next_long(), -5843495416241995736LL);
}

// nextExactString one character at a time, as Beam writes it.
std::string exact_string_reference(JavaRandom& rng, int64_t len) {
  std::string s;
  int32_t x = 0;
  for (int64_t i = 0; i < len; ++i) {
    if (i % 6 == 0) x = rng.next_int();
    s.push_back(static_cast<char>('a' + x % 26));
    x /= 26;
  }
  return s;
}

TEST(JavaRandomTest, ExactStringsMatchTheCharacterAtATimeVersion) {
  // Lengths around the group size and past the draws computed ahead (96
  // groups = 576 characters), many seeds, a reused output string.
  std::string out = "stale";
  for (int64_t seed = 0; seed < 300; ++seed) {
    for (int64_t len : {0, 1, 5, 6, 7, 12, 13, 70, 575, 576, 577, 582, 583, 1000}) {
      JavaRandom expected_rng(seed * 7919), rng(seed * 7919);
      const std::string expected = exact_string_reference(expected_rng, len);
      internal::next_exact_string(rng, len, &out);
      ASSERT_EQ(out, expected) << "seed " << seed * 7919 << " len " << len;
      ASSERT_EQ(rng.next_int(), expected_rng.next_int()) << "state after, seed " << seed * 7919 << " len " << len;
    }
  }
  // Draws of both signs come up (characters above and below the letters).
  JavaRandom rng(0);
  internal::next_exact_string(rng, 6000, &out);
  EXPECT_NE(out.find_first_of("abcdefghijklmnopqrstuvwxyz"), std::string::npos);
  EXPECT_NE(out.find_first_not_of("abcdefghijklmnopqrstuvwxyz"), std::string::npos);
}

GeneratorConfig vector_config() {
  GeneratorConfig c;
  c.event_rate = 10000;
  return c;
}

TEST(GeneratorTest, FirstEventsMatchTheTestVectors) {
  Generator g(vector_config());
  const int64_t base = g.config().base_time;
  Event p = g.generate(0);
  ASSERT_EQ(p.type, EventType::kPerson);
  EXPECT_EQ(p.person.date_time, base);
  EXPECT_EQ(p.person.id, 1000);
  EXPECT_EQ(p.person.name, "Peter Jones");
  EXPECT_EQ(p.person.email, "nhd@xcat.com");
  EXPECT_EQ(p.person.credit_card, "7241 7320 9143 4888");
  EXPECT_EQ(p.person.city, "Portland");
  EXPECT_EQ(p.person.state, "WY");
  EXPECT_EQ(p.person.extra.size(), 156u);
  EXPECT_EQ(p.person.extra.substr(0, 12), "WN_HS_bnpkki");

  Event a = g.generate(1);
  ASSERT_EQ(a.type, EventType::kAuction);
  EXPECT_EQ(a.auction.id, 1000);
  EXPECT_EQ(a.auction.item_name, "wkx mgee");
  EXPECT_EQ(a.auction.description.size(), 24u);
  EXPECT_EQ(a.auction.description.substr(0, 12), "eszpqxtdxrvw");
  EXPECT_EQ(a.auction.initial_bid, 28873);
  EXPECT_EQ(a.auction.reserve, 29448);
  EXPECT_EQ(a.auction.expires, a.auction.date_time + 11);
  EXPECT_EQ(a.auction.seller, 1000);
  EXPECT_EQ(a.auction.category, 13);
  EXPECT_EQ(a.auction.extra.size(), 346u);

  Event a3 = g.generate(3);
  EXPECT_EQ(a3.auction.id, 1002);
  EXPECT_EQ(a3.auction.item_name, "gxycmhtobprpd");
  EXPECT_EQ(a3.auction.initial_bid, 267);
  EXPECT_EQ(a3.auction.reserve, 422398);
  EXPECT_EQ(a3.auction.expires, a3.auction.date_time + 1);

  Event b = g.generate(4);
  ASSERT_EQ(b.type, EventType::kBid);
  EXPECT_EQ(b.bid.auction, 1000);
  EXPECT_EQ(b.bid.bidder, 1001);
  EXPECT_EQ(b.bid.price, 32530001);
  EXPECT_EQ(b.bid.extra.size(), 77u);
  EXPECT_EQ(b.bid.extra.substr(0, 12), "fdiysaV^]NLV");

  Event b49 = g.generate(49);
  EXPECT_EQ(b49.bid.date_time, base + 4);
  EXPECT_EQ(b49.bid.price, 545);
  Event p50 = g.generate(50);
  EXPECT_EQ(p50.person.name, "Sarah Smith");
  EXPECT_EQ(p50.person.email, "f  y@yumv.com");
  EXPECT_EQ(p50.person.state, "ID");
  Event b123456 = g.generate(123456);
  EXPECT_EQ(b123456.bid.date_time, base + 12345);
  EXPECT_EQ(b123456.bid.auction, 8332);
  EXPECT_EQ(b123456.bid.bidder, 3401);
  EXPECT_EQ(b123456.bid.price, 66082);
}

// The aggregate check of the published test vectors over the first n events.
struct Aggregates {
  int64_t persons = 0;
  int64_t auctions = 0;
  int64_t bids = 0;
  int64_t sum_dt = 0;
  int64_t sum_price = 0;
  int64_t sum_auction = 0;
  int64_t sum_bidder = 0;
  int64_t sum_seller = 0;
  int64_t sum_category = 0;
  int64_t cat10 = 0;
  int64_t sum_len = 0;
  int64_t sum_initial = 0;
  int64_t sum_reserve = 0;
  int64_t west = 0;
  int64_t sum_extra = 0;
  uint64_t fnv = 0xcbf29ce484222325ULL;
};

Aggregates aggregate(int64_t n_events) {
  Generator g(vector_config());
  const int64_t base = g.config().base_time;
  Aggregates a;
  auto hash = [&](const std::string& s) {
    for (unsigned char c : s) {
      a.fnv ^= c;
      a.fnv *= 0x100000001b3ULL;
    }
    a.fnv ^= static_cast<unsigned char>('|');
    a.fnv *= 0x100000001b3ULL;
  };
  Event e;
  for (int64_t n = 0; n < n_events; ++n) {
    g.generate_into(n, &e);
    a.sum_dt += e.date_time() - base;
    switch (e.type) {
      case EventType::kPerson:
        ++a.persons;
        if (e.person.state == "OR" || e.person.state == "ID" || e.person.state == "CA") ++a.west;
        a.sum_extra += static_cast<int64_t>(e.person.extra.size());
        for (auto* s : {&e.person.name, &e.person.email, &e.person.credit_card, &e.person.city,
                        &e.person.state, &e.person.extra}) {
          hash(*s);
        }
        break;
      case EventType::kAuction:
        ++a.auctions;
        a.sum_seller += e.auction.seller;
        a.sum_category += e.auction.category;
        a.cat10 += e.auction.category == 10;
        a.sum_len += e.auction.expires - e.auction.date_time;
        a.sum_initial += e.auction.initial_bid;
        a.sum_reserve += e.auction.reserve;
        a.sum_extra += static_cast<int64_t>(e.auction.extra.size());
        for (auto* s : {&e.auction.item_name, &e.auction.description, &e.auction.extra}) hash(*s);
        break;
      case EventType::kBid:
        ++a.bids;
        a.sum_price += e.bid.price;
        a.sum_auction += e.bid.auction;
        a.sum_bidder += e.bid.bidder;
        a.sum_extra += static_cast<int64_t>(e.bid.extra.size());
        hash(e.bid.extra);
        break;
    }
  }
  return a;
}

void expect_aggregates(const Aggregates& a, const Aggregates& e) {
  EXPECT_EQ(a.persons, e.persons);
  EXPECT_EQ(a.auctions, e.auctions);
  EXPECT_EQ(a.bids, e.bids);
  EXPECT_EQ(a.sum_dt, e.sum_dt);
  EXPECT_EQ(a.sum_price, e.sum_price);
  EXPECT_EQ(a.sum_auction, e.sum_auction);
  EXPECT_EQ(a.sum_bidder, e.sum_bidder);
  EXPECT_EQ(a.sum_seller, e.sum_seller);
  EXPECT_EQ(a.sum_category, e.sum_category);
  EXPECT_EQ(a.cat10, e.cat10);
  EXPECT_EQ(a.sum_len, e.sum_len);
  EXPECT_EQ(a.sum_initial, e.sum_initial);
  EXPECT_EQ(a.sum_reserve, e.sum_reserve);
  EXPECT_EQ(a.west, e.west);
  EXPECT_EQ(a.sum_extra, e.sum_extra);
  EXPECT_EQ(a.fnv, e.fnv);
}

TEST(GeneratorTest, AggregatesOverTheFirst100000EventsMatch) {
  expect_aggregates(aggregate(100000),
                    {.persons = 2000, .auctions = 6000, .bids = 92000, .sum_dt = 499950000,
                     .sum_price = 667953890778, .sum_auction = 363648112, .sum_bidder = 172130989,
                     .sum_seller = 11266569, .sum_category = 71909, .cat10 = 1236, .sum_len = 1006849,
                     .sum_initial = 42818320499, .sum_reserve = 84210428628, .west = 977,
                     .sum_extra = 8831581, .fnv = 0x65335e78661e5ec5ULL});
}

TEST(GeneratorTest, AggregatesOverTheFirstMillionEventsMatch) {
  expect_aggregates(aggregate(1000000),
                    {.persons = 20000, .auctions = 60000, .bids = 920000, .sum_dt = 49999500000,
                     .sum_price = 6659865839701, .sum_auction = 28477004074, .sum_bidder = 9975213650,
                     .sum_seller = 650505402, .sum_category = 720077, .cat10 = 12041, .sum_len = 10022075,
                     .sum_initial = 430393391801, .sum_reserve = 857978436688, .west = 9884,
                     .sum_extra = 88272222, .fnv = 0x4022f3e28e31ae40ULL});
}

TEST(GeneratorTest, ChannelsAndUrlsAreDeterministicAndWellFormed) {
  Generator g1, g2;
  int hot = 0, with_id = 0;
  for (int64_t n = 0; n < 5000; ++n) {
    Event a = g1.generate(n), b = g2.generate(n);
    if (a.type != EventType::kBid) continue;
    EXPECT_EQ(a.bid.url, b.bid.url);
    EXPECT_EQ(a.bid.url.rfind("https://www.nexmark.com/", 0), 0u) << a.bid.url;
    hot += a.bid.channel.rfind("channel-", 0) != 0;
    with_id += a.bid.url.find("&channel_id=") != std::string::npos;
  }
  EXPECT_GT(hot, 1500);      // about half of ~4600 bids
  EXPECT_GT(with_id, 1500);  // 9/10 of the other half
}

}  // namespace
}  // namespace weir::nexmark
