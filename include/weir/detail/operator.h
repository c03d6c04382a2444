// The seam between typed user code (templates, instantiated in the user's
// translation unit) and the untyped runtime in src/runtime.
//
// Every operator is an OperatorBase. Records move between chained operators
// as typed `Output<T>::collect(const T&)` calls (no serialization); at a task
// boundary an Output<T> serializes into a PartitionWriter, and on the other
// side an InputAdapter deserializes into the next operator's Input<T>.
//
// All objects here are confined to one task thread unless said otherwise.
#ifndef WEIR_DETAIL_OPERATOR_H_
#define WEIR_DETAIL_OPERATOR_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "weir/key_group.h"
#include "weir/metrics.h"
#include "weir/operator_state.h"
#include "weir/processing_time.h"
#include "weir/serializer.h"

namespace weir {

class OperatorContext;

// Event time: milliseconds since the epoch. A record without a timestamp
// carries kNoTimestamp; the watermark that ends all input is kMaxWatermark.
inline constexpr int64_t kNoTimestamp = INT64_MIN;
inline constexpr int64_t kMinWatermark = INT64_MIN;
inline constexpr int64_t kMaxWatermark = INT64_MAX;

// DO NOT CHANGE values: stored with timers.
enum class TimeDomain : uint8_t { kEventTime = 0, kProcessingTime = 1 };

// Receives the records a function emits.
template <typename T>
class Collector {
 public:
  virtual ~Collector() = default;
  virtual void collect(const T& record) = 0;
};

namespace detail {

// The timestamp of the record being processed on this thread. Each task runs
// on its own thread, so this is per task: the runtime sets it before handing
// a record to an operator, records emitted while processing inherit it, and
// operators that emit at another time (timers, windows) set it first.
inline int64_t& current_timestamp() {
  static thread_local int64_t ts = kNoTimestamp;
  return ts;
}

class OutputBase {
 public:
  virtual ~OutputBase() = default;
  // Event time progressed to `watermark`: no record with an earlier
  // timestamp follows.
  virtual void emit_watermark(int64_t watermark) = 0;
  // The output will carry nothing for a while (an idle source) or again.
  virtual void emit_idle(bool idle) = 0;
  // Each record collected counts in `records` from now on: the emitting
  // operator's numRecordsOut, set on the output it was given (once per
  // record, however many targets a fan-out reaches). Unset, nothing is
  // counted (a predictable branch, no write).
  void count_into(Counter* records) { counted_ = records; }

 protected:
  void count() {
    if (counted_ != nullptr) counted_->inc();
  }

