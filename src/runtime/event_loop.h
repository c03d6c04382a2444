// A single thread that runs posted closures in order, closures posted with a
// delay once due, and a tick hook at a fixed period. The JobManager lives on
// one, so its state needs no locks. post() is thread-safe.
#ifndef WEIR_RUNTIME_EVENT_LOOP_H_
#define WEIR_RUNTIME_EVENT_LOOP_H_

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

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
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable() && std::this_thread::get_id() != thread_.get_id()) thread_.join();
  }
  void post(std::function<void()> fn) {
    {
      std::lock_guard lock(mu_);
      queue_.push_back(std::move(fn));
    }
    cv_.notify_one();
  }
  void post_delayed(std::chrono::milliseconds delay, std::function<void()> fn) {
    {
      std::lock_guard lock(mu_);
      delayed_.emplace(Clock::now() + delay, std::move(fn));
    }
    cv_.notify_one();
  }

 private:
  void run() {
    auto next_tick = Clock::now() + tick_period_;
    std::unique_lock lock(mu_);
    while (true) {
      auto wake = next_tick;
      if (!delayed_.empty() && delayed_.begin()->first < wake) wake = delayed_.begin()->first;
      cv_.wait_until(lock, wake, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      std::deque<std::function<void()>> batch;
      batch.swap(queue_);
      auto now = Clock::now();
      while (!delayed_.empty() && delayed_.begin()->first <= now) {
        batch.push_back(std::move(delayed_.begin()->second));
        delayed_.erase(delayed_.begin());
      }
      bool tick = now >= next_tick;
      if (tick) next_tick = now + tick_period_;
      lock.unlock();
      for (auto& fn : batch) fn();
      if (tick && on_tick_) on_tick_();
      lock.lock();
    }
  }

  const std::chrono::milliseconds tick_period_;
  const std::function<void()> on_tick_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;                        // guarded by mu_
  std::multimap<Clock::time_point, std::function<void()>> delayed_;  // guarded by mu_
  bool stopping_ = false;                                          // guarded by mu_
};

}  // namespace weir::runtime

#endif  // WEIR_RUNTIME_EVENT_LOOP_H_
