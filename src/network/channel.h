// A local channel: the bounded, in-order queue between one producer subtask
// and one consumer subtask in the same process. Data buffers, checkpoint
// barriers and end-of-data markers travel in it in the order they were sent
// (barriers are in-band). A producer blocks while `capacity` data buffers
// are queued: that is backpressure.
//
// A priority event (the barrier of an unaligned checkpoint) does not wait
// its turn: it is queued ahead of the data buffers, watermarks, idle
// markers and end of data sent before it (never ahead of another barrier
// or a reset, nor a final checkpoint's ahead of an end of data), and takes
// along a copy of the data it overtook (ChannelEvent::overtaken): the
// in-flight records that become channel state.
//
// Thread-safe for one producer thread and one consumer thread.
#ifndef WEIR_NETWORK_CHANNEL_H_
#define WEIR_NETWORK_CHANNEL_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/synchronization/mutex.h"

#include "network/buffer_pool.h"
#include "common/wakeup.h"

namespace weir::network {

// DO NOT CHANGE values: the network protocol uses them.
enum class EventKind : uint8_t {
  kBuffer = 0,
  kBarrier = 1,
  kEndOfData = 2,
  kWatermark = 3,
  kIdle = 4,  // the producer goes idle (idle = true) or active again
  // A new attempt of the producer starts (--failover task): what the
  // consumer holds of a record from the earlier attempt is dropped.
  kReset = 5,
  // An iteration's round marker (checkpoint_id: the round): every task in
  // the loop passes round n on once it came on all its loop inputs, `dirty`
  // when a record moved in the loop since round n - 1 (runtime/task.h).
  kRound = 6,
};

// Records are framed as `varint length | bytes` (network/partition_writer.h).
// Parses the header at p: the record's length and the header's; false when
// the header is incomplete.
inline bool parse_record_header(const char* p, size_t n, uint64_t* len, size_t* header) {
  uint64_t v = 0;
  for (size_t i = 0; i < n && i < 10; ++i) {
    uint8_t b = static_cast<uint8_t>(p[i]);
    v |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
    if ((b & 0x80) == 0) {
      *len = v;
      *header = i + 1;
      return true;
    }
  }
  return false;
}

// The records that begin in `b` (after the bytes it continues from an
// earlier buffer): what dropping it loses, each record counted where it
// begins. The second form counts from `pos`, a record's start.
int64_t count_record_starts(const Buffer& b);
int64_t count_record_starts(const char* data, size_t n, size_t pos);

struct ChannelEvent {
  EventKind kind = EventKind::kBuffer;
  Buffer buffer;               // kBuffer
  int64_t checkpoint_id = 0;   // kBarrier
  int64_t timestamp_ms = 0;    // kBarrier: trigger time; kWatermark: the watermark
  bool idle = false;           // kIdle
  bool savepoint = false;      // kBarrier: of a savepoint (canonical snapshots only)
  // kBarrier of an unaligned checkpoint: overtakes queued data.
  bool priority = false;
  // kBarrier of the checkpoint taken once every source ended: it never
  // overtakes an end of data (the task's input must have ended when it
  // takes this snapshot); others may.
  bool final = false;
  // kRound: records moved in the loop during the round.
  bool dirty = false;
  // A priority barrier: the bytes of the data it overtook on its way, in
  // stream order (whole buffers, so the first may continue a record the
  // consumer holds the head of); the data itself is still delivered after
  // the barrier. Null when it overtook nothing.
  std::shared_ptr<const std::string> overtaken;
};

// Appends `more` after the bytes `ev` carries as overtaken data.
void append_overtaken(ChannelEvent* ev, std::string_view more);
// Puts `earlier` before the bytes `ev` carries as overtaken data.
void prepend_overtaken(ChannelEvent* ev, std::string_view earlier);

// What a producer writes one subpartition into: a channel to a running
// consumer, or a result file (network/result_file.h).
class ChannelWriter {
 public:
  virtual ~ChannelWriter() = default;
  // May block (backpressure), adding the time to `waited_ns` when given (a
  // counter only the calling thread writes). False once closed, or when
  // `abort` (the producer's cancel flag) is set while it waits; an I/O
  // error throws std::runtime_error naming the file.
  virtual bool push(ChannelEvent ev, std::atomic<int64_t>* waited_ns = nullptr,
                    const std::atomic<bool>* abort = nullptr) = 0;
  virtual void close() = 0;
  // As push, but a data buffer is queued even when the channel is full (a
  // producer that must not block sends the buffer it was filling before an
  // event: one buffer over the capacity at most, as it then emits no record
  // until the channel has room again).
  virtual bool push_now(ChannelEvent ev) { return push(std::move(ev)); }
  // Barrier `checkpoint_id`, if still queued here, becomes a priority event
  // (the aligned-checkpoint timeout passed while it waited).
  virtual void promote_barrier(int64_t /*checkpoint_id*/) {}
  // Buffer debloating: the bytes at which the producer should send a
  // buffer, as its consumer asked (0: full buffers). Any thread.
  virtual int target_buffer_size() const { return 0; }
  // Whether a priority event overtakes what is queued here (a result file
  // keeps the order it was written in).
  virtual bool supports_priority() const { return false; }
};

// What a consumer reads one input channel from: a channel from a running
// producer, or a finished result file.
class ChannelReader {
 public:
  virtual ~ChannelReader() = default;
  // Non-blocking. Empty when nothing is queued.
  virtual std::optional<ChannelEvent> poll() = 0;
  virtual void close() = 0;
  // The consumer's wakeup, signalled when events arrive; reset to null
  // before the wakeup is destroyed.
  virtual void set_consumer(Wakeup* wakeup) = 0;
  // Where the channel counts the priority events it holds (LocalChannel);
  // other readers never hold one.
  virtual void set_priority_counter(std::atomic<int>*) {}
  // The event at the head when it is a priority event (non-blocking).
  virtual std::optional<ChannelEvent> poll_priority() { return std::nullopt; }
  // Barrier `checkpoint_id`, if queued here, becomes a priority event: it
  // overtakes what it may (as a priority push does), taking a copy along.
  virtual void promote_barrier(int64_t /*checkpoint_id*/) {}
  // The consumer's attempt ends but the channel stays for its next one
  // (--failover task): returns the records dropped with it. What a file
  // holds stays in the file, so a result file's reader just closes.
  virtual int64_t detach() {
    close();
    return 0;
  }
};

class LocalChannel final : public ChannelWriter, public ChannelReader {
 public:
  explicit LocalChannel(int capacity) : capacity_(capacity) {}

