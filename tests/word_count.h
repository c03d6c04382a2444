// The job template's word count (examples/job-template) as the tests run
// it: input of random words, and the check that its output counts each
// occurrence exactly once.
#ifndef WEIR_TESTS_WORD_COUNT_H_
#define WEIR_TESTS_WORD_COUNT_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "weir/connectors.h"

namespace weir::testing {

// Lines of words drawn from a small vocabulary, some lines empty.
inline void write_words(const std::string& path, int lines, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::ofstream out(path);
  for (int i = 0; i < lines; ++i) {
    int n = static_cast<int>(rng() % 9);
    for (int w = 0; w < n; ++w) out << (w ? " " : "") << "w" << rng() % 300;
    out << "\n";
  }
}

// The template's output is "word,count" for every occurrence: exactly once
// means each word's counts are 1..n, each once, n its occurrences.
inline void expect_word_counts_exactly_once(const std::string& input, const std::string& output) {
  std::map<std::string, int64_t> expected;
  std::ifstream in(input);
  std::string line;
  while (std::getline(in, line)) {
    size_t i = 0;
    while (i < line.size()) {
      size_t j = line.find(' ', i);
      if (j == std::string::npos) j = line.size();
      if (j > i) ++expected[line.substr(i, j - i)];
      i = j + 1;
    }
  }
  auto lines = read_published_lines(output, "part");
  ASSERT_TRUE(lines.ok()) << lines.status();
  std::map<std::string, std::vector<int64_t>> seen;
  for (const auto& l : *lines) {
    size_t comma = l.rfind(',');
    ASSERT_NE(comma, std::string::npos) << l;
    seen[l.substr(0, comma)].push_back(std::stoll(l.substr(comma + 1)));
  }
  ASSERT_FALSE(expected.empty());
  int wrong = 0;
  for (const auto& [word, n] : expected) {
    auto counts = seen[word];
    std::sort(counts.begin(), counts.end());
    std::vector<int64_t> want(n);
    for (int64_t k = 0; k < n; ++k) want[k] = k + 1;
    if (counts != want && ++wrong <= 5) {
      ADD_FAILURE() << "word " << word << ": " << counts.size() << " counts emitted for " << n << " occurrences";
    }
  }
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(seen.size(), expected.size()) << "words in the output that the input lacks";
}

}  // namespace weir::testing

#endif  // WEIR_TESTS_WORD_COUNT_H_
