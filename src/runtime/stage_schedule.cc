#include "runtime/stage_schedule.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>

#include "network/result_file.h"
#include "runtime/remote_results.h"

namespace weir::runtime {

StageSchedule::StageSchedule(const graph::JobGraph& graph, const std::vector<int>& region_of,
                             const JobConfig& config, std::string job_id, BlockingResultKept kept)
    : graph_(graph),
      region_of_(region_of),
      config_(config),
      job_id_(std::move(job_id)),
      kept_(std::move(kept)),
      region_inputs_(graph::region_inputs(graph, region_of)) {}

std::set<int> StageSchedule::take_ready(const Finished& finished) {
  std::set<int> ready;
  for (int r : waiting_) {
    if (std::all_of(region_inputs_[r].begin(), region_inputs_[r].end(), finished)) ready.insert(r);
  }
  // Files can be lost after their producers finished (a TaskManager gone
  // between stages): those producers run first.
  for (int r : ready) rerun_lost_producers(r, finished);
  std::erase_if(ready, [&](int r) {
    return !std::all_of(region_inputs_[r].begin(), region_inputs_[r].end(), finished);
  });
  for (int r : ready) waiting_.erase(r);
  return ready;
}

void StageSchedule::rerun_lost_producers(int region, const Finished& finished) {
  for (size_t e = 0; e < graph_.edges.size(); ++e) {
    const graph::JobEdge& je = graph_.edges[e];
    if (!je.blocking()) continue;
    const std::string dir = network::result_directory(config_, job_id_, je.exchange);
    const std::string remote = network::remote_result_directory(config_, job_id_, je.exchange);
    const int producers = graph_.vertices[je.source_vertex].parallelism;
    for (int c = 0; c < graph_.vertices[je.target_vertex].parallelism; ++c) {
      if (region_of_[graph_.task_index(je.target_vertex, c)] != region) continue;
      for (int p = 0; p < producers; ++p) {
        if (je.pointwise && p != c) continue;
        const int producer_region = region_of_[graph_.task_index(je.source_vertex, p)];
        if (waiting(producer_region) || !finished(producer_region)) continue;
        const std::string file = network::result_file_path(dir, static_cast<int>(e), p, c);
        std::error_code ec;
        const bool kept = !remote.empty()                             ? remote_result_exists(remote, file)
                          : je.exchange == ExchangeMode::kPersisted ? std::filesystem::exists(file, ec)
                                                                    : kept_(je.source_vertex, p, file);
        if (kept) {
          continue;
        }
        spdlog::warn("job {}: result file {} of region {} is gone: that region runs again", job_id_, file,
                     producer_region);
        waiting_.insert(producer_region);
        rerun_lost_producers(producer_region, finished);  // its own inputs may be gone too
      }
    }
  }
}

}  // namespace weir::runtime
