// Large keyed state on the RocksDB backend.
//
//   weir_large_state_bench --dir DIR [--keys 10000000] [--value-bytes 100]
//                          [--churn-seconds 10] [--churn-fraction 0.01]
//
// Three jobs, one after the other, all at parallelism 1 with checkpoints
// under DIR:
//   load     writes every key once (keyed updates/s); its final checkpoint
//            is taken twice, in two runs: full (canonical) and incremental
//            (native), so both durations are printed;
//   churn    restores the incremental load checkpoint and updates
//            churn-fraction of the keys per second for churn-seconds, with
//            an incremental checkpoint every second: duration and bytes
//            written per checkpoint against the total state;
//   restore  restores each final checkpoint with no input left: wall time
//            and MB/s of state restored;
//   recovery restores the incremental load checkpoint, updates keys, and
//            fails once after the first checkpoint it completes: time from
//            the failure to the first record processed again, with local
//            recovery (hard links of the local copy) and without (copies
//            of the checkpoint's files).
// Every line also has the peak RSS of the process so far.
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "checkpoint/storage.h"
#include "weir/connectors.h"
#include "weir/weir.h"

namespace {

namespace fs = std::filesystem;

struct Update {
  int64_t key = 0;
  std::string payload;
  auto weir_fields() { return std::tie(key, payload); }
};

// When the keyed operator processed its first record (restores happen
// before): steady-clock nanoseconds, 0 until then.
std::atomic<int64_t> g_first_record_ns{0};
// Armed: the keyed operator fails once, at its first record after a
// completed checkpoint, recording when (steady-clock nanoseconds).
std::atomic<bool> g_fail_armed{false};
std::atomic<int64_t> g_fail_ns{0};

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double peak_rss_mb() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024.0;
}

// Pseudo-random, incompressible-ish payload of `n` bytes for update i.
std::string payload(int64_t i, int n) {
  std::string s(static_cast<size_t>(n), '\0');
  uint64_t x = static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull + 1;
  for (int j = 0; j < n; ++j) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    s[static_cast<size_t>(j)] = static_cast<char>('a' + x % 26);
  }
  return s;
}

class Store final : public weir::KeyedProcessFunction<int64_t, Update, int64_t> {
 public:
  absl::Status open(weir::KeyedRuntimeContext<int64_t>& ctx) override {
    value_ = &ctx.get_state(weir::ValueStateDescriptor<std::string>{"value"});
    return absl::OkStatus();
  }
  void notify_checkpoint_complete(int64_t) override { checkpointed_ = true; }
  void process_element(const Update& u, Context&, weir::Collector<int64_t>&) override {
    if (checkpointed_ && g_fail_armed.exchange(false)) {
      g_first_record_ns = 0;
      g_fail_ns = now_ns();
      throw std::runtime_error("injected failure");
    }
    if (!seen_) {
      seen_ = true;
      int64_t zero = 0;
      g_first_record_ns.compare_exchange_strong(zero, now_ns());
    }
    value_->update(u.payload);
  }

 private:
  weir::ValueState<std::string>* value_ = nullptr;
  bool seen_ = false;
  bool checkpointed_ = false;
};

class Discard final : public weir::Sink<int64_t> {
 public:
  absl::Status open(weir::OperatorContext&) override { return absl::OkStatus(); }
  absl::Status write(const int64_t&) override { return absl::OkStatus(); }
};

struct Run {
  weir::JobResult result;
  double wall_s = 0;
  double to_first_record_s = 0;  // job start to the first record processed
};

