// Runs the weir binary as a real child process, for tests that need process
// boundaries (exit codes, stderr, SIGKILL). The binary's path comes from the
// WEIR_BIN environment variable, which the build sets for every test.
#ifndef WEIR_TESTS_PROCESS_H_
#define WEIR_TESTS_PROCESS_H_

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace weir::testing {

inline std::string weir_bin() {
  const char* p = std::getenv("WEIR_BIN");
  return p ? p : "weir";
}

// A started child with stdout and stderr redirected to files.
class Child {
 public:
  Child(const std::vector<std::string>& args, const std::string& log_prefix)
      : out_path_(log_prefix + ".out"), err_path_(log_prefix + ".err") {
    pid_ = ::fork();
    if (pid_ == 0) {
      int out = ::open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int err = ::open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(out, 1);
      ::dup2(err, 2);
      std::vector<char*> argv;
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
  }
  ~Child() {
    if (pid_ > 0 && !exited_) {
      ::kill(pid_, SIGKILL);
      wait();
    }
  }

  // Exit code, or 128 + signal.
  int wait() {
    if (exited_) return code_;
    int status = 0;
    ::waitpid(pid_, &status, 0);
    exited_ = true;
    code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return code_;
  }
  bool running() {
    if (exited_) return false;
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == 0) return true;
    exited_ = true;
    code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return false;
  }
  void kill9() {
    if (!exited_) ::kill(pid_, SIGKILL);
  }
  std::string out() const { return slurp(out_path_); }
  std::string err() const { return slurp(err_path_); }

 private:
  static std::string slurp(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  pid_t pid_ = -1;
  bool exited_ = false;
  int code_ = -1;
  std::string out_path_, err_path_;
};

struct RunResult {
  int code;
  std::string out, err;
};

inline RunResult run_weir(std::vector<std::string> args, const std::string& log_prefix) {
  args.insert(args.begin(), weir_bin());
  Child c(args, log_prefix);
  int code = c.wait();
  return {code, c.out(), c.err()};
}

// Waits until `done` holds or `deadline` passes; returns whether it held.
// The condition is about another process (files it writes), so there is
// nothing to block on: it is re-checked every 2 ms, leaving the cores to the
// process under test.
inline bool wait_for(const std::function<bool()>& done, std::chrono::milliseconds deadline) {
  auto until = std::chrono::steady_clock::now() + deadline;
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return done();
}

// A fresh directory under the system temp directory, removed on destruction.
class TempDir {
 public:
  explicit TempDir(const std::string& name)
      : path_(std::filesystem::temp_directory_path() /
              ("weir-" + name + "-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string path(const std::string& sub = "") const { return (path_ / sub).string(); }

 private:
  std::filesystem::path path_;
};

}  // namespace weir::testing

#endif  // WEIR_TESTS_PROCESS_H_
