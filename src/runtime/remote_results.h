// Persisted intermediate results kept in S3 (an s3:// checkpoint
// directory): a producer writes its result file locally
// (network/result_file.h), then uploads it whole; a consumer reads a local
// copy, downloading it first when its process has none. The object's name
// is the file's, under network::remote_result_directory().
#ifndef WEIR_RUNTIME_REMOTE_RESULTS_H_
#define WEIR_RUNTIME_REMOTE_RESULTS_H_

#include <string>

#include "absl/status/status.h"
#include "network/result_file.h"

namespace weir::runtime {

// The hook that uploads a published result file into `remote_dir`.
network::ResultFileWriter::Published upload_result_to(const std::string& remote_dir);

// Makes sure result file `local_path` exists: downloaded from `remote_dir`
// unless this process already has it. NotFound when S3 has no such result.
absl::Status fetch_result(const std::string& remote_dir, const std::string& local_path);

// Whether S3 holds result file `local_path` in `remote_dir` (false, logged,
// when S3 cannot say: the producer runs again).
bool remote_result_exists(const std::string& remote_dir, const std::string& local_path);

// Removes every result object under `remote_dir` (best effort, logged).
void remove_remote_results(const std::string& remote_dir);

}  // namespace weir::runtime

#endif  // WEIR_RUNTIME_REMOTE_RESULTS_H_