Run run_job(const std::string& name, const std::string& checkpoint_dir, bool incremental, const std::string& restore,
            std::function<Update(int64_t)> fn, int64_t count, int64_t per_second, int64_t interval_ms,
            bool local_recovery = true) {
  weir::JobConfig config;
  config.default_parallelism = 1;
  config.state.kind = weir::StateBackendKind::kRocksDb;
  config.state.local_directory = (fs::path(checkpoint_dir).parent_path() / "state").string();
  config.checkpoint.directory = checkpoint_dir;
  config.checkpoint.incremental = incremental;
  config.checkpoint.interval = weir::Duration(interval_ms);
  config.checkpoint.retained = 2;
  config.restore = restore;
  config.state.local_recovery = local_recovery;
  config.restart.delay = weir::Duration(0);
  weir::StreamEnvironment env(config);
  env.from_source<Update>(
         [fn, count, per_second] { return std::make_unique<weir::GeneratorSource<Update>>(fn, count, per_second); },
         "updates")
      .uid("updates")
      .key_by([](const Update& u) { return u.key; })
      .process<int64_t>([] { return std::make_unique<Store>(); }, "store")
      .uid("store")
      .sink_to([] { return std::make_unique<Discard>(); })
      .uid("sink");
  g_first_record_ns = 0;
  auto t0 = std::chrono::steady_clock::now();
  int64_t t0_ns = now_ns();
  auto r = env.execute(name);
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!r.ok() || r->status != weir::JobStatus::kFinished) {
    std::fprintf(stderr, "weir_large_state_bench: %s failed: %s\n", name.c_str(),
                 r.ok() ? r->failure.c_str() : std::string(r.status().message()).c_str());
    std::exit(4);
  }
  return {*r, wall, g_first_record_ns ? (g_first_record_ns - t0_ns) / 1e9 : 0.0};
}

