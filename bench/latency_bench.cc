// End-to-end latency of whole jobs in the embedded cluster.
//
//   weir_latency --job stateless|keyed [--rate R] [--seconds S] [--warmup-seconds W]
//                [--records N] [--mode none|at-least-once|exactly-once]
//                [--interval-ms 1000] [--state heap|rocksdb] [--parallelism P] [--keys K]
//                [--rocksdb-cache-bytes B]
//
// With --rate R > 0 the sources together emit R records/s for S seconds.
// Record i of a source subtask is due at start + i / (R / P) and carries that
// time, its intended emission time on the wall clock, not the time the
// source got round to it: a source that falls behind shows as latency
// instead of hiding it (no coordinated omission). The sink takes the wall
// clock again; latency = sink time - intended time. Records due in the
// first W seconds are left out of the figures. One line out: the rate
// achieved, latency p50 / p99 / p99.9 / max in ms, checkpoints, their mean
// duration, alignment and synchronous part (the slowest subtask's: the time
// its task thread spent on the snapshot instead of records), peak RSS.
//
// With --rate 0 the sources emit --records N as fast as they can and the
// line gives records/s (wall clock), the maximum sustainable rate that
// bench/latency.sh takes 25 / 50 / 75 % of.
//
// Jobs: stateless = source -> map -> filter -> sink, chained into one task
// per subtask; keyed = source -> hash exchange on 100 000 keys -> running sum
// in ValueState -> sink.
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "weir/connectors.h"
#include "weir/weir.h"

namespace {

int64_t wall_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct Rec {
  int64_t key = 0;
  int64_t value = 0;
  int64_t due_ns = 0;  // intended emission time, wall clock
  auto weir_fields() { return std::tie(key, value, due_ns); }
};

// Counts of values in log-linear buckets: exact below 128, then 64 buckets
// per power of two (under 1.6 % relative error), a few KiB whatever the count.
class Histogram {
 public:
  void add(int64_t v) {
    ++counts_[index(static_cast<uint64_t>(std::max<int64_t>(v, 0)))];
    ++n_;
  }
  void merge(const Histogram& o) {
    for (size_t i = 0; i < counts_.size(); ++i) counts_[i] += o.counts_[i];
    n_ += o.n_;
  }
  int64_t count() const { return n_; }
  // The upper bound of the bucket holding the q-quantile.
  int64_t quantile(double q) const {
    if (n_ == 0) return 0;
    const int64_t rank = std::max<int64_t>(1, static_cast<int64_t>(q * static_cast<double>(n_) + 0.999999));
    int64_t seen = 0;
    for (size_t i = 0; i < counts_.size(); ++i) {
      seen += counts_[i];
      if (seen >= rank) return upper(i);
    }
    return upper(counts_.size() - 1);
  }

 private:
  static constexpr int kSub = 64;
  static size_t index(uint64_t v) {
    if (v < 2 * kSub) return v;
    const int e = std::bit_width(v) - 7;  // v >> e in [64, 128)
    return 2 * kSub + static_cast<size_t>(e - 1) * kSub + ((v >> e) - kSub);
  }
  static int64_t upper(size_t i) {
    if (i < 2 * kSub) return static_cast<int64_t>(i);
    const size_t e = (i - 2 * kSub) / kSub + 1;
    const uint64_t m = (i - 2 * kSub) % kSub + kSub;
    return static_cast<int64_t>(((m + 1) << e) - 1);
  }
  std::vector<int64_t> counts_ = std::vector<int64_t>(2 * kSub + 58 * kSub, 0);
  int64_t n_ = 0;
};

std::atomic<int64_t> g_start_ns{0};  // when the first source opened
absl::Mutex g_mu;
Histogram g_latency ABSL_GUARDED_BY(g_mu);
std::atomic<int64_t> g_sunk{0};

class PacedSource final : public weir::Source<Rec> {
 public:
  PacedSource(double per_second, int64_t count, int64_t keys) : per_second_(per_second), count_(count), keys_(keys) {}

