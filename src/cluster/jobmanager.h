// The JobManager process: accepts TaskManager sessions on a gRPC port and
// clients on the REST port (docs/rest-api.md), keeps the cluster's slots, runs one JobMaster per job (the
// same JobMaster the embedded cluster uses) behind a gateway that places
// tasks into slots and carries its messages to the TaskManagers, and fails
// the tasks of a TaskManager whose session breaks or whose heartbeats stop.
// Under high availability one JobManager is one leadership term
// (cluster/ha_jobmanager.h): it stamps its epoch on every message and
// resumes the jobs of the HA store when it starts.
#ifndef WEIR_CLUSTER_JOBMANAGER_H_
#define WEIR_CLUSTER_JOBMANAGER_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "cluster/ha_store.h"
#include "cluster/job_catalog.h"
#include "network/tls.h"
#include "weir/config.h"

namespace weir::cluster {

struct JobManagerOptions {
  std::string bind = "127.0.0.1:6123";  // HOST:PORT; port 0 picks a free one
  std::string secret;
  int rest_port = 8081;  // on the bind host; 0 picks a free one
  // GET /metrics on the REST port answers without the secret (the rest of
  // the API still needs it).
  bool metrics_public = false;
  // Ended jobs the JobManager still reports; older ones are forgotten, so
  // its memory does not grow with the number of jobs run.
  int keep_ended_jobs = 100;
  // An ended job is listed this long after it ended (Flink's
  // jobstore.expiration-time); under high availability its result stays
  // in the job result store as long, across leader changes. 0: only the
  // keep_ended_jobs bound forgets jobs.
  Duration job_expiration{3600 * 1000};
  Duration heartbeat_interval{500};
  Duration heartbeat_timeout{5000};
  // Uploaded job libraries, by digest (default: <system temp>/weir-libraries-<uid>).
  std::string library_dir;
  // How the jobs it is asked to run are built (required).
  JobCatalog catalog;
  // For the web UI's SQL page (POST /v1/sql/explain): a SQL script's plan,
  // each INSERT's, or InvalidArgument with the line and column of its
  // error. Default: none (the route answers that this JobManager plans no
  // SQL).
  SqlExplainer explain_sql;
  // TLS on the session port (mutual) and the REST port (HTTPS): none or
  // all three files. Default: none.
  network::TlsFiles tls;
  // Under high availability (cluster/ha_jobmanager.h), the leadership this
  // JobManager runs in: its epoch, stamped on every message to
  // TaskManagers, and the store its jobs are recorded in; start() resumes
  // the jobs recorded there. Default: none.
  int64_t epoch = 0;
  std::shared_ptr<HaStore> ha;
};

class JobManager {
 public:
  explicit JobManager(JobManagerOptions options);
  ~JobManager();
  JobManager(const JobManager&) = delete;
  JobManager& operator=(const JobManager&) = delete;

  // Listens; an error names the address.
  absl::Status start();
  // The ports it listens on (after start): TaskManager sessions, REST.
  int port() const;
  int rest_port() const;
  // Blocks until shutdown() (from another thread or a signal handler thread).
  void wait();
  // With `suspend` (leadership lost) its jobs stop here but stay recorded
  // for the next leader.
  void shutdown(bool suspend = false);

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace weir::cluster

#endif  // WEIR_CLUSTER_JOBMANAGER_H_
