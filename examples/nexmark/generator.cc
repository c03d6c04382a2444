#include "examples/nexmark/generator.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace weir::nexmark {
namespace {

constexpr int64_t kFirstPersonId = 1000;
constexpr int64_t kFirstAuctionId = 1000;
constexpr int64_t kFirstCategoryId = 10;
constexpr int64_t kNumCategories = 5;
constexpr int64_t kPersonIdLead = 10;
constexpr int64_t kAuctionIdLead = 10;
constexpr int64_t kHotSellerRatio = 100;
constexpr int64_t kHotAuctionRatio = 100;
constexpr int64_t kHotBidderRatio = 100;

const char* const kFirstNames[] = {"Peter", "Paul",  "Luke",  "John",   "Saul",  "Vicky",
                                   "Kate",  "Julie", "Sarah", "Deiter", "Walter"};
const char* const kLastNames[] = {"Shultz", "Abrams", "Spencer", "White", "Bartels",
                                  "Walton", "Smith",  "Jones",   "Noris"};
const char* const kCities[] = {"Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland",
                               "Bend",    "Redmond",     "Seattle",       "Kent",  "Cheyenne"};
const char* const kStates[] = {"AZ", "CA", "ID", "OR", "WA", "WY"};
const char* const kHotChannels[] = {"Google", "Facebook", "Baidu", "Apple"};

// Random long below n, as the reference does it.
int64_t rand_below(JavaRandom& rng, int64_t n) {
  if (n < 2147483647) return rng.next_int(static_cast<int32_t>(n));
  int64_t v = rng.next_long() % n;
  return v < 0 ? -v : v;
}

// 3 .. max_len-1 characters of a-z or `special`, then trimmed like Java's
// String.trim().
void next_string(JavaRandom& rng, int max_len, char special, std::string* out) {
  int len = 3 + rng.next_int(max_len - 3);
  out->clear();
  for (int i = 0; i < len; ++i) {
    if (rng.next_int(13) == 0) {
      out->push_back(special);
    } else {
      out->push_back(static_cast<char>('a' + rng.next_int(26)));
    }
  }
  size_t b = 0, e = out->size();
  while (b < e && static_cast<unsigned char>((*out)[b]) <= ' ') ++b;
  while (e > b && static_cast<unsigned char>((*out)[e - 1]) <= ' ') --e;
  if (b > 0 || e < out->size()) *out = out->substr(b, e - b);
}

void next_exact_string(JavaRandom& rng, int64_t len, std::string* out) {
  out->clear();
  out->reserve(static_cast<size_t>(len));
  int32_t x = 0;
  for (int64_t i = 0; i < len; ++i) {
    if (i % 6 == 0) x = rng.next_int();
    out->push_back(static_cast<char>('a' + x % 26));  // signed remainder
    x /= 26;
  }
}

int64_t round_half_up(double v) { return static_cast<int64_t>(std::floor(v + 0.5)); }

void next_extra(JavaRandom& rng, int64_t current, int64_t avg, std::string* out) {
  if (current > avg) {
    out->clear();
    return;
  }
  int64_t d = avg - current;
  int64_t delta = round_half_up(static_cast<double>(d) * 0.2);
  int64_t min = d - delta;
  int64_t size = min + (delta == 0 ? 0 : rng.next_int(static_cast<int32_t>(2 * delta)));
  next_exact_string(rng, size, out);
}

int64_t next_price(JavaRandom& rng) {
  return round_half_up(std::pow(10.0, rng.next_double() * 6.0) * 100.0);
}

int32_t bit_reverse32(int32_t v) {
  uint32_t x = static_cast<uint32_t>(v), r = 0;
  for (int i = 0; i < 32; ++i) {
    r = (r << 1) | (x & 1);
    x >>= 1;
  }
  return static_cast<int32_t>(r);
}

std::string base_url(JavaRandom& rng) {
  std::string a, b, c;
  next_string(rng, 5, '_', &a);
  next_string(rng, 5, '_', &b);
  next_string(rng, 5, '_', &c);
  return "https://www.nexmark.com/" + a + "/" + b + "/" + c + "/item.htm?query=1";
}

}  // namespace

int32_t JavaRandom::next_int(int32_t bound) {
  if ((bound & -bound) == bound) {
    return static_cast<int32_t>((static_cast<int64_t>(bound) * next(31)) >> 31);
  }
  int32_t bits, val;
  do {
    bits = next(31);
    val = bits % bound;
  } while (static_cast<int64_t>(bits) - val + (bound - 1) > INT32_MAX);
  return val;
}

Generator::Generator(GeneratorConfig config) : config_(config) {
  JavaRandom rng(0);
  for (int i = 0; i < 4; ++i) hot_urls_.push_back(base_url(rng));
  channel_urls_.reserve(10000);
  for (int32_t c = 0; c < 10000; ++c) {
    std::string u = base_url(rng);
    if (rng.next_int(10) > 0) {
      int32_t r = bit_reverse32(c);
      // Java's Math.abs(int): INT32_MIN stays negative.
      int64_t shown = r == INT32_MIN ? static_cast<int64_t>(INT32_MIN) : std::abs(static_cast<int64_t>(r));
      u += "&channel_id=" + std::to_string(shown);
    }
    channel_urls_.push_back(std::move(u));
  }
}

int64_t Generator::timestamp(int64_t n) const {
  __int128 ms = static_cast<__int128>(n) * 1000 / config_.event_rate;
  return config_.base_time + static_cast<int64_t>(ms);
}

int64_t Generator::last_base0_person_id(int64_t e) const {
  int64_t epoch = e / total(), off = e % total();
  if (off >= config_.person_proportion) off = config_.person_proportion - 1;
  return epoch * config_.person_proportion + off;
}

