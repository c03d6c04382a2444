// What a leading JobManager writes down before acting on it, so that the
// next leader can carry on (Flink's JobGraphStore, CompletedCheckpointStore
// and CheckpointIDCounter on ZooKeeper):
//
//   HA storage (a directory or s3://...)   ZooKeeper, under ROOT
//   jobs/<job-id>      JobRecord bytes     jobs/<job-id>                   the record's location
//   libraries/<digest> a job library       jobs/<job-id>/checkpoints/<id>  "checkpoint|savepoint
//                                                                          <location>", one per
//                                                                          retained completed one
//                                          jobs/<job-id>/counter           the next checkpoint id
//                                          jobs/<job-id>/history           restarts, checkpoint counts and
//                                                                          failures so far (JSON), written
//                                                                          with each checkpoint's pointer
//   results/<job-id>   an ended job's      results/<job-id>                when it ended
//                      final REST answers
//
// A completed checkpoint's node goes before its files do (subsumed or found
// broken): a new leader takes over every retained checkpoint, restores the
// newest intact one and later deletes the others as the old leader would
// have, so checkpoints neither leak nor vanish across leader changes.
//
// Every ZooKeeper write is one multi-operation that first checks that
// ROOT/epoch still holds the version it had when this leader raised it
// (LeaderElection): once another JobManager leads, a deposed leader's
// writes fail as a whole, so it can neither record a checkpoint as
// completed nor forget a job. A checkpoint is completed for the cluster
// only once its pointer is written here (after its _metadata), which is
// the commit point under high availability.
//
// Thread-safe (ZooKeeper's synchronous calls on its multi-threaded client).
#ifndef WEIR_CLUSTER_HA_STORE_H_
#define WEIR_CLUSTER_HA_STORE_H_

#include <chrono>
#include <functional>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "checkpoint/coordinator.h"
#include "s3/s3_client.h"
#include "checkpoint/storage.h"
#include "cluster/cluster.pb.h"

struct zoo_op;

namespace weir::cluster {

class ZooKeeperSession;

struct HaOptions {
  std::string quorum;                  // HOST:PORT,...; empty: no high availability
  std::string cluster_id = "default";  // one cluster's nodes under /weir/<cluster_id>
  std::string storage;                 // DIR or s3://BUCKET/PREFIX for job records and libraries
  std::chrono::milliseconds session_timeout{10000};

  bool enabled() const { return !quorum.empty(); }
  std::string root() const { return "/weir/" + cluster_id; }
};

// Checks the options of `weir jobmanager --ha zookeeper`: an error names
// the flag.
absl::Status check_ha_options(const HaOptions& o);

class HaStore {
 public:
  // Connects a session of its own (waiting at most `deadline`) for the
  // leader of `epoch`; FailedPrecondition when ROOT/epoch already moved on.
  static absl::StatusOr<std::unique_ptr<HaStore>> open(const HaOptions& options, int64_t epoch,
                                                       std::chrono::milliseconds deadline);
  ~HaStore();
  HaStore(const HaStore&) = delete;
  HaStore& operator=(const HaStore&) = delete;

  int64_t epoch() const { return epoch_; }

  // Records a submitted job (and its library, the file at `library_path`,
  // unless "") before it starts.
  absl::Status add_job(const proto::JobRecord& record, const std::string& library_path);
  // Forgets an ended job: it is not recovered any more.
  absl::Status remove_job(const std::string& job_id);
  // The same, keeping in one step `result` (the job's last REST answers,
  // JSON) in the job result store (Flink's JobResultStore): its bytes in
  // HA storage results/<job-id>, its node ROOT/results/<job-id> holding
  // when the job ended (ms since the epoch), made with the forgetting.
  absl::Status end_job(const std::string& job_id, const std::string* result, int64_t ended_ms);
  struct StoredResult {
    std::string job_id;
    int64_t ended_ms = 0;
    std::string json;
    absl::Status problem;  // its bytes cannot be read: why
  };
  // Every ended job's result, for a new leader.
  absl::StatusOr<std::vector<StoredResult>> results();
  // Forgets a stored result (expired); OK when there was none.
  absl::Status remove_result(const std::string& job_id);
  // The next checkpoint id of the job (at least `at_least`), reserved.
  absl::StatusOr<int64_t> next_checkpoint_id(const std::string& job_id, int64_t at_least);
  // Records checkpoint (or savepoint) `id` at `location` as completed.
  // Unavailable when ZooKeeper did not answer: then whether it was
  // recorded is unknown.
  // With it, in the same step, `history` (unless ""): the job's history
  // so far, for the next leader (Recovered::history).
  absl::Status commit_checkpoint(const std::string& job_id, int64_t id, const std::string& location,
                                 bool savepoint = false, const std::string& history = "");
  // Forgets completed checkpoint `id` (about to be deleted, or found
  // broken); OK when it was not recorded.
  absl::Status forget_checkpoint(const std::string& job_id, int64_t id);

