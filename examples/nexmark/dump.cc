#include "examples/nexmark/dump.h"

#include <filesystem>
#include <fstream>

namespace weir::nexmark {

absl::Status dump_events(const Generator& gen, int64_t events, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::PermissionDeniedError("cannot create " + dir + ": " + ec.message());
  std::ofstream persons(dir + "/persons.csv"), auctions(dir + "/auctions.csv"), bids(dir + "/bids.csv");
  if (!persons || !auctions || !bids) return absl::PermissionDeniedError("cannot write CSV files in " + dir);
  persons << "id,name,emailAddress,creditCard,city,state,dateTime,extra\n";
  auctions << "id,itemName,description,initialBid,reserve,dateTime,expires,seller,category,extra\n";
  bids << "auction,bidder,price,channel,url,dateTime,extra\n";
  Event e;
  for (int64_t n = 0; n < events; ++n) {
    gen.generate_into(n, &e);
    switch (e.type) {
      case EventType::kPerson: {
        const Person& p = e.person;
        persons << p.id << ',' << p.name << ',' << p.email << ',' << p.credit_card << ',' << p.city
                << ',' << p.state << ',' << p.date_time << ',' << p.extra << '\n';
        break;
      }
      case EventType::kAuction: {
        const Auction& a = e.auction;
        auctions << a.id << ',' << a.item_name << ',' << a.description << ',' << a.initial_bid << ','
                 << a.reserve << ',' << a.date_time << ',' << a.expires << ',' << a.seller << ','
                 << a.category << ',' << a.extra << '\n';
        break;
      }
      case EventType::kBid: {
        const Bid& b = e.bid;
        bids << b.auction << ',' << b.bidder << ',' << b.price << ',' << b.channel << ',' << b.url
             << ',' << b.date_time << ',' << b.extra << '\n';
        break;
      }
    }
  }
  persons.close();
  auctions.close();
  bids.close();
  if (!persons || !auctions || !bids) return absl::ResourceExhaustedError("writing CSV files in " + dir + " failed");
  return absl::OkStatus();
}

}  // namespace weir::nexmark
