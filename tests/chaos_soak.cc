// The chaos soak: a cluster of two JobManagers under --ha zookeeper, three
// TaskManagers and ZooKeeper runs the running-sum job (file source,
// exactly-once file sink, checkpoints every 200 ms) while a nemesis injects
// faults at random for a configured time: TaskManagers and the leading
// JobManager SIGKILLed or frozen (SIGSTOP past their timeouts, then
// SIGCONT), network partitions, ZooKeeper restarted, a state file of the
// newest checkpoint truncated before a TaskManager is killed, peers without
// the secret pushing 200 MB each at the leader's gRPC port. After each
// fault it waits for the job to complete a checkpoint newer than every one
// completed before the fault (the next committed output): the time from the
// fault to then is its recovery time, measured while a lasting fault (a
// freeze, a partition) still lasts.
//
// Where this process may create network namespaces (root, `ip`), every
// JobManager and TaskManager runs on a host of its own, ZooKeeper on this
// one, and a partition pulls a host's cable at the switch (the leader's, or
// a TaskManager's): cut off from ZooKeeper, the other JobManager and every
// TaskManager at once, its connections open but silent. Otherwise they all
// run on loopback and the partition cuts jm-a off ZooKeeper through a proxy.
// A full disk (the checkpoint directory on a 32 MB tmpfs, filled for 3 s)
// is a fault when this process may mount a tmpfs; a slow disk (for 5 s,
// every write, fsync, create and rename of a checkpoint file held 100 ms) when
// it may mount weir_slowfs, a FUSE pass-through (tests/slow_fs.cc), over the
// checkpoint disk. The soak says at the start which faults it injects and why
// any is left out.
//
// The checker then waits for the job to finish and compares the committed
// output with the input: records lost, records duplicated, records out of
// order within their key (each key's sums are promised in order), faults not
// recovered from, the longest time without a completed checkpoint, and the
// recovery times per kind of fault as percentiles. Exit 0 when nothing was
// lost, duplicated or out of order and every fault was recovered from, else
// 1; 2 for bad
// arguments. The seed is printed first; the same seed replays the same
// faults in the same order (their timing depends on the machine) on the same
// kind of setup.
//
//   weir_chaos [--duration 90s] [--seed N] [--quiet]
//
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <mutex>
#include <atomic>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "examples/running_sum/running_sum.h"
#include "tests/ha_cluster.h"
#include "tests/hostile_grpc.h"
#include "tests/tcp_proxy.h"

namespace weir::testing {
namespace {

using Clock = std::chrono::steady_clock;

int64_t ms_since(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t).count();
}

struct Options {
  std::chrono::seconds duration{90};
  uint64_t seed = 0;
  bool quiet = false;
};

enum class Fault { kKillTaskManager, kFreezeTaskManager, kKillLeader, kFreezeLeader, kPartitionLeader,
                   kPartitionTaskManager, kRestartZooKeeper, kTruncateCheckpoint, kFullDisk, kSlowDisk,
                   kHostileGrpcPeers };

const char* name(Fault f) {
  switch (f) {
    case Fault::kKillTaskManager: return "kill-taskmanager";
    case Fault::kFreezeTaskManager: return "freeze-taskmanager";
    case Fault::kKillLeader: return "kill-leader";
    case Fault::kFreezeLeader: return "freeze-leader";
    case Fault::kPartitionLeader: return "partition-leader";
    case Fault::kPartitionTaskManager: return "partition-taskmanager";
    case Fault::kRestartZooKeeper: return "restart-zookeeper";
    case Fault::kTruncateCheckpoint: return "truncate-checkpoint";
    case Fault::kFullDisk: return "full-disk";
    case Fault::kSlowDisk: return "slow-disk";
    case Fault::kHostileGrpcPeers: return "hostile-grpc-peers";
  }
  return "?";
}

// The p-th percentile (0..100) of `v`, nearest rank.
int64_t percentile(std::vector<int64_t> v, double p) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

class Soak {
 public:
  explicit Soak(Options o)
      : o_(o), hosts_({"jm-a", "jm-b", "tm-1", "tm-2", "tm-3"}), c_("chaos-soak"), rng_(o.seed) {}
  ~Soak() {
    stop_watching_ = true;
    if (watcher_.joinable()) watcher_.join();
    // Every process writing to the checkpoint disk is gone first.
    c_.stop_all();
    if (slow_fs_ != nullptr) {
      (void)run_program({"/usr/bin/umount", "-l", checkpoint_dir_}, c_.dir().path("umount-slow"));
      slow_fs_.reset();
    }
    if (!tmpfs_.empty()) (void)run_program({"/usr/bin/umount", "-l", tmpfs_}, c_.dir().path("umount"));
  }

