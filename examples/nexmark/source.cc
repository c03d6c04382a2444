#include "examples/nexmark/source.h"

#include <algorithm>
#include <stdexcept>

namespace weir::nexmark {

absl::Status NexmarkSource::open(OperatorContext& ctx) {
  clock_ = &ctx.processing_time();
  state_ = std::make_unique<OperatorListState<Split>>(ctx, "splits");
  if (ctx.is_restored()) {
    splits_ = state_->get();
    // Checkpoints before splits kept one next event per subtask, strided by
    // the parallelism (restorable at the same parallelism only).
    OperatorListState<int64_t> before(ctx, "next-event");
    for (int64_t next : before.get()) splits_.push_back({next, ctx.parallelism()});
    before.clear();
  } else {
    splits_.push_back({ctx.subtask_index(), ctx.parallelism()});
  }
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
    // The split whose next event comes first; finished ones go.
    std::erase_if(splits_, [this](const Split& s) { return s.first >= options_.events; });
    if (splits_.empty()) return PollStatus::kEndOfInput;
    Split* s = &*std::min_element(splits_.begin(), splits_.end());
    if (options_.rate_limit > 0) {
      // The n-th event since the start is due n / rate seconds after it.
      int64_t due = start_ms_ + emitted_total_ * 1000 / options_.rate_limit;
      if (clock_->now_ms() < due) return PollStatus::kIdle;
    }
    gen_->generate_into(s->first, &event_);
    out.collect(event_);
    s->first += s->second;
    ++emitted_total_;
    if (options_.fail_every > 0 && armed_ && ++emitted_ >= threshold_) {
      armed_ = false;
      emitted_ = 0;
      throw std::runtime_error("injected failure after " + std::to_string(threshold_) + " events");
    }
  }
  return PollStatus::kMore;
}

absl::Status NexmarkSource::snapshot_state(int64_t) {
  state_->update(splits_);
  return absl::OkStatus();
}

}  // namespace weir::nexmark