  absl::Status open(weir::OperatorContext& ctx) override {
    state_ = std::make_unique<weir::OperatorListState<int64_t>>(ctx, "position");
    bool corrupt = false;
    std::vector<int64_t> restored = state_->get(&corrupt);
    if (corrupt) return absl::DataLossError("paced source: restored position is corrupt");
    if (ctx.is_restored() && !restored.empty()) next_ = restored[0];
    subtask_ = ctx.subtask_index();
    parallelism_ = ctx.parallelism();
    int64_t expected = 0;
    g_start_ns.compare_exchange_strong(expected, wall_ns());
    start_ns_ = g_start_ns.load();
    return absl::OkStatus();
  }
  weir::PollStatus poll(weir::SourceOutput<Rec>& out, int max_records) override {
    if (next_ >= count_) return weir::PollStatus::kEndOfInput;
    const int64_t now = wall_ns();
    int n = 0;
    while (n < max_records && next_ < count_) {
      int64_t due = now;
      if (per_second_ > 0) {
        due = start_ns_ + static_cast<int64_t>(static_cast<double>(next_) * 1e9 / per_second_);
        if (due > now) break;
      }
      const int64_t i = next_ * parallelism_ + subtask_;
      out.collect(Rec{i % keys_, i & 7, due});
      ++next_;
      ++n;
    }
    return n == 0 ? weir::PollStatus::kIdle : weir::PollStatus::kMore;
  }
  absl::Status snapshot_state(int64_t) override {
    state_->update({next_});
    return absl::OkStatus();
  }

 private:
  const double per_second_;
  const int64_t count_;
  const int64_t keys_;
  int subtask_ = 0;
  int parallelism_ = 1;
  int64_t start_ns_ = 0;
  int64_t next_ = 0;
  std::unique_ptr<weir::OperatorListState<int64_t>> state_;
};

class LatencySink final : public weir::Sink<Rec> {
 public:
  explicit LatencySink(int64_t measure_from_ns) : measure_from_ns_(measure_from_ns) {}
  absl::Status open(weir::OperatorContext&) override { return absl::OkStatus(); }
  absl::Status write(const Rec& r) override {
    ++n_;
    if (r.due_ns - g_start_ns.load(std::memory_order_relaxed) >= measure_from_ns_) local_.add(wall_ns() - r.due_ns);
    return absl::OkStatus();
  }
  void close() override {
    g_sunk += n_;
    absl::MutexLock lock(&g_mu);
    g_latency.merge(local_);
  }

 private:
  const int64_t measure_from_ns_;
  int64_t n_ = 0;
  Histogram local_;
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
    out.collect(Rec{r.key, s, r.due_ns});
  }

 private:
  weir::ValueState<int64_t>* sum_ = nullptr;
};

long peak_rss_kb() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss;
}