  int run() {
    std::printf("chaos soak: seed %llu, %lld s of faults\n", static_cast<unsigned long long>(o_.seed),
                static_cast<long long>(o_.duration.count()));
    if (hosts_.ok()) {
      c_.use_hosts(&hosts_);
      std::printf("every JobManager and TaskManager on a host of its own (network namespaces): a partition pulls the "
                  "leader's or a TaskManager's cable\n");
    } else {
      std::printf("on loopback: %s; a partition cuts jm-a off ZooKeeper through a proxy\n", hosts_.error().c_str());
    }
    mount_checkpoint_disk();
    mount_slow_disk();
    faults_available_ = {Fault::kKillTaskManager, Fault::kFreezeTaskManager, Fault::kKillLeader,
                         Fault::kFreezeLeader,    Fault::kPartitionLeader,   Fault::kRestartZooKeeper,
                         Fault::kTruncateCheckpoint, Fault::kHostileGrpcPeers};
    if (hosts_.ok()) faults_available_.push_back(Fault::kPartitionTaskManager);
    if (!tmpfs_.empty()) faults_available_.push_back(Fault::kFullDisk);
    if (slow_fs_ != nullptr) faults_available_.push_back(Fault::kSlowDisk);
    std::fflush(stdout);
    if (!c_.start_zookeeper()) return setup_failed("ZooKeeper did not start\n" + c_.zookeeper().log());
    if (!hosts_.ok()) {
      // jm-a reaches ZooKeeper through the proxy, so it can be cut off.
      proxy_ = std::make_unique<TcpProxy>(c_.zookeeper().port());
    }
    if (!c_.start_jobmanager("jm-a", jm_a_quorum())) return setup_failed(c_.logs());
    if (c_.wait_for_leader().empty()) return setup_failed(c_.logs());
    if (!c_.start_jobmanager("jm-b")) return setup_failed(c_.logs());
    for (const char* tm : {"tm-1", "tm-2", "tm-3"}) {
      if (!c_.start_taskmanager(tm, 2)) return setup_failed(c_.logs());
    }
    // Enough input to outlast the faults: 4 sources at 400 records/s.
    input_ = c_.dir().path("in.txt");
    const int64_t lines = 1600 * (o_.duration.count() + 20);
    if (!examples::generate_running_sum_input(input_, lines, 1000, 0, o_.seed).ok()) return setup_failed("input");
    auto id = c_.client().submit("running-sum", {"--input", input_, "--output", c_.dir().path("out"), "-p", "4",
                                                 "--checkpoint-dir", checkpoint_dir_, "--checkpoint-interval",
                                                 "200ms", "--retained-checkpoints", "3", "--rate", "400"});
    if (!id.ok()) return setup_failed(std::string(id.status().message()));
    job_ = *id;
    watcher_ = std::thread([this] { watch(); });
    if (!progressed(-1, std::chrono::seconds(60))) return setup_failed("no checkpoint completed\n" + c_.logs());

    const auto until = Clock::now() + o_.duration;
    while (Clock::now() < until) {
      inject(pick());
      std::this_thread::sleep_for(std::chrono::milliseconds(500 + rng_() % 1500));  // pacing the nemesis
    }
    return check();
  }

 private:
  int setup_failed(const std::string& why) {
    std::fprintf(stderr, "chaos soak (seed %llu): the cluster did not come up: %s\n",
                 static_cast<unsigned long long>(o_.seed), why.c_str());
    return 1;
  }

  Fault pick() { return faults_available_[rng_() % faults_available_.size()]; }

  // How jm-a reaches ZooKeeper: through the proxy on loopback.
  std::string jm_a_quorum() const { return proxy_ ? "127.0.0.1:" + std::to_string(proxy_->port()) : ""; }

