// What the at-most-once tests of the running-sum job check: the count an
// embedded run reports, against what its committed output lacks.
#ifndef WEIR_TESTS_AT_MOST_ONCE_CHECKS_H_
#define WEIR_TESTS_AT_MOST_ONCE_CHECKS_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "examples/running_sum/running_sum.h"

namespace weir::testing {

// The records an embedded run's summary says were lost (at-most-once), 0
// when it says none.
inline int64_t lost_records_in(const std::string& summary) {
  static constexpr std::string_view kSaid =
      "records lost (at-most-once: read after the checkpoint a restart restored, or dropped in flight): ";
  const size_t at = summary.find(kSaid);
  return at == std::string::npos ? 0 : std::atoll(summary.c_str() + at + kSaid.size());
}

// The committed output is at most once (nothing twice, the sums follow
// from the records there) and lacks exactly the `counted` records the job
// said it lost, valid or malformed.
inline void expect_at_most_once(const examples::RunningSumCheck& c, int64_t counted) {
  EXPECT_TRUE(c.at_most_once);
  if (!c.at_most_once) {
    for (const auto& p : c.problems) ADD_FAILURE() << p;
  }
  EXPECT_EQ(c.lost_records + c.lost_rejects, counted)
      << "the job counted " << counted << " lost; the output lacks " << c.lost_records << " sums and "
      << c.lost_rejects << " rejects";
}

}  // namespace weir::testing

#endif  // WEIR_TESTS_AT_MOST_ONCE_CHECKS_H_
