#include "runtime/mini_cluster.h"

#include <spdlog/spdlog.h>

#include <map>
#include <random>

#include "checkpoint/storage_scheme.h"
#include "checkpoint/storage.h"
#include "graph/job_graph.h"
#include "runtime/job_master.h"
#include "runtime/task_manager.h"
#include "weir/stream.h"

namespace weir {

absl::StatusOr<JobResult> StreamEnvironment::execute(const std::string& job_name, JobControl* control) {
  if (!build_error_.ok()) return build_error_;
  return runtime::run_embedded(graph_, config_, job_name, control);
}

namespace runtime {

std::string new_job_id() {
  std::random_device rd;
  std::mt19937_64 rng((static_cast<uint64_t>(rd()) << 32) ^ rd());
  char buf[33];
  std::snprintf(buf, sizeof(buf), "%016llx%016llx", static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(rng()));
  return buf;
}

// Per channel: the queued buffers, the one being filled and the one being
// read.
int64_t buffers_needed(const graph::JobGraph& g, const NetworkConfig& net) {
  int64_t channels = 0, file_subpartitions = 0;
  for (const auto& e : g.edges) {
    int64_t producers = g.vertices[e.source_vertex].parallelism;
    int64_t consumers = g.vertices[e.target_vertex].parallelism;
    const int64_t n = e.pointwise ? producers : producers * consumers;
    // A blocking subpartition holds only the buffer its producer fills (the
    // file reader has its own memory).
    if (e.blocking()) {
      file_subpartitions += n;
    } else {
      channels += n;
    }
  }
  return channels * (net.buffers_per_channel + 2) + file_subpartitions;
}

namespace {

absl::Status check_restore(const graph::JobGraph& g, const checkpoint::CheckpointMetadata& m,
                           const std::string& location, bool allow_non_restored) {
  std::vector<std::string> unknown;
  for (const auto& op : m.operators) {
    if (std::find(g.uids.begin(), g.uids.end(), op.uid) == g.uids.end()) {
      unknown.push_back(op.uid);
      continue;
    }
    if (op.max_parallelism != g.max_parallelism) {
      return absl::FailedPreconditionError(
          "checkpoint " + location + " has max parallelism " + std::to_string(op.max_parallelism) +
          " for operator " + op.uid + ", the job has " + std::to_string(g.max_parallelism) +
          "; max parallelism cannot change");
    }
  }
  if (!unknown.empty() && !allow_non_restored) {
    std::string names;
    for (const auto& u : unknown) names += (names.empty() ? "" : ", ") + u;
    return absl::FailedPreconditionError("checkpoint " + location +
                                         " holds state for operators this job lacks (" + names +
                                         "); pass --allow-non-restored-state to skip it");
  }
  return absl::OkStatus();
}

// The last attempt of each subtask.
std::vector<const TaskManager::TaskMetricsEntry*> last_attempts(
    const std::vector<TaskManager::TaskMetricsEntry>& tasks) {
  std::map<std::pair<int, int>, const TaskManager::TaskMetricsEntry*> last;
  for (const auto& t : tasks) {
    auto& slot = last[{t.id.vertex, t.id.subtask}];
    if (slot == nullptr || slot->id.attempt < t.id.attempt) slot = &t;
  }
  std::vector<const TaskManager::TaskMetricsEntry*> out;
  out.reserve(last.size());
  for (const auto& entry : last) out.push_back(entry.second);
  return out;
}

// Sums each vertex's subtasks, the last attempt of each (and, apart, every
// attempt).
std::vector<VertexStats> vertex_stats(const graph::JobGraph& g,
                                      const std::vector<TaskManager::TaskMetricsEntry>& tasks,
                                      const std::map<int, TaskManager::EarlierAttempts>& earlier) {
  std::vector<TaskMetricsSnapshot> sums(g.vertices.size());
  for (const auto* t : last_attempts(tasks)) sums[t->id.vertex] += t->metrics;
  std::vector<VertexStats> out(g.vertices.size());
  for (const auto& v : g.vertices) {
    const TaskMetricsSnapshot& m = sums[v.id];
    out[v.id] = VertexStats{v.name,      v.parallelism, m.records_in,       m.records_out,
                            m.bytes_in,  m.bytes_out,   m.backpressured_ms, m.idle_ms, m.gauges};
  }
  for (const auto& t : tasks) {
    VertexStats& v = out[t.id.vertex];
    v.attempts = std::max(v.attempts, t.id.attempt + 1);
    v.records_in_all_attempts += t.metrics.records_in;
    v.records_out_all_attempts += t.metrics.records_out;
  }
  for (const auto& [vertex, e] : earlier) {
    out[vertex].records_in_all_attempts += e.records_in;
    out[vertex].records_out_all_attempts += e.records_out;
  }
  return out;
}

JobProgress progress(const graph::JobGraph& g, JobMaster& jm, TaskManager& tm) {
  JobMaster::Status s = jm.status();
  JobProgress p;
  p.status = s.status;
  p.completed_checkpoints = s.checkpoint_counts.completed;
  p.restarts = s.restarts;
  const std::vector<TaskManager::TaskMetricsEntry> tasks = tm.task_metrics();
  for (const auto* t : last_attempts(tasks)) {
    if (!g.vertices[t->id.vertex].is_source) continue;
    auto emitted = t->metrics.gauges.find(std::string(detail::kRecordsOutMetric));
    if (emitted != t->metrics.gauges.end()) p.source_records += emitted->second;
  }
  return p;
}

}  // namespace

absl::StatusOr<JobResult> run_embedded(const detail::StreamGraph& sg, const JobConfig& config,
                                       const std::string& job_name, JobControl* control) {
  auto graph = graph::build_job_graph(sg, config);
  if (!graph.ok()) return graph.status();
  int64_t needed = buffers_needed(**graph, config.network);
  if (needed > config.network.total_buffers) {
    return absl::ResourceExhaustedError(
        "job '" + job_name + "' needs " + std::to_string(needed) + " network buffers, the pool has " +
        std::to_string(config.network.total_buffers) + "; raise the network buffer count");
  }

  auto restored = find_restore(**graph, config);
  if (!restored.ok()) return restored.status();
  std::string job_id = new_job_id();
  auto storage = make_job_storage(config, job_id);
  if (!storage.ok()) return storage.status();

  TaskManager tm(config.network, /*snapshot_threads=*/2);
  JobMaster jm(job_id, *graph, config, &tm, *storage, SystemClock::instance(), control);
  tm.register_job(job_id, TaskManager::JobContext{*graph, *storage, &jm, config, nullptr, nullptr});
  jm.start(std::move(*restored));
  if (control != nullptr) {
    const graph::JobGraph& g = **graph;
    detail::JobControlAccess::attach(
        *control, [&jm](JobControl::Request r) { jm.handle_request(std::move(r)); },
        [&g, &jm, &tm] { return progress(g, jm, tm); });
  }
  JobResult result = jm.wait();
  if (control != nullptr) detail::JobControlAccess::detach(*control);
  result.vertices = vertex_stats(**graph, tm.task_metrics(), tm.earlier_attempts(job_id));
  tm.unregister_job(job_id);
  tm.drain_snapshots();
  return result;
}

absl::StatusOr<std::optional<checkpoint::RestoredCheckpoint>> find_restore(const graph::JobGraph& g,
                                                                          const JobConfig& config) {
  std::optional<checkpoint::RestoredCheckpoint> restored;
  if (!config.restore.empty()) {
    absl::StatusOr<checkpoint::RestoredCheckpoint> cp;
    if (config.restore == "latest") {
      if (config.checkpoint.directory.empty()) {
        return absl::InvalidArgumentError("restore 'latest' needs a checkpoint directory");
      }
      std::vector<std::string> skipped;
      cp = checkpoint::find_latest_checkpoint(config.checkpoint.directory, &skipped);
      for (const auto& s : skipped) spdlog::warn("skipping checkpoint {}", s);
    } else {
      cp = checkpoint::load_checkpoint(config.restore);
    }
    if (!cp.ok()) return cp.status();
    absl::Status s = check_restore(g, cp->metadata, cp->location, config.allow_non_restored_state);
    if (!s.ok()) return s;
    restored = std::move(*cp);
  }
  return restored;
}

absl::StatusOr<std::shared_ptr<checkpoint::RoutingCheckpointStorage>> make_job_storage(const JobConfig& config,
                                                                                       const std::string& job_id) {
  const std::string& dir = config.checkpoint.directory;
  auto checkpoints = checkpoint::scheme_for(dir).open(dir, job_id);
  if (!checkpoints.ok()) return checkpoints.status();
  return std::make_shared<checkpoint::RoutingCheckpointStorage>(std::shared_ptr<checkpoint::CheckpointStorage>(
      *std::move(checkpoints)));
}

}  // namespace runtime
}  // namespace weir
