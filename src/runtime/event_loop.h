// A single thread that runs posted closures in order, closures posted with a
// delay once due, and a tick hook at a fixed period. The JobManager lives on
// one, so its state needs no locks. post() is thread-safe.
#ifndef WEIR_RUNTIME_EVENT_LOOP_H_
#define WEIR_RUNTIME_EVENT_LOOP_H_

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"

namespace weir::runtime {

class EventLoop {
 public:
  using Clock = std::chrono::steady_clock;

  EventLoop(std::chrono::milliseconds tick_period, std::function<void()> on_tick)
      : tick_period_(tick_period), on_tick_(std::move(on_tick)) {}
  ~EventLoop() { stop(); }

  void start() { thread_ = std::thread([this] { run(); }); }
  // Runs what is queued, then ends the thread. Idempotent.
  void stop() {
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
      cv_.SignalAll();
    }
    if (thread_.joinable() && std::this_thread::get_id() != thread_.get_id()) thread_.join();
  }
  void post(std::function<void()> fn) {
    absl::MutexLock lock(&mu_);
    queue_.push_back(std::move(fn));
    cv_.Signal();
  }
  void post_delayed(std::chrono::milliseconds delay, std::function<void()> fn) {
    absl::MutexLock lock(&mu_);
    delayed_.emplace(Clock::now() + delay, std::move(fn));
    cv_.Signal();
  }

 private:
  void run() {
    auto next_tick = Clock::now() + tick_period_;
    mu_.Lock();
    while (true) {
      auto wake = next_tick;
      if (!delayed_.empty() && delayed_.begin()->first < wake) wake = delayed_.begin()->first;
      absl::Time until = absl::Now() + absl::FromChrono(wake - Clock::now());
      while (!stopping_ && queue_.empty()) {
        if (cv_.WaitWithDeadline(&mu_, until)) break;
      }
      if (stopping_) break;
      std::deque<std::function<void()>> batch;
      batch.swap(queue_);
      auto now = Clock::now();
      while (!delayed_.empty() && delayed_.begin()->first <= now) {
        batch.push_back(std::move(delayed_.begin()->second));
        delayed_.erase(delayed_.begin());
      }
      bool tick = now >= next_tick;
      if (tick) next_tick = now + tick_period_;
      mu_.Unlock();
      for (auto& fn : batch) fn();
      if (tick && on_tick_) on_tick_();
      mu_.Lock();
    }
    mu_.Unlock();
  }

  const std::chrono::milliseconds tick_period_;
  const std::function<void()> on_tick_;
  std::thread thread_;
  absl::Mutex mu_;
  absl::CondVar cv_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  std::multimap<Clock::time_point, std::function<void()>> delayed_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace weir::runtime

#endif  // WEIR_RUNTIME_EVENT_LOOP_H_
