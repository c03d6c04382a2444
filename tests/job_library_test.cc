// Jobs built out of tree: this build of weir is installed into a prefix, the
// job template (examples/job-template) is built against it with CMake's
// find_package(weir) as a user would, and the library runs on a cluster
// (uploaded by the client, fetched and verified by the TaskManagers),
// stops with a savepoint and resumes at another parallelism; and libraries
// that are not weir jobs, or are built for another weir, are refused.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/file.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>

#include "cluster/job_library.h"
#include "network/data_plane.h"
#include "tests/cluster.h"
#include "tests/prometheus.h"
#include "tests/word_count.h"
#include "weir/connectors.h"
#include "testing/seed.h"

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace weir {
namespace {

using testing::cache_entry;
using testing::expect_word_counts_exactly_once;
using testing::write_words;
using testing::Cluster;
using testing::eventually;
using testing::RunResult;
using testing::slurp;
using testing::TempDir;
using testing::Sample;
using testing::parse_prometheus;
using testing::scrape;
using testing::total;
using testing::Total;

// Writes `text` to `path` unless it holds it already (an unchanged file
// keeps its time, so the build stays up to date).
void write_if_changed(const std::string& path, const std::string& text) {
  if (slurp(path) == text) return;
  std::ofstream(path, std::ios::trunc) << text;
}

// A library whose entry point claims another weir release, and one with no
// entry point: what a user gets from a stale build or the wrong file. And a
// job with a slow operator behind a rebalance, to watch backpressure.
constexpr char kTestProject[] = R"(cmake_minimum_required(VERSION 3.25)
project(test_jobs LANGUAGES CXX)
find_package(weir REQUIRED)
weir_add_job(old_abi old_abi.cc)
weir_add_job(no_entry no_entry.cc)
weir_add_job(slow slow.cc)
weir_add_job(crash crash.cc)
)";
// A job whose build function crashes the process that calls it.
constexpr char kCrash[] = R"(#include <weir/job_library.h>
#include <csignal>
static absl::Status build(weir::StreamEnvironment&, const std::vector<std::string>&) {
  std::raise(SIGSEGV);
  return absl::OkStatus();
}
WEIR_JOB("crash", build)
)";
// slow --records N --micros M: N numbers through a map that takes M µs a
// record (as a slow sink would), into a sink that drops them and counts
// them in metrics of its own: a counter, a gauge and a histogram.
constexpr char kSlow[] = R"(#include <weir/job_library.h>
#include <chrono>
#include <thread>
namespace {
class Drop final : public weir::Sink<int64_t> {
 public:
  absl::Status open(weir::OperatorContext& ctx) override {
    dropped_ = &ctx.metrics().counter("dropped");
    last_ = &ctx.metrics().gauge("last_value");
    tens_ = &ctx.metrics().histogram("value_mod_100");
    return absl::OkStatus();
  }
  absl::Status write(const int64_t& v) override {
    dropped_->inc();
    last_->set(static_cast<double>(v));
    tens_->update(v % 100);
    return absl::OkStatus();
  }
 private:
  weir::Counter* dropped_ = nullptr;
  weir::Gauge* last_ = nullptr;
  weir::Histogram* tens_ = nullptr;
};
absl::Status build(weir::StreamEnvironment& env, const std::vector<std::string>& args) {
  if (args.size() != 4 || args[0] != "--records" || args[2] != "--micros") {
    return absl::InvalidArgumentError("usage: --records N --micros M");
  }
  const int64_t n = std::stoll(args[1]), micros = std::stoll(args[3]);
  env.from_source<int64_t>([n] { return std::make_unique<weir::GeneratorSource<int64_t>>([](int64_t i) { return i; }, n); },
                           "numbers")
      .uid("numbers")
      .rebalance()
      .map([micros](const int64_t& v) {
        std::this_thread::sleep_for(std::chrono::microseconds(micros));
        return v;
      }, "slow")
      .uid("slow")
      .sink_to([] { return std::make_unique<Drop>(); }, "drop")
      .uid("drop");
  return absl::OkStatus();
}
}  // namespace
WEIR_JOB("slow", build)
)";
constexpr char kOldAbi[] = R"(#include <weir/job_library.h>
static absl::Status build(weir::StreamEnvironment&, const std::vector<std::string>&) { return absl::OkStatus(); }
extern "C" const weir::JobLibraryEntry* weir_job_entry_v1() {
  static const weir::JobLibraryEntry entry{"weir 0.0.1, libstdc++ 12, cxx11 abi 1", "old", &build};
  return &entry;
}
)";
constexpr char kNoEntry[] = "extern \"C\" int not_a_job() { return 1; }\n";

struct JobLibraries {
  std::string error;  // why they could not be built
  std::string weir;   // the installed executable
  std::string word_count, old_abi, no_entry, slow, crash;
};

