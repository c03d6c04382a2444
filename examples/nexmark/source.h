// A replayable, splittable source of Nexmark events. Subtask i of p reads
// event numbers i, i+p, i+2p, ... below `events`, so the events and their
// times are the same at any parallelism and each subtask's output is in
// event-time order; its position (the next event number) is operator state.
//
// `rate_limit` (events/s over all subtasks, 0 = none) paces emission in wall
// time. `fail_every` (0 = never) makes the source throw after about that many
// events, then again only once a checkpoint completed in the new attempt.
#ifndef WEIR_EXAMPLES_NEXMARK_SOURCE_H_
#define WEIR_EXAMPLES_NEXMARK_SOURCE_H_

#include <memory>
#include <utility>
#include <vector>
#include <random>

#include "examples/nexmark/generator.h"
#include "weir/functions.h"

namespace weir::nexmark {

struct SourceOptions {
  int64_t events = 10'000'000;
  int64_t rate_limit = 0;
  int64_t fail_every = 0;
  uint64_t seed = 0;
};

// Events 0..events-1 of the generator, split among the subtasks: subtask i
// of p starts with the split {i, p} (events i, i+p, i+2p, ...). Its state is
// its splits' next events, so a restore at another parallelism hands each
// split to one new subtask (evenly), and a subtask with several emits the
// lowest next event of them first, keeping event time nearly in order.
class NexmarkSource final : public Source<Event> {
 public:
  NexmarkSource(std::shared_ptr<const Generator> gen, SourceOptions options)
      : gen_(std::move(gen)), options_(options) {}

  absl::Status open(OperatorContext& ctx) override;
  PollStatus poll(SourceOutput<Event>& out, int max_records) override;
  absl::Status snapshot_state(int64_t checkpoint_id) override;
  void notify_checkpoint_complete(int64_t) override { armed_ = options_.fail_every > 0; }
  bool bounded() const override { return true; }  // options_.events

 private:
  // Event numbers next, next + stride, ...
  using Split = std::pair<int64_t, int64_t>;  // {next, stride}

  std::shared_ptr<const Generator> gen_;
  const SourceOptions options_;
  std::unique_ptr<OperatorListState<Split>> state_;
  detail::ProcessingTimeService* clock_ = nullptr;
  std::vector<Split> splits_;  // those not done
  int64_t start_ms_ = 0;
  int64_t emitted_total_ = 0;  // since open, for the rate limit
  Event event_;
  bool armed_ = false;
  int64_t emitted_ = 0;
  int64_t threshold_ = 0;
};

}  // namespace weir::nexmark

#endif  // WEIR_EXAMPLES_NEXMARK_SOURCE_H_
