// Byte formats that outlive a process: state files and checkpoint metadata.
// Both are versioned and end in a checksum; readers verify before use.
//
// State file (one per operator subtask that has state):
//   [8]  magic "WEIRSTAT"
//   [4]  u32 format version (kStateFileVersion)
//   operator state:  varint lists | (string name, u8 redistribution,
//                    varint n, string entry * n) * lists
//   keyed state:     one blob per key group of the subtask's range, in order
//                    (layout in include/weir/detail/state_table.h)
//   [8]  u64 xxh64 of all preceding bytes
// Channel state (version >= 3; unaligned checkpoints, and an iteration head's feedback in
// every checkpoint and savepoint): the records in
// flight to a task when its snapshot was taken are a list of the operator
// state of its head operator, named kChannelStateList, redistributed as a
// union (each restoring subtask takes the records it would have been sent),
// one entry per input channel that held any:
//   varint job edge | varint producer subtask | varint consumer subtask |
//   the channel's records, framed as on the wire (varint length | bytes)
// The metadata holds the offsets of the sections, so a reader can take any
// subset of key groups.
// Changelog file (incremental heap checkpoints, see detail::ChangelogFile):
// a state file with empty operator state whose key-group blobs hold either
// every entry (the chain's base) or each state's changes (a delta; layout at
// detail::StateTableBase). A subtask's own state file then holds its
// operator state only, and the metadata lists its chain.
//
// Metadata file `_metadata` (one per checkpoint; its presence completes it):
//   [8]  magic "WEIRMETA"
//   [4]  u32 format version (kMetadataVersion)
//   varint checkpoint id | i64 timestamp ms | u8 is_final | string job id
//   varint operators | per operator:
//     string uid | varint parallelism | varint max parallelism |
//     varint subtasks | per subtask:
//       varint index | string file | u64 file size |
//       u64 operator-state offset | u64 operator-state length |
//       (version >= 5) u64 xxh64 of the operator-state section |
//       varint kg start | varint kg end | varint n | u64 offset * n |
//       (version >= 2) varint files | (string path, u64 size, u8 shared) * files |
//                      varint states | (string name, u8 kind) * states
//       (version >= 3) each native state also has a string type signature
//                      after its kind
//       (version >= 4) each native file also has a u64 xxh64 of its bytes
//                      after its shared flag
//       (version >= 6) varint changelog files | per file, oldest first:
//                      string path | u64 size | u8 delta | varint n | u64 offset * n
//   [8]  u64 xxh64 of all preceding bytes
//
// DO NOT CHANGE these layouts without bumping the version numbers.
#ifndef WEIR_CHECKPOINT_FORMAT_H_
#define WEIR_CHECKPOINT_FORMAT_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "weir/detail/operator.h"
#include "weir/key_group.h"

namespace weir::checkpoint {

// 2 added type signatures to keyed state (state_table.h), 3 channel state,
// 4 changes after a state's entries (kKindHasChanges).
inline constexpr uint32_t kStateFileVersion = 4;
// 2 added native (incremental) keyed state, 3 type signatures of native
// states, 4 checksums of native files, 5 checksums of operator-state
// sections (a restore may read the section alone), 6 changelog chains.
inline constexpr uint32_t kMetadataVersion = 6;
inline constexpr std::string_view kMetadataFileName = "_metadata";

// A file of a native (RocksDB) snapshot: `path` relative to the
// checkpoint's directory; shared files live under ../shared/ and may be
// referenced by several checkpoints.
struct NativeFile {
  std::string path;
  uint64_t size = 0;
  bool shared = false;
  uint64_t checksum = 0;      // xxh64 of the file's bytes
  bool has_checksum = false;  // false in metadata before version 4
};

// Where one operator subtask's state lives inside a checkpoint.
struct OperatorSubtaskState {
  int subtask = 0;
  std::string file;  // relative to the checkpoint's directory
  uint64_t file_size = 0;
  uint64_t operator_state_offset = 0;
  uint64_t operator_state_length = 0;
  // xxh64 of the operator-state section (metadata version 5 on).
  uint64_t operator_state_checksum = 0;
  bool has_operator_state_checksum = false;
  KeyGroupRange key_groups;          // empty for non-keyed operators
  std::vector<uint64_t> kg_offsets;  // key_groups.size() + 1 offsets; empty when native
  // Native keyed state (incremental checkpoints): its files and states.
  std::vector<NativeFile> native_files;
  std::vector<detail::StateMeta> native_states;
  bool is_native() const { return !native_files.empty(); }
  // Changelog keyed state: its chain, base first (metadata version 6 on).
  std::vector<detail::ChangelogFile> changelog;
  bool is_changelog() const { return !changelog.empty(); }
  // Whether the keyed state lives outside the state file.
  bool keyed_elsewhere() const { return is_native() || is_changelog(); }

