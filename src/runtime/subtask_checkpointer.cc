#include "runtime/subtask_checkpointer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>

#include <spdlog/spdlog.h>

#include "checkpoint/format.h"
#include "common/clock.h"
#include "common/file_util.h"
#include "common/test_points.h"
#include "runtime/operator_context.h"
#include "state/rocksdb_store.h"

namespace weir::runtime {
namespace {

using SteadyClock = std::chrono::steady_clock;

// Incremental checkpoint of a native snapshot: SST files already uploaded by
// the last confirmed checkpoint are referenced again; new ones are uploaded
// as shared files; the rest (manifest, options) are private to this
// checkpoint. Each uploaded file gets its checksum in the handle.
absl::Status upload_native(checkpoint::CheckpointStorage* storage, int64_t checkpoint_id, const std::string& owner,
                           detail::NativeSnapshot* native, checkpoint::OperatorSubtaskState* handle) {
  for (const std::string& local : native->files()) {
    std::string name = std::filesystem::path(local).filename().string();
    std::error_code ec;
    uint64_t size = std::filesystem::file_size(local, ec);
    if (ec) return absl::InternalError("cannot read " + local + ": " + ec.message());
    const bool sst = state::is_immutable_file(name);
    std::optional<detail::UploadedFile> upload;
    if (sst) upload = native->confirmed_upload(name);
    if (!upload) {
      auto sum = checkpoint::checksum_file(local);
      if (!sum.ok()) return sum.status();
      auto up = storage->upload_file(checkpoint_id, local, owner + "~" + name, sst);
      if (!up.ok()) return up.status();
      upload = detail::UploadedFile{*up, *sum};
    }
    // What this checkpoint refers to may be referred to again once it is confirmed.
    if (sst) native->record_upload(checkpoint_id, name, *upload);
    handle->native_files.push_back({upload->path, size, sst, upload->checksum, true});
  }
  handle->native_states = native->states();
  return absl::OkStatus();
}

// A state file written to the checkpoint storage and, for local recovery,
// to a local copy at the same time. The copy is best effort: when it cannot
// be written it is dropped (and said so), never the checkpoint.
class TeeOutput final : public checkpoint::StateFileOutput {
 public:
  TeeOutput(std::unique_ptr<checkpoint::StateFileOutput> out, std::filesystem::path copy)
      : out_(std::move(out)), path_(std::move(copy)) {
    std::error_code ec;
    std::filesystem::create_directories(path_.parent_path(), ec);
    fd_ = ec ? -1 : ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) drop_copy(ec ? ec.message() : std::strerror(errno));
  }
  ~TeeOutput() override {
    if (fd_ >= 0) ::close(fd_);
  }
  absl::Status append(std::string_view bytes) override {
    if (fd_ >= 0) {
      absl::Status s = write_all(fd_, bytes, path_.string());
      if (!s.ok()) drop_copy(std::string(s.message()));
    }
    return out_->append(bytes);
  }
  absl::Status finish() override {
    absl::Status s = out_->finish();
    if (fd_ >= 0 && ::close(fd_) != 0) drop_copy(std::strerror(errno));
    fd_ = -1;
    return s;
  }
  // Whether the local copy holds every byte.
  bool copied() const { return !dropped_; }

 private:
  void drop_copy(const std::string& why) {
    if (!dropped_) spdlog::warn("no local copy of state file {}: {}", path_.string(), why);
    dropped_ = true;
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }

