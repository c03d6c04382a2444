// The schedule of a staged job (one with blocking or persisted edges): which
// regions wait for the regions whose result files they read, and which must
// run again because files they read are gone. The JobMaster owns one and
// asks it; whether a region has finished is the JobMaster's to say (it knows
// the executions), so it is passed in, and so is whether a blocking result
// is still kept (on a cluster, by the TaskManager that wrote it).
//
// Confined to the JobMaster's event loop thread.
#ifndef WEIR_RUNTIME_STAGE_SCHEDULE_H_
#define WEIR_RUNTIME_STAGE_SCHEDULE_H_

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "graph/job_graph.h"
#include "weir/config.h"

namespace weir::runtime {

class StageSchedule {
 public:
  // Whether every task of a region has finished in its latest run.
  using Finished = std::function<bool(int region)>;
  // Whether the blocking result file `path`, written by subtask `producer`
  // of `vertex`, is still there to be read.
  using BlockingResultKept = std::function<bool(int vertex, int producer, const std::string& path)>;

  // `region_of`: by task index, the region of each task (outlives this).
  StageSchedule(const graph::JobGraph& graph, const std::vector<int>& region_of, const JobConfig& config,
                std::string job_id, BlockingResultKept kept);

  // These regions wait (again) for their input regions.
  void wait(const std::set<int>& regions) { waiting_.insert(regions.begin(), regions.end()); }
  bool waiting(int region) const { return waiting_.count(region) != 0; }
  bool none_waiting() const { return waiting_.empty(); }
  // Removes and returns the waiting regions whose input regions have all
  // finished and whose input files are all there: they can be deployed. The
  // producers of files that are gone wait again (rerun_lost_producers).
  std::set<int> take_ready(const Finished& finished);
  // Before `region` restarts: each finished region whose result files it
  // reads and that are gone (a producer's output lost) waits again, and so,
  // in turn, do the producers of that one whose files are gone.
  void rerun_lost_producers(int region, const Finished& finished);

 private:
  const graph::JobGraph& graph_;
  const std::vector<int>& region_of_;
  const JobConfig& config_;
  const std::string job_id_;
  const BlockingResultKept kept_;
  const std::vector<std::set<int>> region_inputs_;  // by region: the regions it reads
  std::set<int> waiting_;                           // not deployed in this run yet
};

}  // namespace weir::runtime

#endif  // WEIR_RUNTIME_STAGE_SCHEDULE_H_
