#include "cluster/leader_election.h"

#include <spdlog/spdlog.h>
#include <zookeeper/zookeeper.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

namespace weir::cluster {
namespace {

// The latch's children, lowest sequence first (names end in 10 digits).
int children(zhandle_t* zh, const std::string& latch, std::vector<std::string>* out) {
  String_vector names{};
  const int rc = zoo_get_children(zh, latch.c_str(), 0, &names);
  if (rc != ZOK) return rc;
  out->assign(names.data, names.data + names.count);
  deallocate_String_vector(&names);
  std::sort(out->begin(), out->end(), [](const std::string& a, const std::string& b) {
    return a.substr(a.size() >= 10 ? a.size() - 10 : 0) < b.substr(b.size() >= 10 ? b.size() - 10 : 0);
  });
  return ZOK;
}

void quiet_client_log() {
  static std::once_flag once;
  std::call_once(once, [] { zoo_set_debug_level(ZOO_LOG_LEVEL_WARN); });
}

// The client's own lines (every failed connection attempt, many a second
// while ZooKeeper is down) go to the log at debug; the election logs what
// matters: leadership granted and revoked, sessions expired.
void client_log(const char* message) { spdlog::debug("zookeeper client: {}", message); }

}  // namespace

std::string zk_error(const std::string& what, const std::string& path, int rc) {
  return what + " " + path + " in ZooKeeper: " + zerror(rc);
}

int ensure_zk_path(zhandle_t* zh, const std::string& path) {
  for (size_t at = 1; at <= path.size(); ++at) {
    if (at != path.size() && path[at] != '/') continue;
    const std::string prefix = path.substr(0, at);
    const int rc = zoo_create(zh, prefix.c_str(), nullptr, -1, &ZOO_OPEN_ACL_UNSAFE, 0, nullptr, 0);
    if (rc != ZOK && rc != ZNODEEXISTS) return rc;
  }
  return ZOK;
}

void ZooKeeperSession::on_event(zhandle_t*, int type, int state, const char*, void* ctx) {
  if (type != ZOO_SESSION_EVENT) return;
  auto* self = static_cast<ZooKeeperSession*>(ctx);
  std::lock_guard lock(self->mu_);
  self->state_ = state;
  self->cv_.notify_all();
}

absl::StatusOr<std::unique_ptr<ZooKeeperSession>> ZooKeeperSession::connect(const std::string& quorum,
                                                                            std::chrono::milliseconds session_timeout,
                                                                            std::chrono::milliseconds deadline) {
  quiet_client_log();
  std::unique_ptr<ZooKeeperSession> s(new ZooKeeperSession());
  s->zh_ = zookeeper_init2(quorum.c_str(), &ZooKeeperSession::on_event, static_cast<int>(session_timeout.count()),
                           nullptr, s.get(), 0, client_log);
  if (s->zh_ == nullptr) return absl::InvalidArgumentError("ZooKeeper quorum " + quorum + ": " + strerror(errno));
  std::unique_lock lock(s->mu_);
  if (!s->cv_.wait_for(lock, deadline, [&] { return s->state_ == ZOO_CONNECTED_STATE; })) {
    lock.unlock();
    return absl::UnavailableError("cannot reach ZooKeeper at " + quorum + " within " +
                                  std::to_string(deadline.count()) + " ms");
  }
  return s;
}

ZooKeeperSession::~ZooKeeperSession() {
  if (zh_ != nullptr) zookeeper_close(zh_);
}

LeaderElection::LeaderElection(Options options, Callbacks callbacks)
    : options_(std::move(options)), callbacks_(std::move(callbacks)) {
  quiet_client_log();
}

LeaderElection::~LeaderElection() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  zhandle_t* zh = nullptr;
  {
    std::lock_guard lock(mu_);
    std::swap(zh, zh_);
  }
  if (zh != nullptr) zookeeper_close(zh);
}

void LeaderElection::on_event(zhandle_t*, int type, int state, const char*, void* ctx) {
  auto* self = static_cast<LeaderElection*>(ctx);
  std::lock_guard lock(self->mu_);
  if (type == ZOO_SESSION_EVENT) self->state_ = state;
  self->dirty_ = true;
  self->cv_.notify_all();
}

