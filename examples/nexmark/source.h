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
  std::shared_ptr<const Generator> gen_;
  const SourceOptions options_;
  std::unique_ptr<OperatorListState<int64_t>> state_;
  detail::ProcessingTimeService* clock_ = nullptr;
  int64_t next_ = 0;
  int64_t stride_ = 1;
  int64_t start_ms_ = 0;
  int64_t first_ = 0;
  Event event_;
  bool armed_ = false;
  int64_t emitted_ = 0;
  int64_t threshold_ = 0;
};

}  // namespace weir::nexmark

#endif  // WEIR_EXAMPLES_NEXMARK_SOURCE_H_
