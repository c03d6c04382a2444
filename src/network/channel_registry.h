// Finds the local channel between a producer and a consumer subtask of one
// job attempt, creating it on first use by either side (or by the network,
// for a remote producer), so tasks can be deployed in any order. A channel
// of an attempt already released comes back closed. Thread-safe.
#ifndef WEIR_NETWORK_CHANNEL_REGISTRY_H_
#define WEIR_NETWORK_CHANNEL_REGISTRY_H_

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "absl/synchronization/mutex.h"
#include "network/channel.h"

namespace weir::network {

struct ChannelKey {
  std::string job_id;
  int attempt;
  int job_edge;
  int producer;
  int consumer;
  auto tie() const { return std::tie(job_id, attempt, job_edge, producer, consumer); }
  bool operator<(const ChannelKey& o) const { return tie() < o.tie(); }
};

class ChannelRegistry {
 public:
  explicit ChannelRegistry(int capacity) : capacity_(capacity) {}

  // Data buffers a channel holds before its producer blocks.
  int capacity() const { return capacity_; }

  // --failover task on a cluster: a channel outlives the attempts at either
  // end, but not the connection that fed it. Once closed (that connection
  // broke), the next get() gives a fresh one, which the producer's next
  // attempt feeds and the consumer's next attempt reads.
  void set_reopen_closed(bool on) {
    absl::MutexLock lock(&mu_);
    reopen_closed_ = on;
  }

  std::shared_ptr<LocalChannel> get(const ChannelKey& key) {
    absl::MutexLock lock(&mu_);
    auto released = released_.find(key.job_id);
    if (released != released_.end() && key.attempt <= released->second) {
      auto closed = std::make_shared<LocalChannel>(capacity_);
      closed->close();
      return closed;
    }
    auto& c = channels_[key];
    if (!c || (reopen_closed_ && c->closed())) c = std::make_shared<LocalChannel>(capacity_);
    return c;
  }
  // The job runs here again (a TaskManager that lost its JobManager and was
  // given the job anew): its channels are no longer released.
  void reopen(const std::string& job_id) {
    absl::MutexLock lock(&mu_);
    released_.erase(job_id);
  }
  // Closes and forgets the channels of `job_id` that `pred` picks.
  void release_if(const std::string& job_id, const std::function<bool(const ChannelKey&)>& pred) {
    absl::MutexLock lock(&mu_);
    for (auto it = channels_.begin(); it != channels_.end();) {
      if (it->first.job_id == job_id && pred(it->first)) {
        it->second->close();
        it = channels_.erase(it);
      } else {
        ++it;
      }
    }
  }
  // Closes and forgets every channel of `job_id` attempts up to `attempt`;
  // later requests for them get closed channels.
  void release(const std::string& job_id, int attempt) {
    absl::MutexLock lock(&mu_);
    int& released = released_.try_emplace(job_id, -1).first->second;
    released = std::max(released, attempt);
    for (auto it = channels_.begin(); it != channels_.end();) {
      if (it->first.job_id == job_id && it->first.attempt <= attempt) {
        it->second->close();
        it = channels_.erase(it);
      } else {
        ++it;
      }
    }
  }

 private:
  const int capacity_;
  absl::Mutex mu_;
  bool reopen_closed_ ABSL_GUARDED_BY(mu_) = false;
  std::map<ChannelKey, std::shared_ptr<LocalChannel>> channels_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int> released_ ABSL_GUARDED_BY(mu_);  // job -> newest released attempt
};

}  // namespace weir::network

#endif  // WEIR_NETWORK_CHANNEL_REGISTRY_H_