  struct CompletedPointer {
    int64_t id = -1;
    std::string location;
    bool savepoint = false;
  };
  struct Recovered {
    proto::JobRecord record;
    std::vector<CompletedPointer> checkpoints;  // oldest first; empty: none completed yet
    // What the job's last leader wrote with its newest checkpoint
    // (runtime::JobMaster::history()); "" when none did.
    std::string history;
    // Not OK when the job's record (or a checkpoint pointer of it) cannot
    // be read: then only record.job_id() is set, and `problem` names the
    // record and the cause. Its nodes stay for an operator to look into
    // (remove_job forgets them).
    absl::Status problem;
  };
  // A job's record from its bytes in HA storage; DataLoss naming the
  // record when they are not the record of `job_id`.
  static absl::StatusOr<proto::JobRecord> parse_record(const std::string& job_id, std::string_view bytes);
  // A completed checkpoint's pointer from its ZooKeeper node: `name` the
  // zero-padded id, `value` "checkpoint|savepoint <location>". DataLoss
  // when malformed.
  static absl::StatusOr<CompletedPointer> parse_pointer(std::string_view name, std::string_view value);

  // Every recorded job, for a new leader. A record that is missing or
  // corrupt is that one job's problem; an error here means the store
  // itself could not be read (ZooKeeper unreachable).
  absl::StatusOr<std::vector<Recovered>> jobs();
  // The bytes of a recorded job library.
  absl::StatusOr<std::string> library(const std::string& digest);

 private:
  HaStore(HaOptions options, int64_t epoch);
  // Runs the operations after the epoch check; errors name `what`.
  // NotFound when the check held and an operation found no node.
  absl::Status fenced(const std::string& what, std::vector<::zoo_op>& ops);
  std::string checkpoint_node(const std::string& job_id, int64_t id) const;
  absl::Status put_blob(const std::string& name, const std::string& bytes);
  absl::StatusOr<std::string> get_blob(const std::string& name);
  void remove_blob(const std::string& name);
  std::string blob_location(const std::string& name) const;

  const HaOptions options_;
  const int64_t epoch_;
  std::unique_ptr<ZooKeeperSession> session_;
  int epoch_version_ = -1;  // of ROOT/epoch when this leader raised it
  std::shared_ptr<s3::S3Client> s3_;  // when storage is s3://
};

// A job's checkpoint ids from the HA store.
class HaCheckpointIds final : public checkpoint::CheckpointIdCounter {
 public:
  HaCheckpointIds(std::shared_ptr<HaStore> store, std::string job_id)
      : store_(std::move(store)), job_id_(std::move(job_id)) {}
  absl::StatusOr<int64_t> next(int64_t at_least) override { return store_->next_checkpoint_id(job_id_, at_least); }

 private:
  const std::shared_ptr<HaStore> store_;
  const std::string job_id_;
};

// A job's checkpoint storage whose finalize also commits the checkpoint in
// the HA store: a checkpoint this leader cannot commit (deposed, or
// ZooKeeper unreachable) fails, and its tasks are never told it completed.
// One whose commit had an unknown outcome keeps its files when discarded,
// since the next leader may restore it.
class HaCheckpointStorage final : public checkpoint::CheckpointStorage {
 public:
  HaCheckpointStorage(std::shared_ptr<checkpoint::CheckpointStorage> inner, std::shared_ptr<HaStore> store,
                      std::string job_id)
      : inner_(std::move(inner)), store_(std::move(store)), job_id_(std::move(job_id)) {}

  absl::StatusOr<std::unique_ptr<checkpoint::StateFileOutput>> create_state_file(int64_t checkpoint_id,
                                                                                 const std::string& name) override {
    return inner_->create_state_file(checkpoint_id, name);
  }
  absl::StatusOr<std::string> finalize(const checkpoint::CheckpointMetadata& m) override;
  absl::Status forget_completed(int64_t checkpoint_id) override;
  // What a commit writes as the job's history (on the thread that
  // finalizes: the JobMaster's loop). Before the first checkpoint.
  void set_history(std::function<std::string()> history) { history_ = std::move(history); }
  absl::StatusOr<std::shared_ptr<const checkpoint::StateFileBytes>> read_state_file(
      const std::string& location, const checkpoint::OperatorSubtaskState& handle) override {
    return inner_->read_state_file(location, handle);
  }
  absl::StatusOr<std::shared_ptr<const checkpoint::StateFileBytes>> read_operator_state(
      const std::string& location, const checkpoint::OperatorSubtaskState& handle) override {
    return inner_->read_operator_state(location, handle);
  }
  void discard(int64_t checkpoint_id) override;
  void discard_subsumed(int64_t checkpoint_id, const std::vector<std::string>& unreferenced) override {
    inner_->discard_subsumed(checkpoint_id, unreferenced);
  }
  std::string location(int64_t checkpoint_id) const override { return inner_->location(checkpoint_id); }
  // Those whose commit had an unknown outcome are not listed: the next
  // leader may restore them.
  absl::StatusOr<std::vector<int64_t>> stored_checkpoints() override;
  absl::StatusOr<std::string> upload_file(int64_t checkpoint_id, const std::string& local, const std::string& name,
                                          bool shared) override {
    return inner_->upload_file(checkpoint_id, local, name, shared);
  }
  bool supports_native() const override { return inner_->supports_native(); }
  bool durable() const override { return inner_->durable(); }
  absl::Status add_savepoint(int64_t checkpoint_id, const std::string& dir) override;

 private:
  const std::shared_ptr<checkpoint::CheckpointStorage> inner_;
  const std::shared_ptr<HaStore> store_;
  const std::string job_id_;
  std::function<std::string()> history_;
  std::mutex mu_;
  std::set<int64_t> uncertain_;   // commits whose outcome is unknown
  std::set<int64_t> savepoints_;  // ids taken as savepoints
};

}  // namespace weir::cluster

#endif  // WEIR_CLUSTER_HA_STORE_H_