  const std::unique_ptr<checkpoint::StateFileOutput> out_;
  const std::filesystem::path path_;
  int fd_ = -1;
  bool dropped_ = false;
};

// A changelog snapshot's file (its base, or its delta) as a shared file of
// the checkpoint; the handle lists the chain it ends. With `copy_dir`
// (local recovery of state files), the copy there gets the whole chain:
// links to the files of the copy of the checkpoint it follows, and a copy
// of the new file as it is written; `*copied` says whether it has them all.
absl::Status write_changelog(checkpoint::CheckpointStorage* storage, int64_t checkpoint_id, const std::string& owner,
                             const detail::KeyedStateSnapshot& keyed, checkpoint::OperatorSubtaskState* handle,
                             const std::filesystem::path* copy_dir, const std::filesystem::path* preceding_dir,
                             bool* copied) {
  namespace fs = std::filesystem;
  detail::ChangelogSnapshot* changelog = keyed.changelog();
  const std::string name = owner + (changelog->delta() ? "~delta.state" : "~base.state");
  auto out = storage->create_shared_file(checkpoint_id, name);
  if (!out.ok()) return out.status();
  detail::ChangelogFile file;
  file.path = checkpoint::shared_file_path(checkpoint_id, name);
  *copied = copy_dir != nullptr;
  TeeOutput* tee = nullptr;
  if (copy_dir != nullptr) {
    std::error_code ec;
    fs::create_directories(*copy_dir, ec);
    for (const detail::ChangelogFile& f : changelog->preceding()) {
      const std::string local = state::LocalStateStore::changelog_copy_name(f.path);
      if (!ec) fs::create_hard_link(*preceding_dir / local, *copy_dir / local, ec);
    }
    if (ec) {
      spdlog::warn("no local copy of the changelog of {} for checkpoint {}: {}", owner, checkpoint_id, ec.message());
      *copied = false;
    } else {
      auto t = std::make_unique<TeeOutput>(std::move(*out),
                                           *copy_dir / state::LocalStateStore::changelog_copy_name(file.path));
      tee = t.get();
      *out = std::move(t);
    }
  }
  absl::Status s = checkpoint::write_changelog_file(keyed, &file, out->get());
  if (s.ok()) s = (*out)->finish();
  if (!s.ok()) return s;
  if (tee != nullptr && !tee->copied()) *copied = false;
  handle->changelog = changelog->preceding();
  handle->changelog.push_back(file);
  changelog->written(file);
  return absl::OkStatus();
}

}  // namespace

struct SubtaskCheckpointer::Captured {
  struct Operator {
    std::string uid;
    detail::OperatorSnapshot snapshot;
  };
  std::vector<Operator> operators;  // those with state, in chain order
};

SubtaskCheckpointer::SubtaskCheckpointer(ExecutionId id, int parallelism, int max_parallelism, Services services)
    : id_(id), parallelism_(parallelism), max_parallelism_(max_parallelism), services_(std::move(services)) {}

absl::StatusOr<std::shared_ptr<SubtaskCheckpointer::Captured>> SubtaskCheckpointer::snapshot(
    const std::vector<ChainedOperator>& chain, int64_t checkpoint_id, bool savepoint) {
  detail::SnapshotOptions options;
  options.checkpoint_id = checkpoint_id;
  // Incremental checkpoints take native snapshots; savepoints are canonical.
  options.native_allowed = !savepoint && services_.incremental && services_.storage->supports_native();
  options.changelog_allowed = !savepoint && services_.changelog && services_.storage->supports_shared_files();
  options.materialize_interval_ms = services_.materialize_interval_ms;
  auto captured = std::make_shared<Captured>();
  for (const ChainedOperator& c : chain) {
    auto snap = c.op->snapshot(options);
    if (!snap.ok()) return absl::Status(snap.status().code(), c.uid + ": " + std::string(snap.status().message()));
    if (snap->operator_state.empty() && !snap->keyed) continue;
    captured->operators.push_back({c.uid, std::move(*snap)});
  }
  return captured;
}

void SubtaskCheckpointer::add_operator_list(Captured* captured, const std::string& uid, std::string name,
                                            detail::OperatorListStateData list) {
  auto it = std::find_if(captured->operators.begin(), captured->operators.end(),
                         [&](const Captured::Operator& o) { return o.uid == uid; });
  // A stateless head operator gets a snapshot of its own, first as in
  // chain order.
  if (it == captured->operators.end()) it = captured->operators.insert(captured->operators.begin(), {uid, {}});
  it->snapshot.operator_state[std::move(name)] = std::move(list);
}

void SubtaskCheckpointer::aborted(int64_t checkpoint_id) {
  absl::MutexLock lock(&aborted_->mu);
  aborted_->ids.insert(checkpoint_id);
  while (aborted_->ids.size() > 256) aborted_->ids.erase(aborted_->ids.begin());
}

void SubtaskCheckpointer::wait_for_pending() {
  absl::MutexLock lock(&aborted_->mu);
  aborted_->mu.Await(absl::Condition(
      +[](Aborted* a) ABSL_SHARED_LOCKS_REQUIRED(a->mu) { return a->in_flight == 0 || a->cancelled; },
      aborted_.get()));
}

void SubtaskCheckpointer::cancel() {
  absl::MutexLock lock(&aborted_->mu);
  aborted_->cancelled = true;
}

