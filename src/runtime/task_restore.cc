// How a task assembles what its operators restore from a checkpoint: the
// state files it needs (from this process's local copies when local
// recovery kept intact ones, else from the checkpoint), the operator state
// redistributed over the new parallelism, and the key groups of its range
// or the native snapshots holding them. Part of Task (runtime/task.h).
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

absl::StatusOr<std::shared_ptr<const checkpoint::StateFileBytes>> Task::read_state(
    const std::string& uid, const checkpoint::OperatorSubtaskState& s, bool whole) {
  if (services_.local_state != nullptr && !s.is_native()) {
    auto copy = services_.local_state->find(snapshot_owner(uid, s.subtask), tdd_.restore->checkpoint_id,
                                            s.key_groups, {s.file_size});
    if (copy && copy->size() == 1) {
      // The copy has the state file's name in a directory of its own, and
      // is checked as the original would be (size and checksum).
      const std::string dir = std::filesystem::path(copy->front()).parent_path().string();
      auto storage = checkpoint::FileCheckpointStorage::at_directory(dir);
      auto bytes = whole ? storage->read_state_file(dir, s) : storage->read_operator_state(dir, s);
      if (bytes.ok()) {
        state::LocalStateStore::count_restore();
        local_bytes_read_ += (*bytes)->bytes().size();
        return bytes;
      }
      spdlog::warn("job {}: {}: local copy not used: {}", tdd_.job_id, id().to_string(),
                   std::string(bytes.status().message()));
    }
  }
  return whole ? services_.storage->read_state_file(tdd_.restore_location, s)
               : services_.storage->read_operator_state(tdd_.restore_location, s);
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

}  // namespace weir::runtime
