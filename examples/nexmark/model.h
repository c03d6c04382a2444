// Nexmark events: persons, auctions and bids of an online auction site, as
// specified in docs/nexmark.md (field meanings, units) — prices in cents,
// times in milliseconds since the epoch (UTC).
#ifndef WEIR_EXAMPLES_NEXMARK_MODEL_H_
#define WEIR_EXAMPLES_NEXMARK_MODEL_H_

#include <cstdint>
#include <string>
#include <tuple>

#include "weir/serializer.h"

namespace weir::nexmark {

struct Person {
  int64_t id = 0;
  std::string name;
  std::string email;
  std::string credit_card;
  std::string city;
  std::string state;
  int64_t date_time = 0;
  std::string extra;
  auto weir_fields() { return std::tie(id, name, email, credit_card, city, state, date_time, extra); }
};

struct Auction {
  int64_t id = 0;
  std::string item_name;
  std::string description;
  int64_t initial_bid = 0;
  int64_t reserve = 0;
  int64_t date_time = 0;
  int64_t expires = 0;
  int64_t seller = 0;
  int64_t category = 0;
  std::string extra;
  auto weir_fields() {
    return std::tie(id, item_name, description, initial_bid, reserve, date_time, expires, seller,
                    category, extra);
  }
};

struct Bid {
  int64_t auction = 0;
  int64_t bidder = 0;
  int64_t price = 0;
  std::string channel;
  std::string url;
  int64_t date_time = 0;
  std::string extra;
  auto weir_fields() { return std::tie(auction, bidder, price, channel, url, date_time, extra); }
};

// One of the three. DO NOT CHANGE values: serialized.
enum class EventType : uint8_t { kPerson = 0, kAuction = 1, kBid = 2 };

struct Event {
  EventType type = EventType::kBid;
  Person person;    // when type == kPerson
  Auction auction;  // when type == kAuction
  Bid bid;          // when type == kBid

  int64_t date_time() const {
    switch (type) {
      case EventType::kPerson: return person.date_time;
      case EventType::kAuction: return auction.date_time;
      case EventType::kBid: return bid.date_time;
    }
    return 0;
  }
};

}  // namespace weir::nexmark

namespace weir {

// Only the active member crosses the wire.
template <>
struct Serializer<nexmark::Event> {
  static void write(ByteWriter& out, const nexmark::Event& e) {
    out.put_fixed<uint8_t>(static_cast<uint8_t>(e.type));
    switch (e.type) {
      case nexmark::EventType::kPerson: Serializer<nexmark::Person>::write(out, e.person); break;
      case nexmark::EventType::kAuction: Serializer<nexmark::Auction>::write(out, e.auction); break;
      case nexmark::EventType::kBid: Serializer<nexmark::Bid>::write(out, e.bid); break;
    }
  }
  static nexmark::Event read(ByteReader& in) {
    nexmark::Event e;
    uint8_t t = in.get_fixed<uint8_t>();
    if (t > 2) {
      in.fail();
      return e;
    }
    e.type = static_cast<nexmark::EventType>(t);
    switch (e.type) {
      case nexmark::EventType::kPerson: e.person = Serializer<nexmark::Person>::read(in); break;
      case nexmark::EventType::kAuction: e.auction = Serializer<nexmark::Auction>::read(in); break;
      case nexmark::EventType::kBid: e.bid = Serializer<nexmark::Bid>::read(in); break;
    }
    return e;
  }
};

}  // namespace weir

#endif  // WEIR_EXAMPLES_NEXMARK_MODEL_H_
