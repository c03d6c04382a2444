// Throughput of whole jobs in the embedded cluster.
//
//   weir_bench --scenario chained|keyed|keyed-checkpointed|heap-bytes|nexmark-generator
//              [--records N]
//              [--interval-ms 1000] [--keys K]
//
// Prints one line: scenario, records, wall seconds, records/s, CPU seconds
// of the process, records per CPU-second, peak RSS. Run one scenario per
// process so that the peak RSS is the scenario's own (bench/run.sh does).
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "examples/nexmark/generator.h"
#include "weir/connectors.h"
#include "weir/weir.h"

namespace {

struct Rec {
  int64_t key = 0;
  int64_t value = 0;
  auto weir_fields() { return std::tie(key, value); }
};

std::atomic<int64_t> g_sunk{0};

template <typename T>
class CountingSink final : public weir::Sink<T> {
 public:
  absl::Status open(weir::OperatorContext&) override { return absl::OkStatus(); }
  absl::Status write(const T&) override {
    ++n_;
    return absl::OkStatus();
  }
  void close() override { g_sunk += n_; }

 private:
  int64_t n_ = 0;
};

class RunningSum final : public weir::KeyedProcessFunction<int64_t, Rec, Rec> {
 public:
  absl::Status open(weir::KeyedRuntimeContext<int64_t>& ctx) override {
    sum_ = &ctx.get_state(weir::ValueStateDescriptor<int64_t>{"sum"});
    return absl::OkStatus();
  }
  void process_element(const Rec& r, Context&, weir::Collector<Rec>& out) override {
    int64_t s = sum_->value_or(0) + r.value;
    sum_->update(s);
    out.collect(Rec{r.key, s});
  }

 private:
  weir::ValueState<int64_t>* sum_ = nullptr;
};

double cpu_seconds() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

long peak_rss_kb() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

long current_rss_kb() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  long pages = 0, resident = 0;
  if (f != nullptr) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return resident * 4;
}

// Resident bytes per entry of heap keyed state: `keys` int64 -> int64
// entries in a ValueState, spread over 128 key groups.
int heap_bytes(int64_t keys) {
  weir::KeyGroupRange all{0, 128};
  long before = current_rss_kb();
  weir::detail::KeyedBackend<int64_t> backend(all, nullptr);
  auto table = backend.core().table<int64_t, int64_t>("v", weir::detail::StateKind::kValue);
  if (!table.ok()) return 4;
  for (int64_t k = 0; k < keys; ++k) (*table)->get_or_create(weir::key_group_of(k, 128), k) = k;
  long after = current_rss_kb();
  std::printf("%-20s keys=%lld bytes_per_entry=%.1f peak_rss_mb=%.1f\n", "heap-bytes",
              static_cast<long long>(keys), (after - before) * 1024.0 / keys,
              peak_rss_kb() / 1024.0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string scenario = "chained";
  int64_t records = 50'000'000;
  int64_t keys = 100'000;
  int64_t interval_ms = 1000;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--scenario")) scenario = argv[i + 1];
    else if (!std::strcmp(argv[i], "--records")) records = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--keys")) keys = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--interval-ms")) interval_ms = std::atoll(argv[i + 1]);
  }

  if (scenario == "heap-bytes") return heap_bytes(keys);
  if (scenario == "nexmark-generator") {
    // The ceiling for Nexmark q0: generating events, nothing else.
    weir::nexmark::Generator gen;
    weir::nexmark::Event e;
    int64_t checksum = 0;
    double cpu0 = cpu_seconds();
    for (int64_t n = 0; n < records; ++n) {
      gen.generate_into(n, &e);
      checksum += e.date_time();
    }
    double cpu = cpu_seconds() - cpu0;
    std::printf("%-20s events=%lld cpu_s=%.3f events_per_cpu_s=%.0f checksum=%lld peak_rss_mb=%.1f\n",
                "nexmark-generator", static_cast<long long>(records), cpu, records / cpu,
                static_cast<long long>(checksum), peak_rss_kb() / 1024.0);
    return 0;
  }

  weir::JobConfig config;
  config.default_parallelism = 1;
  config.checkpoint.interval = weir::Duration(interval_ms);
  config.checkpoint.mode = scenario == "keyed-checkpointed" ? weir::CheckpointingMode::kExactlyOnce
                                                            : weir::CheckpointingMode::kNone;
  weir::StreamEnvironment env(config);
  auto source = env.from_source<Rec>([records, keys] {
    return std::make_unique<weir::GeneratorSource<Rec>>(
        [keys](int64_t i) { return Rec{i % keys, i & 7}; }, records);
  });
  if (scenario == "chained") {
    source.map([](const Rec& r) { return Rec{r.key, r.value * 3}; })
        .filter([](const Rec& r) { return r.value >= 0; })
        .sink_to([] { return std::make_unique<CountingSink<Rec>>(); });
  } else if (scenario == "keyed" || scenario == "keyed-checkpointed") {
    source.key_by([](const Rec& r) { return r.key; })
        .process<Rec>([] { return std::make_unique<RunningSum>(); })
        .sink_to([] { return std::make_unique<CountingSink<Rec>>(); });
  } else {
    std::fprintf(stderr, "weir_bench: unknown scenario '%s'\n", scenario.c_str());
    return 2;
  }

  double cpu0 = cpu_seconds();
  auto t0 = std::chrono::steady_clock::now();
  auto result = env.execute(scenario);
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  double cpu = cpu_seconds() - cpu0;
  if (!result.ok() || result->status != weir::JobStatus::kFinished) {
    std::fprintf(stderr, "weir_bench: job failed\n");
    return 4;
  }
  if (g_sunk.load() != records) {
    std::fprintf(stderr, "weir_bench: %lld records reached the sink, expected %lld\n",
                 static_cast<long long>(g_sunk.load()), static_cast<long long>(records));
    return 4;
  }
  double mean_cp = 0;
  for (const auto& c : result->checkpoints) mean_cp += c.duration.count();
  if (!result->checkpoints.empty()) mean_cp /= result->checkpoints.size();
  std::printf(
      "%-20s records=%lld wall_s=%.3f rec_per_s=%.0f cpu_s=%.3f rec_per_cpu_s=%.0f "
      "checkpoints=%zu mean_checkpoint_ms=%.1f peak_rss_mb=%.1f\n",
      scenario.c_str(), static_cast<long long>(records), wall, records / wall, cpu, records / cpu,
      result->checkpoints.size(), mean_cp, peak_rss_kb() / 1024.0);
  return 0;
}
