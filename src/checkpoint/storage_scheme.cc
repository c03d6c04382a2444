#include "checkpoint/storage_scheme.h"

#include "s3/s3_client.h"

namespace weir::checkpoint {

absl::StatusOr<std::vector<std::string>> StorageScheme::download_native_files(const std::string& location,
                                                                              const OperatorSubtaskState&,
                                                                              const std::string&) const {
  return absl::UnimplementedError(location + ": native files are read where they are, not downloaded");
}

const StorageScheme& scheme_for(std::string_view location) {
  if (location.empty() || location.rfind("memory://", 0) == 0) return memory_scheme();
  if (s3::is_s3_url(location)) return s3_scheme();
  return file_scheme();
}

}  // namespace weir::checkpoint
