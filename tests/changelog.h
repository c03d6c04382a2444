// Changelogs in tests: the table a changelog of result lines ("+I,row",
// "-U,row", "+U,row", "-D,row") leaves, and which Nexmark queries write
// one.
#ifndef WEIR_TESTS_CHANGELOG_H_
#define WEIR_TESTS_CHANGELOG_H_

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace weir::testing {

// Applies `changes` in order and returns the resulting table, sorted; a
// retraction of a row not present fails the test.
inline std::vector<std::string> apply_changelog(const std::vector<std::string>& changes) {
  std::multiset<std::string> table;
  for (const auto& c : changes) {
    const std::string kind = c.substr(0, 2), row = c.size() > 3 ? c.substr(3) : "";
    if (kind == "+I" || kind == "+U") {
      table.insert(row);
    } else {
      auto it = table.find(row);
      EXPECT_NE(it, table.end()) << "retraction of a row not in the table: " << c;
      if (it != table.end()) table.erase(it);
    }
  }
  return {table.begin(), table.end()};
}

// The Nexmark queries whose results are changelogs.
inline bool is_updating_nexmark_query(const std::string& q) {
  return q == "q4" || q == "q6" || q == "q9" || q == "q15" || q == "q16" || q == "q17" || q == "q18" || q == "q19";
}

}  // namespace weir::testing

#endif  // WEIR_TESTS_CHANGELOG_H_
