#include "cluster/slot_pool.h"

#include <algorithm>

namespace weir::cluster {

SlotPool::Offer* SlotPool::find(const SessionPtr& s) {
  if (s == nullptr) return nullptr;
  auto it = offers_.find(s->id);
  return it == offers_.end() || it->second.session != s ? nullptr : &it->second;
}

void SlotPool::add(const SessionPtr& s) {
  absl::MutexLock lock(&mu_);
  offers_[s->id] = Offer{s, 0};
}

void SlotPool::remove(const SessionPtr& s) {
  absl::MutexLock lock(&mu_);
  if (find(s) != nullptr) offers_.erase(s->id);
}

void SlotPool::release_locked(const std::vector<SessionPtr>& slots) {
  for (const auto& s : slots) {
    Offer* o = find(s);
    if (o != nullptr && o->used > 0) --o->used;
  }
}

void SlotPool::release(const std::vector<SessionPtr>& slots) {
  absl::MutexLock lock(&mu_);
  release_locked(slots);
}

absl::StatusOr<std::vector<SessionPtr>> SlotPool::allocate(int n, int64_t buffers_needed,
                                                           const std::vector<SessionPtr>& release) {
  absl::MutexLock lock(&mu_);
  release_locked(release);
  std::vector<Offer*> fit;
  int free = 0, total = 0;
  for (auto& [key, o] : offers_) {
    total += o.session->slots;
    if (o.session->network_buffers < buffers_needed) continue;
    free += o.session->slots - o.used;
    fit.push_back(&o);
  }
  if (free < n) {
    return absl::UnavailableError("needs " + std::to_string(n) + " slots, " + std::to_string(free) + " free of " +
                                  std::to_string(total) + " on " + std::to_string(offers_.size()) +
                                  " TaskManagers (" + std::to_string(buffers_needed) + " network buffers each)");
  }
  std::vector<SessionPtr> out;
  while (static_cast<int>(out.size()) < n) {
    // Spread: the TaskManager with the most free slots takes the next one
    // (the first registered among equals).
    auto best = std::max_element(fit.begin(), fit.end(), [](const Offer* a, const Offer* b) {
      return a->session->slots - a->used < b->session->slots - b->used;
    });
    ++(*best)->used;
    out.push_back((*best)->session);
  }
  return out;
}

int SlotPool::used(const SessionPtr& s) {
  absl::MutexLock lock(&mu_);
  Offer* o = find(s);
  return o == nullptr ? 0 : o->used;
}

SlotPool::Totals SlotPool::totals() {
  absl::MutexLock lock(&mu_);
  Totals t;
  for (const auto& [key, o] : offers_) {
    t.slots += o.session->slots;
    t.used += o.used;
  }
  return t;
}

}  // namespace weir::cluster
