// The Debian package as a user installs it: `make package`'s cpack run on
// this build, the .deb unpacked into a scratch root, the job template built
// against the root's CMake package, a JobManager and a TaskManager started
// with the command lines of the package's systemd units and its
// /etc/weir/weir.toml (ports and directories moved into the scratch
// directory by flags, which win over the file), and the job library run on
// them, exactly-once.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "cluster/client.h"
#include "testing/seed.h"
#include "tests/cluster.h"
#include "tests/word_count.h"

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace weir {
namespace {

using testing::cache_entry;
using testing::Child;
using testing::eventually;
using testing::RunResult;
using testing::slurp;
using testing::TempDir;

// binutils and dpkg (build-essential).
constexpr char kDpkgDeb[] = "/usr/bin/dpkg-deb";
constexpr char kReadelf[] = "/usr/bin/readelf";

// The first file in `dir` whose name starts with `prefix` and ends with
// `suffix` ("" if none).
std::string find_file(const fs::path& dir, const std::string& prefix, const std::string& suffix) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && name.size() >= suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      return e.path().string();
    }
  }
  return "";
}

// A unit file's `key=` values, in order.
std::vector<std::string> unit_values(const std::string& unit, const std::string& key) {
  std::vector<std::string> out;
  std::istringstream in(unit);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key + "=", 0) == 0) out.push_back(line.substr(key.size() + 1));
  }
  return out;
}

std::vector<std::string> words_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// The command a unit's ExecStart runs from the unpacked `root`: /usr/bin/weir
// is the root's, %d (systemd's credentials directory) the directory holding
// the secret file; and its Environment, with /etc/weir under the root.
struct UnitCommand {
  std::vector<std::string> args;
  std::vector<std::string> env;
};

UnitCommand unit_command(const fs::path& root, const std::string& unit_name, const std::string& credentials) {
  const std::string unit = slurp((root / "lib/systemd/system" / unit_name).string());
  UnitCommand c;
  std::vector<std::string> exec = unit_values(unit, "ExecStart");
  EXPECT_EQ(exec.size(), 1u) << unit_name << ":\n" << unit;
  if (exec.empty()) return c;
  for (std::string w : words_of(exec[0])) {
    if (w.rfind("/usr/bin/", 0) == 0) w = (root / w.substr(1)).string();
    if (size_t at = w.find("%d"); at != std::string::npos) w.replace(at, 2, credentials);
    c.args.push_back(w);
  }
  for (std::string e : unit_values(unit, "Environment")) {
    if (size_t at = e.find("=/etc/"); at != std::string::npos) e = e.substr(0, at + 1) + (root / e.substr(at + 2)).string();
    c.env.push_back(e);
  }
  return c;
}

