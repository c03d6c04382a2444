// What the Kafka source and sink share over librdkafka's C API: client
// handles, configuration with errors that name the setting, and the error
// a client's background threads reported last.
#ifndef WEIR_CONNECTORS_KAFKA_CLIENT_H_
#define WEIR_CONNECTORS_KAFKA_CLIENT_H_

#include <librdkafka/rdkafka.h>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"

namespace weir::kafka {

// How long a metadata, offset or transaction request may take before the
// operation fails (naming the broker list).
inline constexpr std::chrono::milliseconds kRequestTimeout{30'000};

struct HandleDeleter {
  void operator()(rd_kafka_t* rk) const { rd_kafka_destroy(rk); }
};
using Handle = std::unique_ptr<rd_kafka_t, HandleDeleter>;

struct PartitionListDeleter {
  void operator()(rd_kafka_topic_partition_list_t* l) const { rd_kafka_topic_partition_list_destroy(l); }
};
using PartitionList = std::unique_ptr<rd_kafka_topic_partition_list_t, PartitionListDeleter>;

// Errors the client's threads report (all brokers down, fatal producer
// errors). The owner checks it on its own thread.
class ErrorSink {
 public:
  void set(rd_kafka_resp_err_t err, const std::string& reason, bool fatal);
  // The first fatal error, or the latest "all brokers down" while no request
  // has succeeded since.
  std::string fatal() const;
  std::string all_brokers_down() const;
  void clear_brokers_down();

 private:
  mutable std::mutex mu_;
  std::string fatal_;
  std::string brokers_down_;
};

// A client of `type` for `bootstrap` with `settings` (weir's) and then
// `user` (the connector's properties, which win). `errors`, if given,
// receives the client's error callbacks and must outlive the handle;
// `delivery_report` gets each produced message with the opaque it was
// produced with.
absl::StatusOr<Handle> make_client(rd_kafka_type_t type, const std::string& bootstrap,
                                   const std::map<std::string, std::string>& settings,
                                   const std::map<std::string, std::string>& user, ErrorSink* errors,
                                   void (*delivery_report)(rd_kafka_t*, const rd_kafka_message_t*, void*) = nullptr);

// "kafka <bootstrap>: <what>: <error>".
absl::Status error(const std::string& bootstrap, const std::string& what, rd_kafka_resp_err_t err);
absl::Status error(const std::string& bootstrap, const std::string& what, rd_kafka_error_t* err);

// Partition counts of the topics the cluster has, by name.
absl::StatusOr<std::map<std::string, int>> list_topics(rd_kafka_t* rk, const std::string& bootstrap);

}  // namespace weir::kafka

#endif  // WEIR_CONNECTORS_KAFKA_CLIENT_H_