 private:
  Counter* counted_ = nullptr;
};

template <typename T>
class Output : public OutputBase, public Collector<T> {};

template <typename T>
class Input {
 public:
  virtual ~Input() = default;
  virtual void process(const T& record) = 0;
};

// The public types under their engine spellings.
using ::weir::ProcessingTimeService;
using ::weir::Redistribution;

// Sends serialized records of one output edge to its channels. Implemented by
// the runtime (src/network/partition_writer.h).
class PartitionWriter {
 public:
  virtual ~PartitionWriter() = default;
  virtual int num_channels() const = 0;
  // Appends one serialized record to `channel`. May block while the channel
  // is full (backpressure).
  virtual void emit(int channel, std::string_view record) = 0;
  // Sends a watermark / an idleness change to every channel, in band.
  virtual void broadcast_watermark(int64_t watermark) = 0;
  virtual void broadcast_idle(bool idle) = 0;
};

// Deserializes records arriving on one input edge into an operator.
class InputAdapter {
 public:
  virtual ~InputAdapter() = default;
  // Returns false when `record` cannot be decoded (a corrupt frame).
  virtual bool process_serialized(std::string_view record) = 0;
};

struct OperatorListStateData {
  Redistribution mode = Redistribution::kEvenSplit;
  std::vector<std::string> entries;  // serialized elements
};

// Non-keyed state of one operator subtask: named lists of serialized
// entries. Small by design (positions, pending files), so it is captured by
// copy in the synchronous part of a snapshot.
using OperatorStateMap = std::map<std::string, OperatorListStateData>;

// A keyed state as recorded in a snapshot: its name, kind (StateKind as a
// byte) and type signature (weir::type_signature of key and value; empty in
// snapshots that predate signatures).
struct StateMeta {
  std::string name;
  uint8_t kind = 0;
  std::string type;
};

// Where a checkpoint put one file of a native snapshot, and the xxh64 of
// its bytes (verified before a restore uses it).
struct UploadedFile {
  std::string path;
  uint64_t checksum = 0;
};

// A native (RocksDB) snapshot for incremental checkpoints: the files of a
// RocksDB checkpoint in a local directory. Immutable SST files are uploaded
// once and then referenced by later checkpoints.
class NativeSnapshot {
 public:
  virtual ~NativeSnapshot() = default;
  // The local files (absolute paths); SST files are shareable.
  virtual std::vector<std::string> files() const = 0;
  // Where an SST was uploaded by the last checkpoint confirmed complete.
  virtual std::optional<UploadedFile> confirmed_upload(const std::string& file_name) const = 0;
  // Records this checkpoint's upload of `file_name` (becomes confirmed on
  // notify_checkpoint_complete of `checkpoint_id`).
  virtual void record_upload(int64_t checkpoint_id, const std::string& file_name, UploadedFile upload) = 0;
  // The states in the store.
  virtual std::vector<StateMeta> states() const = 0;
  // Moves the snapshot's local directory to `target` (same filesystem), to
  // be kept for local recovery; false when it cannot.
  virtual bool keep_local_copy(const std::string& target) = 0;
};

// One file of a changelog chain (incremental heap checkpoints): a full
// snapshot of a subtask's key groups (the chain's base) or the changes of one
// checkpoint (a delta), as a state file with no operator state, shared by
// the checkpoints whose chains hold it.
struct ChangelogFile {
  std::string path;  // relative to the checkpoint's directory (../shared/c<n>/...)
  uint64_t size = 0;
  bool delta = false;
  std::vector<uint64_t> kg_offsets;  // as OperatorSubtaskState's, for the subtask's key groups
};

// The changelog side of a keyed snapshot: whether it is a base or a delta,
// and the chain a delta follows (that of the last confirmed checkpoint).
class ChangelogSnapshot {
 public:
  virtual ~ChangelogSnapshot() = default;
  virtual bool delta() const = 0;
  virtual const std::vector<ChangelogFile>& preceding() const = 0;
  // The checkpoint whose chain `preceding()` is (0 for a base).
  virtual int64_t preceding_id() const = 0;
  // This checkpoint's file is written (called off the task thread); the
  // chain becomes the one to follow once the checkpoint is confirmed.
  virtual void written(const ChangelogFile& file) = 0;
};

// The keyed part of a snapshot, captured synchronously (copy-on-write views),
// written asynchronously. Implementations must tolerate being written from a
// thread other than the task thread while the task keeps running.
class KeyedStateSnapshot {
 public:
  virtual ~KeyedStateSnapshot() = default;
  virtual KeyGroupRange range() const = 0;
  // Appends the state of key group `kg` to `out` (canonical snapshots). At
  // most once per key group: what the snapshot held for it may be released.
  virtual void write_key_group(int kg, ByteWriter& out) const = 0;
  // A native snapshot instead of canonical key groups; null for canonical.
  virtual NativeSnapshot* native() const { return nullptr; }
  // A changelog snapshot: write_key_group writes a base or a delta into a
  // shared file of the chain; null for canonical.
  virtual ChangelogSnapshot* changelog() const { return nullptr; }
};

// What kind of snapshot a checkpoint takes.
struct SnapshotOptions {
  int64_t checkpoint_id = 0;
  // Keyed state kept in a store (RocksDB) may be snapshotted natively
  // (incremental: its files, shared with earlier checkpoints). False for
  // savepoints, which are canonical, and without incremental checkpoints.
  bool native_allowed = false;
  // Heap keyed state may be snapshotted as a changelog (a delta of what
  // changed since the last confirmed checkpoint, or now and then a full
  // base). False for savepoints, which are canonical.
  bool changelog_allowed = false;
  // A changelog takes a new base when its base is older than this.
  int64_t materialize_interval_ms = 10 * 60 * 1000;
};

// A file of a restored native snapshot.
struct NativeRestore {
  KeyGroupRange range;
  std::vector<std::string> files;  // absolute paths, or remote (s3://) with `download`
  std::vector<StateMeta> states;
  // An intact local copy of the same files (local recovery), tried first.
  std::vector<std::string> local_files;
  // For remote files: copies them, verified, into the given directory and
  // returns their paths there.
  std::function<absl::StatusOr<std::vector<std::string>>(const std::string& dir)> download;
};

struct OperatorSnapshot {
  OperatorStateMap operator_state;
  std::unique_ptr<KeyedStateSnapshot> keyed;  // null for non-keyed operators
};

// What an operator gets back on restore.
struct RestoredKeyGroup {
  int key_group;
  std::string_view bytes;  // valid during restore() only
};

struct OperatorRestore {
  OperatorStateMap operator_state;
  std::vector<RestoredKeyGroup> key_groups;
  // Changes of key groups (a changelog's deltas, oldest first), applied
  // after `key_groups`. Their bytes are valid during restore() only.
  std::vector<RestoredKeyGroup> key_group_changes;
  // Called with a key group's bytes once they are restored: the memory
  // behind them may go (pages of a mapped state file). May be empty.
  std::function<void(std::string_view)> release;
  std::vector<NativeRestore> native;  // incremental snapshots overlapping the range
};

// Lifecycle, all on the task thread: open (downstream operators first),
// restore happens inside open, records / snapshot / notify as they come,
// finish at end of input (upstream first), close.
class OperatorBase {
 public:
  virtual ~OperatorBase() = default;

