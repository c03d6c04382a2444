#include "s3/s3_client.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <openssl/sha.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <pugixml.hpp>
#include <thread>
#include <utility>

#include "common/file_util.h"

namespace weir::s3 {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

std::string hex_sha256(std::string_view bytes) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), digest);
  static const char* kHex = "0123456789abcdef";
  std::string out;
  out.reserve(2 * SHA256_DIGEST_LENGTH);
  for (unsigned char c : digest) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

// RFC 3986 encoding as SigV4 wants it: unreserved characters as they are,
// '/' kept in paths.
std::string uri_encode(std::string_view s, bool keep_slash) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// A query string in canonical form (names sorted, every value present and
// encoded), so that what curl signs is what the server recomputes.
std::string query(std::vector<std::pair<std::string, std::string>> params) {
  std::sort(params.begin(), params.end());
  std::string out;
  for (const auto& [k, v] : params) {
    out += (out.empty() ? "" : "&") + uri_encode(k, false) + "=" + uri_encode(v, false);
  }
  return out;
}

// "Code: Message" of an S3 error document, or the start of the body.
std::string error_text(const std::string& body) {
  pugi::xml_document doc;
  if (doc.load_buffer(body.data(), body.size())) {
    pugi::xml_node e = doc.child("Error");
    if (e) {
      std::string code = e.child_value("Code"), message = e.child_value("Message");
      if (!code.empty()) return message.empty() ? code : code + ": " + message;
    }
  }
  return body.substr(0, 200);
}

bool retryable(long code) { return code == 429 || code == 500 || code == 502 || code == 503 || code == 504; }

// Where a response's body goes: the string, or for a 2xx answer with a
// file to fill, the file.
struct BodySink {
  CURL* curl;
  std::string* body;
  int fd;
  int64_t written = 0;
  int write_errno = 0;
};

size_t append_body(char* data, size_t size, size_t n, void* out) {
  auto* sink = static_cast<BodySink*>(out);
  const size_t len = size * n;
  long code = 0;
  if (sink->fd >= 0) curl_easy_getinfo(sink->curl, CURLINFO_RESPONSE_CODE, &code);
  if (sink->fd < 0 || code < 200 || code >= 300) {
    sink->body->append(data, len);
    return len;
  }
  size_t done = 0;
  while (done < len) {
    const ssize_t w = ::write(sink->fd, data + done, len - done);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) {
      sink->write_errno = errno;
      return 0;  // curl ends the transfer with CURLE_WRITE_ERROR
    }
    done += static_cast<size_t>(w);
  }
  sink->written += static_cast<int64_t>(len);
  return len;
}

size_t read_header(char* data, size_t size, size_t n, void* out) {
  std::string_view line(data, size * n);
  constexpr std::string_view kEtag = "etag:";
  if (line.size() > kEtag.size()) {
    std::string name(line.substr(0, kEtag.size()));
    std::transform(name.begin(), name.end(), name.begin(), ::tolower);
    if (name == kEtag) {
      std::string_view v = line.substr(kEtag.size());
      while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
      while (!v.empty() && (v.back() == '\r' || v.back() == '\n' || v.back() == ' ')) v.remove_suffix(1);
      *static_cast<std::string*>(out) = std::string(v);
    }
  }
  return size * n;
}

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

}  // namespace

namespace {

std::mutex options_mu;
S3Options process_options;                   // guarded by options_mu
std::shared_ptr<S3Client> process_client;    // guarded by options_mu

// The first line of `path`, without trailing white space.
absl::StatusOr<std::string> read_secret(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError("cannot read S3 secret key file " + path + ": " + std::strerror(errno));
  std::string line;
  std::getline(in, line);
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  if (line.empty()) return absl::InvalidArgumentError("S3 secret key file " + path + " is empty");
  return line;
}

}  // namespace

void set_s3_options(S3Options options) {
  std::lock_guard lock(options_mu);
  process_options = std::move(options);
  process_client.reset();
}