void SubtaskCheckpointer::finish_async(std::shared_ptr<Captured> captured, int64_t checkpoint_id, int64_t sync_ms,
                                       int64_t alignment_ms, int64_t source_records, int64_t persisted_data) {
  {
    absl::MutexLock lock(&aborted_->mu);
    ++aborted_->in_flight;
  }
  // Copies only: the task (and this object) may be gone before it runs.
  services_.executor->post([services = services_, id = id_, parallelism = parallelism_,
                            max_parallelism = max_parallelism_, captured = std::move(captured), checkpoint_id,
                            sync_ms, alignment_ms, source_records, persisted_data, aborted = aborted_]() mutable {
    // Ends this part's count however it returns, after its report is sent.
    struct Ended {
      Aborted* a;
      ~Ended() {
        absl::MutexLock lock(&a->mu);
        --a->in_flight;
      }
    } ended{aborted.get()};
    {
      absl::MutexLock lock(&aborted->mu);
      if (aborted->ids.contains(checkpoint_id)) {
        captured.reset();
        return;
      }
    }
    WEIR_SYNC_POINT("SubtaskCheckpointer::async_part");
    const auto start = SteadyClock::now();
    checkpoint::CheckpointStorage* storage = services.storage;
    checkpoint::TaskAck ack;
    ack.sync_ms = sync_ms;
    ack.alignment_ms = alignment_ms;
    ack.source_records = source_records;
    ack.persisted_data = persisted_data;
    for (Captured::Operator& c : captured->operators) {
      checkpoint::AckedOperatorState s;
      s.uid = c.uid;
      s.parallelism = parallelism;
      s.max_parallelism = max_parallelism;
      s.handle.subtask = id.subtask;
      s.handle.file = c.uid + "-" + std::to_string(id.subtask) + ".state";
      absl::Status st;
      const std::string owner = snapshot_owner(c.uid, id.subtask);
      const auto& local = services.local_state;
      const KeyGroupRange range = c.snapshot.keyed ? c.snapshot.keyed->range() : KeyGroupRange{};
      detail::NativeSnapshot* native = c.snapshot.keyed ? c.snapshot.keyed->native() : nullptr;
      const detail::ChangelogSnapshot* changelog = c.snapshot.keyed ? c.snapshot.keyed->changelog() : nullptr;
      // Whether the local copy (of state files) has the whole changelog chain.
      bool chain_copied = true;
      if (changelog != nullptr) {
        const bool copy = local != nullptr && local->copies_state_files();
        const auto dir = copy ? local->directory_for(owner, checkpoint_id) : std::filesystem::path();
        const auto preceding = copy ? local->directory_for(owner, changelog->preceding_id()) : std::filesystem::path();
        st = write_changelog(storage, checkpoint_id, owner, *c.snapshot.keyed, &s.handle, copy ? &dir : nullptr,
                             &preceding, &chain_copied);
      }
      if (native != nullptr) {
        st = upload_native(storage, checkpoint_id, owner, native, &s.handle);
        // Local recovery keeps the snapshot's directory once uploaded.
        if (st.ok() && local != nullptr && native->keep_local_copy(local->directory_for(owner, checkpoint_id))) {
          local->put(owner, checkpoint_id, range);
        }
      }
      auto out = st.ok() ? storage->create_state_file(checkpoint_id, s.handle.file)
                         : absl::StatusOr<std::unique_ptr<checkpoint::StateFileOutput>>(st);
      if (!out.ok()) {
        st = out.status();
      } else {
        // Local recovery keeps a copy of the state file itself, unless the
        // state lives in native files (kept above).
        TeeOutput* tee = nullptr;
        if (local != nullptr && native == nullptr && local->copies_state_files()) {
          auto t = std::make_unique<TeeOutput>(std::move(*out),
                                               local->directory_for(owner, checkpoint_id) / s.handle.file);
          tee = t.get();
          *out = std::move(t);
        }
        st = checkpoint::write_state_file(c.snapshot, &s.handle, out->get());
        if (st.ok()) st = (*out)->finish();
        if (tee != nullptr) {
          if (st.ok() && tee->copied() && chain_copied) {
            local->put(owner, checkpoint_id, range);
          } else {
            std::error_code ec;  // a copy of a state file that did not make it
            std::filesystem::remove_all(local->directory_for(owner, checkpoint_id), ec);
          }
        }
      }
      if (!st.ok()) {
        services.job_master->decline_checkpoint(id, checkpoint_id, std::string(st.message()));
        return;
      }
      WEIR_CRASH_POINT(CrashPoint::kStateFileWritten);
      ack.states.push_back(std::move(s));
    }
    captured->operators.clear();  // release copy-on-write views before acknowledging
    ack.async_ms = ms_since(start);
    services.job_master->acknowledge_checkpoint(id, checkpoint_id, std::move(ack));
    WEIR_SYNC_POINT("SubtaskCheckpointer::acknowledged");
  });
  WEIR_SYNC_POINT("SubtaskCheckpointer::async_part_posted");
}

}  // namespace weir::runtime
