// A task's input channels (Flink's InputGate): one per producer subtask of
// each input edge, read in turn, skipping those the checkpoint barriers
// block while they align; which channels ended; and how long an alignment
// has taken. Under unaligned checkpoints, the channel state of the
// checkpoint being taken: from the task's snapshot until a channel's
// barrier, what the task reads from it, and the data the barrier overtook.
// What the events mean to the task's operators is Task's. Task thread only.
#ifndef WEIR_RUNTIME_INPUT_GATE_H_
#define WEIR_RUNTIME_INPUT_GATE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "checkpoint/barrier_handler.h"
#include "common/wakeup.h"
#include "network/channel.h"
#include "network/partition_writer.h"
#include "weir/config.h"
#include "weir/detail/graph.h"
#include "weir/detail/operator.h"

namespace weir::runtime {

class InputGate {
 public:
  struct Channel {
    std::shared_ptr<network::ChannelReader> reader;
    detail::InputAdapter* adapter = nullptr;
    const detail::StreamEdge* edge = nullptr;  // the stream edge it carries
    network::RecordDeserializer deserializer;
    bool ended = false;
    // --failover task on a cluster: the channel, when another process feeds
    // it. It closes only when that connection broke, and then the task
    // fails instead of waiting for input that cannot come, naming the
    // producer ("vertex 1 subtask 0") and its TaskManager's location.
    std::shared_ptr<network::LocalChannel> remote;
    std::string producer;
    std::string producer_location;
    // Which channel it is: the job edge and the producer's subtask.
    int job_edge = 0;
    int producer_subtask = 0;
    // An iteration's feedback into its head; `in_loop`: an edge of the
    // loop (its round markers count).
    bool feedback = false;
    bool in_loop = false;
  };

  // The task's buffer it stopped reading to take a priority barrier (or
  // until its outputs have space): `ch`'s data from `offset` on, a record's
  // start. `ch` is -1 when there is none.
  struct Held {
    int ch = -1;
    network::Buffer buffer;
    size_t offset = 0;
    std::string_view rest() const {
      return std::string_view(buffer.data(), buffer.size()).substr(offset);
    }
  };

  // A barrier's outcome: the barrier handler's decision, and for a
  // checkpoint to take, how long its alignment took.
  struct Barrier {
    checkpoint::BarrierDecision decision;
    int64_t alignment_ms = 0;
    int64_t timestamp_ms = 0;  // the checkpoint's trigger time
    bool savepoint = false;
    bool final = false;
  };

  void add(Channel channel) { channels_.push_back(std::move(channel)); }
  // Every channel added: barriers are handled as `mode` asks (`unaligned`:
  // exactly-once with unaligned checkpoints), and a channel with news wakes
  // `consumer`.
  // `aligned_timeout`: unaligned checkpoints start aligned and switch
  // after it (zero: unaligned from the start). A gate with feedback
  // channels (an iteration head's) records them as channel state in every
  // checkpointing mode (checkpoint/barrier_handler.h).
  void open(CheckpointingMode mode, Wakeup* consumer, bool unaligned = false,
            std::chrono::milliseconds aligned_timeout = std::chrono::milliseconds(0));
  bool unaligned() const { return unaligned_; }
  // After open(): the task takes part in checkpoints from `first` on
  // (BarrierHandler::start_at).
  void start_at(int64_t first) {
    if (barriers_ != nullptr) barriers_->start_at(first);
  }

  bool empty() const { return channels_.empty(); }
  int size() const { return static_cast<int>(channels_.size()); }
  Channel& channel(int ch) { return channels_[ch]; }

  // The next event of a channel that alignment does not block, trying the
  // channels in turn from the one after the last that had one; nothing when
  // none has. `*ch` is the channel's. Throws when a remote channel's
  // connection broke before its end.
  // `feedback_only`: of the feedback channels alone.
  std::optional<network::ChannelEvent> poll(int* ch, bool feedback_only = false);

  // A barrier from channel `ch`. When it starts an unaligned checkpoint,
  // `held` is the buffer the task stopped reading, if any.
  Barrier on_barrier(int ch, const network::ChannelEvent& barrier, const Held& held);
  Barrier on_barrier(int ch, int64_t checkpoint_id) {
    network::ChannelEvent ev;
    ev.kind = network::EventKind::kBarrier;
    ev.checkpoint_id = checkpoint_id;
    return on_barrier(ch, ev, Held{});
  }
  // An alignment whose aligned-checkpoint timeout passed by `now_ms`
  // (wall clock) switches to unaligned: a barrier outcome that triggers the
  // checkpoint (else nothing happens). The barriers still queued in this
  // process's input channels overtake the data in front of them.
  Barrier check_alignment_timeout(int64_t now_ms, const Held& held);
  // When the alignment under way times out (wall clock ms), or INT64_MAX.
  int64_t alignment_deadline() const;
  // Whether a priority barrier waits on some channel (one load).
  bool priority_waiting() const { return priority_.load(std::memory_order_relaxed) > 0; }
  // A priority barrier at the head of some channel, if one is.
  std::optional<network::ChannelEvent> poll_priority(int* ch);
  // The task reads `bytes` of channel `ch` (before feeding them): channel
  // state while the channel is recorded.
  void record(int ch, std::string_view bytes) {
    if (recording_id_ >= 0 && barriers_->is_recording(ch)) channel_state_[ch].append(bytes);
  }
  // Adds `records` (framed records the task had read from channel `ch` and
  // not yet processed when it took its snapshot) to the channel state being
  // recorded, ahead of what the channel's deserializer held.
  void add_unprocessed(int ch, std::string_view records) {
    if (recording_id_ >= 0) channel_state_[ch].insert(0, records);
  }
  // The channel state of the checkpoint that completed it (a barrier's
  // decision.completed), by channel; empty strings for channels that held
  // nothing.
  std::vector<std::string> take_channel_state();
  // The coordinator aborted `checkpoint_id`.
  void on_abort(int64_t checkpoint_id);

  // Channel `ch` ended: true when it was the last.
  bool end(int ch);
  // Channel `ch` started again (its producer restarted): false when it had
  // ended.
  bool reopen(int ch);
  bool all_ended() const { return ended_ == size(); }

  // --failover task: the channels stay open for the next attempt; leaves
  // them and returns the records lost with them (partial records and
  // those queued).
  int64_t leave();
  void close();

 private:
  std::vector<Channel> channels_;
  std::unique_ptr<checkpoint::BarrierHandler> barriers_;
  size_t next_ = 0;
  int ended_ = 0;
  int64_t align_id_ = -1;
  std::chrono::steady_clock::time_point align_start_;
  // The snapshot of `checkpoint_id` is taken now: channel state begins.
  void begin_recording(int64_t checkpoint_id, const Held& held);

  bool unaligned_ = false;
  std::chrono::milliseconds aligned_timeout_{0};
  int64_t align_deadline_ = INT64_MAX;  // of the alignment under way (wall clock ms)
  int64_t align_timestamp_ = 0;         // its checkpoint's trigger time
  bool align_final_ = false;            // and whether it is the final one
  std::atomic<int> priority_{0};  // priority events queued on the channels
  int64_t recording_id_ = -1;    // the checkpoint whose channel state is recorded
  std::vector<std::string> channel_state_;
};

}  // namespace weir::runtime

#endif  // WEIR_RUNTIME_INPUT_GATE_H_
