#include "cluster/session_registry.h"

#include <spdlog/spdlog.h>

#include "common/clock.h"

namespace weir::cluster {

SessionRegistry::SessionRegistry(Duration heartbeat_interval, Duration heartbeat_timeout, LostFn on_lost)
    : interval_(heartbeat_interval), timeout_(heartbeat_timeout), on_lost_(std::move(on_lost)) {}

SessionRegistry::~SessionRegistry() { shutdown(); }

void SessionRegistry::start() {
  heartbeats_ = std::thread([this] { heartbeat_loop(); });
}

void SessionRegistry::shutdown() {
  std::vector<SessionPtr> sessions;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    for (auto& [id, s] : sessions_) sessions.push_back(s);
  }
  for (auto& s : sessions) s->cancel();
  if (heartbeats_.joinable()) heartbeats_.join();
}

bool SessionRegistry::add(const SessionPtr& s) {
  SessionPtr old;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return false;
    auto& slot = sessions_[s->id];
    old = slot;
    slot = s;
  }
  if (old != nullptr) lose(old, "it registered again");
  return true;
}

void SessionRegistry::lose(const SessionPtr& s, const std::string& reason) {
  if (s->lost.exchange(true)) return;
  bool stopping;
  {
    absl::MutexLock lock(&mu_);
    stopping = stopping_;
    auto it = sessions_.find(s->id);
    if (it != sessions_.end() && it->second == s) sessions_.erase(it);
  }
  if (!stopping) spdlog::warn("TaskManager {} ({}) lost: {}", s->id, s->data_address, reason);
  s->cancel();
  on_lost_(s, reason);
}

std::vector<SessionPtr> SessionRegistry::live() {
  absl::MutexLock lock(&mu_);
  std::vector<SessionPtr> out;
  for (auto& [id, s] : sessions_) out.push_back(s);
  return out;
}

SessionPtr SessionRegistry::find(const std::string& id) {
  absl::MutexLock lock(&mu_);
  auto it = sessions_.find(id);
  return it == sessions_.end() ? nullptr : it->second;
}

void SessionRegistry::heartbeat_loop() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (mu_.AwaitWithTimeout(absl::Condition(&stopping_), absl::FromChrono(interval_))) return;
    }
    const int64_t now = SystemClock::instance()->now_ms();
    for (auto& s : live()) {
      const int64_t silent = now - s->last_heartbeat_ms;
      if (silent > timeout_.count()) {
        lose(s, "no heartbeat for " + std::to_string(silent) + " ms");
        continue;
      }
      proto::JobManagerMessage hb;
      hb.mutable_heartbeat()->set_sent_ms(now);
      s->send_urgent(std::move(hb));
    }
  }
}

}  // namespace weir::cluster
