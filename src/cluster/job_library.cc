#include "cluster/job_library.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <map>
#include <stdexcept>

#include "common/file_util.h"
#include "spdlog/spdlog.h"

namespace weir::cluster {

namespace {

// Every library this process loaded, by path; never unloaded.
absl::Mutex loaded_mu(absl::kConstInit);
std::map<std::string, std::unique_ptr<JobLibrary>>& loaded_libraries() ABSL_EXCLUSIVE_LOCKS_REQUIRED(loaded_mu) {
  static auto* loaded = new std::map<std::string, std::unique_ptr<JobLibrary>>();  // never freed
  return *loaded;
}

}  // namespace

const JobLibrary* JobLibrary::loaded(const std::string& path) {
  absl::MutexLock lock(&loaded_mu);
  auto it = loaded_libraries().find(path);
  return it == loaded_libraries().end() ? nullptr : it->second.get();
}

absl::StatusOr<const JobLibrary*> JobLibrary::load(const std::string& path) {
  absl::MutexLock lock(&loaded_mu);
  auto& loaded = loaded_libraries();
  auto it = loaded.find(path);
  if (it != loaded.end()) return it->second.get();
  if (::access(path.c_str(), R_OK) != 0) {
    return absl::InvalidArgumentError("cannot read job library " + path + ": " + std::strerror(errno));
  }
  // RTLD_LOCAL: two versions of one job keep their own symbols. The engine's
  // symbols come from this executable (linked with its symbols exported).
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* e = ::dlerror();
    return absl::InvalidArgumentError("cannot load job library " + path + ": " + (e ? e : "unknown error"));
  }
  using Entry = const JobLibraryEntry* (*)();
  auto entry_fn = reinterpret_cast<Entry>(::dlsym(handle, "weir_job_entry_v1"));
  if (entry_fn == nullptr) {
    ::dlclose(handle);
    return absl::InvalidArgumentError("job library " + path +
                                      " has no entry point weir_job_entry_v1 (define one with WEIR_JOB from "
                                      "weir/job_library.h)");
  }
  const JobLibraryEntry* entry = entry_fn();
  if (entry == nullptr || entry->abi == nullptr || std::string(entry->abi) != WEIR_JOB_ABI) {
    std::string abi = entry != nullptr && entry->abi != nullptr ? entry->abi : "(none)";
    ::dlclose(handle);
    return absl::InvalidArgumentError("job library " + path + " was built for " + abi + "; this is " + WEIR_JOB_ABI +
                                      " (rebuild it against these headers)");
  }
  if (entry->build == nullptr || entry->name == nullptr || *entry->name == '\0') {
    ::dlclose(handle);
    return absl::InvalidArgumentError("job library " + path + " declares no job name or build function");
  }
  auto lib = std::unique_ptr<JobLibrary>(new JobLibrary(path, entry->name, entry->build));
  const JobLibrary* out = lib.get();
  loaded[path] = std::move(lib);
  return out;
}

absl::Status JobLibrary::build(StreamEnvironment& env, const std::vector<std::string>& args) const {
  try {
    absl::Status s = build_(env, args);
    if (!s.ok()) return absl::InvalidArgumentError(name_ + ": " + std::string(s.message()));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(name_ + ": building the job threw: " + e.what());
  } catch (...) {
    return absl::InvalidArgumentError(name_ + ": building the job threw a non-standard exception");
  }
  return env.build_error();
}

std::string sha256_hex(std::string_view bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), md, &len, EVP_sha256(), nullptr);
  static const char* kHex = "0123456789abcdef";
  std::string out;
  out.reserve(2 * len);
  for (unsigned int i = 0; i < len; ++i) {
    out.push_back(kHex[md[i] >> 4]);
    out.push_back(kHex[md[i] & 15]);
  }
  return out;
}

absl::Status check_digest(const std::string& digest) {
  bool ok = digest.size() == 64;
  for (char c : digest) ok = ok && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
  if (!ok) return absl::InvalidArgumentError("'" + digest + "' is not a library digest (64 lower-case hex digits)");
  return absl::OkStatus();
}

std::string LibraryStore::default_directory() {
  return (std::filesystem::temp_directory_path() / ("weir-libraries-" + std::to_string(::getuid()))).string();
}

