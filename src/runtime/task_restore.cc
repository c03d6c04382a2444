// How a task assembles what its operators restore from a checkpoint: the
// state files it needs (from this process's local copies when local
// recovery kept intact ones, else from the checkpoint), the operator state
// redistributed over the new parallelism, and the key groups of its range
// or the native snapshots holding them; the channel state of an unaligned
// checkpoint, redistributed as the records would have been sent, and its
// replay. Part of Task (runtime/task.h).
#include <algorithm>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "checkpoint/format.h"
#include "checkpoint/file_storage.h"
#include "checkpoint/state_assignment.h"
#include "checkpoint/storage.h"
#include "checkpoint/storage_scheme.h"
#include "runtime/operator_context.h"
#include "runtime/task.h"

namespace weir::runtime {

std::optional<std::string> Task::local_copy_of(const std::string& uid, const checkpoint::OperatorSubtaskState& s) {
  if (services_.local_state == nullptr || s.is_native()) return std::nullopt;
  // The state file, and the files of its changelog chain under their copy
  // names (state::LocalStateStore::changelog_copy_name).
  std::vector<uint64_t> sizes = {s.file_size};
  for (const detail::ChangelogFile& f : s.changelog) sizes.push_back(f.size);
  auto copy = services_.local_state->find(snapshot_owner(uid, s.subtask), tdd_.restore->checkpoint_id, s.key_groups,
                                          std::move(sizes));
  if (!copy || copy->empty()) return std::nullopt;
  return std::filesystem::path(copy->front()).parent_path().string();
}

absl::StatusOr<std::shared_ptr<const checkpoint::StateFileBytes>> Task::read_local_or_checkpoint(
    const std::string& uid, const checkpoint::OperatorSubtaskState& s,
    const std::function<absl::StatusOr<std::shared_ptr<const checkpoint::StateFileBytes>>(
        checkpoint::CheckpointStorage& storage, const std::string& location)>& read) {
  if (auto dir = local_copy_of(uid, s)) {
    // A copy is checked as the original would be (size and checksum).
    auto bytes = read(*checkpoint::FileCheckpointStorage::at_directory(*dir), *dir);
    if (bytes.ok()) {
      local_bytes_read_ += (*bytes)->bytes().size();
      return bytes;
    }
    spdlog::warn("job {}: {}: local copy not used: {}", tdd_.job_id, id().to_string(),
                 std::string(bytes.status().message()));
  }
  return read(*services_.storage, tdd_.restore_location);
}

absl::StatusOr<std::shared_ptr<const checkpoint::StateFileBytes>> Task::read_state(
    const std::string& uid, const checkpoint::OperatorSubtaskState& s, bool whole) {
  bool local = true;
  auto bytes = read_local_or_checkpoint(
      uid, s, [&](checkpoint::CheckpointStorage& storage, const std::string& location) {
        local = location != tdd_.restore_location;
        return whole ? storage.read_state_file(location, s) : storage.read_operator_state(location, s);
      });
  if (bytes.ok() && local) state::LocalStateStore::count_restore();
  return bytes;
}

absl::StatusOr<std::shared_ptr<const checkpoint::StateFileBytes>> Task::read_changelog(
    const std::string& uid, const checkpoint::OperatorSubtaskState& s, const detail::ChangelogFile& f) {
  return read_local_or_checkpoint(uid, s, [&](checkpoint::CheckpointStorage& storage, const std::string& location) {
    if (location == tdd_.restore_location) return storage.read_changelog_file(location, f);
    detail::ChangelogFile copy = f;
    copy.path = state::LocalStateStore::changelog_copy_name(f.path);
    return storage.read_changelog_file(location, copy);
  });
}

absl::StatusOr<detail::OperatorRestore> Task::restore_for(
    int node, std::vector<std::shared_ptr<const checkpoint::StateFileBytes>>* files) {
  detail::OperatorRestore r;
  const std::string& uid = graph_->uids[node];
  const checkpoint::OperatorStateHandles* h = tdd_.restore->find(uid);
  if (h == nullptr) return r;  // an operator new to this job: starts empty
  r.release = [files](std::string_view part) {
    for (const auto& f : *files) {
      std::string_view all = f->bytes();
      if (part.data() >= all.data() && part.data() + part.size() <= all.data() + all.size()) {
        f->release(part);
        return;
      }
    }
  };
  // Read each needed state file once: whole when this subtask takes some of
  // its key groups, else only its operator-state section.
  std::vector<std::pair<const checkpoint::OperatorSubtaskState*, std::string_view>> read;
  std::vector<std::pair<int, detail::OperatorStateMap>> op_states;
  for (const checkpoint::OperatorSubtaskState* s : checkpoint::states_to_read(*h, tdd_.key_groups)) {
    const bool whole = !checkpoint::overlap(s->key_groups, tdd_.key_groups).empty();
    auto bytes = read_state(uid, *s, whole);
    if (!bytes.ok()) return bytes.status();
    files->push_back(std::move(*bytes));
    const std::string_view section =
        whole ? files->back()->bytes().substr(s->operator_state_offset, s->operator_state_length)
              : files->back()->bytes();
    auto st = checkpoint::decode_operator_state(section);
    if (!st.ok()) return st.status();
    op_states.emplace_back(s->subtask, std::move(*st));
    if (whole) read.emplace_back(s, files->back()->bytes());
  }
  r.operator_state = checkpoint::assign_operator_state(std::move(op_states), h->parallelism,
                                                       tdd_.execution.subtask, vertex_.parallelism);
  // Keyed state: the key groups of this subtask's range, or the native
  // snapshots holding them.
  for (auto& [s, bytes] : read) {
    const KeyGroupRange take = checkpoint::overlap(s->key_groups, tdd_.key_groups);
    if (take.empty()) continue;
    if (s->is_changelog()) {
      // The chain's base, then each delta: the changes of a key group apply
      // in the order they were written.
      for (const detail::ChangelogFile& f : s->changelog) {
        auto chain = read_changelog(uid, *s, f);
        if (!chain.ok()) return chain.status();
        files->push_back(std::move(*chain));
        const std::string_view all = files->back()->bytes();
        for (int kg = take.start; kg < take.end; ++kg) {
          const size_t i = static_cast<size_t>(kg - s->key_groups.start);
          if (f.kg_offsets[i] > f.kg_offsets[i + 1] || f.kg_offsets[i + 1] > all.size()) {
            return absl::DataLossError(tdd_.restore_location + ": changelog file " + f.path +
                                       ": key group " + std::to_string(kg) + " lies outside the file");
          }
          const std::string_view blob = all.substr(f.kg_offsets[i], f.kg_offsets[i + 1] - f.kg_offsets[i]);
          (f.delta ? r.key_group_changes : r.key_groups).push_back({kg, blob});
        }
      }
      continue;
    }
    if (s->is_native()) {
      detail::NativeRestore n;
      n.range = s->key_groups;
      std::vector<uint64_t> sizes;
      for (const auto& f : s->native_files) {
        n.files.push_back(checkpoint::native_file_location(tdd_.restore_location, f.path));
        sizes.push_back(f.size);
      }
      if (const checkpoint::StorageScheme& scheme = checkpoint::scheme_for(tdd_.restore_location); scheme.remote()) {
        n.download = [&scheme, location = tdd_.restore_location, state = *s](const std::string& dir) {
          return scheme.download_native_files(location, state, dir);
        };
      }
      n.states = s->native_states;
      if (services_.local_state != nullptr) {
        auto local = services_.local_state->find(snapshot_owner(uid, s->subtask), tdd_.restore->checkpoint_id,
                                                 s->key_groups, std::move(sizes));
        if (local) n.local_files = std::move(*local);
      }
      r.native.push_back(std::move(n));
      continue;
    }
    for (int kg = take.start; kg < take.end; ++kg) r.key_groups.push_back({kg, s->key_group_bytes(bytes, kg)});
  }
  return r;
}

absl::Status Task::assign_channel_state(const detail::OperatorListStateData& list, int old_parallelism) {
  const int me = tdd_.execution.subtask;
  const int parallelism = vertex_.parallelism;
  for (const std::string& entry : list.entries) {
    auto state = checkpoint::decode_channel_state(entry);
    if (!state.ok()) return state.status();
    const std::string what = "channel state of edge " + std::to_string(state->job_edge) + " from subtask " +
                             std::to_string(state->producer) + " to subtask " + std::to_string(state->consumer);
    auto input = std::find(vertex_.inputs.begin(), vertex_.inputs.end(), state->job_edge);
    if (input == vertex_.inputs.end() || state->consumer >= old_parallelism) {
      return absl::DataLossError(what + " does not lead to " + vertex_.name + ": the checkpoint is of another job");
    }
    const graph::JobEdge& je = graph_->edges[state->job_edge];
    Replay r;
    r.adapter = static_cast<size_t>(input - vertex_.inputs.begin());
    r.edge = &graph_->stream.edges[je.stream_edge];
    r.what = what;
    if (old_parallelism == parallelism) {
      // Each subtask takes what was in flight to it.
      if (state->consumer != me) continue;
    } else if (je.kind == detail::PartitionKind::kHash) {
      // Each subtask takes the records of its key groups, from every
      // channel, as the producers would send them now.
      r.by_key_group = true;
    } else if (je.kind == detail::PartitionKind::kBroadcast) {
      return absl::FailedPreconditionError(
          what + " cannot be rescaled from parallelism " + std::to_string(old_parallelism) + " to " +
          std::to_string(parallelism) + ": a broadcast input's records in flight differ per subtask; restore at "
          "parallelism " + std::to_string(old_parallelism) + ", or rescale from a savepoint (savepoints are aligned)");
    } else {
      // Round robin: the old subtasks' records in flight, dealt out.
      if (state->consumer % parallelism != me) continue;
    }
    r.records = std::move(state->records);
    replay_.push_back(std::move(r));
  }
  return absl::OkStatus();
}

void Task::replay_channel_state() {
  if (replay_.empty()) return;
  const auto began = std::chrono::steady_clock::now();
  int64_t total = 0;
  for (Replay& r : replay_) {
    detail::InputAdapter* adapter = adapters_[r.adapter].get();
    network::RecordDeserializer records;
    int64_t n = 0;
    const bool ok = records.feed(r.records.data(), r.records.size(), [&](std::string_view rec) {
      if (r.by_key_group) {
        uint64_t hash;
        if (!r.edge->ops->read_key_hash(r.edge->key_hash.get(), rec, &hash)) return false;
        if (!tdd_.key_groups.contains(key_group_for_hash(hash, graph_->max_parallelism))) return true;
      }
      ++n;
      if (backlog_ != nullptr) {
        // An iteration head takes it in as feedback: replayed straight
        // into a loop, it could wait in a push for itself.
        absl::Status s = backlog_->push(rec);
        if (!s.ok()) throw std::runtime_error(std::string(s.message()));
        return true;
      }
      return adapter->process_serialized(rec);
    });
    if (!ok || records.has_partial()) throw std::runtime_error(r.what + " is malformed");
    TaskMetrics::add(metrics_.records_in, n);
    total += n;
    std::string().swap(r.records);
  }
  replay_.clear();
  spdlog::info("job {}: {} ({}) replayed {} records of channel state in {} ms", tdd_.job_id, vertex_.name,
               id().to_string(), total, ms_since(began));
}

}  // namespace weir::runtime