  // The checkpoint disk on a small tmpfs of its own, when this process may
  // mount one (root): then a full disk is one of the faults.
  void mount_checkpoint_disk() {
    const std::string dir = c_.dir().path("chk-disk");
    checkpoint_dir_ = dir;
    std::filesystem::create_directories(dir);
    RunResult r = run_program({"/usr/bin/mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", dir},
                              c_.dir().path("mount"));
    if (r.code == 0) {
      tmpfs_ = dir;
      std::printf("checkpoints on a 32 MB tmpfs: full disk is one of the faults\n");
    } else {
      std::printf("not injected: a full disk (cannot mount a tmpfs for the checkpoints: %s)\n",
                  r.err.substr(0, r.err.find('\n')).c_str());
    }
  }

  // The checkpoint directory seen through weir_slowfs (a FUSE pass-through
  // to the checkpoint disk that delays every write while told to), when it
  // can be mounted: then a slow disk is one of the faults.
  void mount_slow_disk() {
    const std::string bin = std::filesystem::path(weir_bin()).parent_path() / "weir_slowfs";
    const std::string dir = c_.dir().path("chk");
    std::filesystem::create_directories(dir);
    std::string why;
    if (::access(bin.c_str(), X_OK) != 0) {
      why = bin + " is missing";
    } else if (::access("/dev/fuse", R_OK | W_OK) != 0) {
      why = "no /dev/fuse";
    } else {
      auto fs = std::make_unique<Child>(std::vector<std::string>{bin, checkpoint_dir_, dir, "100"},
                                        c_.dir().path("slowfs"));
      if (eventually([&] { return !fs->running() || slurp("/proc/self/mounts").find(" " + dir + " fuse") !=
                                                          std::string::npos; },
                     std::chrono::seconds(10)) &&
          fs->running()) {
        slow_fs_ = std::move(fs);
        checkpoint_dir_ = dir;
        std::printf("checkpoints through weir_slowfs: a slow disk (100 ms per write, fsync, create, rename) is "
                    "one of the faults\n");
        return;
      }
      why = "weir_slowfs did not mount: " + slurp(c_.dir().path("slowfs.err"));
      why = why.substr(0, why.find('\n'));
    }
    std::printf("not injected: a slow disk (%s)\n", why.c_str());
  }