  // `restore` is null on a fresh start.
  virtual absl::Status open(OperatorContext& ctx, const OperatorRestore* restore) = 0;
  // The synchronous part of a checkpoint.
  virtual absl::StatusOr<OperatorSnapshot> snapshot(const SnapshotOptions& options) = 0;
  virtual void notify_checkpoint_complete(int64_t /*checkpoint_id*/) {}
  virtual void notify_checkpoint_aborted(int64_t /*checkpoint_id*/) {}
  // End of input: flush whatever is buffered downstream.
  virtual absl::Status finish() { return absl::OkStatus(); }
  // Event time advanced; operators with timers fire them, then forward.
  virtual void process_watermark(int64_t watermark) = 0;
  virtual void process_idle(bool idle) = 0;
  virtual void close() {}

  // Batch execution hands a keyed operator that supports it its input
  // sorted by key (see runtime/operator_chain.h) and calls end_key_block
  // after each key's records (keys of equal hash come as one block, all in
  // `key_group`): the operator fires those keys' timers as the end of input
  // would, forgets their state and lets event time start over. Its state is
  // then on the heap whatever the job's backend: one key's worth.
  virtual bool supports_key_blocks() const { return false; }
  virtual void end_key_block(int /*key_group*/) {}

  // Typed plumbing, resolved by the graph's factories.
  virtual void* input() { return nullptr; }  // Input<In>* or null for sources
  // Input `index` of a two-input operator (0 is input()).
  virtual void* input_at(int index) { return index == 0 ? input() : nullptr; }
  virtual void set_output(std::unique_ptr<OutputBase> out) = 0;

  // Side outputs, by tag id: null when nothing consumes the tag.
  void set_side_output(const std::string& tag, std::unique_ptr<OutputBase> out) {
    side_outputs_[tag] = std::move(out);
  }
  OutputBase* side_output(const std::string& tag) const {
    auto it = side_outputs_.find(tag);
    return it == side_outputs_.end() ? nullptr : it->second.get();
  }

 protected:
  // Watermarks and idleness reach side outputs as they reach the main one.
  void side_outputs_watermark(int64_t wm) {
    for (auto& [tag, out] : side_outputs_) out->emit_watermark(wm);
  }
  void side_outputs_idle(bool idle) {
    for (auto& [tag, out] : side_outputs_) out->emit_idle(idle);
  }

 private:
  std::map<std::string, std::unique_ptr<OutputBase>> side_outputs_;
};

// Names a side output of records of type T. The id must be unique per
// operator.
}  // namespace detail

template <typename T>
struct OutputTag {
  std::string id;
};

namespace detail {

// A source produces records when polled by its task.
enum class PollStatus : uint8_t { kMore, kEndOfInput, kIdle };

// The counters in every operator's metric group (OperatorContext::
// metrics) of the records it received and emitted, Flink's operator-scope
// names. The runtime counts them (a source counts what it emits itself);
// a source vertex's head's numRecordsOut is what progress displays count
// as a job's input.
inline constexpr std::string_view kRecordsInMetric = "numRecordsIn";
inline constexpr std::string_view kRecordsOutMetric = "numRecordsOut";

class SourceOperatorBase : public OperatorBase {
 public:
  // Emits up to `max_records` into the output.
  virtual PollStatus poll(int max_records) = 0;
  // The input ends here although the source has more (stop with drain):
  // all event time passes, as at the end of a bounded input.
  virtual void end_input_now() = 0;

  // At-most-once reads ahead: records are held in batches and handed on
  // only after the JobManager holds the positions after them, so a restart
  // resumes past every record that was emitted. Once read_ahead() was
  // called the operator holds everything its source emits (poll() is no
  // longer used), and a snapshot records the positions after the last
  // released batch, not the source's current ones.
  //
  // Polls up to `max_records` into the open batch; how many it held.
  virtual int read_ahead(int max_records, PollStatus* status) = 0;
  // Closes the open batch (it may be empty) and returns the source's
  // positions after it, its operator state, to be reported.
  virtual absl::StatusOr<OperatorStateMap> seal_batch() = 0;
  // Emits the oldest sealed batch.
  virtual void release_batch() = 0;
  // Records handed on so far by this subtask (counted as each is emitted,
  // so a batch cut short by a failure counts what left).
  virtual int64_t released_records() const = 0;
};

}  // namespace detail
}  // namespace weir

#endif  // WEIR_DETAIL_OPERATOR_H_
