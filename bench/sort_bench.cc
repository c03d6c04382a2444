// The external merge sort of batch execution (src/batch/external_sorter.h)
// on an input larger than its memory budget.
//
//   weir_sort_bench --dir DIR [--records 10000000] [--key-space 1000000]
//                   [--value-bytes 64] [--memory-mb 64] [--fan-in 64]
//
// Adds --records records (a 15-digit key drawn from --key-space keys, a
// value of --value-bytes), sorts them, reads them back checking the order,
// and prints one line: records, input MB, budget MB, runs, merge passes,
// spilled MB, add and read records/s (wall), and the peak RSS of the process.
// Exit code 1 when the output is out of order or incomplete.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>

#include "batch/external_sorter.h"

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  long long records = 10'000'000, key_space = 1'000'000, value_bytes = 64, memory_mb = 64, fan_in = 64;
  for (int i = 1; i + 1 < argc; i += 2) {
    const char* v = argv[i + 1];
    if (!std::strcmp(argv[i], "--dir")) dir = v;
    else if (!std::strcmp(argv[i], "--records")) records = std::atoll(v);
    else if (!std::strcmp(argv[i], "--key-space")) key_space = std::atoll(v);
    else if (!std::strcmp(argv[i], "--value-bytes")) value_bytes = std::atoll(v);
    else if (!std::strcmp(argv[i], "--memory-mb")) memory_mb = std::atoll(v);
    else if (!std::strcmp(argv[i], "--fan-in")) fan_in = std::atoll(v);
    else {
      std::fprintf(stderr, "weir_sort_bench: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  if (dir.empty() || records <= 0 || key_space <= 0 || value_bytes < 0 || memory_mb <= 0 || fan_in < 2) {
    std::fprintf(stderr, "usage: weir_sort_bench --dir DIR [--records N] [--key-space N] [--value-bytes N] "
                         "[--memory-mb N] [--fan-in N]\n");
    return 2;
  }
  weir::batch::ExternalSorter::Options o;
  o.spill_directory = (std::filesystem::path(dir) / "spill").string();
  o.memory_bytes = memory_mb << 20;
  o.max_fan_in = static_cast<int>(fan_in);
  weir::batch::ExternalSorter sorter(o);

  std::mt19937_64 rng(42);
  char key[24];
  std::string value(static_cast<size_t>(value_bytes), 'v');
  const auto add_start = std::chrono::steady_clock::now();
  for (long long i = 0; i < records; ++i) {
    // Key k of the key space, spread over 15 digits (as a hashed key would be).
    const uint64_t k = (rng() % static_cast<uint64_t>(key_space)) * 0x9E3779B97F4A7C15ull % 1'000'000'000'000'000ull;
    std::snprintf(key, sizeof(key), "%015llu", static_cast<unsigned long long>(k));
    if (absl::Status s = sorter.add(std::string_view(key, 15), value); !s.ok()) {
      std::fprintf(stderr, "weir_sort_bench: %s\n", std::string(s.message()).c_str());
      return 1;
    }
  }
  const double add_s = seconds_since(add_start);
  const auto read_start = std::chrono::steady_clock::now();
  if (absl::Status s = sorter.finish(); !s.ok()) {
    std::fprintf(stderr, "weir_sort_bench: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  long long n = 0;
  std::string previous;
  for (; sorter.valid(); sorter.next(), ++n) {
    if (sorter.key() < previous) {
      std::fprintf(stderr, "weir_sort_bench: out of order at record %lld\n", n);
      return 1;
    }
    previous.assign(sorter.key());
  }
  const double read_s = seconds_since(read_start);
  if (!sorter.status().ok() || n != records) {
    std::fprintf(stderr, "weir_sort_bench: read %lld of %lld records: %s\n", n, records,
                 std::string(sorter.status().message()).c_str());
    return 1;
  }
  const auto& st = sorter.stats();
  std::printf(
      "records %lld  input %.1f MB  budget %lld MB  runs %lld  merge passes %lld  spilled %.1f MB  "
      "add %.0f rec/s  merge+read %.0f rec/s  peak rss %.1f MB\n",
      records, static_cast<double>(records) * (15 + value_bytes) / (1 << 20), memory_mb,
      static_cast<long long>(st.spilled_runs), static_cast<long long>(st.merge_passes),
      static_cast<double>(st.spilled_bytes) / (1 << 20), records / add_s, records / read_s, peak_rss_mb());
  return 0;
}
