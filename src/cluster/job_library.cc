#include "cluster/job_library.h"

#include <dlfcn.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <map>
#include <stdexcept>

#include "common/file_util.h"

namespace weir::cluster {

absl::StatusOr<const JobLibrary*> JobLibrary::load(const std::string& path) {
  static absl::Mutex mu(absl::kConstInit);
  static auto* loaded = new std::map<std::string, std::unique_ptr<JobLibrary>>();  // never freed
  absl::MutexLock lock(&mu);
  auto it = loaded->find(path);
  if (it != loaded->end()) return it->second.get();
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
  (*loaded)[path] = std::move(lib);
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

absl::Status LibraryStore::put(const std::string& digest, std::string_view bytes) {
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
  return absl::OkStatus();
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

absl::StatusOr<const JobLibrary*> LibraryStore::load(const std::string& digest) {
  auto bytes = read(digest);  // verifies the content before any code of it runs
  if (!bytes.ok()) return bytes.status();
  return JobLibrary::load(path(digest));
}

}  // namespace weir::cluster
