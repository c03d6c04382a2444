// The reference for the running-sum job: recomputes, single-threaded and
// without the engine, what the committed output must be, and compares.
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include "running_sum.h"
#include "weir/connectors.h"

namespace weir::examples {
namespace {

// Reference parse: strtoll-based, written apart from the job's parser.
bool reference_parse(const std::string& line, std::string* key, int64_t* value) {
  size_t comma = line.find(',');
  if (comma == std::string::npos || comma == 0) return false;
  std::string v = line.substr(comma + 1);
  if (v.empty()) return false;
  size_t digits_from = (v[0] == '+' || v[0] == '-') ? 1 : 0;
  if (digits_from == v.size()) return false;
  for (size_t i = digits_from; i < v.size(); ++i) {
    if (v[i] < '0' || v[i] > '9') return false;
  }
  errno = 0;
  long long parsed = std::strtoll(v.c_str(), nullptr, 10);
  if (errno == ERANGE) return false;
  *key = line.substr(0, comma);
  *value = parsed;
  return true;
}

void note(RunningSumCheck& c, const std::string& problem) {
  if (c.problems.size() < 10) c.problems.push_back(problem);
}

}  // namespace

absl::StatusOr<RunningSumCheck> check_running_sum(const std::vector<std::string>& inputs,
                                                  const std::string& output_dir,
                                                  const std::vector<std::string>* output_lines,
                                                  std::atomic<int64_t>* lines_done) {
  RunningSumCheck c;
  // Counted in steps, so that the display costs the check nothing.
  int64_t uncounted = 0;
  auto count_line = [&] {
    if (lines_done != nullptr && ++uncounted == 4096) {
      lines_done->fetch_add(uncounted, std::memory_order_relaxed);
      uncounted = 0;
    }
  };
  // Records of one key may arrive in any order across source splits, so the
  // reference is the multiset of each key's values: the committed lines of a
  // key must have counts exactly 1..n, and the differences between
  // consecutive sums must be exactly those values.
  std::map<std::string, std::multiset<int64_t>> values;
  std::multiset<int64_t> reject_lines;
  for (const auto& path : inputs) {
    std::ifstream in(path);
    if (!in) return absl::NotFoundError("cannot read input " + path);
    std::string line;
    int64_t n = 0;
    while (std::getline(in, line)) {
      ++n;
      ++c.input_lines;
      count_line();
      if (!line.empty() && line.back() == '\r') line.pop_back();
      std::string key;
      int64_t value;
      if (!reference_parse(line, &key, &value)) {
        reject_lines.insert(n);
        ++c.expected_rejects;
        continue;
      }
      values[key].insert(value);
      ++c.valid_records;
    }
  }
  c.keys = static_cast<int64_t>(values.size());

  absl::StatusOr<std::vector<std::string>> out =
      output_lines != nullptr ? *output_lines : read_published_lines(output_dir, kOutputPrefix);
  if (!out.ok()) return out.status();
  c.output_lines = static_cast<int64_t>(out->size());
  std::map<std::string, std::map<int64_t, int64_t>> sums;  // key -> count -> sum
  std::map<std::string, int64_t> lines_per_key;
  std::map<std::string, int64_t> last_count;  // key -> the highest count so far, in commit order
  bool exact = true;
  for (const std::string& l : *out) {
    count_line();
    size_t a = l.rfind(',');
    size_t b = a == std::string::npos || a == 0 ? std::string::npos : l.rfind(',', a - 1);
    if (b == std::string::npos) {
      note(c, "malformed output line: " + l);
      exact = false;
      continue;
    }
    std::string key = l.substr(0, b);
    int64_t sum = std::strtoll(l.c_str() + b + 1, nullptr, 10);
    int64_t count = std::strtoll(l.c_str() + a + 1, nullptr, 10);
    if (values.count(key) == 0) {
      note(c, "output for a key not in the input: " + l);
      exact = false;
      continue;
    }
    ++lines_per_key[key];
    int64_t& last = last_count[key];
    if (count < last) ++c.out_of_order_records;
    last = std::max(last, count);
    if (!sums[key].emplace(count, sum).second) {
      note(c, "duplicate count in output line: " + l);
      exact = false;
      ++c.duplicated_records;
    }
  }
  bool complete = true;
  bool at_most_once = c.duplicated_records == 0 && exact;  // exact so far: every line well-formed
  for (const auto& [key, vals] : values) {
    const int64_t n = static_cast<int64_t>(vals.size());
    const auto& by_count = sums[key];
    int64_t present = 0;  // of the counts 1..n
    for (auto it = by_count.lower_bound(1); it != by_count.end() && it->first <= n; ++it) ++present;
    c.lost_records += n - present;
    if (at_most_once && !by_count.empty()) {
      const int64_t m = static_cast<int64_t>(by_count.size());
      std::multiset<int64_t> left = vals;
      uint64_t prev = 0;
      bool consistent = by_count.begin()->first == 1 && by_count.rbegin()->first == m && m <= n;
      for (auto it = by_count.begin(); consistent && it != by_count.end(); ++it) {
        auto v = left.find(static_cast<int64_t>(static_cast<uint64_t>(it->second) - prev));
        if (v == left.end()) {
          consistent = false;
        } else {
          left.erase(v);
        }
        prev = static_cast<uint64_t>(it->second);
      }
      if (!consistent) {
        note(c, "key " + key + ": its counts and sums do not follow from " + std::to_string(m) + " of its records");
        at_most_once = false;
      }
    }
    if (lines_per_key[key] < n || by_count.empty() || by_count.rbegin()->first < n) {
      note(c, "key " + key + ": " + std::to_string(lines_per_key[key]) + " lines for " +
                  std::to_string(n) + " records");
      complete = false;
      exact = false;
      continue;
    }
    if (static_cast<int64_t>(by_count.size()) != n || by_count.begin()->first != 1 ||
        by_count.rbegin()->first != n) {
      note(c, "key " + key + ": counts are not exactly 1.." + std::to_string(n));
      exact = false;
      continue;
    }
    std::multiset<int64_t> diffs;
    uint64_t prev = 0;
    for (const auto& [count, sum] : by_count) {
      diffs.insert(static_cast<int64_t>(static_cast<uint64_t>(sum) - prev));
      prev = static_cast<uint64_t>(sum);
    }
    if (diffs != vals) {
      note(c, "key " + key + ": the sums do not add up to the key's values");
      exact = false;
    }
  }

  auto rejects = read_published_lines(output_dir, kRejectsPrefix);
  if (!rejects.ok()) return rejects.status();
  c.reject_lines = static_cast<int64_t>(rejects->size());
  // With several inputs, line numbers repeat across files: compare multisets.
  std::multiset<int64_t> got;
  for (const std::string& l : *rejects) got.insert(std::strtoll(l.c_str(), nullptr, 10));
  bool rejects_exact = got == reject_lines;
  bool rejects_complete = true;
  for (auto it = reject_lines.begin(); it != reject_lines.end(); it = reject_lines.upper_bound(*it)) {
    const int64_t want = static_cast<int64_t>(reject_lines.count(*it));
    const int64_t have = static_cast<int64_t>(got.count(*it));
    if (have < want) {
      rejects_complete = false;
      c.lost_rejects += want - have;
    }
    if (have > want) at_most_once = false;
  }
  for (int64_t ln : got) {
    if (reject_lines.count(ln) == 0) at_most_once = false;
  }
  if (!rejects_exact) {
    note(c, "rejects: " + std::to_string(got.size()) + " lines, expected " +
                std::to_string(reject_lines.size()));
  }
  c.exactly_once = exact && complete && rejects_exact;
  c.nothing_lost = complete && rejects_complete;
  c.at_most_once = at_most_once;
  return c;
}

absl::Status generate_running_sum_input(const std::string& path, int64_t lines, int64_t keys,
                                        int64_t bad_every, uint64_t seed, std::atomic<int64_t>* lines_done) {
  std::ofstream out(path, std::ios::trunc);
  if (!out) return absl::PermissionDeniedError("cannot write " + path);
  std::mt19937_64 rng(seed);
  static const char* kBad[] = {"no-comma-here", "key,12x", "key,99999999999999999999", ",5",
                               "key,"};
  std::string buf;
  for (int64_t i = 1; i <= lines; ++i) {
    if (bad_every > 0 && i % bad_every == 0) {
      buf += kBad[rng() % 5];
    } else {
      buf += "k" + std::to_string(rng() % keys);
      buf += ",";
      buf += std::to_string(static_cast<int64_t>(rng() % 2001) - 1000);
    }
    buf += '\n';
    if (buf.size() > (1 << 20)) {
      out << buf;
      buf.clear();
      if (lines_done != nullptr) lines_done->store(i, std::memory_order_relaxed);
    }
  }
  out << buf;
  out.close();
  if (!out) return absl::ResourceExhaustedError("writing " + path + " failed");
  return absl::OkStatus();
}

}  // namespace weir::examples
