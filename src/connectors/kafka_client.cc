#include "connectors/kafka_client.h"

#include "spdlog/spdlog.h"

namespace weir::kafka {

void ErrorSink::set(rd_kafka_resp_err_t err, const std::string& reason, bool fatal) {
  std::lock_guard<std::mutex> lock(mu_);
  if (fatal) {
    if (fatal_.empty()) fatal_ = reason;
  } else if (err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN) {
    brokers_down_ = reason;
  }
}

std::string ErrorSink::fatal() const {
  std::lock_guard<std::mutex> lock(mu_);
  return fatal_;
}

std::string ErrorSink::all_brokers_down() const {
  std::lock_guard<std::mutex> lock(mu_);
  return brokers_down_;
}

void ErrorSink::clear_brokers_down() {
  std::lock_guard<std::mutex> lock(mu_);
  brokers_down_.clear();
}

namespace {

void on_error(rd_kafka_t* rk, int err, const char* reason, void* opaque) {
  auto* sink = static_cast<ErrorSink*>(opaque);
  if (sink == nullptr) return;
  bool fatal = err == RD_KAFKA_RESP_ERR__FATAL;
  std::string text = reason ? reason : "";
  if (fatal) {
    char buf[512];
    rd_kafka_resp_err_t orig = rd_kafka_fatal_error(rk, buf, sizeof(buf));
    text = std::string(rd_kafka_err2name(orig)) + ": " + buf;
  }
  sink->set(static_cast<rd_kafka_resp_err_t>(err), text, fatal);
}

// librdkafka's own log lines (errors only, log_level 3), through weir's log
// instead of raw to stderr.
void on_log(const rd_kafka_t* rk, int level, const char* facility, const char* line) {
  const char* name = rk != nullptr ? rd_kafka_name(rk) : "kafka";
  if (level <= 3) {
    spdlog::warn("{}: {} {}", name, facility ? facility : "", line ? line : "");
  } else {
    spdlog::info("{}: {} {}", name, facility ? facility : "", line ? line : "");
  }
}

}  // namespace

absl::StatusOr<Handle> make_client(rd_kafka_type_t type, const std::string& bootstrap,
                                   const std::map<std::string, std::string>& settings,
                                   const std::map<std::string, std::string>& user, ErrorSink* errors,
                                   void (*delivery_report)(rd_kafka_t*, const rd_kafka_message_t*, void*)) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  auto set = [&](const std::string& k, const std::string& v) -> absl::Status {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof(err)) != RD_KAFKA_CONF_OK) {
      return absl::InvalidArgumentError("kafka property " + k + "=" + v + ": " + err);
    }
    return absl::OkStatus();
  };
  absl::Status s = set("bootstrap.servers", bootstrap);
  if (s.ok()) s = set("log_level", "3");
  for (const auto& [k, v] : settings) {
    if (s.ok()) s = set(k, v);
  }
  for (const auto& [k, v] : user) {
    if (s.ok()) s = set(k, v);
  }
  if (!s.ok()) {
    rd_kafka_conf_destroy(conf);
    return s;
  }
  if (errors != nullptr) {
    rd_kafka_conf_set_error_cb(conf, on_error);
    rd_kafka_conf_set_opaque(conf, errors);
  }
  if (delivery_report != nullptr) rd_kafka_conf_set_dr_msg_cb(conf, delivery_report);
  rd_kafka_conf_set_log_cb(conf, on_log);
  rd_kafka_t* rk = rd_kafka_new(type, conf, err, sizeof(err));  // owns conf on success
  if (rk == nullptr) {
    rd_kafka_conf_destroy(conf);
    return absl::InvalidArgumentError("kafka " + bootstrap + ": cannot create a client: " + err);
  }
  return Handle(rk);
}

absl::Status error(const std::string& bootstrap, const std::string& what, rd_kafka_resp_err_t err) {
  return absl::UnavailableError("kafka " + bootstrap + ": " + what + ": " + rd_kafka_err2str(err));
}

absl::Status error(const std::string& bootstrap, const std::string& what, rd_kafka_error_t* err) {
  std::string text = rd_kafka_error_string(err);
  rd_kafka_error_destroy(err);
  return absl::UnavailableError("kafka " + bootstrap + ": " + what + ": " + text);
}

absl::StatusOr<std::map<std::string, int>> list_topics(rd_kafka_t* rk, const std::string& bootstrap) {
  const rd_kafka_metadata_t* md = nullptr;
  rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 1, nullptr, &md, static_cast<int>(kRequestTimeout.count()));
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return absl::UnavailableError("kafka " + bootstrap + ": cannot list topics within " +
                                  std::to_string(kRequestTimeout.count() / 1000) + " s (is a broker there?): " +
                                  rd_kafka_err2str(e));
  }
  std::map<std::string, int> out;
  for (int i = 0; i < md->topic_cnt; ++i) {
    const auto& t = md->topics[i];
    if (t.err == RD_KAFKA_RESP_ERR_NO_ERROR) out[t.topic] = t.partition_cnt;
  }
  rd_kafka_metadata_destroy(md);
  return out;
}

}  // namespace weir::kafka