absl::StatusOr<S3Settings> s3_settings(const S3Options& o) {
  S3Settings s;
  if (!o.access_key.empty() || !o.secret_key_file.empty()) {
    if (o.access_key.empty() || o.secret_key_file.empty()) {
      return absl::InvalidArgumentError("S3 credentials need both an access key (--s3-access-key) and a secret "
                                        "key file (--s3-secret-key-file)");
    }
    s.access_key = o.access_key;
    auto secret = read_secret(o.secret_key_file);
    if (!secret.ok()) return secret.status();
    s.secret_key = *std::move(secret);
  } else {
    s.access_key = env("AWS_ACCESS_KEY_ID");
    s.secret_key = env("AWS_SECRET_ACCESS_KEY");
    s.session_token = env("AWS_SESSION_TOKEN");
  }
  if (!o.region.empty()) {
    s.region = o.region;
  } else if (!env("AWS_REGION").empty()) {
    s.region = env("AWS_REGION");
  } else if (!env("AWS_DEFAULT_REGION").empty()) {
    s.region = env("AWS_DEFAULT_REGION");
  }
  s.endpoint = !o.endpoint.empty()                  ? o.endpoint
               : !env("AWS_ENDPOINT_URL_S3").empty() ? env("AWS_ENDPOINT_URL_S3")
                                                      : env("AWS_ENDPOINT_URL");
  s.ca_file = !o.ca_file.empty() ? o.ca_file : env("AWS_CA_BUNDLE");
  if (s.access_key.empty() || s.secret_key.empty()) {
    return absl::InvalidArgumentError(
        "s3:// storage needs credentials: --s3-access-key and --s3-secret-key-file (or [s3] access-key and "
        "secret-key-file in the config file), or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY");
  }
  if (s.endpoint.empty()) s.endpoint = "https://s3." + s.region + ".amazonaws.com";
  while (!s.endpoint.empty() && s.endpoint.back() == '/') s.endpoint.pop_back();
  if (s.endpoint.rfind("http://", 0) != 0 && s.endpoint.rfind("https://", 0) != 0) {
    return absl::InvalidArgumentError("S3 endpoint " + s.endpoint + " must start with http:// or https://");
  }
  return s;
}

absl::StatusOr<std::shared_ptr<S3Client>> shared_s3_client() {
  std::lock_guard lock(options_mu);
  if (process_client != nullptr) return process_client;
  auto settings = s3_settings(process_options);
  if (!settings.ok()) return settings.status();
  process_client = std::make_shared<S3Client>(*std::move(settings));
  return process_client;
}

bool is_s3_url(std::string_view s) { return s.rfind("s3://", 0) == 0; }

absl::StatusOr<S3Url> parse_s3_url(std::string_view s) {
  if (!is_s3_url(s)) return absl::InvalidArgumentError(std::string(s) + " is not an s3:// URL");
  std::string_view rest = s.substr(5);
  const size_t slash = rest.find('/');
  S3Url u;
  u.bucket = std::string(rest.substr(0, slash));
  if (slash != std::string_view::npos) u.key = std::string(rest.substr(slash + 1));
  while (!u.key.empty() && u.key.back() == '/') u.key.pop_back();
  if (u.bucket.empty()) return absl::InvalidArgumentError(std::string(s) + ": no bucket (s3://BUCKET/PREFIX)");
  return u;
}

struct S3Client::Request {
  Request(const char* method, S3Url url, std::string query = {}, std::string_view body = {})
      : method(method), url(std::move(url)), query(std::move(query)), body(body) {}
  const char* method;
  S3Url url;
  std::string query;      // canonical (see query())
  std::string_view body;  // PUT and POST
  // A successful response's body goes to this file (rewritten from its
  // start by each attempt) instead of Response::body.
  int body_fd = -1;
  std::string range;  // "bytes=A-B" for a ranged GET
};

S3Client::S3Client(S3Settings settings) : settings_(std::move(settings)) { global_init(); }

S3Client::~S3Client() {
  for (void* h : idle_) curl_easy_cleanup(static_cast<CURL*>(h));
}

void* S3Client::take_handle() {
  {
    std::lock_guard lock(mu_);
    if (!idle_.empty()) {
      void* h = idle_.back();
      idle_.pop_back();
      return h;
    }
  }
  return curl_easy_init();
}

void S3Client::give_back(void* handle) {
  std::lock_guard lock(mu_);
  idle_.push_back(handle);
}