  // Fills the checkpoint disk to the last page; returns how many bytes it
  // took.
  int64_t fill_checkpoint_disk() {
    const int fd = ::open((tmpfs_ + "/filler").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return 0;
    static const std::string kChunk(1 << 20, 'x');
    int64_t written = 0;
    for (size_t size : {size_t{1} << 20, size_t{4096}, size_t{1}}) {
      ssize_t n;
      while ((n = ::write(fd, kChunk.data(), size)) > 0) written += n;
    }
    ::close(fd);
    return written;
  }

  std::string random_taskmanager() {
    static const char* kIds[] = {"tm-1", "tm-2", "tm-3"};
    return kIds[rng_() % 3];
  }

  // Watches the job's newest completed checkpoint (asking any JobManager,
  // every 50 ms, the whole run): progress, and the longest time without it.
  void watch() {
    while (!stop_watching_) {
      // A frozen JobManager must not hold the poll up.
      cluster::ClusterClient client = c_.client();
      client.set_answer_timeout(1);
      const int64_t n = newest_checkpoint(client, job_);
      if (n > last_seen_) {
        std::lock_guard lock(mu_);
        if (last_seen_ >= 0) longest_stall_ms_ = std::max(longest_stall_ms_, ms_since(last_progress_));
        last_seen_ = n;
        last_progress_ = Clock::now();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the polling interval
    }
  }

  // Until the job completed a checkpoint newer than `after`, or `deadline`.
  bool progressed(int64_t after, std::chrono::milliseconds deadline) {
    return eventually([&] { return last_seen_ > after; }, deadline);
  }

  void inject(Fault f) {
    const int64_t before = std::max<int64_t>(last_seen_, newest_checkpoint(c_.client(), job_));
    const int64_t fault_wall_ms = SystemClock::instance()->wall_ms();
    const auto start = Clock::now();
    std::string what = name(f);
    // A fault that lasts (a freeze, a cut) is undone `lasting` after it
    // began, on a thread of its own, while recovery is measured: the job
    // should recover before it ends.
    std::function<void()> undo;
    std::chrono::milliseconds lasting{0};
    int64_t truncated = -1;  // the checkpoint a state file of which was cut short
    switch (f) {
      case Fault::kKillTaskManager:
      case Fault::kTruncateCheckpoint: {
        if (f == Fault::kTruncateCheckpoint) what += " " + truncate_newest_state_file(&truncated);
        const std::string tm = random_taskmanager();
        what += " " + tm;
        c_.taskmanager(tm)->kill9();
        c_.taskmanager(tm)->wait();
        c_.start_taskmanager(tm, 2);
        break;
      }
      case Fault::kFreezeTaskManager: {
        const std::string tm = random_taskmanager();
        what += " " + tm;
        Child* p = c_.taskmanager(tm);
        p->signal(SIGSTOP);
        undo = [p] { p->signal(SIGCONT); };
        lasting = std::chrono::milliseconds(4000);  // past the 2 s heartbeat timeout
        break;
      }
      case Fault::kKillLeader: {
        const std::string jm = c_.leader();
        if (jm.empty()) return;
        what += " " + jm;
        c_.jobmanager(jm)->kill9();
        c_.jobmanager(jm)->wait();
        c_.start_jobmanager(jm, jm == "jm-a" ? jm_a_quorum() : "");
        break;
      }
      case Fault::kFreezeLeader: {
        const std::string jm = c_.leader();
        if (jm.empty()) return;
        what += " " + jm;
        Child* p = c_.jobmanager(jm);
        p->signal(SIGSTOP);
        undo = [p] { p->signal(SIGCONT); };
        lasting = std::chrono::milliseconds(6000);  // past the 2 s session timeout
        break;
      }
      case Fault::kPartitionLeader: {
        if (proxy_) {
          // Only jm-a's link to ZooKeeper can be cut; when jm-b leads, jm-a
          // (standing by) is cut off instead, and the job must not notice.
          what += c_.leader() == "jm-a" ? " jm-a (leading, from ZooKeeper)" : " jm-a (standing by, from ZooKeeper)";
          proxy_->cut();
          undo = [this] { proxy_->heal(); };
        } else {
          const std::string jm = c_.leader();
          if (jm.empty()) return;
          what += " " + jm;
          if (!hosts_.set_cable(jm, false)) what += " (cable not pulled)";
          undo = [this, jm] { hosts_.set_cable(jm, true); };
        }
        lasting = std::chrono::milliseconds(6000);  // past the 2 s session timeout
        break;
      }
      case Fault::kPartitionTaskManager: {
        const std::string tm = random_taskmanager();
        what += " " + tm;
        if (!hosts_.set_cable(tm, false)) what += " (cable not pulled)";
        undo = [this, tm] { hosts_.set_cable(tm, true); };
        lasting = std::chrono::milliseconds(4000);  // past the 2 s heartbeat timeout
        break;
      }
      case Fault::kFullDisk: {
        what += " (" + std::to_string(fill_checkpoint_disk() >> 20) + " MiB filler)";
        undo = [this] { std::filesystem::remove(tmpfs_ + "/filler"); };
        lasting = std::chrono::milliseconds(3000);
        break;
      }
      case Fault::kSlowDisk: {
        slow_fs_->signal(SIGUSR1);
        undo = [this] { slow_fs_->signal(SIGUSR2); };
        lasting = std::chrono::milliseconds(5000);
        break;
      }
      case Fault::kHostileGrpcPeers: {
        // Eight peers without the secret offer 200 MB each to the leader's
        // session port while the job runs on: refused before a message is
        // read, they cost it nothing.
        const std::string jm = c_.leader();
        if (jm.empty()) return;
        const int refused =
            push_without_the_secret(c_.session_address(jm), grpc::InsecureChannelCredentials(), 8, 20, 10 << 20);
        what += " " + jm + " (" + std::to_string(refused) + " of 8 refused)";
        break;
      }
      case Fault::kRestartZooKeeper: {
        c_.zookeeper().stop();
        undo = [this] { zookeeper_back_ = c_.zookeeper().start(); };
        lasting = std::chrono::milliseconds(1000);
        break;
      }
    }
    std::thread undoing;
    if (undo) {
      undoing = std::thread([undo, lasting] {
        std::this_thread::sleep_for(lasting);  // how long the fault lasts
        undo();
      });
    }
    const bool recovered = progressed(before, std::chrono::seconds(90));
    const int64_t took = ms_since(start);
    if (undoing.joinable()) undoing.join();
    if (f == Fault::kRestartZooKeeper && !zookeeper_back_) what += " (did not come back)";
    if (truncated >= 0 && recovered) {
      // Which checkpoint the restart after the kill restored: an older one
      // than the cut one means the restore met the cut file and fell back.
      // (A TaskManager holding no task of the job restarts nothing.)
      int64_t restored = -1;
      eventually(
          [&] {
            cluster::ClusterClient client = c_.client();
            client.set_answer_timeout(1);
            auto c = client.checkpoints(job_);
            if (!c.ok() || !(*c)["restored"].is_object() || (*c)["restored"]["time_ms"].get<int64_t>() < fault_wall_ms) {
              return false;
            }
            restored = (*c)["restored"]["id"].get<int64_t>();
            return true;
          },
          std::chrono::seconds(10));
      what += restored < 0 ? ", no restart" : ", restored chk-" + std::to_string(restored);
      if (restored >= 0 && restored < truncated) ++fell_back_;
      ++truncations_;
    }
    if (!o_.quiet) {
      std::printf("%6.1f s  %-48s %s in %lld ms\n", std::chrono::duration<double>(Clock::now() - began_).count(),
                  what.c_str(), recovered ? "recovered" : "NOT RECOVERED", static_cast<long long>(took));
      std::fflush(stdout);
    }
    ++faults_[name(f)];
    if (recovered) {
      recovery_ms_[name(f)].push_back(took);
    } else {
      ++unrecovered_;
    }
  }

  // Truncates one state file of the newest checkpoint on disk to half its
  // size, when an older complete one is there to fall back to; returns its
  // path relative to the checkpoint directory and sets `id` (else -1).
  std::string truncate_newest_state_file(int64_t* id) {
    namespace fs = std::filesystem;
    *id = -1;
    const fs::path job = fs::path(checkpoint_dir_) / job_;
    int64_t newest = -1;
    int complete = 0;
    fs::path dir;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(job, ec)) {
      const std::string n = e.path().filename().string();
      if (n.rfind("chk-", 0) != 0 || !fs::exists(e.path() / "_metadata")) continue;
      ++complete;
      const int64_t cp = std::atoll(n.c_str() + 4);
      if (cp > newest) newest = cp, dir = e.path();
    }
    if (complete < 2) return "(fewer than 2 checkpoints: none truncated)";
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      if (e.is_regular_file() && e.path().filename() != "_metadata") files.push_back(e.path());
    }
    if (files.empty()) return "(no state file)";
    const fs::path victim = files[rng_() % files.size()];
    fs::resize_file(victim, fs::file_size(victim, ec) / 2, ec);
    *id = newest;
    return (dir.filename() / victim.filename()).string();
  }

