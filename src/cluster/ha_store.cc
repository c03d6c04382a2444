#include "cluster/ha_store.h"

#include <spdlog/spdlog.h>
#include <zookeeper/zookeeper.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <filesystem>

#include "cluster/leader_election.h"
#include "common/file_util.h"

namespace weir::cluster {
namespace {

bool outcome_unknown(int rc) { return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT || rc == ZSESSIONEXPIRED; }

// A node's data, or a ZooKeeper error code.
int read_node(zhandle_t* zh, const std::string& path, std::string* out, Stat* stat) {
  std::string buf(4096, '\0');
  int len = static_cast<int>(buf.size());
  const int rc = zoo_get(zh, path.c_str(), 0, buf.data(), &len, stat);
  if (rc != ZOK) return rc;
  buf.resize(len < 0 ? 0 : static_cast<size_t>(len));
  *out = std::move(buf);
  return ZOK;
}

}  // namespace

absl::Status check_ha_options(const HaOptions& o) {
  if (o.quorum.empty()) return absl::InvalidArgumentError("--ha zookeeper needs --ha-quorum HOST:PORT,...");
  if (o.storage.empty()) {
    return absl::InvalidArgumentError("--ha zookeeper needs --ha-storage DIR|s3://BUCKET/PREFIX (job records and "
                                      "libraries every JobManager reads)");
  }
  if (o.cluster_id.empty() || o.cluster_id.find('/') != std::string::npos) {
    return absl::InvalidArgumentError("--ha-cluster-id '" + o.cluster_id + "': a non-empty name without '/'");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<HaStore>> HaStore::open(const HaOptions& options, int64_t epoch,
                                                       std::chrono::milliseconds deadline) {
  std::unique_ptr<HaStore> store(new HaStore(options, epoch));
  if (s3::is_s3_url(options.storage)) {
    auto client = s3::shared_s3_client();
    if (!client.ok()) return client.status();
    store->s3_ = *client;
  }
  auto session = ZooKeeperSession::connect(options.quorum, options.session_timeout, deadline);
  if (!session.ok()) return session.status();
  store->session_ = *std::move(session);
  zhandle_t* zh = store->session_->handle();
  const std::string path = options.root() + "/epoch";
  std::string value;
  Stat stat{};
  int rc = read_node(zh, path, &value, &stat);
  if (rc != ZOK) return absl::UnavailableError(zk_error("read", path, rc));
  if (std::atoll(value.c_str()) != epoch) {
    return absl::FailedPreconditionError("leader epoch " + std::to_string(epoch) + " is over: " + path + " is " +
                                         value);
  }
  store->epoch_version_ = stat.version;
  for (const char* dir : {"/jobs", "/results"}) {
    rc = ensure_zk_path(zh, options.root() + dir);
    if (rc != ZOK) return absl::UnavailableError(zk_error("create", options.root() + dir, rc));
  }
  return store;
}

HaStore::HaStore(HaOptions options, int64_t epoch) : options_(std::move(options)), epoch_(epoch) {}

HaStore::~HaStore() = default;

absl::Status HaStore::fenced(const std::string& what, std::vector<zoo_op>& ops) {
  const std::string epoch_path = options_.root() + "/epoch";
  std::vector<zoo_op> all(ops.size() + 1);
  zoo_check_op_init(&all[0], epoch_path.c_str(), epoch_version_);
  std::copy(ops.begin(), ops.end(), all.begin() + 1);
  std::vector<zoo_op_result_t> results(all.size());
  const int rc = zoo_multi(session_->handle(), static_cast<int>(all.size()), all.data(), results.data());
  if (rc == ZOK) return absl::OkStatus();
  if (results[0].err == ZBADVERSION || results[0].err == ZNONODE) {
    return absl::FailedPreconditionError(what + ": no longer the leader (epoch " + std::to_string(epoch_) +
                                         " is over)");
  }
  if (outcome_unknown(rc)) return absl::UnavailableError(what + ": ZooKeeper did not answer (" + zerror(rc) + ")");
  if (rc == ZNONODE) return absl::NotFoundError(what + ": " + zerror(rc));
  return absl::InternalError(what + ": " + zerror(rc));
}

std::string HaStore::checkpoint_node(const std::string& job_id, int64_t id) const {
  // Zero-padded: ZooKeeper lists children unordered, and names sort by id.
  char name[24];
  std::snprintf(name, sizeof(name), "%019lld", static_cast<long long>(id));
  return options_.root() + "/jobs/" + job_id + "/checkpoints/" + name;
}

std::string HaStore::blob_location(const std::string& name) const {
  std::string base = options_.storage;
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  return base + "/" + name;
}

absl::Status HaStore::put_blob(const std::string& name, const std::string& bytes) {
  const std::string at = blob_location(name);
  if (s3_ != nullptr) {
    auto url = s3::parse_s3_url(at);
    if (!url.ok()) return url.status();
    return s3_->put(*url, bytes);
  }
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(at).parent_path(), ec);
  if (ec) return absl::UnavailableError("cannot create " + std::filesystem::path(at).parent_path().string() + ": " + ec.message());
  return write_file_atomic(at, bytes);
}

absl::StatusOr<std::string> HaStore::get_blob(const std::string& name) {
  const std::string at = blob_location(name);
  if (s3_ != nullptr) {
    auto url = s3::parse_s3_url(at);
    if (!url.ok()) return url.status();
    return s3_->get(*url);
  }
  return read_file(at);
}

void HaStore::remove_blob(const std::string& name) {
  const std::string at = blob_location(name);
  absl::Status s;
  if (s3_ != nullptr) {
    auto url = s3::parse_s3_url(at);
    s = url.ok() ? s3_->remove(*url) : url.status();
  } else {
    std::error_code ec;
    std::filesystem::remove(at, ec);
    if (ec) s = absl::UnavailableError(ec.message());
  }
  if (!s.ok()) spdlog::warn("cannot remove {} from HA storage: {}", at, std::string(s.message()));
}

absl::Status HaStore::add_job(const proto::JobRecord& record, const std::string& library_path) {
  const std::string& id = record.job_id();
  if (!library_path.empty()) {
    auto bytes = read_file(library_path);
    if (!bytes.ok()) return bytes.status();
    absl::Status s = put_blob("libraries/" + record.spec().library(), *bytes);
    if (!s.ok()) return absl::Status(s.code(), "job library into HA storage: " + std::string(s.message()));
  }
  absl::Status s = put_blob("jobs/" + id, record.SerializeAsString());
  if (!s.ok()) return absl::Status(s.code(), "job record into HA storage: " + std::string(s.message()));
  const std::string node = options_.root() + "/jobs/" + id;
  const std::string checkpoints = node + "/checkpoints";
  const std::string location = blob_location("jobs/" + id);
  const std::string history = node + "/history";
  std::vector<zoo_op> ops(3);
  zoo_create_op_init(&ops[0], node.c_str(), location.data(), static_cast<int>(location.size()), &ZOO_OPEN_ACL_UNSAFE,
                     0, nullptr, 0);
  zoo_create_op_init(&ops[1], checkpoints.c_str(), nullptr, -1, &ZOO_OPEN_ACL_UNSAFE, 0, nullptr, 0);
  zoo_create_op_init(&ops[2], history.c_str(), nullptr, -1, &ZOO_OPEN_ACL_UNSAFE, 0, nullptr, 0);
  return fenced("record job " + id, ops);
}

absl::Status HaStore::remove_job(const std::string& job_id) { return end_job(job_id, nullptr, 0); }

absl::Status HaStore::end_job(const std::string& job_id, const std::string* result, int64_t ended_ms) {
  const std::string node = options_.root() + "/jobs/" + job_id;
  // Children before their parents (ZooKeeper deletes only leaves).
  std::vector<std::string> paths;
  std::function<int(const std::string&)> collect = [&](const std::string& path) -> int {
    String_vector names{};
    const int rc = zoo_get_children(session_->handle(), path.c_str(), 0, &names);
    if (rc != ZOK) return rc;
    std::vector<std::string> children;
    for (int i = 0; i < names.count; ++i) children.push_back(path + "/" + names.data[i]);
    deallocate_String_vector(&names);
    for (const auto& child : children) {
      if (const int child_rc = collect(child); child_rc != ZOK && child_rc != ZNONODE) return child_rc;
    }
    paths.push_back(path);
    return ZOK;
  };
  const int rc = collect(node);
  if (rc == ZNONODE) return absl::OkStatus();
  if (rc != ZOK) return absl::UnavailableError(zk_error("list", node, rc));
  // The result's bytes go first; its node, with the job's forgetting.
  if (result != nullptr) {
    if (absl::Status s = put_blob("results/" + job_id, *result); !s.ok()) {
      return absl::Status(s.code(), "the result of job " + job_id + " in HA storage: " + std::string(s.message()));
    }
  }
  const std::string result_node = options_.root() + "/results/" + job_id;
  const std::string ended = std::to_string(ended_ms);
  std::vector<zoo_op> ops(paths.size() + (result != nullptr ? 1 : 0));
  for (size_t i = 0; i < paths.size(); ++i) zoo_delete_op_init(&ops[i], paths[i].c_str(), -1);
  if (result != nullptr) {
    zoo_create_op_init(&ops.back(), result_node.c_str(), ended.data(), static_cast<int>(ended.size()),
                       &ZOO_OPEN_ACL_UNSAFE, 0, nullptr, 0);
  }
  absl::Status s = fenced("forget job " + job_id, ops);
  if (s.ok()) remove_blob("jobs/" + job_id);
  return s;
}

absl::StatusOr<std::vector<HaStore::StoredResult>> HaStore::results() {
  const std::string dir = options_.root() + "/results";
  String_vector names{};
  int rc = zoo_get_children(session_->handle(), dir.c_str(), 0, &names);
  if (rc != ZOK) return absl::UnavailableError(zk_error("list", dir, rc));
  std::vector<std::string> ids(names.data, names.data + names.count);
  deallocate_String_vector(&names);
  std::vector<StoredResult> out;
  for (const auto& id : ids) {
    StoredResult r;
    r.job_id = id;
    std::string value;
    Stat stat{};
    rc = read_node(session_->handle(), dir + "/" + id, &value, &stat);
    if (rc == ZNONODE) continue;  // expired meanwhile
    if (rc != ZOK) return absl::UnavailableError(zk_error("read", dir + "/" + id, rc));
    r.ended_ms = std::atoll(value.c_str());
    auto bytes = get_blob("results/" + id);
    if (bytes.ok()) {
      r.json = *std::move(bytes);
    } else {
      r.problem = absl::Status(bytes.status().code(), "the result of job " + id + " in HA storage (" +
                                                          blob_location("results/" + id) +
                                                          "): " + std::string(bytes.status().message()));
    }
    out.push_back(std::move(r));
  }
  return out;
}

absl::Status HaStore::remove_result(const std::string& job_id) {
  const std::string node = options_.root() + "/results/" + job_id;
  std::vector<zoo_op> ops(1);
  zoo_delete_op_init(&ops[0], node.c_str(), -1);
  absl::Status s = fenced("forget the result of job " + job_id, ops);
  if (absl::IsNotFound(s)) s = absl::OkStatus();
  if (s.ok()) remove_blob("results/" + job_id);
  return s;
}

absl::StatusOr<int64_t> HaStore::next_checkpoint_id(const std::string& job_id, int64_t at_least) {
  const std::string node = options_.root() + "/jobs/" + job_id + "/counter";
  for (int attempt = 0; attempt < 20; ++attempt) {
    std::string value;
    Stat stat{};
    int rc = read_node(session_->handle(), node, &value, &stat);
    if (rc != ZOK && rc != ZNONODE) return absl::UnavailableError(zk_error("read", node, rc));
    const int64_t id = std::max<int64_t>(at_least, rc == ZOK ? std::atoll(value.c_str()) : 1);
    const std::string next = std::to_string(id + 1);
    std::vector<zoo_op> ops(1);
    Stat set_stat{};
    if (rc == ZNONODE) {
      zoo_create_op_init(&ops[0], node.c_str(), next.data(), static_cast<int>(next.size()), &ZOO_OPEN_ACL_UNSAFE, 0,
                         nullptr, 0);
    } else {
      zoo_set_op_init(&ops[0], node.c_str(), next.data(), static_cast<int>(next.size()), stat.version, &set_stat);
    }
    absl::Status s = fenced("reserve checkpoint id " + std::to_string(id) + " of job " + job_id, ops);
    if (s.ok()) return id;
    if (absl::IsInternal(s)) continue;  // raced with ourselves (node created or changed): read again
    return s;
  }
  return absl::AbortedError("the checkpoint id counter " + node + " kept changing");
}

absl::Status HaStore::commit_checkpoint(const std::string& job_id, int64_t id, const std::string& location,
                                       bool savepoint, const std::string& history) {
  const std::string node = checkpoint_node(job_id, id);
  const std::string value = (savepoint ? "savepoint " : "checkpoint ") + location;
  const std::string history_node = options_.root() + "/jobs/" + job_id + "/history";
  std::vector<zoo_op> ops(history.empty() ? 1 : 2);
  zoo_create_op_init(&ops[0], node.c_str(), value.data(), static_cast<int>(value.size()), &ZOO_OPEN_ACL_UNSAFE, 0,
                     nullptr, 0);
  if (!history.empty()) {
    zoo_set_op_init(&ops[1], history_node.c_str(), history.data(), static_cast<int>(history.size()), -1, nullptr);
  }
  return fenced("commit checkpoint " + std::to_string(id) + " of job " + job_id, ops);
}

absl::Status HaStore::forget_checkpoint(const std::string& job_id, int64_t id) {
  const std::string node = checkpoint_node(job_id, id);
  std::vector<zoo_op> ops(1);
  zoo_delete_op_init(&ops[0], node.c_str(), -1);
  absl::Status s = fenced("forget checkpoint " + std::to_string(id) + " of job " + job_id, ops);
  return absl::IsNotFound(s) ? absl::OkStatus() : s;
}

absl::StatusOr<proto::JobRecord> HaStore::parse_record(const std::string& job_id, std::string_view bytes) {
  proto::JobRecord record;
  if (!record.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())) || record.job_id() != job_id) {
    return absl::DataLossError("the record of job " + job_id + " in HA storage is corrupt");
  }
  return record;
}