int usage(const char* why) {
  std::fprintf(stderr, "weir_latency: %s\n", why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string job = "keyed", mode = "none", state = "heap";
  int64_t rate = 0, seconds = 10, warmup = 3, records = 20'000'000, interval_ms = 1000, keys = 100'000;
  int64_t rocksdb_cache_bytes = weir::StateBackendConfig{}.rocksdb_cache_bytes_per_state;
  int parallelism = 1;
  for (int i = 1; i < argc; i += 2) {
    if (i + 1 >= argc) return usage((std::string(argv[i]) + " needs a value").c_str());
    const char* v = argv[i + 1];
    if (!std::strcmp(argv[i], "--job")) job = v;
    else if (!std::strcmp(argv[i], "--rate")) rate = std::atoll(v);
    else if (!std::strcmp(argv[i], "--seconds")) seconds = std::atoll(v);
    else if (!std::strcmp(argv[i], "--warmup-seconds")) warmup = std::atoll(v);
    else if (!std::strcmp(argv[i], "--records")) records = std::atoll(v);
    else if (!std::strcmp(argv[i], "--mode")) mode = v;
    else if (!std::strcmp(argv[i], "--interval-ms")) interval_ms = std::atoll(v);
    else if (!std::strcmp(argv[i], "--state")) state = v;
    else if (!std::strcmp(argv[i], "--parallelism")) parallelism = std::atoi(v);
    else if (!std::strcmp(argv[i], "--keys")) keys = std::atoll(v);
    else if (!std::strcmp(argv[i], "--rocksdb-cache-bytes")) rocksdb_cache_bytes = std::atoll(v);
    else return usage((std::string("unknown flag ") + argv[i]).c_str());
  }
  if (job != "stateless" && job != "keyed") return usage("--job must be stateless or keyed");
  if (rate < 0 || seconds <= 0 || warmup < 0 || warmup >= seconds || records <= 0 || parallelism < 1 || keys < 1) {
    return usage("need --rate >= 0, --seconds > --warmup-seconds >= 0, --records > 0, --parallelism >= 1, --keys >= 1");
  }

  weir::JobConfig config;
  config.default_parallelism = parallelism;
  config.checkpoint.interval = weir::Duration(interval_ms);
  if (mode == "none") {
    config.checkpoint.mode = weir::CheckpointingMode::kNone;
  } else if (mode == "exactly-once") {
    config.checkpoint.mode = weir::CheckpointingMode::kExactlyOnce;
  } else if (mode == "at-least-once") {
    config.checkpoint.mode = weir::CheckpointingMode::kAtLeastOnce;
  } else {
    return usage("--mode must be none, at-least-once or exactly-once");
  }
  auto backend = weir::parse_state_backend(state);
  if (!backend.ok()) return usage(std::string(backend.status().message()).c_str());
  config.state.kind = *backend;
  config.state.rocksdb_cache_bytes_per_state = rocksdb_cache_bytes;

  // Per source subtask: its share of the rate and of the records.
  const double per_subtask = static_cast<double>(rate) / parallelism;
  const int64_t count = (rate > 0 ? rate * seconds : records) / parallelism;
  const int64_t measure_from_ns = rate > 0 ? warmup * 1'000'000'000 : 0;

  weir::StreamEnvironment env(config);
  auto source = env.from_source<Rec>([per_subtask, count, keys] {
    return std::make_unique<PacedSource>(per_subtask, count, keys);
  });
  auto sink = [measure_from_ns] { return std::make_unique<LatencySink>(measure_from_ns); };
  if (job == "stateless") {
    source.map([](const Rec& r) { return Rec{r.key, r.value * 3, r.due_ns}; })
        .filter([](const Rec& r) { return r.value >= 0; })
        .sink_to(sink);
  } else {
    source.key_by([](const Rec& r) { return r.key; })
        .process<Rec>([] { return std::make_unique<RunningSum>(); })
        .sink_to(sink);
  }

  const auto t0 = std::chrono::steady_clock::now();
  auto result = env.execute("latency-" + job);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!result.ok() || result->status != weir::JobStatus::kFinished) {
    std::fprintf(stderr, "weir_latency: job failed: %s\n",
                 result.ok() ? result->failure.c_str() : std::string(result.status().message()).c_str());
    return 4;
  }
  const int64_t expected = count * parallelism;
  if (g_sunk.load() != expected) {
    std::fprintf(stderr, "weir_latency: %lld records reached the sink, expected %lld\n",
                 static_cast<long long>(g_sunk.load()), static_cast<long long>(expected));
    return 4;
  }
  double mean_cp = 0, mean_align = 0, mean_sync = 0;
  int periodic = 0;
  for (const auto& c : result->checkpoints) {
    if (c.is_final) continue;
    ++periodic;
    mean_cp += static_cast<double>(c.duration.count());
    int64_t align = 0, sync = 0;
    for (const auto& s : c.subtasks) {
      align = std::max(align, s.alignment_ms);
      sync = std::max(sync, s.sync_ms);
    }
    mean_align += static_cast<double>(align);
    mean_sync += static_cast<double>(sync);
  }
  if (periodic > 0) mean_cp /= periodic, mean_align /= periodic, mean_sync /= periodic;
  absl::MutexLock lock(&g_mu);
  auto ms = [](int64_t ns) { return static_cast<double>(ns) / 1e6; };
  std::printf(
      "job=%s mode=%s state=%s p=%d target_rate=%lld records=%lld wall_s=%.3f rec_per_s=%.0f measured=%lld "
      "p50_ms=%.3f p99_ms=%.3f p999_ms=%.3f max_ms=%.3f checkpoints=%d mean_checkpoint_ms=%.1f "
      "mean_max_alignment_ms=%.1f mean_max_sync_ms=%.1f peak_rss_mb=%.1f\n",
      job.c_str(), mode.c_str(), state.c_str(), parallelism, static_cast<long long>(rate),
      static_cast<long long>(expected), wall, static_cast<double>(expected) / wall,
      static_cast<long long>(g_latency.count()), ms(g_latency.quantile(0.5)), ms(g_latency.quantile(0.99)),
      ms(g_latency.quantile(0.999)), ms(g_latency.quantile(1.0)), periodic, mean_cp, mean_align,
      mean_sync, peak_rss_kb() / 1024.0);
  return 0;
}
