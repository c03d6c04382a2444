// The TaskManager process: offers its slots to a JobManager over one
// session stream, runs the tasks deployed to it (a runtime::TaskManager per
// job, sharing this process's network buffer pool and data plane), reports
// their states and checkpoints back, and sends heartbeats. When the session
// breaks or the JobManager's heartbeats stop, it cancels every task (the
// JobManager has failed them) and registers again (under high availability
// with whichever JobManager leads then, refusing one of an older leader
// epoch than it has seen). It serves its tasks' metrics for Prometheus, its
// log and its standard output on an HTTP port of its own
// (taskmanager_http.h, docs/metrics.md). The blocking results its
// tasks write stay in its own directory and are served from there to
// consumers on other TaskManagers; they are removed when the job ends here.
#ifndef WEIR_CLUSTER_TASKMANAGER_H_
#define WEIR_CLUSTER_TASKMANAGER_H_

#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cluster/job_catalog.h"
#include "cluster/taskmanager_http.h"  // parse_port_range
#include "network/tls.h"

namespace weir::cluster {

struct TaskManagerOptions {
  std::string jobmanager = "127.0.0.1:6123";
  // Under high availability the JobManager to register with is the leader
  // ZooKeeper names (looked up before every session), not `jobmanager`.
  std::string ha_quorum;                // HOST:PORT,...; empty: no high availability
  std::string ha_cluster_id = "default";
  std::string secret;
  std::string bind_host = "127.0.0.1";  // the data plane's address
  int data_port = 0;                    // 0: any free port
  int metrics_port = 0;                 // GET /metrics on bind_host; 0: any free port, -1: none
  int metrics_port_last = -1;           // > metrics_port: the first free port of metrics_port..this
  bool metrics_public = false;          // /metrics answers without the secret
  // TLS with the JobManager (mutual) and on /metrics (HTTPS): none or all
  // three files. Default: none.
  network::TlsFiles tls;
  int slots = 1;
  std::string id;                       // default: tm-<host>-<pid>
  int network_buffers = 4096;           // the process's pool (32 KiB each)
  std::string state_dir;                // RocksDB working copies (default: system temp)
  std::string tmp_dir;                  // blocking results and sort spills (default: the job's
                                        // --result-dir, else system temp), under <id>/
  std::string library_dir;              // job libraries fetched from the JobManager
                                        // (default: <system temp>/weir-libraries-<uid>)
  JobCatalog catalog;                   // how deployed jobs are built (required)
};

class TaskManagerProcess {
 public:
  explicit TaskManagerProcess(TaskManagerOptions options);
  ~TaskManagerProcess();
  TaskManagerProcess(const TaskManagerProcess&) = delete;
  TaskManagerProcess& operator=(const TaskManagerProcess&) = delete;

  // Opens the data port.
  absl::Status start();
  // host:port of the data port, once started.
  const std::string& data_address() const;
  // host:port of GET /metrics once started ("" when it serves none).
  const std::string& metrics_address() const;
  // Keeps a session with the JobManager until shutdown(). Returns an error
  // when the JobManager refuses the secret.
  absl::Status run();
  void shutdown();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace weir::cluster

#endif  // WEIR_CLUSTER_TASKMANAGER_H_