  std::string_view key_group_bytes(std::string_view file_bytes, int kg) const {
    size_t i = static_cast<size_t>(kg - key_groups.start);
    return file_bytes.substr(kg_offsets[i], kg_offsets[i + 1] - kg_offsets[i]);
  }
};

struct OperatorStateHandles {
  std::string uid;
  int parallelism = 0;
  int max_parallelism = 0;
  std::vector<OperatorSubtaskState> subtasks;
};

struct CheckpointMetadata {
  int64_t checkpoint_id = 0;
  int64_t timestamp_ms = 0;
  bool is_final = false;
  std::string job_id;
  std::vector<OperatorStateHandles> operators;

  const OperatorStateHandles* find(std::string_view uid) const {
    for (const auto& op : operators) {
      if (op.uid == uid) return &op;
    }
    return nullptr;
  }
  // Bytes of everything the checkpoint refers to (a full restore reads them).
  uint64_t total_bytes() const {
    uint64_t n = 0;
    for (const auto& op : operators) {
      for (const auto& s : op.subtasks) {
        n += s.file_size;
        for (const auto& f : s.native_files) n += f.size;
        for (const auto& f : s.changelog) n += f.size;
      }
    }
    return n;
  }
  // Bytes this checkpoint wrote: its own files and the shared files it
  // uploaded (under ../shared/c<id>/), not those it refers to again.
  uint64_t new_bytes() const {
    const std::string mine = "../shared/c" + std::to_string(checkpoint_id) + "/";
    uint64_t n = 0;
    for (const auto& op : operators) {
      for (const auto& s : op.subtasks) {
        n += s.file_size;
        for (const auto& f : s.native_files) {
          if (!f.shared || f.path.rfind(mine, 0) == 0) n += f.size;
        }
        for (const auto& f : s.changelog) {
          if (f.path.rfind(mine, 0) == 0) n += f.size;
        }
      }
    }
    return n;
  }
};

// The operator-state list of a task's head operator that holds the task's
// channel state (see the layout above); no operator may name a list so.
inline constexpr std::string_view kChannelStateList = "$channel-state";

// The records in flight on one input channel of a task at its snapshot.
struct ChannelState {
  int job_edge = 0;
  int producer = 0;
  int consumer = 0;
  std::string records;  // framed: varint length | bytes, each
};
std::string encode_channel_state(const ChannelState& state);
// An error says what is malformed.
absl::StatusOr<ChannelState> decode_channel_state(std::string_view entry);

std::string encode_metadata(const CheckpointMetadata& m);
// Checks an operator-state section read alone against its checksum.
absl::Status verify_operator_state(std::string_view section, const OperatorSubtaskState& handle,
                                   const std::string& what);
// The xxh64 of a file's bytes (as NativeFile::checksum); an error names the file.
absl::StatusOr<uint64_t> checksum_file(const std::string& path);
// `what` names the file in error messages.
absl::StatusOr<CheckpointMetadata> decode_metadata(std::string_view bytes, std::string_view what);

// Where a state file streams to.
class ByteSink {
 public:
  virtual ~ByteSink() = default;
  virtual absl::Status append(std::string_view bytes) = 0;
};

// Streams one operator subtask's snapshot into `sink` as a state file,
// holding at most one key group in memory; fills the offsets and size of
// `handle` (not its file name).
absl::Status write_state_file(const detail::OperatorSnapshot& snap, OperatorSubtaskState* handle,
                              ByteSink* sink);
// Streams the key groups of `keyed` (a changelog snapshot's base or delta)
// into `sink` as a changelog file; fills the size and offsets of `file`
// (not its path).
absl::Status write_changelog_file(const detail::KeyedStateSnapshot& keyed, detail::ChangelogFile* file,
                                  ByteSink* sink);
// The same, into a string.
std::string encode_state_file(const detail::OperatorSnapshot& snap, OperatorSubtaskState* handle);
// Verifies magic, version and checksum; `hashed`, when given, is called with
// each chunk of `bytes` once the checksum has read it.
absl::Status verify_state_file(std::string_view bytes, std::string_view what,
                               const std::function<void(std::string_view)>& hashed = nullptr);

void encode_operator_state(const detail::OperatorStateMap& state, ByteWriter& out);
absl::StatusOr<detail::OperatorStateMap> decode_operator_state(std::string_view bytes);

}  // namespace weir::checkpoint

#endif  // WEIR_CHECKPOINT_FORMAT_H_
