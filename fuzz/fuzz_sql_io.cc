// What SQL takes from outside its scripts, from any bytes: a batch of a
// query's rows as the shell fetches it from the JobManager (rows, or
// DataLoss; never a crash or an allocation beyond the batch's bytes), and a
// file path under a partitioned table's directory (its values, one per
// partition column, or an error naming the missing column). The first
// byte picks which.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "cli/sql_collect.h"
#include "sql/file_table_source.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1 || size > 8192) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 0) {
    size_t rows = 0;
    absl::Status s = weir::cli::decode_result_batch(rest, [&](weir::Row&&) { ++rows; });
    if (!s.ok() && s.message().empty()) __builtin_trap();
    return 0;
  }
  // The partition columns, then the path: "dt,hm\ndt=2024-01-01/hm=10/part-0".
  const size_t nl = rest.find('\n');
  if (nl == std::string_view::npos) return 0;
  std::vector<std::string> names;
  std::string_view list = rest.substr(0, nl);
  while (!list.empty()) {
    const size_t comma = list.find(',');
    names.emplace_back(list.substr(0, comma));
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  auto values = weir::sql::partition_values(std::string(rest.substr(nl + 1)), names);
  if (values.ok() ? values->size() != names.size() : values.status().message().empty()) __builtin_trap();
  return 0;
}
