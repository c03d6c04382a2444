#include "examples/nexmark/source.h"

#include <stdexcept>

namespace weir::nexmark {

absl::Status NexmarkSource::open(OperatorContext& ctx) {
  stride_ = ctx.parallelism();
  clock_ = &ctx.processing_time();
  state_ = std::make_unique<OperatorListState<int64_t>>(ctx, "next-event");
  auto restored = state_->get();
  next_ = restored.empty() ? ctx.subtask_index() : restored.front();
  first_ = next_;
  start_ms_ = clock_->now_ms();
  armed_ = ctx.attempt() == 0;
  if (options_.fail_every > 0) {
    std::mt19937_64 rng(options_.seed * 7919 + ctx.subtask_index() * 131 + ctx.attempt());
    threshold_ = options_.fail_every / 2 + static_cast<int64_t>(rng() % (options_.fail_every + 1));
  }
  return absl::OkStatus();
}

PollStatus NexmarkSource::poll(SourceOutput<Event>& out, int max_records) {
  for (int i = 0; i < max_records; ++i) {
    if (next_ >= options_.events) return PollStatus::kEndOfInput;
    if (options_.rate_limit > 0) {
      // Event number n is due (n - first) / rate seconds after the start.
      int64_t due = start_ms_ + (next_ - first_) * 1000 / options_.rate_limit;
      if (clock_->now_ms() < due) return PollStatus::kIdle;
    }
    gen_->generate_into(next_, &event_);
    out.collect(event_);
    next_ += stride_;
    if (options_.fail_every > 0 && armed_ && ++emitted_ >= threshold_) {
      armed_ = false;
      emitted_ = 0;
      throw std::runtime_error("injected failure after " + std::to_string(threshold_) + " events");
    }
  }
  return PollStatus::kMore;
}

absl::Status NexmarkSource::snapshot_state(int64_t) {
  state_->update({next_});
  return absl::OkStatus();
}

}  // namespace weir::nexmark