absl::Status LibraryStore::ensure_directory() {
  std::error_code ec;
  if (!std::filesystem::exists(dir_, ec)) {
    std::filesystem::create_directories(dir_, ec);
    if (ec) return absl::InternalError("cannot create library directory " + dir_ + ": " + ec.message());
    std::filesystem::permissions(dir_, std::filesystem::perms::owner_all, ec);  // private
  }
  struct stat st;
  if (::stat(dir_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::InternalError("library directory " + dir_ + " is not a directory");
  }
  if (st.st_uid != ::getuid() || (st.st_mode & 022) != 0) {
    return absl::PermissionDeniedError("library directory " + dir_ +
                                       " is writable by others or not owned by this user; refusing to load code "
                                       "from it");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> LibraryStore::put(const std::string& digest, std::string_view bytes) {
  if (auto s = check_digest(digest); !s.ok()) return s;
  const std::string actual = sha256_hex(bytes);
  if (actual != digest) {
    return absl::InvalidArgumentError("library upload corrupted: " + std::to_string(bytes.size()) +
                                      " bytes with sha256 " + actual + ", expected " + digest);
  }
  if (auto s = ensure_directory(); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  // A name of this process's own: other processes may share the directory.
  static std::atomic<int64_t> seq{0};
  const std::string tmp = dir_ + "/." + digest + "." + std::to_string(::getpid()) + "." +
                          std::to_string(seq++) + ".tmp";
  if (auto s = write_file_synced(tmp, bytes); !s.ok()) return s;
  if (std::rename(tmp.c_str(), path(digest).c_str()) != 0) {
    absl::Status s = absl::InternalError("cannot store library " + path(digest) + ": " + std::strerror(errno));
    std::remove(tmp.c_str());
    return s;
  }
  return path(digest);
}

absl::StatusOr<std::string> LibraryStore::read(const std::string& digest) {
  if (auto s = check_digest(digest); !s.ok()) return s;
  if (auto s = ensure_directory(); !s.ok()) return s;
  const std::string p = path(digest);
  if (::access(p.c_str(), F_OK) != 0) return absl::NotFoundError("no job library " + digest);
  auto bytes = read_file(p);
  if (!bytes.ok()) return bytes.status();
  const std::string actual = sha256_hex(*bytes);
  if (actual != digest) {
    std::remove(p.c_str());
    return absl::DataLossError("stored job library " + p + " is corrupted (sha256 " + actual + "); removed it");
  }
  return bytes;
}

absl::StatusOr<std::string> LibraryStore::verified_path(const std::string& digest) {
  auto bytes = read(digest);  // verifies the content before any code of it runs
  if (!bytes.ok()) return bytes.status();
  return path(digest);
}

absl::StatusOr<const JobLibrary*> LibraryStore::load(const std::string& digest) {
  if (check_digest(digest).ok()) {
    if (const JobLibrary* l = JobLibrary::loaded(path(digest))) return l;
  }
  auto p = verified_path(digest);
  if (!p.ok()) return p.status();
  return JobLibrary::load(*p);
}

namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

}  // namespace

absl::Status build_in_child(const std::string& path, const std::vector<std::string>& args,
                            std::chrono::milliseconds timeout, int64_t memory_limit_bytes) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return absl::InternalError(std::string("pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, out[1], 2);
  std::vector<std::string> argv_s = {"weir", "run", "--dry-run", path};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  int err = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(out[1]);
  if (err != 0) {
    ::close(out[0]);
    return absl::InternalError(std::string("cannot start a process to build the job: ") + std::strerror(err));
  }
  // Set as the child starts, long before it reads the job: its start-up
  // (loading this executable) is far shorter than any limit worth setting.
  if (memory_limit_bytes > 0 && !kSanitized) {
    const rlimit limit{static_cast<rlim_t>(memory_limit_bytes), static_cast<rlim_t>(memory_limit_bytes)};
    if (::prlimit(pid, RLIMIT_AS, &limit, nullptr) != 0) {
      spdlog::warn("cannot limit the memory of the process building the job: {}", std::strerror(errno));
    }
  }
  // Its output until it exits, or the deadline.
  std::string said;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool timed_out = false;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    pollfd p{out[0], POLLIN, 0};
    int r = ::poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    char buf[4096];
    ssize_t n = ::read(out[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // the child closed its output: it is exiting
    if (said.size() < 64 * 1024) said.append(buf, static_cast<size_t>(n));
  }
  ::close(out[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const std::string lib = (path.find('/') != std::string::npos ? "job library " : "job ") + path + ": ";
  if (timed_out) {
    return absl::InvalidArgumentError(lib + "building the job did not end within " +
                                      std::to_string(timeout.count() / 1000) + " s");
  }
  if (WIFSIGNALED(status)) {
    const std::string limited =
        memory_limit_bytes > 0 && !kSanitized
            ? " (its memory is limited to " + std::to_string(memory_limit_bytes >> 20) + " MiB: it may have run out)"
            : "";
    return absl::InvalidArgumentError(lib + "building the job crashed (signal " + std::to_string(WTERMSIG(status)) +
                                      ", " + strsignal(WTERMSIG(status)) + ")" + limited);
  }
  if (WEXITSTATUS(status) != 0) {
    // Its one-line error, without the command's prefix.
    std::string line = said.substr(0, said.find('\n'));
    if (line.rfind("weir: ", 0) == 0) line = line.substr(6);
    return absl::InvalidArgumentError(line.empty() ? lib + "building the job failed" : line);
  }
  return absl::OkStatus();
}

}  // namespace weir::cluster