// Installs this build into <build>/test-job-libraries/prefix and builds the
// template and the bad libraries against the installation. Test processes
// run in parallel; a file lock makes one build while the others wait, and
// find it up to date.
JobLibraries build_job_libraries() {
  JobLibraries out;
  // The build tree is where the weir under test was built.
  const std::string build = fs::path(testing::weir_bin()).parent_path().string();
  const std::string source = cache_entry(build, "CMAKE_HOME_DIRECTORY"), cmake = cache_entry(build, "CMAKE_COMMAND");
  if (source.empty() || cmake.empty()) {
    out.error = "no CMakeCache.txt beside " + testing::weir_bin() + " naming the source tree and cmake";
    return out;
  }
  const fs::path root = fs::path(build) / "test-job-libraries";
  fs::create_directories(root / "test-jobs-src");
  int lock = ::open((root / "lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (lock < 0 || ::flock(lock, LOCK_EX) != 0) {
    out.error = "cannot lock " + (root / "lock").string();
    return out;
  }
  const std::string prefix = (root / "prefix").string(), logs = (root / "log").string();
  write_if_changed((root / "test-jobs-src" / "CMakeLists.txt").string(), kTestProject);
  write_if_changed((root / "test-jobs-src" / "old_abi.cc").string(), kOldAbi);
  write_if_changed((root / "test-jobs-src" / "no_entry.cc").string(), kNoEntry);
  write_if_changed((root / "test-jobs-src" / "slow.cc").string(), kSlow);
  write_if_changed((root / "test-jobs-src" / "crash.cc").string(), kCrash);
  const std::vector<std::vector<std::string>> steps = {
      {cmake, "--install", build, "--prefix", prefix},
      {cmake, "-S", source + "/examples/job-template", "-B", (root / "template").string(), "-G", "Ninja",
       "-DCMAKE_PREFIX_PATH=" + prefix},
      {cmake, "--build", (root / "template").string()},
      {cmake, "-S", (root / "test-jobs-src").string(), "-B", (root / "test-jobs").string(), "-G", "Ninja",
       "-DCMAKE_PREFIX_PATH=" + prefix},
      {cmake, "--build", (root / "test-jobs").string()},
  };
  for (const auto& step : steps) {
    RunResult r = testing::run_program(step, logs);
    if (r.code != 0) {
      std::string cmd;
      for (const auto& a : step) cmd += a + " ";
      out.error = cmd + "exited with " + std::to_string(r.code) + "\n" + r.out + r.err;
      break;
    }
  }
  ::close(lock);
  out.weir = prefix + "/bin/weir";
  out.word_count = (root / "template" / "libword_count.so").string();
  out.old_abi = (root / "test-jobs" / "libold_abi.so").string();
  out.no_entry = (root / "test-jobs" / "libno_entry.so").string();
  out.slow = (root / "test-jobs" / "libslow.so").string();
  out.crash = (root / "test-jobs" / "libcrash.so").string();
  return out;
}

std::string submitted_job(const std::string& out) {
  size_t at = out.find("submitted job ");
  if (at == std::string::npos) return "";
  std::string id = out.substr(at + 14);
  return id.substr(0, id.find('\n'));
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The README's flow with a job built out of tree: a JobManager and two
// TaskManagers; `weir run LIBRARY.so` uploads the library, the TaskManagers
// fetch it; stop with a savepoint; resume at another parallelism; the
// output of both runs together is exactly-once. A TaskManager's copy that
// no longer matches its digest is fetched again.
TEST(JobLibraryTest, TemplateBuiltOutOfTreeRunsOnAClusterAndResumesAtAnotherParallelism) {
  JobLibraries libs = build_job_libraries();
  ASSERT_TRUE(libs.error.empty()) << libs.error;
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  Cluster c("job-library-cluster");
  const std::string input = c.dir().path("words.txt");
  write_words(input, 60000, seed);
  ASSERT_TRUE(c.start({{"tm-a", 2}, {"tm-b", 2}})) << "the cluster did not come up\n" << c.jm_log();
  const std::vector<std::string> client = {"--jobmanager", c.rest(), "--secret-file", c.secret_file()};
  // weir run [--detached] LIBRARY JOB-FLAGS JOB-ARGS: weir takes its job
  // flags (-p, --checkpoint-dir, ...), the job gets the rest (--input,
  // --output, --rate) in order.
  auto run = [&](bool detached, std::vector<std::string> more, const std::string& output, const std::string& log) {
    std::vector<std::string> args = {"run"};
    args.insert(args.end(), client.begin(), client.end());
    if (detached) args.push_back("--detached");
    for (const std::string& a : {libs.word_count, std::string("--input"), input, std::string("--checkpoint-dir"),
                                 c.dir().path("chk"), std::string("--checkpoint-interval"), std::string("100ms"),
                                 std::string("--output"), output}) {
      args.push_back(a);
    }
    args.insert(args.end(), more.begin(), more.end());
    return testing::run_weir(args, c.dir().path(log));
  };

  RunResult submitted = run(true, {"-p", "2", "--rate", "3000"}, c.dir().path("out"), "first");
  ASSERT_EQ(submitted.code, 0) << submitted.err;
  const std::string first = submitted_job(submitted.out);
  ASSERT_FALSE(first.empty()) << submitted.out;
  ASSERT_TRUE(eventually([&] { auto r = c.client().checkpoints(first); return r.ok() && (*r)["completed"].size() >= 2; },
                         60s))
      << c.jm_log();
  const std::string digest = cluster::sha256_hex(slurp(libs.word_count));
  auto detail = c.client().job(first);
  ASSERT_TRUE(detail.ok()) << detail.status();
  EXPECT_EQ((*detail)["name"], "word-count");
  EXPECT_EQ((*detail)["library"], digest);
  EXPECT_EQ((*detail)["status"], "RUNNING");
  // Each process holds the library under its digest, verified.
  for (const char* dir : {"jm-libraries", "tm-a-libraries", "tm-b-libraries"}) {
    EXPECT_EQ(cluster::sha256_hex(slurp(c.dir().path(dir) + "/" + digest + ".so")), digest) << dir;
  }

  // Without --savepoint the savepoint goes under <checkpoint-dir>/savepoints.
  RunResult stop = testing::run_weir({"stop", first, "--jobmanager", c.rest(), "--secret-file", c.secret_file()},
                                     c.dir().path("stop"));
  ASSERT_EQ(stop.code, 0) << stop.err;
  std::string savepoint = stop.out.substr(stop.out.find("completed: ") + 11);
  savepoint = savepoint.substr(0, savepoint.find('\n'));
  EXPECT_EQ(fs::path(savepoint).parent_path(), fs::path(c.dir().path("chk")) / "savepoints") << stop.out;
  ASSERT_TRUE(fs::exists(fs::path(savepoint) / "_metadata")) << stop.out;

  RunResult resumed = run(false, {"-p", "3", "--restore", savepoint}, c.dir().path("out"), "resumed");
  ASSERT_EQ(resumed.code, 0) << resumed.err << resumed.out;
  EXPECT_NE(resumed.out.find("FINISHED"), std::string::npos) << resumed.out;
  expect_word_counts_exactly_once(input, c.dir().path("out"));
  // The second submission found the library already uploaded.
  EXPECT_EQ(count_of(c.jm_log(), "job library " + digest + " stored"), 1u) << c.jm_log();

  // A TaskManager that finds its copy damaged on disk when it starts again
  // fetches the library again.
  const std::string copy = c.dir().path("tm-a-libraries") + "/" + digest + ".so";
  c.taskmanager("tm-a")->kill9();
  c.taskmanager("tm-a")->wait();
  std::ofstream(copy, std::ios::trunc) << "damaged";
  c.start_taskmanager("tm-a", 2);
  ASSERT_TRUE(c.ok()) << c.jm_log();
  RunResult again = run(false, {"-p", "4"}, c.dir().path("out-again"), "again");
  ASSERT_EQ(again.code, 0) << again.err << again.out;
  expect_word_counts_exactly_once(input, c.dir().path("out-again"));
  EXPECT_EQ(cluster::sha256_hex(slurp(copy)), digest);
  EXPECT_EQ(count_of(slurp(c.dir().path("tm-a.err")), "fetched job library " + digest), 1u)
      << slurp(c.dir().path("tm-a.err"));
}

// Embedded runs of a library, and every way a library or its upload can be
// wrong: each refused with one line naming the library and the cause, and
// nothing runs.
TEST(JobLibraryTest, BadLibrariesAndUploadsAreRefusedWithAClearError) {
  JobLibraries libs = build_job_libraries();
  ASSERT_TRUE(libs.error.empty()) << libs.error;
  TempDir dir("job-library-errors");
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const std::string input = dir.path("words.txt");
  write_words(input, 20000, seed);

  // The installed weir runs the library in its own process.
  RunResult embedded = testing::run_program({libs.weir, "run", "--embedded", libs.word_count, "-p", "2",
                                             "--checkpoint-interval", "50ms", "--input", input, "--output",
                                             dir.path("out")},
                                            dir.path("embedded"));
  ASSERT_EQ(embedded.code, 0) << embedded.err;
  expect_word_counts_exactly_once(input, dir.path("out"));

  const std::string not_elf = dir.path("notes.so");
  std::ofstream(not_elf) << "not a shared library\n";
  struct Case {
    std::string library;
    std::string message;
  };
  for (const Case& k : {Case{not_elf, "cannot load job library " + not_elf + ": "},
                        Case{libs.no_entry, "job library " + libs.no_entry + " has no entry point weir_job_entry_v1"},
                        Case{libs.old_abi, "job library " + libs.old_abi + " was built for weir 0.0.1"},
                        Case{dir.path("missing.so"), "cannot read job library " + dir.path("missing.so")}}) {
    RunResult r = testing::run_weir({"run", "--embedded", k.library, "--input", input, "--output", dir.path("o")},
                                    dir.path("bad"));
    EXPECT_EQ(r.code, 2) << r.err;
    EXPECT_NE(r.err.find(k.message), std::string::npos) << r.err;
    EXPECT_EQ(count_of(r.err, "\n"), 1u) << r.err;
  }
  // --dry-run builds the graph and runs nothing.
  RunResult dry = testing::run_weir({"run", "--dry-run", libs.word_count, "-p", "3", "--input", input, "--output",
                                     dir.path("dry-out")},
                                    dir.path("dry"));
  EXPECT_EQ(dry.code, 0) << dry.err;
  EXPECT_NE(dry.out.find("job word-count: 2 vertices, 6 subtasks"), std::string::npos) << dry.out;
  EXPECT_FALSE(fs::exists(dir.path("dry-out")));
  RunResult bad_args = testing::run_weir({"run", "--embedded", libs.word_count, "--input", input, "--output",
                                          dir.path("bad-out"), "--bogus", "1"},
                                         dir.path("bad-args"));
  EXPECT_EQ(bad_args.code, 2);
  EXPECT_NE(bad_args.err.find("word-count: unknown argument --bogus (the job takes --input, --output, --rate)"),
            std::string::npos)
      << bad_args.err;
  RunResult no_output = testing::run_weir({"run", "--embedded", libs.word_count, "--input=" + input, "--rate=x"},
                                          dir.path("no-output"));
  EXPECT_EQ(no_output.code, 2);
  EXPECT_NE(no_output.err.find("word-count: --output is required: where the part files go"), std::string::npos)
      << no_output.err;

  // On a cluster: the JobManager refuses the same libraries before anything
  // is deployed.
  Cluster c("job-library-errors-cluster");
  ASSERT_TRUE(c.start({{"tm-a", 1}})) << "the cluster did not come up\n" << c.jm_log();
  RunResult old = testing::run_weir({"run", "--jobmanager", c.rest(), "--secret-file", c.secret_file(), libs.old_abi},
                                    c.dir().path("old"));
  EXPECT_EQ(old.code, 2) << old.err;
  // The user's file is named, not the JobManager's copy of it.
  EXPECT_NE(old.err.find("job library " + libs.old_abi + " was built for weir 0.0.1"), std::string::npos) << old.err;
  // A build function that crashes does so in a child process of the
  // JobManager, which refuses the job and stays up.
  RunResult crash = testing::run_weir({"run", "--jobmanager", c.rest(), "--secret-file", c.secret_file(), libs.crash},
                                      c.dir().path("crash"));
  EXPECT_EQ(crash.code, 2) << crash.err;
  EXPECT_NE(crash.err.find("building the job crashed (signal 11"), std::string::npos) << crash.err;
  EXPECT_EQ(count_of(crash.err, "\n"), 1u) << crash.err;
  EXPECT_TRUE(c.jobmanager()->running());
  EXPECT_TRUE(c.client().overview().ok());
  RunResult missing = testing::run_weir(
      {"run", "--jobmanager", c.rest(), "--secret-file", c.secret_file(), dir.path("missing.so")}, c.dir().path("miss"));
  EXPECT_EQ(missing.code, 2) << missing.err;
  EXPECT_NE(missing.err.find("cannot read job library " + dir.path("missing.so")), std::string::npos) << missing.err;

  // An upload whose bytes do not hash to the digest it names is refused,
  // and a job naming a library never uploaded is refused.
  auto rest_client = testing::http_client(c.rest());
  httplib::Client& http = *rest_client;
  httplib::Headers auth = {{"Authorization", "Bearer " + c.secret()}};
  const std::string bytes = slurp(libs.word_count);
  const std::string digest = cluster::sha256_hex(bytes);
  auto torn = http.Put(("/v1/libraries/" + digest).c_str(), auth, bytes.substr(0, bytes.size() / 2),
                       "application/octet-stream");
  ASSERT_TRUE(torn);
  EXPECT_EQ(torn->status, 400);
  EXPECT_NE(torn->body.find("library upload corrupted"), std::string::npos) << torn->body;
  EXPECT_FALSE(fs::exists(c.dir().path("jm-libraries") + "/" + digest + ".so"));
  auto unknown = http.Post("/v1/jobs", auth, R"({"name": "x", "args": [], "library": ")" + digest + "\"}",
                           "application/json");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
  EXPECT_NE(unknown->body.find("upload it first"), std::string::npos) << unknown->body;
  auto jobs = c.client().list();
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ((*jobs)["jobs"].size(), 0u);
}

// The REST API reports each vertex's and subtask's records, bytes and time
// shares from the TaskManagers' heartbeats: behind a slow operator the
// source is backpressured (high), the slow operator busy and not.
TEST(JobLibraryTest, MetricsShowRecordsAndWhereBackpressureComesFrom) {
  JobLibraries libs = build_job_libraries();
  ASSERT_TRUE(libs.error.empty()) << libs.error;
  Cluster c("job-library-metrics");
  ASSERT_TRUE(c.start({{"tm-a", 2}})) << "the cluster did not come up\n" << c.jm_log();
  RunResult submitted = testing::run_weir({"run", "--detached", "--jobmanager", c.rest(), "--secret-file",
                                           c.secret_file(), libs.slow, "-p", "2", "--mode", "none", "--records",
                                           "100000000", "--micros", "200"},
                                          c.dir().path("submit"));
  ASSERT_EQ(submitted.code, 0) << submitted.err;
  const std::string job = submitted_job(submitted.out);
  nlohmann::json source, slow;
  // Rates need two heartbeats a second apart, and the source is only
  // backpressured once its buffers are all in flight; a record is counted in
  // when its whole buffer is through, which at 200 µs a record (more on a
  // loaded machine) takes a second or so. Wait for that steady state.
  const bool reported = eventually(
      [&] {
        auto d = c.client().job(job);
        if (!d.ok() || (*d)["vertices"].size() != 2) return false;
        source = (*d)["vertices"][0];
        slow = (*d)["vertices"][1];
        return source["metrics"].contains("backpressure") && slow["metrics"].contains("backpressure") &&
               slow["subtasks"].size() == 2 && slow["subtasks"][1]["metrics"].contains("busy_ms_per_s") &&
               slow["metrics"]["records_in"].get<int64_t>() > 0 && source["metrics"]["backpressure"] != "ok";
      },
      60s);
  ASSERT_TRUE(reported) << source << slow;
  const nlohmann::json& sm = source["metrics"];
  const nlohmann::json& wm = slow["metrics"];
  EXPECT_EQ(sm["backpressure"], "high") << source;
  EXPECT_GT(sm["backpressured_ms_per_s"].get<int64_t>(), 500) << source;
  EXPECT_GT(sm["records_out"].get<int64_t>(), 0) << source;
  EXPECT_EQ(sm["records_in"].get<int64_t>(), 0) << source;  // a source reads no channel
  EXPECT_EQ(wm["backpressure"], "ok") << slow;  // its sink is chained: no output channel to wait on
  EXPECT_GT(wm["busy_ms_per_s"].get<int64_t>(), 500) << slow;
  EXPECT_GT(wm["records_in"].get<int64_t>(), 0) << slow;
  // Records leave the source only as fast as the slow operator takes them:
  // 2 subtasks at 200 µs a record, at most ~10 000/s.
  EXPECT_LT(wm["records_in_per_s"].get<int64_t>(), 12000) << slow;
  EXPECT_GT(wm["bytes_in"].get<int64_t>(), wm["records_in"].get<int64_t>()) << slow;
  // `weir job` shows the same, a line a vertex; a prefix of the id names the
  // job as well.
  RunResult shown = testing::run_weir(
      {"job", job.substr(0, 6), "--jobmanager", c.rest(), "--secret-file", c.secret_file()}, c.dir().path("job"));
  ASSERT_EQ(shown.code, 0) << shown.err;
  const size_t numbers_line = shown.out.find("\n  numbers"), slow_line = shown.out.find("\n  slow");
  ASSERT_NE(numbers_line, std::string::npos) << shown.out;
  ASSERT_NE(slow_line, std::string::npos) << shown.out;
  EXPECT_NE(shown.out.substr(numbers_line, shown.out.find('\n', numbers_line + 1) - numbers_line).find("backpressure high"),
            std::string::npos)
      << shown.out;
  EXPECT_NE(shown.out.substr(slow_line, shown.out.find('\n', slow_line + 1) - slow_line).find("backpressure ok"),
            std::string::npos)
      << shown.out;
  auto canceled = c.client().cancel(job);
  ASSERT_TRUE(canceled.ok()) << canceled.status();
  EXPECT_EQ((*canceled)["status"], "CANCELED");
}

// `weir run LIBRARY.so --help` names the library's job and lists weir's job
// flags and the options its build function reads, without a cluster.
TEST(JobLibraryTest, HelpOfALibraryJobListsTheJobFlags) {
  JobLibraries libs = build_job_libraries();
  ASSERT_TRUE(libs.error.empty()) << libs.error;
  TempDir dir("job-library-help");
  RunResult help = testing::run_weir({"run", libs.slow, "--help"}, dir.path("help"));
  ASSERT_EQ(help.code, 0) << help.err;
  EXPECT_NE(help.out.find("The job slow of " + libs.slow), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("--checkpoint-interval DURATION"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("reads none through weir::JobArgs"), std::string::npos) << help.out;  // parses by hand
  // A library that reads its options through weir::JobArgs lists them.
  RunResult template_help = testing::run_weir({"run", libs.word_count, "--help"}, dir.path("template-help"));
  ASSERT_EQ(template_help.code, 0) << template_help.err;
  EXPECT_NE(template_help.out.find("--input VALUE"), std::string::npos) << template_help.out;
  EXPECT_NE(template_help.out.find("text to count the words of (required)"), std::string::npos) << template_help.out;
  EXPECT_NE(template_help.out.find("--rate N"), std::string::npos) << template_help.out;
  EXPECT_NE(template_help.out.find("(default: 0)"), std::string::npos) << template_help.out;
  RunResult missing = testing::run_weir({"run", dir.path("none.so"), "--help"}, dir.path("missing"));
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("cannot read job library " + dir.path("none.so")), std::string::npos) << missing.err;
}

// The JobManager and each TaskManager serve /metrics for Prometheus: task
// counters and rates, an operator's own counter, gauge and histogram, the
// network buffers, the JobManager's checkpoints and slots; the values move
// and agree with what the REST API reports (which lags by a heartbeat).
TEST(JobLibraryTest, PrometheusScrapesMoveAndAgreeWithTheRestApi) {
  JobLibraries libs = build_job_libraries();
  ASSERT_TRUE(libs.error.empty()) << libs.error;
  Cluster c("job-library-prometheus");
  ASSERT_TRUE(c.start({{"tm-a", 2}})) << "the cluster did not come up\n" << c.jm_log();
  RunResult submitted = testing::run_weir(
      {"run", "--detached", "--jobmanager", c.rest(), "--secret-file", c.secret_file(), libs.slow, "-p", "2",
       "--checkpoint-dir", c.dir().path("chk"), "--checkpoint-interval", "100ms", "--records", "100000000",
       "--micros", "100"},
      c.dir().path("submit"));
  ASSERT_EQ(submitted.code, 0) << submitted.err;
  const std::string job = submitted_job(submitted.out);
  auto overview = c.client().overview();
  ASSERT_TRUE(overview.ok()) << overview.status();
  ASSERT_EQ((*overview)["taskmanagers"].size(), 1u) << *overview;
  const std::string tm = (*overview)["taskmanagers"][0]["metrics_address"];
  ASSERT_FALSE(tm.empty()) << *overview;

  // Without the secret neither answers; the REST port's other routes neither.
  for (const std::string& address : {c.rest(), tm}) {
    auto refused = scrape(address, "");
    ASSERT_TRUE(refused) << address;
    EXPECT_EQ(refused->status, 401) << address << ": " << refused->body;
    EXPECT_NE(refused->body.find("no cluster secret given"), std::string::npos) << refused->body;
  }

  std::vector<Sample> tm_page, jm_page;
  const std::map<std::string, std::string> numbers = {{"job_id", job}, {"task_name", "numbers"}};
  const std::map<std::string, std::string> drop = {{"job_id", job}, {"operator_name", "drop"}};
  auto scrape_both = [&] {
    auto t = scrape(tm, c.secret());
    auto j = scrape(c.rest(), c.secret());
    if (!t || !j || t->status != 200 || j->status != 200) return false;
    EXPECT_EQ(t->get_header_value("Content-Type").rfind("text/plain; version=0.0.4", 0), 0u);
    EXPECT_EQ(j->get_header_value("Content-Type").rfind("text/plain; version=0.0.4", 0), 0u);
    tm_page = parse_prometheus(t->body);
    jm_page = parse_prometheus(j->body);
    return true;
  };
  // Running, with rates (two heartbeats a second apart) and a checkpoint.
  const bool running = eventually(
      [&] {
        return scrape_both() &&
               total(tm_page, "weir_taskmanager_job_task_numRecordsOut", numbers).sum > 0 &&
               total(tm_page, "weir_taskmanager_job_task_operator_dropped", drop).sum > 0 &&
               total(tm_page, "weir_taskmanager_job_task_busyTimeMsPerSecond", {{"task_name", "slow -> drop"}})
                       .samples == 2 &&
               total(jm_page, "weir_jobmanager_job_numberOfCompletedCheckpoints", {{"job_id", job}}).sum >= 1;
      },
      30s);
  ASSERT_TRUE(running) << "TaskManager:\n" << scrape(tm, c.secret())->body << "\nJobManager:\n"
                       << scrape(c.rest(), c.secret())->body;
  EXPECT_EQ(testing::duplicate_series(tm_page), std::vector<std::string>{});
  EXPECT_EQ(testing::duplicate_series(jm_page), std::vector<std::string>{});

  // A subtask each, labelled with where it runs.
  const Total out1 = total(tm_page, "weir_taskmanager_job_task_numRecordsOut", numbers);
  EXPECT_EQ(out1.samples, 2);
  EXPECT_EQ(total(tm_page, "weir_taskmanager_job_task_numRecordsOut",
                  {{"task_name", "numbers"}, {"subtask_index", "1"}, {"tm_id", "tm-a"}, {"task_attempt_num", "0"}})
                .samples,
            1);
  EXPECT_EQ(total(tm_page, "weir_taskmanager_job_task_numRecordsIn", numbers).sum, 0);  // a source reads no channel
  // The source operator counts what it emitted, each of its two subtasks.
  EXPECT_EQ(total(tm_page, "weir_taskmanager_job_task_operator_numRecordsOut", numbers).samples, 2);
  EXPECT_GT(total(tm_page, "weir_taskmanager_job_task_operator_numRecordsOut", numbers).sum, 0);
  // The operator's own metrics: its histogram of v % 100 as a summary.
  EXPECT_EQ(total(tm_page, "weir_taskmanager_job_task_operator_dropped", drop).samples, 2);
  EXPECT_EQ(total(tm_page, "weir_taskmanager_job_task_operator_last_value", drop).samples, 2);
  const Total count = total(tm_page, "weir_taskmanager_job_task_operator_value_mod_100_count", drop);
  const Total sum = total(tm_page, "weir_taskmanager_job_task_operator_value_mod_100_sum", drop);
  EXPECT_GT(count.sum, 0);
  EXPECT_LE(sum.sum / count.sum, 99.0);
  for (const Sample& s : tm_page) {
    if (s.name != "weir_taskmanager_job_task_operator_value_mod_100") continue;
    EXPECT_TRUE(s.labels.count("quantile")) << s.name;
    EXPECT_GE(s.value, 0);
    EXPECT_LE(s.value, 99);
  }
  // Every operator counts the records it took and gave, as Flink's operator
  // scope does: the slow map takes what came over the network and hands it
  // on to the chained sink.
  const std::map<std::string, std::string> slow_op = {{"job_id", job}, {"operator_name", "slow"}};
  EXPECT_EQ(total(tm_page, "weir_taskmanager_job_task_operator_numRecordsIn", slow_op).samples, 2);
  EXPECT_GT(total(tm_page, "weir_taskmanager_job_task_operator_numRecordsIn", slow_op).sum, 0);
  EXPECT_GT(total(tm_page, "weir_taskmanager_job_task_operator_numRecordsOut", slow_op).sum, 0);
  EXPECT_GT(total(tm_page, "weir_taskmanager_job_task_operator_numRecordsIn", drop).sum, 0);
  // The slow map is the bottleneck: the source's output channels fill up
  // and its input queue holds buffers.
  const std::map<std::string, std::string> slow_task = {{"job_id", job}, {"task_name", "slow -> drop"}};
  EXPECT_EQ(total(tm_page, "weir_taskmanager_job_task_isBackPressured", slow_task).sum, 0);
  EXPECT_EQ(total(tm_page, "weir_taskmanager_job_task_buffers_outPoolUsage", slow_task).sum, 0);  // no channel out
  EXPECT_TRUE(eventually(
      [&] {
        return scrape_both() && total(tm_page, "weir_taskmanager_job_task_isBackPressured", numbers).sum >= 1 &&
               total(tm_page, "weir_taskmanager_job_task_buffers_inputQueueLength", slow_task).sum > 0 &&
               total(tm_page, "weir_taskmanager_job_task_Shuffle_Netty_Input_Buffers_inPoolUsage", slow_task).sum > 0;
      },
      20s))
      << "TaskManager:\n" << scrape(tm, c.secret())->body;
  const Total out_usage = total(tm_page, "weir_taskmanager_job_task_buffers_outPoolUsage", numbers);
  EXPECT_EQ(out_usage.samples, 2);
  EXPECT_GT(out_usage.sum, 0);
  EXPECT_LE(out_usage.sum, 2.0);  // a share of each subtask's channels
  EXPECT_EQ(total(tm_page, "weir_taskmanager_job_task_buffers_inputQueueLength", numbers).sum, 0);  // no input
  const Total buffers = total(tm_page, "weir_taskmanager_Status_Shuffle_Netty_TotalMemorySegments");
  const Total used = total(tm_page, "weir_taskmanager_Status_Shuffle_Netty_UsedMemorySegments");
  EXPECT_EQ(buffers.samples, 1);
  EXPECT_GT(used.sum, 0);  // the source's buffers wait in its channels
  EXPECT_LE(used.sum, buffers.sum);
  EXPECT_GT(total(tm_page, "weir_taskmanager_Status_ProcessMemoryRSS").sum, 1 << 20);
  // The JobManager's view of the cluster and the job.
  EXPECT_EQ(total(jm_page, "weir_jobmanager_numRegisteredTaskManagers").sum, 1);
  EXPECT_EQ(total(jm_page, "weir_jobmanager_taskSlotsTotal").sum, 2);
  EXPECT_EQ(total(jm_page, "weir_jobmanager_taskSlotsAvailable").sum, 0);
  EXPECT_EQ(total(jm_page, "weir_jobmanager_numRunningJobs").sum, 1);
  EXPECT_GT(total(jm_page, "weir_jobmanager_job_uptime", {{"job_id", job}, {"job_name", "slow"}}).sum, 0);
  EXPECT_EQ(total(jm_page, "weir_jobmanager_job_numRestarts", {{"job_id", job}}).sum, 0);
  EXPECT_EQ(total(jm_page, "weir_jobmanager_job_lastCheckpointRestoreTimestamp", {{"job_id", job}}).sum, -1);
  EXPECT_EQ(total(jm_page, "weir_jobmanager_job_lastCheckpointFullSize", {{"job_id", job}}).samples, 1);
  // Checkpoint counts and the outage gauges as Flink names them; no failure yet.
  EXPECT_GE(total(jm_page, "weir_jobmanager_job_totalNumberOfCheckpoints", {{"job_id", job}}).sum,
            total(jm_page, "weir_jobmanager_job_numberOfCompletedCheckpoints", {{"job_id", job}}).sum);
  EXPECT_EQ(total(jm_page, "weir_jobmanager_job_numberOfInProgressCheckpoints", {{"job_id", job}}).samples, 1);
  EXPECT_EQ(total(jm_page, "weir_jobmanager_job_downtime", {{"job_id", job}}).sum, 0);
  EXPECT_EQ(total(jm_page, "weir_jobmanager_job_restartingTime", {{"job_id", job}}).sum, 0);
  const double checkpoints1 = total(jm_page, "weir_jobmanager_job_numberOfCompletedCheckpoints", {{"job_id", job}}).sum;

  // The REST API's figures come from heartbeats: never ahead of a scrape
  // taken after them, and they catch up with it.
  auto rest = [&](int vertex, const char* key) -> double {
    auto d = c.client().job(job);
    if (!d.ok()) return -1;
    const nlohmann::json& m = (*d)["vertices"][vertex]["metrics"];
    if (m.is_null()) return -1;
    if (std::string(key) == "dropped") return m["gauges"].value("dropped", int64_t{-1});
    return m[key].get<double>();
  };
  auto rest_checkpoints = [&]() -> double {
    auto r = c.client().checkpoints(job);
    return r.ok() ? static_cast<double>((*r)["completed"].size()) : -1;
  };
  const double rest_out = rest(0, "records_out"), rest_dropped = rest(1, "dropped");
  const double rest_cps = rest_checkpoints();
  ASSERT_TRUE(scrape_both());
  const Total out2 = total(tm_page, "weir_taskmanager_job_task_numRecordsOut", numbers);
  const Total dropped2 = total(tm_page, "weir_taskmanager_job_task_operator_dropped", drop);
  const double checkpoints2 = total(jm_page, "weir_jobmanager_job_numberOfCompletedCheckpoints", {{"job_id", job}}).sum;
  EXPECT_LE(rest_out, out2.sum);
  EXPECT_LE(rest_dropped, dropped2.sum);
  EXPECT_LE(rest_cps, checkpoints2);
  EXPECT_TRUE(eventually([&] { return rest(0, "records_out") >= out2.sum; }, 10s)) << out2.sum;
  EXPECT_TRUE(eventually([&] { return rest(1, "dropped") >= dropped2.sum; }, 10s)) << dropped2.sum;
  EXPECT_TRUE(eventually([&] { return rest_checkpoints() >= checkpoints2; }, 10s)) << checkpoints2;
  // And the values move.
  EXPECT_TRUE(eventually(
      [&] {
        return scrape_both() &&
               total(tm_page, "weir_taskmanager_job_task_numRecordsOut", numbers).sum > out2.sum &&
               total(tm_page, "weir_taskmanager_job_task_operator_dropped", drop).sum > dropped2.sum &&
               total(jm_page, "weir_jobmanager_job_numberOfCompletedCheckpoints", {{"job_id", job}}).sum > checkpoints1;
      },
      10s));

  // Once the job ended its series are gone from both.
  auto canceled = c.client().cancel(job);
  ASSERT_TRUE(canceled.ok()) << canceled.status();
  EXPECT_TRUE(eventually(
      [&] {
        return scrape_both() && total(jm_page, "weir_jobmanager_numRunningJobs").sum == 0 &&
               total(jm_page, "weir_jobmanager_job_uptime").samples == 0 &&
               total(tm_page, "weir_taskmanager_job_task_numRecordsOut").samples == 0;
      },
      10s));
}

// --metrics-public opens /metrics, and only /metrics, to scrapers without
// the secret.
TEST(JobLibraryTest, PublicMetricsOpenOnlyMetrics) {
  Cluster c("job-library-public-metrics");
  c.add_jobmanager_args({"--metrics-public"});
  c.add_taskmanager_args({"--metrics-public", "--metrics-port", "0"});
  ASSERT_TRUE(c.start({{"tm-a", 1}})) << "the cluster did not come up\n" << c.jm_log();
  auto overview = c.client().overview();
  ASSERT_TRUE(overview.ok()) << overview.status();
  const std::string tm = (*overview)["taskmanagers"][0]["metrics_address"];
  for (const std::string& address : {c.rest(), tm}) {
    auto open = scrape(address, "");
    ASSERT_TRUE(open) << address;
    EXPECT_EQ(open->status, 200) << address << ": " << open->body;
    auto wrong = scrape(address, "not-the-secret");
    ASSERT_TRUE(wrong);
    EXPECT_EQ(wrong->status, 200) << "a public /metrics ignores the header";
  }
  EXPECT_EQ(total(parse_prometheus(scrape(c.rest(), "")->body), "weir_jobmanager_taskSlotsTotal").sum, 1);
  auto rest_client = testing::http_client(c.rest());
  httplib::Client& http = *rest_client;
  for (const char* path : {"/v1/overview", "/v1/jobs", "/metrics/../v1/jobs"}) {
    auto closed = http.Get(path);
    ASSERT_TRUE(closed) << path;
    EXPECT_EQ(closed->status, 401) << path << ": " << closed->body;
  }
  // A TaskManager serves nothing but /metrics.
  auto tm_http_client = testing::http_client(tm);
  httplib::Client& tm_http = *tm_http_client;
  auto other = tm_http.Get("/v1/overview", {{"Authorization", "Bearer " + c.secret()}});
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 404);
}

