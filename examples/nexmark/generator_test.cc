// The generator against the published test vectors: single events and
// aggregate checks over the first 100 000 events at 10 000 events/s.
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

TEST(GeneratorTest, AggregatesOverTheFirst100000EventsMatch) {
  Generator g(vector_config());
  const int64_t base = g.config().base_time;
  int64_t persons = 0, auctions = 0, bids = 0, sum_dt = 0, sum_price = 0, sum_auction = 0,
          sum_bidder = 0, sum_seller = 0, sum_category = 0, cat10 = 0, sum_len = 0,
          sum_initial = 0, sum_reserve = 0, west = 0, sum_extra = 0;
  uint64_t h = 0xcbf29ce484222325ULL;
  auto hash = [&](const std::string& s) {
    for (unsigned char c : s) {
      h ^= c;
      h *= 0x100000001b3ULL;
    }
    h ^= static_cast<unsigned char>('|');
    h *= 0x100000001b3ULL;
  };
  Event e;
  for (int64_t n = 0; n < 100000; ++n) {
    g.generate_into(n, &e);
    sum_dt += e.date_time() - base;
    switch (e.type) {
      case EventType::kPerson:
        ++persons;
        if (e.person.state == "OR" || e.person.state == "ID" || e.person.state == "CA") ++west;
        sum_extra += static_cast<int64_t>(e.person.extra.size());
        for (auto* s : {&e.person.name, &e.person.email, &e.person.credit_card, &e.person.city,
                        &e.person.state, &e.person.extra}) {
          hash(*s);
        }
        break;
      case EventType::kAuction:
        ++auctions;
        sum_seller += e.auction.seller;
        sum_category += e.auction.category;
        cat10 += e.auction.category == 10;
        sum_len += e.auction.expires - e.auction.date_time;
        sum_initial += e.auction.initial_bid;
        sum_reserve += e.auction.reserve;
        sum_extra += static_cast<int64_t>(e.auction.extra.size());
        for (auto* s : {&e.auction.item_name, &e.auction.description, &e.auction.extra}) hash(*s);
        break;
      case EventType::kBid:
        ++bids;
        sum_price += e.bid.price;
        sum_auction += e.bid.auction;
        sum_bidder += e.bid.bidder;
        sum_extra += static_cast<int64_t>(e.bid.extra.size());
        hash(e.bid.extra);
        break;
    }
  }
  EXPECT_EQ(persons, 2000);
  EXPECT_EQ(auctions, 6000);
  EXPECT_EQ(bids, 92000);
  EXPECT_EQ(sum_dt, 499950000);
  EXPECT_EQ(sum_price, 667953890778);
  EXPECT_EQ(sum_auction, 363648112);
  EXPECT_EQ(sum_bidder, 172130989);
  EXPECT_EQ(sum_seller, 11266569);
  EXPECT_EQ(sum_category, 71909);
  EXPECT_EQ(cat10, 1236);
  EXPECT_EQ(sum_len, 1006849);
  EXPECT_EQ(sum_initial, 42818320499);
  EXPECT_EQ(sum_reserve, 84210428628);
  EXPECT_EQ(west, 977);
  EXPECT_EQ(sum_extra, 8831581);
  EXPECT_EQ(h, 0x65335e78661e5ec5ULL);
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
