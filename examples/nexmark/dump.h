// Writes generated Nexmark events as CSV files (persons.csv, auctions.csv,
// bids.csv, each with a header row; times in ms since the epoch), so any
// other tool can compute the same queries. No field contains a comma, so
// there is no quoting.
#ifndef WEIR_EXAMPLES_NEXMARK_DUMP_H_
#define WEIR_EXAMPLES_NEXMARK_DUMP_H_

#include <string>

#include "absl/status/status.h"
#include "examples/nexmark/generator.h"

namespace weir::nexmark {

absl::Status dump_events(const Generator& gen, int64_t events, const std::string& dir);

}  // namespace weir::nexmark

#endif  // WEIR_EXAMPLES_NEXMARK_DUMP_H_
