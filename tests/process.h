// Runs the weir binary as a real child process, for tests that need process
// boundaries (exit codes, stderr, SIGKILL). The binary's path comes from the
// WEIR_BIN environment variable, which the build sets for every test.
#ifndef WEIR_TESTS_PROCESS_H_
#define WEIR_TESTS_PROCESS_H_

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <regex>
#include <set>
#include <thread>
#include <string>
#include <vector>

namespace weir::testing {

// The whole contents of a file ("" when it cannot be read).
inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The records of channel state that the restores logged in `log` replayed
// ("replayed N records of channel state").
inline int64_t replayed_records(const std::string& log) {
  static const std::regex kReplayed("replayed ([0-9]+) records of channel state");
  int64_t n = 0;
  for (std::sregex_iterator it(log.begin(), log.end(), kReplayed), end; it != end; ++it) n += std::stoll((*it)[1]);
  return n;
}

// The value of `key` in the CMakeCache.txt of the build directory `build`
// ("" if absent).
inline std::string cache_entry(const std::string& build, const std::string& key) {
  std::ifstream in(build + "/CMakeCache.txt");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + ":", 0) == 0) return line.substr(line.find('=') + 1);
  }
  return "";
}

inline std::string weir_bin() {
  const char* p = std::getenv("WEIR_BIN");
  return p ? p : "weir";
}

