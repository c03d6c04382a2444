#include "examples/nexmark/generator.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string_view>

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
constexpr std::string_view kHotChannels[] = {"Google", "Facebook", "Baidu", "Apple"};

// Random long below n, as the reference does it.
int64_t rand_below(JavaRandom& rng, int64_t n) {
  if (n < 2147483647) return rng.next_int(static_cast<int32_t>(n));
  int64_t v = rng.next_long() % n;
  return v < 0 ? -v : v;
}

// Three base-26 digits v = d0 + 26 d1 + 676 d2 (v < 17576) as characters,
// d0 first: added to 'a' at [v], subtracted from it at [17576 + v]; the
// fourth byte pads an entry to one 4-byte store.
struct DigitTriples {
  static constexpr uint32_t kSize = 26 * 26 * 26;
  char triple[2 * kSize][4];
  constexpr DigitTriples() : triple() {
    for (uint32_t v = 0; v < kSize; ++v) {
      for (uint32_t k = 0, d = v; k < 3; ++k, d /= 26) {
        triple[v][k] = static_cast<char>('a' + d % 26);
        triple[kSize + v][k] = static_cast<char>('a' - static_cast<int>(d % 26));
      }
    }
  }
};
constexpr DigitTriples kDigitTriples;

// java.util.Random j steps ahead: the state after j draws from s is
// (a[j] * s + c[j]) mod 2^48. With it the draws of one string are computed
// from the starting state independently, not each from the one before, so
// the processor overlaps them instead of waiting on a chain of multiplies.
struct RandomJumps {
  static constexpr int kMax = 96;
  uint64_t a[kMax + 1];
  uint64_t c[kMax + 1];
  constexpr RandomJumps() : a(), c() {
    a[0] = 1;
    c[0] = 0;
    for (int j = 1; j <= kMax; ++j) {
      a[j] = (a[j - 1] * JavaRandom::kMultiplier) & JavaRandom::kMask;
      c[j] = (c[j - 1] * JavaRandom::kMultiplier + JavaRandom::kIncrement) & JavaRandom::kMask;
    }
  }
};
constexpr RandomJumps kRandomJumps;

// Six characters of nextExactString from one draw x, at p..p+6 (p[6] is
// written too and overwritten by the next group): two entries of three
// digits each, the table half chosen by the sign of x without a branch,
// because the sign is a coin toss a branch predictor loses half the time.
inline void put_six_digits(int32_t x, char* p) {
  constexpr uint32_t k = DigitTriples::kSize;
  const uint32_t neg = static_cast<uint32_t>(x >> 31);        // all ones when x < 0
  const uint32_t u = (static_cast<uint32_t>(x) ^ neg) - neg;  // |x|, 2^31 for INT32_MIN
  const uint32_t half = neg & k;
  const uint32_t high = u / k;  // digits 3.. (above 5: dropped below)
  std::memcpy(p, kDigitTriples.triple[half + (u - high * k)], 4);
  std::memcpy(p + 3, kDigitTriples.triple[half + high % k], 4);
}

// 3 .. max_len-1 characters of a-z or `special`, then trimmed like Java's
// String.trim().
void next_string(JavaRandom& rng, int max_len, char special, std::string* out) {
  JavaRandom r = rng;  // in a register: the character stores below may alias it otherwise
  const int len = 3 + r.next_int(max_len - 3);
  out->resize(static_cast<size_t>(len));
  char* p = out->data();
  for (int i = 0; i < len; ++i) {
    p[i] = r.next_int(13) == 0 ? special : static_cast<char>('a' + r.next_int(26));
  }
  rng = r;
  size_t b = 0, e = out->size();
  while (b < e && static_cast<unsigned char>((*out)[b]) <= ' ') ++b;
  while (e > b && static_cast<unsigned char>((*out)[e - 1]) <= ' ') --e;
  out->erase(e);
  out->erase(0, b);
}

// Java's Math.round, floor(v + 0.5), for v >= 0 (every use here), where
// floor is truncation: no call to floor().
int64_t round_half_up(double v) { return static_cast<int64_t>(v + 0.5); }

