// The RocksDB store behind the RocksDB state backend (layout in
// include/weir/detail/kv_state.h).
#ifndef WEIR_STATE_ROCKSDB_STORE_H_
#define WEIR_STATE_ROCKSDB_STORE_H_

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "weir/detail/kv_state.h"

namespace weir::state {

// Opens a fresh RocksDB instance in `dir` (anything there is removed first).
// Every instance of the process shares one block cache of `memory_bytes`,
// with the memtables charged against it, so the memory of all RocksDB state
// stays within that budget whatever the state size. The directory is removed
// when the store and every view of it are gone. The write-ahead log is off:
// state is recovered from checkpoints, not from the working copy.
absl::StatusOr<std::shared_ptr<detail::KvStore>> open_rocksdb_store(const std::filesystem::path& dir,
                                                                    int64_t memory_bytes);

// Opens a store on copies of the files of a native snapshot (an incremental
// checkpoint's SST, manifest and options files), in fresh directory `dir`.
// With `link`, SST files are hard-linked where the filesystem allows (for
// local copies, which no one else writes).
absl::StatusOr<std::shared_ptr<detail::KvStore>> open_rocksdb_store_from(const std::filesystem::path& dir,
                                                                         int64_t memory_bytes,
                                                                         const std::vector<std::string>& files,
                                                                         bool link = false);

// Whether a file of a RocksDB directory never changes once written (an SST
// file): shareable between checkpoints and safe to hard-link.
inline bool is_immutable_file(std::string_view name) {
  return name.size() > 4 && name.substr(name.size() - 4) == ".sst";
}

// The directory under which a job's RocksDB working copies and local
// snapshot copies live: `configured`, or <system temp>/weir-rocksdb.
std::filesystem::path state_root(const std::string& configured, const std::string& job_id);

}  // namespace weir::state

#endif  // WEIR_STATE_ROCKSDB_STORE_H_
