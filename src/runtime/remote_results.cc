#include "runtime/remote_results.h"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <filesystem>
#include <system_error>

#include "s3/s3_client.h"
#include "common/file_util.h"

namespace weir::runtime {
namespace {

absl::StatusOr<s3::S3Url> object_of(const std::string& remote_dir, const std::string& local_path) {
  return s3::parse_s3_url(remote_dir + "/" + std::filesystem::path(local_path).filename().string());
}

}  // namespace

network::ResultFileWriter::Published upload_result_to(const std::string& remote_dir) {
  return [remote_dir](const std::string& path) -> absl::Status {
    auto client = s3::shared_s3_client();
    if (!client.ok()) return client.status();
    auto url = object_of(remote_dir, path);
    if (!url.ok()) return url.status();
    return (*client)->put_file(*url, path);
  };
}

absl::Status fetch_result(const std::string& remote_dir, const std::string& local_path) {
  std::error_code ec;
  if (std::filesystem::exists(local_path, ec)) return absl::OkStatus();
  auto client = s3::shared_s3_client();
  if (!client.ok()) return client.status();
  auto url = object_of(remote_dir, local_path);
  if (!url.ok()) return url.status();
  std::filesystem::create_directories(std::filesystem::path(local_path).parent_path(), ec);
  if (ec) return errno_status("mkdir", std::filesystem::path(local_path).parent_path().string(), ec.value());
  // Under its own name until whole: a reader never sees half a download.
  const std::string partial = local_path + ".download";
  auto size = (*client)->get_file(*url, partial);
  if (!size.ok()) return size.status();
  if (std::rename(partial.c_str(), local_path.c_str()) != 0) return errno_status("rename", partial, errno);
  return absl::OkStatus();
}

bool remote_result_exists(const std::string& remote_dir, const std::string& local_path) {
  auto client = s3::shared_s3_client();
  if (!client.ok()) return false;
  auto url = object_of(remote_dir, local_path);
  if (!url.ok()) return false;
  auto size = (*client)->size(*url);
  if (!size.ok() && !absl::IsNotFound(size.status())) {
    spdlog::warn("cannot tell whether result {} exists: {}", url->str(), std::string(size.status().message()));
  }
  return size.ok();
}

void remove_remote_results(const std::string& remote_dir) {
  auto client = s3::shared_s3_client();
  auto url = s3::parse_s3_url(remote_dir);
  absl::Status s = !client.ok() ? client.status()
                   : !url.ok()  ? url.status()
                                : (*client)->remove_all(s3::S3Url{url->bucket, url->key + "/"});
  if (!s.ok()) spdlog::warn("could not remove the results in {}: {}", remote_dir, std::string(s.message()));
}

}  // namespace weir::runtime