absl::Status LeaderElection::connect_locked(std::unique_lock<std::mutex>& lock, std::chrono::milliseconds deadline) {
  state_ = 0;
  zh_ = zookeeper_init2(options_.quorum.c_str(), &LeaderElection::on_event,
                        static_cast<int>(options_.session_timeout.count()), nullptr, this, 0, client_log);
  if (zh_ == nullptr) return absl::InvalidArgumentError("ZooKeeper quorum " + options_.quorum + ": " + strerror(errno));
  const bool up = cv_.wait_for(lock, deadline, [this] { return state_ == ZOO_CONNECTED_STATE || stopping_; });
  if (up && state_ == ZOO_CONNECTED_STATE) return absl::OkStatus();
  return absl::UnavailableError("cannot reach ZooKeeper at " + options_.quorum + " within " +
                                std::to_string(deadline.count()) + " ms");
}

absl::Status LeaderElection::start(std::chrono::milliseconds deadline) {
  std::unique_lock lock(mu_);
  absl::Status s = connect_locked(lock, deadline);
  if (!s.ok()) {
    zhandle_t* zh = nullptr;
    std::swap(zh, zh_);
    lock.unlock();
    zookeeper_close(zh);
    return s;
  }
  dirty_ = true;
  thread_ = std::thread([this] { run(); });
  return absl::OkStatus();
}

bool LeaderElection::is_leader() const {
  std::lock_guard lock(mu_);
  return leader_;
}

int64_t LeaderElection::epoch() const {
  std::lock_guard lock(mu_);
  return leader_ ? epoch_ : 0;
}

void LeaderElection::run() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    // Events wake it; a pass a second also retries what failed.
    cv_.wait_for(lock, std::chrono::seconds(1), [this] { return dirty_ || stopping_; });
    if (stopping_) break;
    dirty_ = false;
    lock.unlock();
    check();
    lock.lock();
  }
}

void LeaderElection::set_leader(bool leader, int64_t epoch) {
  {
    std::lock_guard lock(mu_);
    if (leader_ == leader) return;
    leader_ = leader;
    epoch_ = leader ? epoch : 0;
  }
  if (leader) {
    spdlog::info("leadership granted (epoch {}) to {}", epoch, options_.address);
    if (callbacks_.granted) callbacks_.granted(epoch);
  } else {
    spdlog::warn("leadership of {} revoked", options_.address);
    if (callbacks_.revoked) callbacks_.revoked();
  }
}

void LeaderElection::check() {
  std::unique_lock lock(mu_);
  if (stopping_) return;
  if (state_ == ZOO_EXPIRED_SESSION_STATE || zh_ == nullptr) {
    // The session is gone, and our node with it: join again.
    zhandle_t* old = nullptr;
    std::swap(old, zh_);
    node_.clear();
    lock.unlock();
    set_leader(false, 0);
    if (old != nullptr) zookeeper_close(old);
    spdlog::warn("ZooKeeper session expired; joining the election again");
    lock.lock();
    if (stopping_) return;
    state_ = 0;
    zh_ = zookeeper_init2(options_.quorum.c_str(), &LeaderElection::on_event,
                          static_cast<int>(options_.session_timeout.count()), nullptr, this, 0, client_log);
    return;  // the connected event brings the next pass
  }
  if (state_ != ZOO_CONNECTED_STATE) {
    // Disconnected: others may elect a new leader once the session
    // expires, and this process cannot know when. Step down now.
    lock.unlock();
    set_leader(false, 0);
    return;
  }
  zhandle_t* zh = zh_;
  std::string node = node_;
  const bool resign = resign_;
  resign_ = false;
  lock.unlock();
  if (resign && !node.empty()) {
    set_leader(false, 0);
    const int rc = zoo_delete(zh, node.c_str(), -1);
    if (rc != ZOK && rc != ZNONODE) {
      spdlog::warn("leader election: {}", zk_error("delete", node, rc));
      std::lock_guard relock(mu_);
      resign_ = true;
      dirty_ = true;
      return;
    }
    spdlog::warn("{} stepped down: it leaves its place to the next in line", options_.address);
    node.clear();
    std::lock_guard relock(mu_);
    node_.clear();
  }

  const std::string latch = options_.root + "/latch";
  int rc = ensure_zk_path(zh, latch);
  if (rc != ZOK) {
    spdlog::warn("leader election: {}", zk_error("create", latch, rc));
    return;
  }
  if (node.empty()) {
    char created[512];
    const std::string prefix = latch + "/n_";
    rc = zoo_create(zh, prefix.c_str(), options_.address.data(), static_cast<int>(options_.address.size()),
                    &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL_SEQUENTIAL, created, sizeof(created));
    if (rc != ZOK) {
      spdlog::warn("leader election: {}", zk_error("create", prefix, rc));
      return;
    }
    node = created;
    std::lock_guard relock(mu_);
    node_ = node;
  }
  std::vector<std::string> names;
  rc = children(zh, latch, &names);
  if (rc != ZOK) {
    spdlog::warn("leader election: {}", zk_error("list", latch, rc));
    return;
  }
  const std::string mine = node.substr(node.rfind('/') + 1);
  auto at = std::find(names.begin(), names.end(), mine);
  if (at == names.end()) {
    // Our node is gone (an expired session's): make another.
    std::lock_guard relock(mu_);
    node_.clear();
    dirty_ = true;
    return;
  }
  if (at == names.begin()) {
    if (is_leader()) return;
    auto epoch = raise_epoch();
    if (!epoch.ok()) {
      spdlog::warn("leader election: {}", std::string(epoch.status().message()));
      std::lock_guard relock(mu_);
      dirty_ = true;
      return;
    }
    set_leader(true, *epoch);
    return;
  }
  set_leader(false, 0);
  // Watch the node just before ours; if it is already gone, look again.
  const std::string before = latch + "/" + *(at - 1);
  Stat stat{};
  rc = zoo_wexists(zh, before.c_str(), &LeaderElection::on_event, this, &stat);
  if (rc == ZNONODE) {
    std::lock_guard relock(mu_);
    dirty_ = true;
  }
}