std::string S3Client::url_of(const S3Url& url, const std::string& q) const {
  std::string out = settings_.endpoint + "/" + uri_encode(url.bucket, false);
  if (!url.key.empty()) out += "/" + uri_encode(url.key, true);
  if (!q.empty()) out += "?" + q;
  return out;
}

absl::StatusOr<S3Client::Response> S3Client::send_once(const Request& r) {
  CURL* curl = static_cast<CURL*>(take_handle());
  if (curl == nullptr) return absl::ResourceExhaustedError("curl_easy_init failed");
  curl_easy_reset(curl);
  Response resp;
  const std::string target = url_of(r.url, r.query);
  const std::string sigv4 = "aws:amz:" + settings_.region + ":s3";
  const std::string userpwd = settings_.access_key + ":" + settings_.secret_key;
  curl_slist* headers = nullptr;
  headers = curl_slist_append(headers, ("x-amz-content-sha256: " + hex_sha256(r.body)).c_str());
  if (!settings_.session_token.empty()) {
    headers = curl_slist_append(headers, ("x-amz-security-token: " + settings_.session_token).c_str());
  }
  headers = curl_slist_append(headers, "Expect:");
  if (!r.range.empty()) headers = curl_slist_append(headers, ("Range: " + r.range).c_str());
  curl_easy_setopt(curl, CURLOPT_URL, target.c_str());
  curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, sigv4.c_str());
  curl_easy_setopt(curl, CURLOPT_USERPWD, userpwd.c_str());
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(settings_.request_timeout.count() * 1000));
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
  if (!settings_.ca_file.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, settings_.ca_file.c_str());
  const std::string method = r.method;
  if (method == "PUT" || method == "POST") {
    headers = curl_slist_append(headers, "Content-Type: application/octet-stream");
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, r.body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body.size()));
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, r.method);
  } else if (method != "GET") {
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, r.method);
  }
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  BodySink sink{curl, &resp.body, r.body_fd};
  if (r.body_fd >= 0 && (::lseek(r.body_fd, 0, SEEK_SET) < 0 || ::ftruncate(r.body_fd, 0) != 0)) {
    give_back(curl);
    curl_slist_free_all(headers);
    return absl::InternalError(std::string(r.method) + " " + r.url.str() + ": cannot rewind the file it fills: " +
                               std::strerror(errno));
  }
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, append_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, read_header);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, &resp.etag);
  const CURLcode rc = curl_easy_perform(curl);
  curl_slist_free_all(headers);
  if (rc != CURLE_OK) {
    curl_easy_cleanup(curl);  // its connection may be broken
    if (sink.write_errno != 0) {
      // The local disk, not the server: retrying would not help.
      return absl::ResourceExhaustedError(std::string(r.method) + " " + r.url.str() + ": cannot write the body: " +
                                          std::strerror(sink.write_errno));
    }
    return absl::UnavailableError(std::string(r.method) + " " + r.url.str() + ": " + curl_easy_strerror(rc));
  }
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &resp.code);
  give_back(curl);
  return resp;
}

absl::StatusOr<S3Client::Response> S3Client::send(const Request& r) {
  std::chrono::milliseconds backoff = settings_.first_backoff;
  absl::StatusOr<Response> last = absl::UnknownError("no attempt");
  for (int attempt = 1; attempt <= settings_.max_attempts; ++attempt) {
    last = send_once(r);
    if (!last.ok() && !absl::IsUnavailable(last.status())) return last;
    const bool again = !last.ok() || retryable(last->code);
    if (!again) return last;
    if (attempt == settings_.max_attempts) break;
    spdlog::warn("{} {}: {} (attempt {} of {}), retrying in {} ms", r.method, r.url.str(),
                 last.ok() ? "HTTP " + std::to_string(last->code) + " " + error_text(last->body)
                           : std::string(last.status().message()),
                 attempt, settings_.max_attempts, backoff.count());
    // Backoff between attempts of a request that failed: not a wait for
    // another thread.
    std::this_thread::sleep_for(backoff);
    backoff = std::min<std::chrono::milliseconds>(backoff * 2, std::chrono::seconds(5));
  }
  if (!last.ok()) {
    return absl::UnavailableError(std::string(last.status().message()) + " (after " +
                                  std::to_string(settings_.max_attempts) + " attempts)");
  }
  return last;
}