TEST(PackageTest, TheDebianPackageUnpackedIntoAScratchRootRunsAJobLibraryOnItsServices) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const std::string build = fs::path(testing::weir_bin()).parent_path().string();
  const std::string source = cache_entry(build, "CMAKE_HOME_DIRECTORY");
  const std::string cmake = cache_entry(build, "CMAKE_COMMAND"), cpack = cache_entry(build, "CMAKE_CPACK_COMMAND");
  ASSERT_FALSE(source.empty() || cmake.empty() || cpack.empty())
      << "no CMakeCache.txt beside " << testing::weir_bin() << " naming the source tree, cmake and cpack";
  TempDir dir("package");
  const fs::path out = dir.path("out"), root = dir.path("root");
  auto run = [&](const std::vector<std::string>& args) {
    RunResult r = testing::run_program(args, dir.path("steps"));
    std::string cmd;
    for (const auto& a : args) cmd += a + " ";
    EXPECT_EQ(r.code, 0) << cmd << "\n" << r.out << r.err;
    return r;
  };

  // What make package does.
  if (run({cmake, "--build", build, "--target", "weir_man"}).code != 0) {
    FAIL() << "the man pages were not made (help2man missing? run scripts/install-deps.sh)";
  }
  ASSERT_EQ(run({cpack, "--config", build + "/CPackConfig.cmake", "-B", out.string()}).code, 0);
  const std::string deb = find_file(out, "weir_", ".deb"), ddeb = find_file(out, "weir-dbgsym_", ".ddeb");
  ASSERT_FALSE(deb.empty()) << "no weir_*.deb in " << out;
  ASSERT_FALSE(ddeb.empty()) << "no weir-dbgsym_*.ddeb in " << out;

  // The control file: its name, the shared libraries it needs, the config
  // file kept across upgrades, the script that makes the cluster secret.
  EXPECT_EQ(run({kDpkgDeb, "-f", deb, "Package"}).out, "weir\n");
  const std::string depends = run({kDpkgDeb, "-f", deb, "Depends"}).out;
  for (const char* lib : {"libgrpc++", "librdkafka", "libpq5", "libzookeeper-mt", "libstdc++6"}) {
    EXPECT_NE(depends.find(lib), std::string::npos) << "Depends lacks " << lib << ": " << depends;
  }
  EXPECT_EQ(run({kDpkgDeb, "-I", deb, "conffiles"}).out, "/etc/weir/weir.toml\n");
  EXPECT_NE(run({kDpkgDeb, "-I", deb, "postinst"}).out.find("/etc/weir/secret"), std::string::npos);
  // The debug info is in the dbgsym package, not in the executable.
  EXPECT_NE(run({kDpkgDeb, "-c", ddeb}).out.find("./usr/lib/debug/.build-id/"), std::string::npos);
  ASSERT_EQ(run({kDpkgDeb, "-x", deb, root.string()}).code, 0);
  const std::string weir = (root / "usr/bin/weir").string();
  EXPECT_EQ(run({kReadelf, "-S", "--wide", weir}).out.find(".debug_info"), std::string::npos)
      << "the packaged executable holds debug info";
  EXPECT_LT(fs::file_size(deb), fs::file_size(testing::weir_bin()) / 4) << "the package is not small";
  for (const char* f : {"usr/include/weir/weir.h", "usr/include/weir/version.h", "usr/lib/cmake/weir/weirConfig.cmake",
                        "etc/weir/weir.toml", "usr/share/man/man1/weir.1.gz", "usr/share/man/man1/weir-jobmanager.1.gz",
                        "usr/share/man/man1/weir-taskmanager.1.gz", "usr/share/doc/weir/cli.md"}) {
    EXPECT_TRUE(fs::exists(root / f)) << f << " is not in the package";
  }
  EXPECT_NE(run({weir, "--version"}).out.find("weir "), std::string::npos);

  // A job library built against the package, as examples/job-template says.
  ASSERT_EQ(run({cmake, "-S", source + "/examples/job-template", "-B", dir.path("template"), "-G", "Ninja",
                 "-DCMAKE_PREFIX_PATH=" + (root / "usr").string()})
                .code,
            0);
  ASSERT_EQ(run({cmake, "--build", dir.path("template")}).code, 0);
  const std::string library = dir.path("template/libword_count.so");

  // The services, as their units start them.
  const std::string credentials = dir.path("credentials");
  fs::create_directories(credentials);
  std::ofstream(credentials + "/secret") << "package-test-secret-" << seed << "\n";
  UnitCommand jm = unit_command(root, "weir-jobmanager.service", credentials);
  UnitCommand tm = unit_command(root, "weir-taskmanager.service", credentials);
  ASSERT_FALSE(jm.args.empty() || tm.args.empty());
  ASSERT_EQ(jm.args[0], weir);
  EXPECT_EQ(jm.env, std::vector<std::string>{"WEIR_CONFIG=" + (root / "etc/weir/weir.toml").string()});
  for (const char* a : {"--bind", "127.0.0.1:0", "--rest-port", "0", "--library-dir"}) jm.args.push_back(a);
  jm.args.push_back(dir.path("jm-libraries"));
  Child jobmanager(jm.args, dir.path("jm"), /*pipe_stderr=*/false, jm.env);
  ASSERT_TRUE(eventually([&] { return jobmanager.out().find("listening on") != std::string::npos; }, 20s))
      << slurp(dir.path("jm.err"));
  std::string address = jobmanager.out().substr(jobmanager.out().find("listening on ") + 13);
  address = address.substr(0, address.find(','));
  std::string rest = jobmanager.out().substr(jobmanager.out().find("rest ") + 5);
  rest = rest.substr(0, rest.find('\n'));
  for (const std::string& a : {std::string("--jobmanager"), address, std::string("--metrics-port"), std::string("0"),
                               std::string("--state-dir"), dir.path("tm-state"), std::string("--tmp-dir"),
                               dir.path("tm-tmp"), std::string("--library-dir"), dir.path("tm-libraries")}) {
    tm.args.push_back(a);
  }
  Child taskmanager(tm.args, dir.path("tm"), /*pipe_stderr=*/false, tm.env);
  cluster::ClusterClient client(rest, "package-test-secret-" + std::to_string(seed), "");
  ASSERT_TRUE(eventually(
      [&] {
        auto o = client.overview();
        return o.ok() && (*o)["taskmanagers"].size() == 1 && (*o)["slots_total"] == 2;
      },
      20s))
      << slurp(dir.path("jm.err")) << slurp(dir.path("tm.err"));

  const std::string input = dir.path("words.txt");
  testing::write_words(input, 20000, seed);
  std::vector<std::string> submit = {weir, "run", "--jobmanager", rest, "--secret-file", credentials + "/secret",
                                     library, "-p", "2", "--checkpoint-dir", dir.path("chk"), "--checkpoint-interval",
                                     "100ms", "--input", input, "--output", dir.path("words-out")};
  Child job(submit, dir.path("run"), /*pipe_stderr=*/false, jm.env);
  ASSERT_EQ(job.wait(), 0) << job.err() << job.out();
  EXPECT_NE(job.out().find("FINISHED"), std::string::npos) << job.out();
  testing::expect_word_counts_exactly_once(input, dir.path("words-out"));
}

}  // namespace
}  // namespace weir
