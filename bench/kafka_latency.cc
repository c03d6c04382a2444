// End-to-end latency of the orders job (examples/orders) over Kafka: orders
// produced at a fixed rate, each stamped with the time it is produced (its
// event time), and the totals read back with read_committed. A window's
// total is complete when the window ends; its latency is the time it was
// read minus the window's end. Runs beside a running `weir example orders`.
//
//   weir_kafka_latency BOOTSTRAP RATE SECONDS
//   -> produced, totals read, latency p50 / p90 / p99 / max in ms (windows
//      that ended after the first 5 s)
#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "nlohmann/json.hpp"

namespace {

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

rd_kafka_t* client(rd_kafka_type_t type, const std::string& bootstrap,
                   const std::vector<std::pair<std::string, std::string>>& settings) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), err, sizeof(err));
  for (const auto& [k, v] : settings) {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof(err)) != RD_KAFKA_CONF_OK) {
      std::fprintf(stderr, "weir_kafka_latency: %s=%s: %s\n", k.c_str(), v.c_str(), err);
      std::exit(2);
    }
  }
  rd_kafka_t* rk = rd_kafka_new(type, conf, err, sizeof(err));
  if (rk == nullptr) {
    std::fprintf(stderr, "weir_kafka_latency: %s\n", err);
    std::exit(1);
  }
  return rk;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: weir_kafka_latency BOOTSTRAP RATE SECONDS\n");
    return 2;
  }
  const std::string bootstrap = argv[1];
  const int64_t rate = std::atoll(argv[2]);
  const int64_t seconds = std::atoll(argv[3]);
  const int64_t start = now_ms();
  const int64_t warmup_until = start + 5000;

  std::atomic<bool> stop{false};
  std::atomic<int64_t> last_read_ms{start};
  std::vector<int64_t> latencies;
  int64_t totals_read = 0;
  std::thread reader([&] {
    rd_kafka_t* c = client(RD_KAFKA_CONSUMER, bootstrap,
                           {{"group.id", "weir-latency"}, {"isolation.level", "read_committed"},
                            {"enable.auto.commit", "false"}, {"auto.offset.reset", "latest"}});
    rd_kafka_poll_set_consumer(c);
    rd_kafka_topic_partition_list_t* topics = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(topics, "order-totals", RD_KAFKA_PARTITION_UA);
    rd_kafka_subscribe(c, topics);
    rd_kafka_topic_partition_list_destroy(topics);
    while (!stop) {
      rd_kafka_message_t* m = rd_kafka_consumer_poll(c, 100);
      if (m == nullptr) continue;
      if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        const int64_t read_at = now_ms();
        last_read_ms = read_at;
        auto j = nlohmann::json::parse(static_cast<const char*>(m->payload),
                                       static_cast<const char*>(m->payload) + m->len, nullptr, false);
        if (j.is_object() && j.contains("window_end")) {
          ++totals_read;
          const int64_t end = j["window_end"].get<int64_t>();
          if (end > warmup_until) latencies.push_back(read_at - end);
        }
      }
      rd_kafka_message_destroy(m);
    }
    rd_kafka_consumer_close(c);
    rd_kafka_destroy(c);
  });

  rd_kafka_t* p = client(RD_KAFKA_PRODUCER, bootstrap, {{"linger.ms", "5"}});
  int64_t produced = 0;
  while (now_ms() - start < seconds * 1000) {
    const int64_t due = (now_ms() - start) * rate / 1000;
    for (; produced < due; ++produced) {
      const int64_t ts = now_ms();
      const std::string customer = "c-" + std::to_string(produced % 100);
      const std::string value = "{\"id\":\"o-" + std::to_string(produced) + "\",\"customer\":\"" + customer +
                                "\",\"amount\":" + std::to_string(1 + produced % 9999) + ",\"ts\":" +
                                std::to_string(ts) + "}";
      while (rd_kafka_producev(p, RD_KAFKA_V_TOPIC("orders"), RD_KAFKA_V_KEY(customer.data(), customer.size()),
                               RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
                               RD_KAFKA_V_TIMESTAMP(ts), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                               RD_KAFKA_V_END) == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        rd_kafka_poll(p, 1);
      }
    }
    rd_kafka_poll(p, 1);
  }
  rd_kafka_flush(p, 10000);
  rd_kafka_destroy(p);
  // The last windows close after the end of production: read until no
  // total came for 3 s (or 20 s passed).
  const int64_t produced_until = now_ms();
  while (now_ms() - last_read_ms.load() < 3000 && now_ms() - produced_until < 20000) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // polling a condition with a deadline
  }
  stop = true;
  reader.join();

  std::sort(latencies.begin(), latencies.end());
  auto at = [&](double q) {
    return latencies.empty() ? -1 : latencies[std::min(latencies.size() - 1, static_cast<size_t>(q * latencies.size()))];
  };
  std::printf("produced %lld orders at %lld/s for %lld s; totals read %lld (%zu measured)\n",
              static_cast<long long>(produced), static_cast<long long>(rate), static_cast<long long>(seconds),
              static_cast<long long>(totals_read), latencies.size());
  std::printf("latency (read - window end) p50 %lld ms, p90 %lld ms, p99 %lld ms, max %lld ms\n",
              static_cast<long long>(at(0.5)), static_cast<long long>(at(0.9)), static_cast<long long>(at(0.99)),
              static_cast<long long>(latencies.empty() ? -1 : latencies.back()));
  return latencies.empty() ? 1 : 0;
}