absl::StatusOr<HaStore::CompletedPointer> HaStore::parse_pointer(std::string_view name, std::string_view value) {
  const size_t space = value.find(' ');
  const std::string_view kind = value.substr(0, space);
  int64_t id = -1;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), id);
  const bool number = ec == std::errc() && end == name.data() + name.size() && id >= 0;
  if (!number || space == std::string_view::npos || space + 1 == value.size() ||
      (kind != "checkpoint" && kind != "savepoint")) {
    return absl::DataLossError("malformed checkpoint pointer " + std::string(name.substr(0, 40)) + ": " +
                               std::string(value.substr(0, 200)));
  }
  return CompletedPointer{id, std::string(value.substr(space + 1)), kind == "savepoint"};
}

absl::StatusOr<std::vector<HaStore::Recovered>> HaStore::jobs() {
  const std::string dir = options_.root() + "/jobs";
  String_vector names{};
  int rc = zoo_get_children(session_->handle(), dir.c_str(), 0, &names);
  if (rc != ZOK) return absl::UnavailableError(zk_error("list", dir, rc));
  std::vector<std::string> ids(names.data, names.data + names.count);
  deallocate_String_vector(&names);
  std::vector<Recovered> out;
  for (const auto& id : ids) {
    Recovered r;
    r.record.set_job_id(id);
    auto bytes = get_blob("jobs/" + id);
    if (!bytes.ok()) {
      if (absl::IsUnavailable(bytes.status())) {
        return absl::Status(bytes.status().code(),
                            "the record of job " + id + " in HA storage: " + std::string(bytes.status().message()));
      }
      r.problem = absl::DataLossError("the record of job " + id + " in HA storage (" + blob_location("jobs/" + id) +
                                      ") cannot be read: " + std::string(bytes.status().message()));
      out.push_back(std::move(r));
      continue;
    }
    auto record = parse_record(id, *bytes);
    if (!record.ok()) {
      r.problem = absl::DataLossError(std::string(record.status().message()) + " (" + blob_location("jobs/" + id) + ")");
      out.push_back(std::move(r));
      continue;
    }
    r.record = *std::move(record);
    const std::string history = dir + "/" + id + "/history";
    Stat history_stat{};
    rc = read_node(session_->handle(), history, &r.history, &history_stat);
    if (rc == ZNONODE) {
      // Recorded before job histories were: every commit from now on
      // writes one.
      std::vector<zoo_op> ops(1);
      zoo_create_op_init(&ops[0], history.c_str(), nullptr, -1, &ZOO_OPEN_ACL_UNSAFE, 0, nullptr, 0);
      if (absl::Status created = fenced("create " + history, ops); !created.ok()) return created;
    } else if (rc != ZOK) {
      return absl::UnavailableError(zk_error("read", history, rc));
    }
    const std::string checkpoints = dir + "/" + id + "/checkpoints";
    String_vector children{};
    rc = zoo_get_children(session_->handle(), checkpoints.c_str(), 0, &children);
    if (rc != ZOK && rc != ZNONODE) return absl::UnavailableError(zk_error("list", checkpoints, rc));
    std::vector<std::string> nodes(children.data, children.data + children.count);
    deallocate_String_vector(&children);
    std::sort(nodes.begin(), nodes.end());  // zero-padded ids
    for (const auto& name : nodes) {
      const std::string node = checkpoints + "/" + name;
      std::string value;
      Stat stat{};
      rc = read_node(session_->handle(), node, &value, &stat);
      if (rc == ZNONODE) continue;  // forgotten meanwhile
      if (rc != ZOK) return absl::UnavailableError(zk_error("read", node, rc));
      auto pointer = parse_pointer(name, value);
      if (!pointer.ok()) {
        r.problem = absl::DataLossError(node + " in ZooKeeper: " + std::string(pointer.status().message()));
        break;
      }
      r.checkpoints.push_back(*std::move(pointer));
    }
    out.push_back(std::move(r));
  }
  return out;
}