  int check() {
    // Every recovery set the job back (it replays from its checkpoint at
    // the same rate), so what is left to read after the faults can take as
    // long as the faults did: the wait is as long as the run, plus 5 min.
    // Only FINISHED or FAILED ends it: the soak never cancels the job, so
    // CANCELED is the view of a JobManager that was stepping down (the new
    // leader recovers the job), and the question goes to the leader again.
    absl::StatusOr<nlohmann::json> done = absl::UnavailableError("not asked yet");
    std::string status;
    eventually(
        [&] {
          done = c_.client().wait(job_, 60000);
          status = done.ok() ? (*done)["status"].get<std::string>() : std::string(done.status().message());
          return status == "FINISHED" || status == "FAILED";
        },
        std::chrono::duration_cast<std::chrono::milliseconds>(o_.duration + std::chrono::minutes(5)));
    stop_watching_ = true;
    if (watcher_.joinable()) watcher_.join();
    auto verdict = examples::check_running_sum({input_}, c_.dir().path("out"));
    int total = 0;
    for (const auto& [kind, n] : faults_) total += n;
    std::printf("\nchaos soak: seed %llu, %lld s, %d faults, job %s\n", static_cast<unsigned long long>(o_.seed),
                static_cast<long long>(o_.duration.count()), total, status.c_str());
    std::printf("%-22s %6s %9s %9s %9s %9s\n", "fault", "count", "p50 ms", "p90 ms", "p99 ms", "max ms");
    for (const auto& [kind, n] : faults_) {
      const auto& v = recovery_ms_[kind];
      std::printf("%-22s %6d %9lld %9lld %9lld %9lld\n", kind.c_str(), n, static_cast<long long>(percentile(v, 50)),
                  static_cast<long long>(percentile(v, 90)), static_cast<long long>(percentile(v, 99)),
                  static_cast<long long>(percentile(v, 100)));
    }
    std::printf("faults not recovered from: %d\n", unrecovered_);
    std::printf("truncated checkpoints: %d, of which the restore met the cut file and fell back to an older one: %d\n",
                truncations_, fell_back_);
    {
      std::lock_guard lock(mu_);
      std::printf("longest time without a completed checkpoint: %lld ms\n", static_cast<long long>(longest_stall_ms_));
    }
    {
      // What the job left on the checkpoint disk: its 3 retained
      // checkpoints, plus what fell behind since the last sweep (10 s).
      int complete = 0, incomplete = 0;
      std::error_code ec;
      for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(checkpoint_dir_) / job_, ec)) {
        if (e.path().filename().string().rfind("chk-", 0) != 0) continue;
        ++(std::filesystem::exists(e.path() / "_metadata") ? complete : incomplete);
      }
      std::printf("checkpoint directories left: %d complete, %d incomplete (3 retained)\n", complete, incomplete);
    }
    bool ok = unrecovered_ == 0 && status == "FINISHED";
    if (!verdict.ok()) {
      std::printf("output: cannot check: %s\n", std::string(verdict.status().message()).c_str());
      ok = false;
    } else {
      std::printf("records: %lld valid, %lld lost, %lld duplicated, %lld out of order within their key (%s)\n",
                  static_cast<long long>(verdict->valid_records), static_cast<long long>(verdict->lost_records),
                  static_cast<long long>(verdict->duplicated_records),
                  static_cast<long long>(verdict->out_of_order_records),
                  verdict->exactly_once ? "exactly-once" : "NOT exactly-once");
      for (const auto& p : verdict->problems) std::printf("  %s\n", p.c_str());
      ok = ok && verdict->exactly_once && verdict->out_of_order_records == 0;
    }
    if (!ok) {
      std::fprintf(stderr, "chaos soak FAILED (seed %llu; replay with --seed %llu); logs under %s\n%s\n",
                   static_cast<unsigned long long>(o_.seed), static_cast<unsigned long long>(o_.seed),
                   c_.dir().path().c_str(), c_.logs().substr(c_.logs().size() > 20000 ? c_.logs().size() - 20000 : 0).c_str());
    }
    return ok ? 0 : 1;
  }

  const Options o_;
  Hosts hosts_;  // outlives the cluster's processes
  HaCluster c_;
  std::mt19937_64 rng_;
  std::unique_ptr<TcpProxy> proxy_;
  std::string input_, job_;
  const Clock::time_point began_ = Clock::now();
  std::thread watcher_;
  std::atomic<bool> stop_watching_{false};
  std::atomic<int64_t> last_seen_{-1};
  std::mutex mu_;
  Clock::time_point last_progress_ = Clock::now();  // under mu_
  int64_t longest_stall_ms_ = 0;                   // under mu_
  std::map<std::string, int> faults_;
  std::map<std::string, std::vector<int64_t>> recovery_ms_;
  int unrecovered_ = 0;
  bool zookeeper_back_ = true;
  std::string tmpfs_;           // the checkpoint disk when it is a tmpfs of its own
  std::string checkpoint_dir_;  // what the job checkpoints to (through weir_slowfs when it runs)
  std::unique_ptr<Child> slow_fs_;
  std::vector<Fault> faults_available_;
  int truncations_ = 0;
  int fell_back_ = 0;
};

}  // namespace
}  // namespace weir::testing

int main(int argc, char** argv) {
  weir::testing::Options o;
  o.seed = std::random_device{}();
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--duration" && has_value) {
      const std::string v = argv[++i];
      char* end = nullptr;
      const long long n = std::strtoll(v.c_str(), &end, 10);
      const std::string unit = end;
      if (n <= 0 || !(unit.empty() || unit == "s" || unit == "m")) {
        std::fprintf(stderr, "weir_chaos: --duration %s: a positive number of seconds (90s) or minutes (60m)\n",
                     v.c_str());
        return 2;
      }
      o.duration = std::chrono::seconds(unit == "m" ? n * 60 : n);
    } else if (a == "--seed" && has_value) {
      o.seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (a == "--quiet") {
      o.quiet = true;
    } else {
      std::fprintf(stderr, "weir_chaos: unknown argument %s (usage: weir_chaos [--duration 90s] [--seed N] [--quiet])\n",
                   a.c_str());
      return 2;
    }
  }
  ::signal(SIGPIPE, SIG_IGN);
  return weir::testing::Soak(o).run();
}
