// The name nearest another by edit distance: what error messages suggest
// for a misspelled option, key or flag ("did you mean ...?").
#ifndef WEIR_COMMON_NEAREST_H_
#define WEIR_COMMON_NEAREST_H_

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

namespace weir {

// Levenshtein distance: insertions, deletions and substitutions.
inline size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// Of `names`, the one nearest `word`, within max(3, a third of its length)
// edits; else "".
inline std::string nearest_name(std::string_view word, const std::vector<std::string>& names) {
  std::string best;
  size_t best_distance = std::max<size_t>(3, word.size() / 3) + 1;
  for (const std::string& n : names) {
    const size_t d = edit_distance(word, n);
    if (d < best_distance) {
      best = n;
      best_distance = d;
    }
  }
  return best;
}

}  // namespace weir

#endif  // WEIR_COMMON_NEAREST_H_
