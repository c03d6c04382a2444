// A client of S3-compatible object storage (AWS S3, MinIO, Ceph RGW, ...):
// what checkpoint storage needs and no more. Requests are signed with AWS
// Signature Version 4 by libcurl (CURLOPT_AWS_SIGV4) over path-style URLs
// (`ENDPOINT/BUCKET/KEY`), the payload's SHA-256 sent and signed with it.
// Failed requests that may succeed later (connection refused or reset,
// timeouts, HTTP 500, 502, 503, 504, 429) are retried with exponential
// backoff; the others fail at once with the server's error code and
// message. Large objects go up in parts (multipart upload), streamed: at
// most one part is held in memory per object being written.
//
// Thread-safe: any thread may issue requests; connections are pooled.
#ifndef WEIR_S3_S3_CLIENT_H_
#define WEIR_S3_S3_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace weir::s3 {

struct S3Settings {
  // Where requests go: http(s)://HOST[:PORT] (default: AWS's regional
  // endpoint, https://s3.REGION.amazonaws.com).
  std::string endpoint;
  std::string region = "us-east-1";
  std::string access_key;
  std::string secret_key;
  std::string session_token;  // temporary credentials only
  // Objects larger than this go up in parts of this size (S3: at least
  // 5 MiB except the last part).
  size_t part_bytes = 8 << 20;
  int max_attempts = 6;  // per request, the first included
  std::chrono::milliseconds first_backoff{100};
  std::chrono::seconds request_timeout{60};
  // A CA file for https endpoints (empty: the system's).
  std::string ca_file;
};

// What this process was told about S3 by its flags or config file
// (`--s3-endpoint`, `[s3] endpoint`, ...: docs/cli.md). An empty field
// falls back to the environment.
struct S3Options {
  std::string endpoint;
  std::string region;
  std::string access_key;
  // A file holding the secret access key (a secret on a command line shows
  // in every process listing).
  std::string secret_key_file;
  std::string ca_file;
  bool empty() const {
    return endpoint.empty() && region.empty() && access_key.empty() && secret_key_file.empty() && ca_file.empty();
  }
};

// Sets this process's options; the next shared_s3_client() is made from
// them. Call it before the first S3 request.
void set_s3_options(S3Options options);

// The settings: each field from the options, else from the environment as
// AWS's tools read it: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
// AWS_SESSION_TOKEN, AWS_REGION (or AWS_DEFAULT_REGION), AWS_ENDPOINT_URL_S3
// (or AWS_ENDPOINT_URL), AWS_CA_BUNDLE. The access key and its secret come
// as a pair from one place. An error names what is missing or unreadable.
absl::StatusOr<S3Settings> s3_settings(const S3Options& options);

class S3Client;
// The process's client, made from set_s3_options' options and the
// environment on first use.
absl::StatusOr<std::shared_ptr<S3Client>> shared_s3_client();

// s3://BUCKET/KEY-OR-PREFIX.
struct S3Url {
  std::string bucket;
  std::string key;  // without a leading '/'; may be empty
  std::string str() const { return "s3://" + bucket + (key.empty() ? "" : "/" + key); }
};
bool is_s3_url(std::string_view s);
absl::StatusOr<S3Url> parse_s3_url(std::string_view s);

class S3Client {
 public:
  explicit S3Client(S3Settings settings);
  ~S3Client();
  S3Client(const S3Client&) = delete;
  S3Client& operator=(const S3Client&) = delete;

  const S3Settings& settings() const { return settings_; }

  absl::Status put(const S3Url& url, std::string_view bytes);
  // NotFound when there is no such object.
  absl::StatusOr<std::string> get(const S3Url& url);
  // `length` bytes of the object from `offset` (a ranged GET); fewer when
  // the object ends first.
  absl::StatusOr<std::string> get_range(const S3Url& url, uint64_t offset, uint64_t length);
  // The object's size; NotFound when there is none.
  absl::StatusOr<int64_t> size(const S3Url& url);
  // Removes the object (no error when there was none).
  absl::Status remove(const S3Url& url);
  struct Object {
    std::string key;
    int64_t size = 0;
    std::string last_modified;  // ISO 8601, UTC: orders as text
  };
  // Every object whose key starts with `prefix.key`, in key order.
  absl::StatusOr<std::vector<Object>> list(const S3Url& prefix);
  // Removes every object under `prefix.key`.
  absl::Status remove_all(const S3Url& prefix);
  // Uploads local file `path` to `url` (in parts when large).
  absl::Status put_file(const S3Url& url, const std::string& path);
  // Downloads the object into local file `path` (created or truncated),
  // streamed; returns its size. NotFound when there is no such object.
  absl::StatusOr<int64_t> get_file(const S3Url& url, const std::string& path);

  // An object written in pieces: append(), then finish() makes it appear
  // whole; without finish() nothing appears (an open multipart upload is
  // aborted).
  class Writer {
   public:
    ~Writer();
    absl::Status append(std::string_view bytes);
    absl::Status finish();

   private:
    friend class S3Client;
    Writer(S3Client* client, S3Url url) : client_(client), url_(std::move(url)) {}
    absl::Status flush_part();

    S3Client* const client_;
    const S3Url url_;
    std::string buffer_;
    std::string upload_id_;  // once a multipart upload began
    std::vector<std::string> etags_;
    bool done_ = false;
  };
  std::unique_ptr<Writer> writer(const S3Url& url);

  // One HTTP exchange, for the implementation (public for its helpers).
  struct Response {
    long code = 0;
    std::string body;
    std::string etag;
  };

 private:
  struct Request;
  // Sends `r`, retrying what may succeed later; the response of the last
  // attempt, or the transport error of the last.
  absl::StatusOr<Response> send(const Request& r);
  absl::StatusOr<Response> send_once(const Request& r);
  std::string url_of(const S3Url& url, const std::string& query) const;
  void* take_handle();
  void give_back(void* handle);

  const S3Settings settings_;
  std::mutex mu_;
  std::vector<void*> idle_;  // CURL* handles, keeping their connections
};

}  // namespace weir::s3

#endif  // WEIR_S3_S3_CLIENT_H_