  // Blocks while full of data buffers. Returns false once closed, or when
  // `abort` is set (see wake_producer()). A priority event never blocks; it
  // overtakes what it may (see above).
  bool push(ChannelEvent ev, std::atomic<int64_t>* waited_ns = nullptr,
            const std::atomic<bool>* abort = nullptr) override;
  bool push_now(ChannelEvent ev) override;
  bool supports_priority() const override { return true; }
  int target_buffer_size() const override { return target_buffer_size_.load(std::memory_order_relaxed); }
  // The consumer asks for buffers of `bytes` (0: full ones); a remote
  // channel's receiving end passes it on to the sender (set_target_listener).
  void set_target_buffer_size(int bytes);
  void set_target_listener(std::function<void(int)> listener);
  // Whether a data buffer pushed now would not wait (any thread).
  bool has_space() const;
  // Non-blocking. Empty when nothing is queued.
  std::optional<ChannelEvent> poll() override;
  // As poll(), but leaves a data buffer at the head queued unless
  // `take_buffer` (a network sender without credit still sends events).
  std::optional<ChannelEvent> poll_if(bool take_buffer);
  std::optional<ChannelEvent> poll_priority() override;
  void promote_barrier(int64_t checkpoint_id) override;
  bool has_event() const;
  // Data buffers queued, of at most capacity() (any thread).
  int queued_buffers() const;
  int capacity() const { return capacity_; }
  // Wakes both sides for good; later pushes fail, queued events are dropped.
  void close() override;
  bool closed() const;
  // --failover task keeps a channel open across attempts of either end:
  // A producer that set its abort flag wakes its push with this.
  void wake_producer();
  // The consumer leaves (its attempt ended): the queued events are dropped
  // and the records beginning in them returned; the channel stays open, the
  // producer keeps pushing, and the consumer's next attempt reads on.
  int64_t detach() override;
  // The consumer's wakeup, signalled on every push. May be set after pushes;
  // the consumer resets it to null before the wakeup is destroyed.
  void set_consumer(Wakeup* wakeup) override;
  // The producer's wakeup, signalled each time the consumer takes a data
  // buffer (a producer that waits for space without blocking in push, as a
  // task taking unaligned checkpoints does). Reset to null before the
  // wakeup is destroyed.
  void set_producer(Wakeup* wakeup);
  // A counter the channel keeps adding its queued priority events to (one
  // per consumer, over all its channels: whether any waits is one load).
  // The consumer resets it to null before the counter is destroyed.
  void set_priority_counter(std::atomic<int>* counter) override;
  // Called (outside the channel's lock) each time the consumer takes a data
  // buffer, and once when the channel closes. A remote channel's receiving
  // end returns credit and passes closes on through them. Set before use.
  void set_listener(std::function<void()> on_buffer_taken, std::function<void()> on_closed);

 private:
  void drop_priority_count() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queues a priority event at the front of the events it may overtake
  // among queue_[0, end), taking copies of their data.
  void insert_priority(ChannelEvent ev, std::deque<ChannelEvent>::iterator end) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int capacity_;
  mutable absl::Mutex mu_;
  absl::CondVar not_full_;
  std::deque<ChannelEvent> queue_ ABSL_GUARDED_BY(mu_);
  int queued_buffers_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  Wakeup* consumer_ ABSL_GUARDED_BY(mu_) = nullptr;
  Wakeup* producer_ ABSL_GUARDED_BY(mu_) = nullptr;
  int queued_priority_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<int> target_buffer_size_{0};
  std::function<void(int)> on_target_ ABSL_GUARDED_BY(mu_);
  std::atomic<int>* priority_counter_ ABSL_GUARDED_BY(mu_) = nullptr;
  // Shared, so taking a buffer copies a pointer, not the function.
  std::shared_ptr<const std::function<void()>> on_buffer_taken_ ABSL_GUARDED_BY(mu_);
  std::function<void()> on_closed_ ABSL_GUARDED_BY(mu_);
};

}  // namespace weir::network

#endif  // WEIR_NETWORK_CHANNEL_H_