std::string latest(const std::string& dir) {
  auto cp = weir::checkpoint::find_latest_checkpoint(dir, nullptr);
  if (!cp.ok()) {
    std::fprintf(stderr, "weir_large_state_bench: %s\n", std::string(cp.status().message()).c_str());
    std::exit(4);
  }
  return cp->location;
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  int64_t keys = 10'000'000;
  int value_bytes = 100;
  int64_t churn_seconds = 10;
  double churn_fraction = 0.01;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--dir")) dir = argv[i + 1];
    else if (!std::strcmp(argv[i], "--keys")) keys = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--value-bytes")) value_bytes = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--churn-seconds")) churn_seconds = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--churn-fraction")) churn_fraction = std::atof(argv[i + 1]);
  }
  if (dir.empty() || keys <= 0 || value_bytes <= 0) {
    std::fprintf(stderr, "usage: weir_large_state_bench --dir DIR [--keys N] [--value-bytes B] ...\n");
    return 2;
  }
  fs::remove_all(dir);
  auto load = [value_bytes](int64_t i) { return Update{i, payload(i, value_bytes)}; };

  // Load, twice: the final checkpoint full, then incremental.
  for (bool incremental : {false, true}) {
    std::string chk = (fs::path(dir) / (incremental ? "chk-incremental" : "chk-full")).string();
    Run r = run_job("load", chk, incremental, "", load, keys, 0, 1'000'000'000);
    const auto& fin = r.result.checkpoints.back();
    std::printf("load-%-12s keys=%lld wall_s=%.1f updates_per_s=%.0f final_checkpoint_ms=%lld state_mb=%.1f "
                "peak_rss_mb=%.1f\n",
                incremental ? "incremental" : "full", static_cast<long long>(keys), r.wall_s, keys / r.wall_s,
                static_cast<long long>(fin.duration.count()), fin.state_bytes / 1e6, peak_rss_mb());
    std::fflush(stdout);
  }

  // Restore each, then one more update: restore time = job start to that
  // update (the keyed operator restores before it processes anything).
  for (bool incremental : {false, true}) {
    std::string chk = (fs::path(dir) / (incremental ? "chk-incremental" : "chk-full")).string();
    auto from = weir::checkpoint::load_checkpoint(latest(chk));
    double mb = from.ok() ? from->metadata.total_bytes() / 1e6 : 0;
    Run r = run_job("restore", (fs::path(dir) / "chk-restore").string(), true, latest(chk), load, keys + 1, 0,
                    1'000'000'000);
    std::printf("restore-%-9s restore_s=%.2f state_mb=%.1f mb_per_s=%.0f peak_rss_mb=%.1f\n",
                incremental ? "native" : "canonical", r.to_first_record_s, mb, mb / r.to_first_record_s,
                peak_rss_mb());
    std::fflush(stdout);
    fs::remove_all(fs::path(dir) / "chk-restore");
  }

  const int64_t per_second = static_cast<int64_t>(keys * churn_fraction);
  const int64_t updates = per_second * churn_seconds;
  std::string from = latest((fs::path(dir) / "chk-incremental").string());
  auto churn = [keys, value_bytes](int64_t i) {
    int64_t k = static_cast<int64_t>((static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull) % static_cast<uint64_t>(keys));
    return Update{k, payload(i + keys, value_bytes)};
  };

  // Recovery from one failure, with and without local recovery.
  for (bool local : {true, false}) {
    g_fail_armed = true;
    Run r = run_job("recovery", (fs::path(dir) / "chk-recovery").string(), true, from,
                    [churn](int64_t i) { return churn(i); }, keys + updates, per_second, 1000, local);
    if (g_fail_armed || r.result.restarts != 1 || g_first_record_ns == 0) {
      std::fprintf(stderr, "weir_large_state_bench: recovery: the injected failure did not happen once\n");
      return 4;
    }
    std::printf("recovery-%-8s recovery_s=%.2f peak_rss_mb=%.1f\n", local ? "local" : "remote",
                (g_first_record_ns - g_fail_ns) / 1e9, peak_rss_mb());
    std::fflush(stdout);
    fs::remove_all(fs::path(dir) / "chk-recovery");
  }

  // Churn on the incremental load state.
  // The restored source position is `keys` (end of the load): churn indices start there.
  Run r = run_job("churn", (fs::path(dir) / "chk-churn").string(), true, from,
                  [churn](int64_t i) { return churn(i); }, keys + updates, per_second, 1000);
  // The first checkpoint after the (unclaimed) restore uploads everything;
  // the steady state is the rest.
  int64_t n = 0, total_ms = 0, max_ms = 0;
  double state_mb = 0, first_mb = 0;
  std::vector<double> new_mb;
  for (const auto& c : r.result.checkpoints) {
    if (c.is_final) continue;
    if (++n == 1) {
      first_mb = c.new_bytes / 1e6;
      continue;
    }
    total_ms += c.duration.count();
    max_ms = std::max<int64_t>(max_ms, c.duration.count());
    new_mb.push_back(c.new_bytes / 1e6);
    state_mb = c.state_bytes / 1e6;
  }
  std::sort(new_mb.begin(), new_mb.end());
  double sum_mb = 0;
  for (double m : new_mb) sum_mb += m;
  // Keys written per checkpoint (1 s apart) at the rate actually reached.
  const double reached_per_s = updates / r.wall_s;
  const double changed_mb = reached_per_s * (value_bytes + 8) / 1e6;
  std::printf("churn             updates_per_s=%lld reached_per_s=%.0f seconds=%.1f checkpoints=%lld first_new_mb=%.1f "
              "mean_checkpoint_ms=%.0f max_checkpoint_ms=%lld changed_mb=%.1f median_new_mb=%.1f mean_new_mb=%.1f "
              "max_new_mb=%.1f state_mb=%.1f peak_rss_mb=%.1f\n",
              static_cast<long long>(per_second), reached_per_s, r.wall_s, static_cast<long long>(n), first_mb,
              new_mb.empty() ? 0.0 : static_cast<double>(total_ms) / new_mb.size(), static_cast<long long>(max_ms),
              changed_mb, new_mb.empty() ? 0.0 : new_mb[new_mb.size() / 2],
              new_mb.empty() ? 0.0 : sum_mb / new_mb.size(), new_mb.empty() ? 0.0 : new_mb.back(), state_mb,
              peak_rss_mb());
  fs::remove_all(dir);
  return 0;
}
