#include "cluster/job_gateway.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "cluster/protocol.h"

namespace weir::cluster {

absl::Status JobGateway::place(std::vector<runtime::TaskDeploymentDescriptor>& tdds) {
  // Slot i holds subtask i of every vertex. Slots on live TaskManagers stay
  // where they are (a region restart redeploys beside the running regions);
  // the others are allocated anew.
  int width = 0;
  for (const auto& v : graph_->vertices) width = std::max(width, v.parallelism);
  std::set<int> needed;
  for (const auto& t : tdds) needed.insert(t.execution.subtask);
  std::vector<int> missing;
  std::vector<SessionPtr> gone;
  {
    absl::MutexLock lock(&mu_);
    slots_.resize(width);
    for (int i : needed) {
      if (slots_[i] != nullptr && !slots_[i]->lost) continue;
      missing.push_back(i);
      if (slots_[i] != nullptr) gone.push_back(slots_[i]);
    }
  }
  std::vector<SessionPtr> fresh;
  if (!missing.empty() || !gone.empty()) {
    auto slots = pool_->allocate(static_cast<int>(missing.size()), buffers_needed_, gone);
    if (!slots.ok()) {
      absl::MutexLock lock(&mu_);
      for (int i : missing) slots_[i] = nullptr;  // released above
      return slots.status();
    }
    fresh = std::move(*slots);
  }
  absl::MutexLock lock(&mu_);
  for (size_t k = 0; k < missing.size(); ++k) slots_[missing[k]] = fresh[k];
  auto locations = std::make_shared<std::vector<std::string>>(graph_->total_subtasks());
  for (const auto& v : graph_->vertices) {
    for (int s = 0; s < v.parallelism; ++s) {
      if (slots_[s] != nullptr) (*locations)[graph_->task_index(v.id, s)] = slots_[s]->data_address;
    }
  }
  for (auto& t : tdds) {
    const SessionPtr& s = slots_[t.execution.subtask];
    placed_[{t.execution.vertex, t.execution.subtask}] = s;
    attempt_[{t.execution.vertex, t.execution.subtask}] = t.execution.attempt;
    ran_on_.insert(s);
    t.task_locations = locations;
    t.location = s->data_address;
  }
  return absl::OkStatus();
}

SessionPtr JobGateway::session_of(const runtime::ExecutionId& id) {
  absl::MutexLock lock(&mu_);
  auto it = placed_.find({id.vertex, id.subtask});
  return it == placed_.end() ? nullptr : it->second;
}

void JobGateway::submit_task(runtime::TaskDeploymentDescriptor tdd) {
  SessionPtr s = session_of(tdd.execution);
  if (s == nullptr) return;
  proto::JobManagerMessage m;
  auto* d = m.mutable_deploy();
  d->set_job_id(job_id_);
  *d->mutable_spec() = spec_;
  *d->mutable_id() = to_proto(tdd.execution);
  d->set_task_index(tdd.task_index);
  d->set_key_group_start(tdd.key_groups.start);
  d->set_key_group_end(tdd.key_groups.end);
  d->set_restore_location(tdd.restore_location);
  d->set_channel_generation(tdd.channel_generation);
  d->set_first_checkpoint_id(tdd.first_checkpoint_id);
  if (tdd.restore != nullptr) {
    bool as_before;
    {
      absl::MutexLock lock(&s->mu);
      auto& sent = s->restore_sent[job_id_];
      as_before = sent == tdd.restore;
      sent = tdd.restore;
    }
    if (as_before) {
      d->set_restore_as_before(true);
    } else {
      absl::MutexLock lock(&mu_);
      if (encoded_for_ != tdd.restore) {
        encoded_ = checkpoint::encode_metadata(*tdd.restore);
        encoded_for_ = tdd.restore;
      }
      d->set_restore_metadata(encoded_);
    }
  }
  if (tdd.task_locations != nullptr) {
    for (const auto& l : *tdd.task_locations) d->add_task_locations(l);
  }
  if (tdd.source_positions != nullptr) {
    d->set_source_positions(encode_operator_state(*tdd.source_positions));
    d->set_has_source_positions(true);
  }
  const graph::JobVertex& v = graph_->vertices[tdd.execution.vertex];
  spdlog::info("job {}: deploying {} ({}/{}) attempt {} to {} ({}){}", job_id_, v.name, tdd.execution.subtask + 1,
               v.parallelism, tdd.execution.attempt, s->id, s->data_address,
               tdd.restore_location.empty() ? "" : ", restoring " + tdd.restore_location);
  s->send(std::move(m));
}

void JobGateway::action(proto::TaskAction::Kind kind, const runtime::ExecutionId& id, int64_t cp, int64_t ts,
                        bool savepoint, bool final) {
  SessionPtr s = session_of(id);
  if (s == nullptr || s->lost) return;
  proto::JobManagerMessage m;
  auto* a = m.mutable_action();
  a->set_kind(kind);
  a->set_job_id(job_id_);
  *a->mutable_id() = to_proto(id);
  a->set_checkpoint_id(cp);
  a->set_timestamp_ms(ts);
  a->set_savepoint(savepoint);
  a->set_final(final);
  s->send(std::move(m));
}

bool JobGateway::holds_result(int vertex, int subtask, const std::string&) {
  SessionPtr s = session_of(runtime::ExecutionId{vertex, subtask, 0});
  return s != nullptr && !s->lost;
}

void JobGateway::prepare_savepoint(int64_t cp, const std::string& directory) {
  std::set<SessionPtr> sessions;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& s : slots_) {
      if (s != nullptr) sessions.insert(s);
    }
  }
  for (const auto& s : sessions) {
    proto::JobManagerMessage m;
    m.mutable_prepare_savepoint()->set_job_id(job_id_);
    m.mutable_prepare_savepoint()->set_checkpoint_id(cp);
    m.mutable_prepare_savepoint()->set_directory(directory);
    s->send(std::move(m));
  }
}

void JobGateway::taskmanager_lost(const SessionPtr& s, const std::string& reason) {
  std::vector<runtime::ExecutionId> failed;
  {
    absl::MutexLock lock(&mu_);
    for (auto& [key, session] : placed_) {
      if (session == s) failed.push_back(runtime::ExecutionId{key.first, key.second, attempt_[key]});
    }
  }
  master_->executions_lost(failed, reason);
}

void JobGateway::release() {
  std::vector<SessionPtr> slots;
  std::set<SessionPtr> ran_on;
  {
    absl::MutexLock lock(&mu_);
    slots.swap(slots_);
    ran_on.swap(ran_on_);
    placed_.clear();
  }
  pool_->release(slots);
  for (const auto& s : ran_on) {
    {
      absl::MutexLock lock(&s->mu);
      s->restore_sent.erase(job_id_);
    }
    if (s->lost) continue;
    proto::JobManagerMessage m;
    m.mutable_release()->set_job_id(job_id_);
    s->send(std::move(m));
  }
}

}  // namespace weir::cluster