void next_extra(JavaRandom& rng, int64_t current, int64_t avg, std::string* out) {
  if (current > avg) {
    out->clear();
    return;
  }
  int64_t d = avg - current;
  int64_t delta = round_half_up(static_cast<double>(d) * 0.2);
  int64_t min = d - delta;
  int64_t size = min + (delta == 0 ? 0 : rng.next_int(static_cast<int32_t>(2 * delta)));
  internal::next_exact_string(rng, size, out);
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

// Beam's nextExactString: character i is 'a' + x % 26, then x /= 26, with a
// fresh x = nextInt() every 6 characters. Java's % and / truncate toward
// zero, so the 6 characters of one draw are the 6 low base-26 digits of |x|
// added to 'a', or subtracted from it when x < 0 (put_six_digits). The first
// RandomJumps::kMax draws are computed from the starting state, the rest one
// after another. Whole groups are written into slack past `len` and the
// string is cut back at the end.
void internal::next_exact_string(JavaRandom& rng, int64_t len, std::string* out) {
  const size_t n = static_cast<size_t>(len);
  const size_t groups = (n + 5) / 6;
  out->resize(groups * 6 + 1);  // +1: the last group's second store is 4 bytes
  char* p = out->data();
  const size_t ahead = std::min<size_t>(groups, RandomJumps::kMax);
  const uint64_t s0 = rng.state();
  for (size_t g = 1; g <= ahead; ++g, p += 6) {
    const uint64_t s = (kRandomJumps.a[g] * s0 + kRandomJumps.c[g]) & JavaRandom::kMask;
    put_six_digits(static_cast<int32_t>(s >> 16), p);  // next(32)
  }
  rng.set_state(kRandomJumps.a[ahead] * s0 + kRandomJumps.c[ahead]);
  for (size_t g = ahead; g < groups; ++g, p += 6) put_six_digits(rng.next_int(), p);
  out->resize(n);
}

Generator::Generator(GeneratorConfig config) : config_(config) {
  JavaRandom rng(0);
  for (int i = 0; i < 4; ++i) hot_urls_.push_back(base_url(rng));
  channel_.reserve(10000);
  for (int32_t c = 0; c < 10000; ++c) {
    std::string name = "channel-" + std::to_string(c);
    std::string u = base_url(rng);
    if (rng.next_int(10) > 0) {
      int32_t r = bit_reverse32(c);
      // Java's Math.abs(int): INT32_MIN stays negative.
      int64_t shown = r == INT32_MIN ? static_cast<int64_t>(INT32_MIN) : std::abs(static_cast<int64_t>(r));
      u += "&channel_id=" + std::to_string(shown);
    }
    channel_.push_back(ChannelText{static_cast<uint32_t>(channel_text_.size()),
                                   static_cast<uint16_t>(name.size()), static_cast<uint16_t>(u.size())});
    channel_text_ += name;
    channel_text_ += u;
  }
}

int64_t Generator::timestamp(int64_t n) const {
  if (n >= 0 && n <= INT64_MAX / 1000) return config_.base_time + n * 1000 / config_.event_rate;
  __int128 ms = static_cast<__int128>(n) * 1000 / config_.event_rate;
  return config_.base_time + static_cast<int64_t>(ms);
}

int64_t Generator::last_base0_person_id(const Slot& e) const {
  int64_t epoch = e.epoch, off = e.offset;
  if (off >= config_.person_proportion) off = config_.person_proportion - 1;
  return epoch * config_.person_proportion + off;
}

int64_t Generator::last_base0_auction_id(const Slot& e) const {
  int64_t epoch = e.epoch, off = e.offset;
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

int64_t Generator::next_base0_person_id(const Slot& e, JavaRandom& rng) const {
  int64_t num_people = last_base0_person_id(e) + 1;
  int64_t active = std::min(num_people, config_.num_active_people);
  return num_people - active + rand_below(rng, active + kPersonIdLead);
}

int64_t Generator::next_base0_auction_id(const Slot& e, JavaRandom& rng) const {
  int64_t max_a = last_base0_auction_id(e);
  int64_t min_a = std::max<int64_t>(max_a - config_.num_in_flight_auctions, 0);
  return min_a + rand_below(rng, max_a - min_a + 1 + kAuctionIdLead);
}

void Generator::person(const Slot& e, int64_t ts, JavaRandom& rng, Person* p) const {
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

void Generator::auction(const Slot& e, int64_t ts, JavaRandom& rng, Auction* a) const {
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
  int64_t horizon = timestamp(e.n + ahead) - ts;
  a->expires = ts + 1 + rand_below(rng, std::max<int64_t>(2 * horizon, 1));
  next_string(rng, 20, ' ', &a->item_name);
  next_string(rng, 100, ' ', &a->description);
  a->reserve = a->initial_bid + next_price(rng);
  int64_t size = 8 + static_cast<int64_t>(a->item_name.size() + a->description.size()) + 40;
  next_extra(rng, size, config_.avg_auction_byte_size, &a->extra);
  a->date_time = ts;
}

void Generator::bid(const Slot& e, int64_t ts, JavaRandom& rng, Bid* b) const {
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
    b->channel.assign(kHotChannels[i]);
    b->url = hot_urls_[i];
  } else {
    int c = rng.next_int(10000);
    const ChannelText& t = channel_[c];
    const char* text = channel_text_.data() + t.offset;
    b->channel.assign(text, t.name_size);
    b->url.assign(text + t.name_size, t.url_size);
  }
  b->date_time = ts;
}

void Generator::generate_into(int64_t n, Event* ev) const {
  int64_t ts = timestamp(n);
  JavaRandom rng(n);
  const Slot e{n, n / total(), n % total()};
  if (e.offset < config_.person_proportion) {
    ev->type = EventType::kPerson;
    person(e, ts, rng, &ev->person);
  } else if (e.offset < config_.person_proportion + config_.auction_proportion) {
    ev->type = EventType::kAuction;
    auction(e, ts, rng, &ev->auction);
  } else {
    ev->type = EventType::kBid;
    bid(e, ts, rng, &ev->bid);
  }
}

Event Generator::generate(int64_t n) const {
  Event e;
  generate_into(n, &e);
  return e;
}

}  // namespace weir::nexmark