void LeaderElection::step_down() {
  {
    std::lock_guard lock(mu_);
    resign_ = true;
    dirty_ = true;
  }
  cv_.notify_all();
}

absl::StatusOr<int64_t> LeaderElection::raise_epoch() {
  zhandle_t* zh;
  {
    std::lock_guard lock(mu_);
    zh = zh_;
  }
  const std::string path = options_.root + "/epoch";
  for (int attempt = 0; attempt < 100; ++attempt) {
    char buf[32];
    int len = sizeof(buf) - 1;
    Stat stat{};
    int rc = zoo_get(zh, path.c_str(), 0, buf, &len, &stat);
    if (rc == ZNONODE) {
      rc = zoo_create(zh, path.c_str(), "0", 1, &ZOO_OPEN_ACL_UNSAFE, 0, nullptr, 0);
      if (rc != ZOK && rc != ZNODEEXISTS) return absl::UnavailableError(zk_error("create", path, rc));
      continue;
    }
    if (rc != ZOK) return absl::UnavailableError(zk_error("read", path, rc));
    buf[len < 0 ? 0 : len] = '\0';
    const int64_t next = std::atoll(buf) + 1;
    const std::string value = std::to_string(next);
    // Only if nobody raised it since we read it.
    rc = zoo_set(zh, path.c_str(), value.data(), static_cast<int>(value.size()), stat.version);
    if (rc == ZOK) return next;
    if (rc != ZBADVERSION) return absl::UnavailableError(zk_error("write", path, rc));
  }
  return absl::AbortedError("the epoch at " + path + " kept changing");
}

absl::StatusOr<std::string> LeaderElection::leader_address(const std::string& quorum, const std::string& root,
                                                           std::chrono::milliseconds deadline) {
  auto session = ZooKeeperSession::connect(quorum, std::chrono::milliseconds(10000), deadline);
  if (!session.ok()) return session.status();
  zhandle_t* zh = (*session)->handle();
  const std::string latch = root + "/latch";
  std::vector<std::string> names;
  const int rc = children(zh, latch, &names);
  if (rc != ZOK && rc != ZNONODE) return absl::UnavailableError(zk_error("list", latch, rc));
  if (rc == ZOK && !names.empty()) {
    char buf[512];
    int len = sizeof(buf);
    Stat stat{};
    if (zoo_get(zh, (latch + "/" + names.front()).c_str(), 0, buf, &len, &stat) == ZOK && len >= 0) {
      return std::string(buf, static_cast<size_t>(len));
    }
  }
  return absl::NotFoundError("no leader under " + root + " at " + quorum);
}

}  // namespace weir::cluster
