// The rows of a query the SQL shell runs on a cluster, on their way back to
// the shell. The shell opens a result at the JobManager and submits the
// built-in job `sql --script DECLARATIONS;SELECT --collect ID`; that job's
// bare SELECT goes into the table kResultTable of connector
// kResultConnector, whose sink (one per subtask, in the TaskManagers)
// encodes rows into batches and pushes them to the JobManager's result ID
// (cluster/result_uplink.h): when a batch reaches kBatchBytes, kLatencyMs
// after its first row, and at the end of input (the subtask's last batch).
// A push the JobManager does not take (the result's queue is full) is sent
// again, so a shell that reads slowly holds the query back. The shell
// fetches the batches (cluster/client.h fetch_result) and decodes them with
// decode_result_batch.
#ifndef WEIR_CLI_SQL_COLLECT_H_
#define WEIR_CLI_SQL_COLLECT_H_

#include <functional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "sql/job_builder.h"
#include "weir/formats.h"

namespace weir::cli {

// The table a bare SELECT of the shell goes into, and its connector (the
// shell's own sink when it runs the query in process).
inline constexpr char kResultTable[] = "(result)";
inline constexpr char kResultConnector[] = "shell-result";

inline constexpr size_t kBatchBytes = 64 * 1024;
inline constexpr int64_t kLatencyMs = 100;

// Makes kResultConnector's sink push rows to the JobManager's result
// `result_id`.
void add_collect_connector(sql::TableConnectors* connectors, const std::string& result_id);

// Calls `each` for every row of a batch; DataLoss when it does not decode.
absl::Status decode_result_batch(std::string_view batch, const std::function<void(Row&&)>& each);

}  // namespace weir::cli

#endif  // WEIR_CLI_SQL_COLLECT_H_