namespace {

// OK for 2xx; otherwise an error naming the request and the server's words.
absl::Status check(const absl::StatusOr<S3Client::Response>& r, const char* method, const S3Url& url) {
  if (!r.ok()) return r.status();
  if (r->code >= 200 && r->code < 300) return absl::OkStatus();
  const std::string what = std::string(method) + " " + url.str() + ": HTTP " + std::to_string(r->code) +
                           (r->body.empty() ? "" : " " + error_text(r->body));
  if (r->code == 404) return absl::NotFoundError(what);
  if (r->code == 403 || r->code == 401) return absl::PermissionDeniedError(what);
  if (retryable(r->code)) return absl::UnavailableError(what);
  return absl::InternalError(what);
}

}  // namespace

absl::Status S3Client::put(const S3Url& url, std::string_view bytes) {
  return check(send(Request("PUT", url, "", bytes)), "PUT", url);
}

absl::StatusOr<std::string> S3Client::get(const S3Url& url) {
  auto r = send(Request("GET", url));
  absl::Status s = check(r, "GET", url);
  if (!s.ok()) return s;
  return std::move(r->body);
}

absl::StatusOr<std::string> S3Client::get_range(const S3Url& url, uint64_t offset, uint64_t length) {
  if (length == 0) return std::string();
  Request request("GET", url);
  request.range = "bytes=" + std::to_string(offset) + "-" + std::to_string(offset + length - 1);
  auto r = send(request);
  absl::Status s = check(r, "GET", url);
  if (!s.ok()) return s;
  // 206 with the range; a server that ignores Range answers 200 with all.
  if (r->code == 200) return r->body.substr(std::min<size_t>(offset, r->body.size()), length);
  return std::move(r->body);
}

absl::StatusOr<int64_t> S3Client::size(const S3Url& url) {
  // HEAD has no body to read a length from portably: list the key itself.
  auto objects = list(url);
  if (!objects.ok()) return objects.status();
  for (const auto& o : *objects) {
    if (o.key == url.key) return o.size;
  }
  return absl::NotFoundError(url.str() + ": no such object");
}

absl::Status S3Client::remove(const S3Url& url) {
  auto r = send(Request("DELETE", url));
  if (r.ok() && r->code == 404) return absl::OkStatus();
  return check(r, "DELETE", url);
}

absl::StatusOr<std::vector<S3Client::Object>> S3Client::list(const S3Url& prefix) {
  std::vector<Object> out;
  std::string token;
  const S3Url bucket{prefix.bucket, ""};
  while (true) {
    std::vector<std::pair<std::string, std::string>> params = {{"list-type", "2"}, {"prefix", prefix.key}};
    if (!token.empty()) params.emplace_back("continuation-token", token);
    auto r = send(Request("GET", bucket, query(params)));
    absl::Status s = check(r, "LIST", prefix);
    if (!s.ok()) return s;
    pugi::xml_document doc;
    if (!doc.load_buffer(r->body.data(), r->body.size())) {
      return absl::DataLossError("LIST " + prefix.str() + ": the answer is not XML: " + r->body.substr(0, 200));
    }
    pugi::xml_node result = doc.child("ListBucketResult");
    for (pugi::xml_node c = result.child("Contents"); c; c = c.next_sibling("Contents")) {
      out.push_back({c.child_value("Key"), std::atoll(c.child_value("Size")), c.child_value("LastModified")});
    }
    token = result.child_value("NextContinuationToken");
    if (std::string(result.child_value("IsTruncated")) != "true" || token.empty()) break;
  }
  std::sort(out.begin(), out.end(), [](const Object& a, const Object& b) { return a.key < b.key; });
  return out;
}