// A real Prometheus server scrapes the JobManager and two TaskManagers
// while a job runs: every target is up, PromQL over weir's series answers
// (a rate of an operator's records in, a checkpoint count), and promtool
// parses every exposition, its only complaints Flink's naming: camelCase
// names and counters without "_total" (docs/metrics.md).
TEST(JobLibraryTest, APrometheusServerScrapesEveryProcessAndQueriesTheSeries) {
  JobLibraries libs = build_job_libraries();
  ASSERT_TRUE(libs.error.empty()) << libs.error;
  Cluster c("job-library-prometheus-server");
  ASSERT_TRUE(c.start({{"tm-a", 1}, {"tm-b", 1}})) << "the cluster did not come up\n" << c.jm_log();
  RunResult submitted = testing::run_weir(
      {"run", "--detached", "--jobmanager", c.rest(), "--secret-file", c.secret_file(), libs.slow, "-p", "2",
       "--checkpoint-dir", c.dir().path("chk"), "--checkpoint-interval", "200ms", "--records", "100000000",
       "--micros", "50"},
      c.dir().path("submit"));
  ASSERT_EQ(submitted.code, 0) << submitted.err;
  const std::string job = submitted_job(submitted.out);
  auto overview = c.client().overview();
  ASSERT_TRUE(overview.ok()) << overview.status();
  ASSERT_EQ((*overview)["taskmanagers"].size(), 2u) << *overview;
  std::vector<std::string> targets = {c.rest()};
  for (const auto& tm : (*overview)["taskmanagers"]) targets.push_back(tm["metrics_address"]);

  testing::PrometheusServer prometheus(c.dir().path(""), targets, c.secret_file(), testing::test_tls_ca());
  ASSERT_TRUE(prometheus.ok()) << prometheus.log();
  // A value of a query's first sample, or -1.
  auto value = [&](const std::string& expr) {
    nlohmann::json r = prometheus.query(expr);
    return r.empty() ? -1.0 : std::stod(r[0]["value"][1].get<std::string>());
  };
  const std::string records_in = "sum(rate(weir_taskmanager_job_task_operator_numRecordsIn{job_id=\"" + job +
                                 "\", operator_name=\"slow\"}[5s]))";
  const std::string checkpoints = "weir_jobmanager_job_numberOfCompletedCheckpoints{job_id=\"" + job + "\"}";
  const bool answered = eventually(
      [&] { return value("count(up == 1)") == 3 && value(records_in) > 0 && value(checkpoints) >= 1; }, 60s);
  ASSERT_TRUE(answered) << "up: " << prometheus.query("up") << "\nrecords in: " << prometheus.query(records_in)
                        << "\ncheckpoints: " << prometheus.query(checkpoints) << "\ntargets: " << prometheus.targets()
                        << "\n" << prometheus.log();
  for (const auto& t : prometheus.targets()) {
    EXPECT_EQ(t.value("health", ""), "up") << t;
    EXPECT_EQ(t.value("lastError", "?"), "") << t;
  }
  // Each process's series carry the labels a Flink dashboard groups by (a
  // slot each: a subtask of each vertex on each TaskManager).
  EXPECT_EQ(prometheus.query("count by (tm_id) (weir_taskmanager_job_task_numRecordsOut{job_id=\"" + job + "\"})")
                .size(),
            2u);
  EXPECT_GT(value("count(weir_taskmanager_job_task_operator_numRecordsOut{operator_id=~\"[0-9a-f]{32}\"})"), 0);

  // promtool on every exposition: it parses, and it complains of Flink's
  // names only.
  for (size_t i = 0; i < targets.size(); ++i) {
    auto page = scrape(targets[i], c.secret());
    ASSERT_TRUE(page && page->status == 200) << targets[i];
    const testing::PromtoolCheck check = testing::promtool_check(page->body, c.dir().path("promtool-" + std::to_string(i)));
    EXPECT_TRUE(check.code == 0 || check.code == 3) << targets[i] << ": promtool exited " << check.code;
    for (const std::string& p : check.problems) {
      const bool flink_name = p.find("should be written in 'snake_case' not 'camelCase'") != std::string::npos ||
                              p.find("counter metrics should have \"_total\" suffix") != std::string::npos;
      EXPECT_TRUE(flink_name) << targets[i] << ": " << p;
    }
  }
  auto canceled = c.client().cancel(job);
  ASSERT_TRUE(canceled.ok()) << canceled.status();
}

