// The Nexmark event generator, bit-compatible with Beam's (per-event
// java.util.Random seeded by the event id), as one logical generator
// timeline: event number n has event id n and event time
//   base_time + floor(n * 1000 / event_rate)
// so the events, their content and their times depend only on the
// configuration, never on how many source subtasks read them. Bids also get
// a channel and a URL (drawn after `extra`, from tables built with seed 0).
// Choices and their reasons are in docs/nexmark.md.
//
// Thread-compatible: a Generator is immutable after construction; generate()
// may run concurrently on one instance.
#ifndef WEIR_EXAMPLES_NEXMARK_GENERATOR_H_
#define WEIR_EXAMPLES_NEXMARK_GENERATOR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "examples/nexmark/model.h"

namespace weir::nexmark {

// java.util.Random: a 48-bit linear congruential generator.
class JavaRandom {
 public:
  // state' = (state * kMultiplier + kIncrement) mod 2^48.
  static constexpr uint64_t kMask = (1ULL << 48) - 1;
  static constexpr uint64_t kMultiplier = 0x5DEECE66DULL;
  static constexpr uint64_t kIncrement = 0xBULL;

  explicit JavaRandom(int64_t seed)
      : state_((static_cast<uint64_t>(seed) ^ kMultiplier) & kMask) {}

  int32_t next(int bits) {
    state_ = (state_ * kMultiplier + kIncrement) & kMask;
    return static_cast<int32_t>(static_cast<int64_t>(state_ >> (48 - bits)));
  }
  int32_t next_int() { return next(32); }
  // Inline, so a constant bound divides by a constant.
  int32_t next_int(int32_t bound) {
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
  int64_t next_long() {
    int64_t hi = static_cast<int64_t>(next(32));
    int64_t lo = static_cast<int64_t>(next(32));
    return static_cast<int64_t>(static_cast<uint64_t>(hi) << 32) + lo;
  }
  // The state itself, for computing draws ahead (next_exact_string in
  // generator.cc).
  uint64_t state() const { return state_; }
  void set_state(uint64_t state) { state_ = state & kMask; }
  double next_double() {
    int64_t a = next(26), b = next(27);
    return static_cast<double>((a << 27) + b) * (1.0 / static_cast<double>(1LL << 53));
  }

 private:
  uint64_t state_;
};

namespace internal {
// Beam's nextExactString: `len` characters into *out, drawing from `rng`
// (declared here for its test against a character-at-a-time version).
void next_exact_string(JavaRandom& rng, int64_t len, std::string* out);
}  // namespace internal

struct GeneratorConfig {
  // Event time of event 0. Default: 2015-07-15T00:00:00Z, as in Beam.
  int64_t base_time = 1436918400000;
  // Events per second of event time (not a speed limit). Default: 10 M/s, the
  // rate of the published Flink runs.
  int64_t event_rate = 10'000'000;
  int64_t person_proportion = 1;
  int64_t auction_proportion = 3;
  int64_t bid_proportion = 46;
  int64_t num_active_people = 1000;
  int64_t num_in_flight_auctions = 100;
  int64_t hot_auction_ratio = 2;
  int64_t hot_bidders_ratio = 4;
  int64_t hot_sellers_ratio = 4;
  int64_t avg_person_byte_size = 200;
  int64_t avg_auction_byte_size = 500;
  int64_t avg_bid_byte_size = 100;
};

class Generator {
 public:
  explicit Generator(GeneratorConfig config = {});

  // Event number n (= event id).
  Event generate(int64_t n) const;
  // Fills `e` in place, reusing its strings' capacity.
  void generate_into(int64_t n, Event* e) const;
  int64_t timestamp(int64_t n) const;
  const GeneratorConfig& config() const { return config_; }

 private:
  int64_t total() const {
    return config_.person_proportion + config_.auction_proportion + config_.bid_proportion;
  }
  // Event number n, and where it falls in the person/auction/bid cycle
  // (computed once per event: a division by a runtime value is not free).
  struct Slot {
    int64_t n;
    int64_t epoch;   // n / total()
    int64_t offset;  // n % total()
  };
  int64_t last_base0_person_id(const Slot& e) const;
  int64_t last_base0_auction_id(const Slot& e) const;
  int64_t next_base0_person_id(const Slot& e, JavaRandom& rng) const;
  int64_t next_base0_auction_id(const Slot& e, JavaRandom& rng) const;
  void person(const Slot& e, int64_t ts, JavaRandom& rng, Person* p) const;
  void auction(const Slot& e, int64_t ts, JavaRandom& rng, Auction* a) const;
  void bid(const Slot& e, int64_t ts, JavaRandom& rng, Bid* b) const;

  const GeneratorConfig config_;
  std::vector<std::string> hot_urls_;  // 4
  // The 10000 other channels: "channel-<c>" followed by its URL, for each c
  // at channel_[c] in one block, so a bid's random channel costs one cache
  // miss, not one per string object and one per string.
  struct ChannelText {
    uint32_t offset;
    uint16_t name_size;
    uint16_t url_size;
  };
  std::string channel_text_;
  std::vector<ChannelText> channel_;
};

}  // namespace weir::nexmark

#endif  // WEIR_EXAMPLES_NEXMARK_GENERATOR_H_
