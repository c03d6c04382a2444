// weir-mock-kafka: librdkafka's mock cluster (a Kafka-protocol broker with
// transactions and idempotence, data in memory) in a process of its own, for
// tests and demos. Prints "bootstrap <host:port,...>" on stdout and on
// stderr once it listens, then serves until SIGTERM, SIGINT or SIGKILL.
// Not a Kafka server for production: nothing survives the process.
// SIGUSR1 takes every broker down (connections closed, new ones refused),
// SIGUSR2 brings them back, for tests of an outage.
//
//   weir-mock-kafka [--brokers N] [--topic NAME:PARTITIONS]...
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

int usage(const char* why) {
  std::fprintf(stderr, "weir-mock-kafka: %s\nusage: weir-mock-kafka [--brokers N] [--topic NAME:PARTITIONS]...\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  int brokers = 1;
  std::vector<std::pair<std::string, int>> topics;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) return usage(("missing value after " + a).c_str());
    std::string v = argv[++i];
    if (a == "--brokers") {
      brokers = std::atoi(v.c_str());
      if (brokers < 1 || brokers > 16) return usage("--brokers must be from 1 to 16");
    } else if (a == "--topic") {
      size_t colon = v.rfind(':');
      int parts = colon == std::string::npos ? 0 : std::atoi(v.c_str() + colon + 1);
      if (colon == 0 || parts < 1) return usage(("--topic " + v + ": expected NAME:PARTITIONS").c_str());
      topics.emplace_back(v.substr(0, colon), parts);
    } else {
      return usage(("unknown option " + a).c_str());
    }
  }

  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGUSR1);
  sigaddset(&stop, SIGUSR2);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);  // before librdkafka starts its threads

  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  if (rd_kafka_conf_set(conf, "log_level", "3", err, sizeof(err)) != RD_KAFKA_CONF_OK) return usage(err);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
  if (rk == nullptr) {
    std::fprintf(stderr, "weir-mock-kafka: cannot create a client handle: %s\n", err);
    return 1;
  }
  rd_kafka_mock_cluster_t* cluster = rd_kafka_mock_cluster_new(rk, brokers);
  if (cluster == nullptr) {
    std::fprintf(stderr, "weir-mock-kafka: cannot start the mock cluster\n");
    return 1;
  }
  for (const auto& [name, parts] : topics) {
    rd_kafka_resp_err_t e = rd_kafka_mock_topic_create(cluster, name.c_str(), parts, 1);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      std::fprintf(stderr, "weir-mock-kafka: cannot create topic %s: %s\n", name.c_str(), rd_kafka_err2str(e));
      return 1;
    }
  }
  const char* bootstrap = rd_kafka_mock_cluster_bootstraps(cluster);
  std::printf("bootstrap %s\n", bootstrap);
  std::fflush(stdout);
  std::fprintf(stderr, "bootstrap %s\n", bootstrap);
  std::fflush(stderr);

  for (;;) {
    int sig = 0;
    sigwait(&stop, &sig);
    if (sig != SIGUSR1 && sig != SIGUSR2) break;
    for (int id = 1; id <= brokers; ++id) {
      if (sig == SIGUSR1) {
        rd_kafka_mock_broker_set_down(cluster, id);
      } else {
        rd_kafka_mock_broker_set_up(cluster, id);
      }
    }
    std::fprintf(stderr, "brokers %s\n", sig == SIGUSR1 ? "down" : "up");
    std::fflush(stderr);
  }
  rd_kafka_mock_cluster_destroy(cluster);
  rd_kafka_destroy(rk);
  return 0;
}