// A listening socket on a free port of 127.0.0.1 (closed with it): a port
// taken, for the tests of --metrics-port.
class TakenPort {
 public:
  TakenPort() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd_, 1) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ADD_FAILURE() << "no socket: " << std::strerror(errno);
      return;
    }
    port_ = ntohs(addr.sin_port);
  }
  ~TakenPort() {
    if (fd_ >= 0) ::close(fd_);
  }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// --metrics-port takes a range as Flink's reporter does (the first free
// port of it); a port or range with none free names the metrics port.
TEST(JobLibraryTest, MetricsPortRangesTakeTheFirstFreePort) {
  TakenPort taken;
  ASSERT_GT(taken.port(), 0);
  ASSERT_LT(taken.port(), 65500);
  const std::string range = std::to_string(taken.port()) + "-" + std::to_string(taken.port() + 20);
  Cluster c("job-library-metrics-ports");
  c.add_taskmanager_args({"--metrics-port", range});
  ASSERT_TRUE(c.start({{"tm-a", 1}})) << "the cluster did not come up\n" << c.jm_log();
  auto overview = c.client().overview();
  ASSERT_TRUE(overview.ok()) << overview.status();
  const std::string tm = (*overview)["taskmanagers"][0]["metrics_address"];
  const int port = std::stoi(tm.substr(tm.rfind(':') + 1));
  EXPECT_GT(port, taken.port()) << tm;
  EXPECT_LE(port, taken.port() + 20) << tm;
  auto page = scrape(tm, c.secret());
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);

  for (const std::string& busy : {std::to_string(taken.port()), std::to_string(taken.port()) + "-" + std::to_string(taken.port())}) {
    auto refused = testing::run_weir({"taskmanager", "--jobmanager", c.address(), "--secret-file", c.secret_file(),
                                      "--id", "tm-busy", "--metrics-port", busy},
                                     c.dir().path("busy"));
    EXPECT_NE(refused.code, 0);
    EXPECT_NE(refused.err.find("cannot listen on 127.0.0.1:" + std::to_string(taken.port()) + " (metrics port)"),
              std::string::npos)
        << refused.err;
  }
  for (const char* bad : {"9260-9250", "x", "70000", "1-2-3", "-5"}) {
    auto r = testing::run_weir({"taskmanager", "--jobmanager", c.address(), "--metrics-port", bad}, c.dir().path("bad"));
    EXPECT_EQ(r.code, 2) << bad << ": " << r.err;
    EXPECT_NE(r.err.find("is no port"), std::string::npos) << bad << ": " << r.err;
  }
}

}  // namespace
}  // namespace weir