int64_t Generator::last_base0_auction_id(int64_t e) const {
  int64_t epoch = e / total(), off = e % total();
  if (off < config_.person_proportion) {
    epoch -= 1;
    off = config_.auction_proportion - 1;
  } else if (off >= config_.person_proportion + config_.auction_proportion) {
    off = config_.auction_proportion - 1;
  } else {
    off -= config_.person_proportion;
  }
  return epoch * config_.auction_proportion + off;
}

int64_t Generator::next_base0_person_id(int64_t e, JavaRandom& rng) const {
  int64_t num_people = last_base0_person_id(e) + 1;
  int64_t active = std::min(num_people, config_.num_active_people);
  return num_people - active + rand_below(rng, active + kPersonIdLead);
}

int64_t Generator::next_base0_auction_id(int64_t e, JavaRandom& rng) const {
  int64_t max_a = last_base0_auction_id(e);
  int64_t min_a = std::max<int64_t>(max_a - config_.num_in_flight_auctions, 0);
  return min_a + rand_below(rng, max_a - min_a + 1 + kAuctionIdLead);
}

void Generator::person(int64_t e, int64_t ts, JavaRandom& rng, Person* p) const {
  p->id = last_base0_person_id(e) + kFirstPersonId;
  // Draws in order (the operands of + are not sequenced).
  const char* first = kFirstNames[rng.next_int(11)];
  const char* last = kLastNames[rng.next_int(9)];
  p->name = std::string(first) + " " + last;
  std::string user, domain;
  next_string(rng, 7, ' ', &user);
  next_string(rng, 5, ' ', &domain);
  p->email = user + "@" + domain + ".com";
  char cc[20];
  int a = rng.next_int(10000), b = rng.next_int(10000), c = rng.next_int(10000),
      d = rng.next_int(10000);
  std::snprintf(cc, sizeof(cc), "%04d %04d %04d %04d", a, b, c, d);
  p->credit_card = cc;
  p->city = kCities[rng.next_int(10)];
  p->state = kStates[rng.next_int(6)];
  int64_t size = 8 + static_cast<int64_t>(p->name.size() + p->email.size() +
                                          p->credit_card.size() + p->city.size() + p->state.size());
  next_extra(rng, size, config_.avg_person_byte_size, &p->extra);
  p->date_time = ts;
}

void Generator::auction(int64_t e, int64_t ts, JavaRandom& rng, Auction* a) const {
  a->id = last_base0_auction_id(e) + kFirstAuctionId;
  int64_t seller;
  if (rng.next_int(static_cast<int32_t>(config_.hot_sellers_ratio)) > 0) {
    seller = (last_base0_person_id(e) / kHotSellerRatio) * kHotSellerRatio;
  } else {
    seller = next_base0_person_id(e, rng);
  }
  a->seller = seller + kFirstPersonId;
  a->category = kFirstCategoryId + rng.next_int(static_cast<int32_t>(kNumCategories));
  a->initial_bid = next_price(rng);
  // One generator: the current event number is the event id.
  int64_t ahead = (config_.num_in_flight_auctions * total()) / config_.auction_proportion;
  int64_t horizon = timestamp(e + ahead) - ts;
  a->expires = ts + 1 + rand_below(rng, std::max<int64_t>(2 * horizon, 1));
  next_string(rng, 20, ' ', &a->item_name);
  next_string(rng, 100, ' ', &a->description);
  a->reserve = a->initial_bid + next_price(rng);
  int64_t size = 8 + static_cast<int64_t>(a->item_name.size() + a->description.size()) + 40;
  next_extra(rng, size, config_.avg_auction_byte_size, &a->extra);
  a->date_time = ts;
}

void Generator::bid(int64_t e, int64_t ts, JavaRandom& rng, Bid* b) const {
  int64_t auction;
  if (rng.next_int(static_cast<int32_t>(config_.hot_auction_ratio)) > 0) {
    auction = (last_base0_auction_id(e) / kHotAuctionRatio) * kHotAuctionRatio;
  } else {
    auction = next_base0_auction_id(e, rng);
  }
  b->auction = auction + kFirstAuctionId;
  int64_t bidder;
  if (rng.next_int(static_cast<int32_t>(config_.hot_bidders_ratio)) > 0) {
    bidder = (last_base0_person_id(e) / kHotBidderRatio) * kHotBidderRatio + 1;
  } else {
    bidder = next_base0_person_id(e, rng);
  }
  b->bidder = bidder + kFirstPersonId;
  b->price = next_price(rng);
  next_extra(rng, 32, config_.avg_bid_byte_size, &b->extra);
  if (rng.next_int(2) > 0) {
    int i = rng.next_int(4);
    b->channel = kHotChannels[i];
    b->url = hot_urls_[i];
  } else {
    int c = rng.next_int(10000);
    b->channel = "channel-" + std::to_string(c);
    b->url = channel_urls_[c];
  }
  b->date_time = ts;
}

void Generator::generate_into(int64_t n, Event* ev) const {
  int64_t ts = timestamp(n);
  JavaRandom rng(n);
  int64_t r = n % total();
  if (r < config_.person_proportion) {
    ev->type = EventType::kPerson;
    person(n, ts, rng, &ev->person);
  } else if (r < config_.person_proportion + config_.auction_proportion) {
    ev->type = EventType::kAuction;
    auction(n, ts, rng, &ev->auction);
  } else {
    ev->type = EventType::kBid;
    bid(n, ts, rng, &ev->bid);
  }
}

Event Generator::generate(int64_t n) const {
  Event e;
  generate_into(n, &e);
  return e;
}

}  // namespace weir::nexmark