// A started child with stdout redirected to a file, and stderr to a file or
// (with `pipe_stderr`) to a pipe the test reads with wait_for_line().
class Child {
 public:
  // `env`: NAME=VALUE settings added to the child's environment.
  // `pipe_stdin`: the child's stdin is a pipe the test writes with
  // write_stdin() (else it is the test's).
  Child(const std::vector<std::string>& args, const std::string& log_prefix,
        bool pipe_stderr = false, const std::vector<std::string>& env = {}, bool pipe_stdin = false)
      : out_path_(log_prefix + ".out"), err_path_(log_prefix + ".err") {
    int fds[2] = {-1, -1};
    if (pipe_stderr && ::pipe2(fds, O_CLOEXEC) != 0) fds[0] = fds[1] = -1;
    int in[2] = {-1, -1};
    if (pipe_stdin && ::pipe2(in, O_CLOEXEC) != 0) in[0] = in[1] = -1;
    pid_ = ::fork();
    if (pid_ == 0) {
      int out = ::open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      int err = fds[1] >= 0 ? fds[1] : ::open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(out, 1);
      ::dup2(err, 2);
      if (in[0] >= 0) ::dup2(in[0], 0);
      for (const auto& e : env) ::putenv(const_cast<char*>(e.c_str()));
      std::vector<char*> argv;
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    if (fds[1] >= 0) ::close(fds[1]);
    err_fd_ = fds[0];
    if (in[0] >= 0) ::close(in[0]);
    in_fd_ = in[1];
  }
  ~Child() {
    close_stdin();
    if (pid_ > 0 && !exited_) {
      ::kill(pid_, SIGKILL);
      wait();
    }
    if (err_fd_ >= 0) ::close(err_fd_);
  }

  // Blocks on the stderr pipe until a line satisfying `match` arrives
  // (true), or the stream ends or `deadline` passes (false). Lines read are
  // kept for err().
  bool wait_for_line(const std::function<bool(const std::string&)>& match,
                     std::chrono::milliseconds deadline) {
    auto until = std::chrono::steady_clock::now() + deadline;
    while (true) {
      size_t nl;
      while ((nl = pending_.find('\n')) != std::string::npos) {
        std::string line = pending_.substr(0, nl);
        pending_.erase(0, nl + 1);
        piped_ += line + "\n";
        if (match(line)) return true;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          until - std::chrono::steady_clock::now());
      if (left.count() <= 0 || err_fd_ < 0) return false;
      pollfd p{err_fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char buf[4096];
      ssize_t n = ::read(err_fd_, buf, sizeof(buf));
      if (n <= 0) return false;
      pending_.append(buf, static_cast<size_t>(n));
    }
  }

  // To the child's stdin (pipe_stdin); false if it is closed.
  bool write_stdin(const std::string& text) {
    size_t done = 0;
    while (in_fd_ >= 0 && done < text.size()) {
      ssize_t n = ::write(in_fd_, text.data() + done, text.size() - done);
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return in_fd_ >= 0;
  }
  void close_stdin() {
    if (in_fd_ >= 0) ::close(in_fd_);
    in_fd_ = -1;
  }

  // Until the child's stdout (so far) satisfies `match` (true), or it
  // exited or `deadline` passed (false); looks every 10 ms.
  bool wait_for_output(const std::function<bool(const std::string&)>& match, std::chrono::milliseconds deadline) {
    auto until = std::chrono::steady_clock::now() + deadline;
    while (true) {
      if (match(out())) return true;
      if (!running() || std::chrono::steady_clock::now() > until) return match(out());
      pollfd none{-1, 0, 0};
      ::poll(&none, 0, 10);
    }
  }

  // Exit code, or 128 + signal.
  int wait() {
    if (exited_) return code_;
    int status = 0;
    rusage ru{};
    ::wait4(pid_, &status, 0, &ru);
    peak_rss_kb_ = ru.ru_maxrss;
    exited_ = true;
    code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return code_;
  }
  // Exit code, or 128 + signal; nullopt when the child still runs after
  // `deadline` (it is then killed).
  std::optional<int> wait_for_exit(std::chrono::milliseconds deadline) {
    auto until = std::chrono::steady_clock::now() + deadline;
    while (running()) {
      if (std::chrono::steady_clock::now() > until) {
        kill9();
        wait();
        return std::nullopt;
      }
      pollfd none{-1, 0, 0};
      ::poll(&none, 0, 10);
    }
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
  void kill9() { signal(SIGKILL); }
  pid_t pid() const { return pid_; }
  // The child's peak resident set, once wait() returned.
  long peak_rss_kb() const { return peak_rss_kb_; }
  void signal(int sig) {
    if (!exited_) ::kill(pid_, sig);
  }
  std::string out() const { return slurp(out_path_); }
  std::string err() const { return err_fd_ >= 0 ? piped_ + pending_ : slurp(err_path_); }

 private:
  pid_t pid_ = -1;
  int err_fd_ = -1;
  int in_fd_ = -1;
  std::string pending_, piped_;
  bool exited_ = false;
  int code_ = -1;
  long peak_rss_kb_ = 0;
  std::string out_path_, err_path_;
};

struct RunResult {
  int code;
  std::string out, err;
};

// Runs `args` (args[0]: the program's path) to its end.
inline RunResult run_program(const std::vector<std::string>& args, const std::string& log_prefix) {
  Child c(args, log_prefix);
  int code = c.wait();
  return {code, c.out(), c.err()};
}

inline RunResult run_weir(std::vector<std::string> args, const std::string& log_prefix) {
  args.insert(args.begin(), weir_bin());
  return run_program(args, log_prefix);
}

// The arguments of a command that runs `args` (args[0]: the program's
// path) with a terminal as its stdin, stdout and stderr: script(1) gives it
// a pseudo-terminal and copies everything written there to its own stdout.
inline std::vector<std::string> on_a_terminal(const std::vector<std::string>& args) {
  std::string command;
  for (const std::string& a : args) {
    std::string quoted = "'";
    for (char c : a) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    command += (command.empty() ? "" : " ") + quoted + "'";
  }
  return {"/usr/bin/script", "-q", "-e", "-f", "-c", command, "/dev/null"};
}

// A TCP port on 127.0.0.1 that nothing listens on now. Another process could
// still take it before the caller binds it, so it is drawn at random from
// below the kernel's ephemeral range (which outgoing connections and bind(0)
// use), and this process never hands out the same port twice: a fixture that
// picks its port long before its server starts cannot collide with another
// fixture's server of the same test.
inline int free_loopback_port() {
  static std::mutex mu;
  static std::set<int> handed_out;
  static std::mt19937 rng(std::random_device{}() ^ static_cast<unsigned>(::getpid()));
  int ephemeral_low = 32768;
  std::ifstream("/proc/sys/net/ipv4/ip_local_port_range") >> ephemeral_low;
  const int low = 10000;
  const int high = ephemeral_low - 1;
  std::lock_guard lock(mu);
  for (int attempt = 0; attempt < 10000; ++attempt) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (high > low + 1000) a.sin_port = htons(static_cast<uint16_t>(std::uniform_int_distribution<int>(low, high)(rng)));
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    socklen_t len = sizeof(a);
    const bool bound = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
                       ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
    ::close(fd);
    if (bound && handed_out.insert(ntohs(a.sin_port)).second) return ntohs(a.sin_port);
  }
  std::fprintf(stderr, "free_loopback_port: no free loopback port found\n");
  std::abort();
}

// Whether something accepts connections on 127.0.0.1:`port`.
inline bool accepts_connections(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  ::close(fd);
  return ok;
}

// A server process for a test on a loopback port of its own: start() runs
// it and waits (up to 30 s) until the port accepts connections, stop()
// kills it (SIGKILL), and start() runs it again on the same port. Its
// output goes to LOG_PREFIX-<n>.out and .err for its n-th start.
class LoopbackServer {
 public:
  explicit LoopbackServer(std::string log_prefix)
      : log_prefix_(std::move(log_prefix)), port_(free_loopback_port()) {}
  ~LoopbackServer() { stop(); }
  int port() const { return port_; }

  bool start(const std::vector<std::string>& args) {
    if (child_ != nullptr) return true;
    ++starts_;
    child_ = std::make_unique<Child>(args, log_prefix_ + "-" + std::to_string(starts_));
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      if (!child_->running()) return false;
      if (accepts_connections(port_)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // polling for the port to open
    }
    return false;
  }
  void stop() {
    if (child_ == nullptr) return;
    child_->kill9();
    child_->wait();
    child_.reset();
  }
  // What its latest start wrote.
  std::string log() const {
    const std::string at = log_prefix_ + "-" + std::to_string(starts_);
    return slurp(at + ".out") + slurp(at + ".err");
  }

 private:
  const std::string log_prefix_;
  const int port_;
  int starts_ = 0;
  std::unique_ptr<Child> child_;
};

// Sets (or, with nullopt, unsets) environment variables for a scope, which
// children started in it inherit, and puts back what was there before.
class ScopedEnv {
 public:
  ScopedEnv() = default;
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ~ScopedEnv() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second) {
        ::setenv(it->first.c_str(), it->second->c_str(), 1);
      } else {
        ::unsetenv(it->first.c_str());
      }
    }
  }
  void set(const std::string& name, const std::optional<std::string>& value) {
    const char* was = std::getenv(name.c_str());
    saved_.emplace_back(name, was ? std::optional<std::string>(was) : std::nullopt);
    if (value) {
      ::setenv(name.c_str(), value->c_str(), 1);
    } else {
      ::unsetenv(name.c_str());
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// A fresh directory under the system temp directory, removed on destruction.
class TempDir {
 public:
  explicit TempDir(std::string name)
      : path_(std::filesystem::temp_directory_path() /
              ("weir-" + sanitize(std::move(name)) + "-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  // WEIR_KEEP_TEST_DIRS=1 keeps it, to look at after a failure.
  ~TempDir() {
    if (std::getenv("WEIR_KEEP_TEST_DIRS") == nullptr) std::filesystem::remove_all(path_);
  }
  std::string path(const std::string& sub = "") const { return (path_ / sub).string(); }

 private:
  // Parametrised test names hold '/'.
  static std::string sanitize(std::string s) {
    for (char& c : s) {
      if (c == '/') c = '_';
    }
    return s;
  }

  std::filesystem::path path_;
};

}  // namespace weir::testing

#endif  // WEIR_TESTS_PROCESS_H_