absl::StatusOr<std::string> HaStore::library(const std::string& digest) {
  auto bytes = get_blob("libraries/" + digest);
  if (!bytes.ok()) {
    return absl::Status(bytes.status().code(),
                        "job library " + digest + " in HA storage: " + std::string(bytes.status().message()));
  }
  return bytes;
}

absl::StatusOr<std::string> HaCheckpointStorage::finalize(const checkpoint::CheckpointMetadata& m) {
  auto location = inner_->finalize(m);
  if (!location.ok()) return location;
  bool savepoint;
  {
    std::lock_guard lock(mu_);
    savepoint = savepoints_.erase(m.checkpoint_id) != 0;
  }
  absl::Status s = store_->commit_checkpoint(job_id_, m.checkpoint_id, *location, savepoint,
                                             history_ ? history_() : std::string());
  if (s.ok()) return location;
  if (absl::IsUnavailable(s)) {
    std::lock_guard lock(mu_);
    uncertain_.insert(m.checkpoint_id);
  }
  return s;
}

absl::Status HaCheckpointStorage::forget_completed(int64_t checkpoint_id) {
  return store_->forget_checkpoint(job_id_, checkpoint_id);
}

absl::Status HaCheckpointStorage::add_savepoint(int64_t checkpoint_id, const std::string& dir) {
  absl::Status s = inner_->add_savepoint(checkpoint_id, dir);
  if (s.ok()) {
    std::lock_guard lock(mu_);
    savepoints_.insert(checkpoint_id);
  }
  return s;
}

absl::StatusOr<std::vector<int64_t>> HaCheckpointStorage::stored_checkpoints() {
  auto ids = inner_->stored_checkpoints();
  if (!ids.ok()) return ids;
  std::lock_guard lock(mu_);
  std::erase_if(*ids, [this](int64_t id) { return uncertain_.count(id) != 0; });
  return ids;
}

void HaCheckpointStorage::discard(int64_t checkpoint_id) {
  {
    std::lock_guard lock(mu_);
    savepoints_.erase(checkpoint_id);
    if (uncertain_.count(checkpoint_id) != 0) {
      spdlog::warn("job {}: keeping checkpoint {} at {}: whether ZooKeeper recorded it as completed is unknown",
                   job_id_, checkpoint_id, inner_->location(checkpoint_id));
      return;
    }
  }
  inner_->discard(checkpoint_id);
}

}  // namespace weir::cluster