absl::Status S3Client::remove_all(const S3Url& prefix) {
  auto objects = list(prefix);
  if (!objects.ok()) return objects.status();
  for (const auto& o : *objects) {
    absl::Status s = remove({prefix.bucket, o.key});
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status S3Client::put_file(const S3Url& url, const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno_status("open", path, errno);
  std::unique_ptr<Writer> w = writer(url);
  std::string chunk(1 << 20, '\0');
  absl::Status s;
  while (s.ok()) {
    const ssize_t n = ::read(fd, chunk.data(), chunk.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      s = errno_status("read", path, errno);
      break;
    }
    if (n == 0) break;
    s = w->append(std::string_view(chunk.data(), static_cast<size_t>(n)));
  }
  ::close(fd);
  if (!s.ok()) return s;
  return w->finish();
}

absl::StatusOr<int64_t> S3Client::get_file(const S3Url& url, const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errno_status("open", path, errno);
  Request request("GET", url);
  request.body_fd = fd;
  auto r = send(request);
  absl::Status s = check(r, "GET", url);
  off_t size = s.ok() ? ::lseek(fd, 0, SEEK_END) : 0;
  if (s.ok() && size < 0) s = errno_status("seek", path, errno);
  if (::close(fd) != 0 && s.ok()) s = errno_status("close", path, errno);
  if (!s.ok()) {
    ::unlink(path.c_str());
    return s;
  }
  return static_cast<int64_t>(size);
}

std::unique_ptr<S3Client::Writer> S3Client::writer(const S3Url& url) {
  return std::unique_ptr<Writer>(new Writer(this, url));
}

S3Client::Writer::~Writer() {
  if (done_ || upload_id_.empty()) return;
  // Abandoned: the parts are deleted, nothing appears.
  auto r = client_->send(Request("DELETE", url_, query({{"uploadId", upload_id_}})));
  absl::Status s = check(r, "DELETE (abort upload)", url_);
  // Its parts stay until the bucket's lifecycle rules remove them; they
  // never appear as the object.
  if (!s.ok()) spdlog::warn("could not abort an upload: {}", std::string(s.message()));
}

absl::Status S3Client::Writer::append(std::string_view bytes) {
  while (!bytes.empty()) {
    const size_t room = client_->settings_.part_bytes - buffer_.size();
    const size_t n = std::min(room, bytes.size());
    buffer_.append(bytes.substr(0, n));
    bytes.remove_prefix(n);
    if (buffer_.size() == client_->settings_.part_bytes) {
      absl::Status s = flush_part();
      if (!s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

absl::Status S3Client::Writer::flush_part() {
  if (upload_id_.empty()) {
    auto r = client_->send(Request("POST", url_, query({{"uploads", ""}})));
    absl::Status s = check(r, "POST (start upload)", url_);
    if (!s.ok()) return s;
    pugi::xml_document doc;
    doc.load_buffer(r->body.data(), r->body.size());
    upload_id_ = doc.child("InitiateMultipartUploadResult").child_value("UploadId");
    if (upload_id_.empty()) return absl::DataLossError("POST " + url_.str() + ": no UploadId in the answer");
  }
  const std::string part = std::to_string(etags_.size() + 1);
  const std::string q = query({{"partNumber", part}, {"uploadId", upload_id_}});
  auto r = client_->send(Request("PUT", url_, q, buffer_));
  absl::Status s = check(r, "PUT (part)", url_);
  if (!s.ok()) return s;
  if (r->etag.empty()) return absl::DataLossError("PUT " + url_.str() + " part " + part + ": no ETag in the answer");
  etags_.push_back(r->etag);
  buffer_.clear();
  return absl::OkStatus();
}

absl::Status S3Client::Writer::finish() {
  if (upload_id_.empty()) {
    absl::Status s = client_->put(url_, buffer_);
    done_ = s.ok();
    return s;
  }
  if (!buffer_.empty()) {
    absl::Status s = flush_part();
    if (!s.ok()) return s;
  }
  std::string xml = "<CompleteMultipartUpload>";
  for (size_t i = 0; i < etags_.size(); ++i) {
    xml += "<Part><PartNumber>" + std::to_string(i + 1) + "</PartNumber><ETag>" + etags_[i] + "</ETag></Part>";
  }
  xml += "</CompleteMultipartUpload>";
  auto r = client_->send(Request("POST", url_, query({{"uploadId", upload_id_}}), xml));
  absl::Status s = check(r, "POST (complete upload)", url_);
  // S3 may answer 200 with an error document when completing fails late.
  if (s.ok() && r->body.find("<Error>") != std::string::npos) {
    s = absl::UnavailableError("POST " + url_.str() + ": " + error_text(r->body));
  }
  done_ = s.ok();
  return s;
}

}  // namespace weir::s3
