// The TCP data plane between two planes in this process, over loopback:
// order, events, credit-based flow control per channel, closing, serving
// result files, and the handshake.
#include "network/data_plane.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <random>
#include <thread>
#include <vector>

#include "common/wakeup.h"
#include "network/result_file.h"
#include "testing/seed.h"
#include "tests/tls_certs.h"

namespace weir::network {
namespace data_plane_test {

constexpr size_t kHeaderBytesForTest = 9;  // u32 length | u8 type | u32 channel (data_plane.h)

using namespace std::chrono_literals;

constexpr int kCapacity = 4;

// Every test of the fixture runs over plain TCP and over mutual TLS.
class DataPlaneTest : public ::testing::TestWithParam<bool> {
 protected:
  DataPlaneTest()
      : sender_pool_(64, 1024), receiver_pool_(64, 1024),
        sender_("secret", &sender_pool_, kCapacity), receiver_("secret", &receiver_pool_, kCapacity) {
    results_ = ::testing::TempDir() + "weir-data-plane-test-" + std::to_string(::getpid());
    std::filesystem::remove_all(results_);
    // The sender keeps results of job "job" only.
    sender_.set_result_locator([dir = results_](const ChannelKey& k) -> absl::StatusOr<std::string> {
      if (k.job_id != "job") return absl::NotFoundError("no job " + k.job_id + " here");
      return result_file_path(dir, k.job_edge, k.producer, k.consumer);
    });
  }
  ~DataPlaneTest() override { std::filesystem::remove_all(results_); }
  void SetUp() override {
    if (GetParam()) {
      const testing::TestCerts& certs = testing::test_certs();
      ASSERT_EQ(certs.error, "");
      for (DataPlane* plane : {&sender_, &receiver_}) {
        auto server = TlsContext::create(certs.files(), TlsContext::Role::kServer, /*require_client_cert=*/true);
        auto client = TlsContext::create(certs.files(), TlsContext::Role::kClient, false);
        ASSERT_TRUE(server.ok()) << server.status();
        ASSERT_TRUE(client.ok()) << client.status();
        plane->set_tls(*server, *client);
      }
    }
    ASSERT_TRUE(sender_.listen("127.0.0.1", 0).ok());
    ASSERT_TRUE(receiver_.listen("127.0.0.1", 0).ok());
  }

  ChannelKey key(int consumer) { return ChannelKey{"job", 0, 0, 0, consumer}; }

  // Pushes a one-int buffer; blocks while the queue is full.
  bool push_value(LocalChannel& ch, int v) {
    std::atomic<bool> cancelled{false};
    Buffer b = sender_pool_.request(cancelled);
    std::memcpy(b.data(), &v, sizeof(v));
    b.set_size(sizeof(v));
    ChannelEvent ev;
    ev.buffer = std::move(b);
    return ch.push(std::move(ev));
  }

  // The next event, waiting on the channel's wakeup up to 10 s.
  std::optional<ChannelEvent> next(LocalChannel& ch) {
    Wakeup wakeup;
    ch.set_consumer(&wakeup);
    auto until = std::chrono::steady_clock::now() + 10s;
    std::optional<ChannelEvent> ev;
    while (!(ev = ch.poll()) && std::chrono::steady_clock::now() < until) wakeup.wait_until(until);
    ch.set_consumer(nullptr);
    return ev;
  }

  // Waits up to 10 s for the receiving end `ch` to close.
  static bool closes(LocalChannel& ch) {
    Wakeup wakeup;
    ch.set_consumer(&wakeup);
    auto until = std::chrono::steady_clock::now() + 10s;
    while (!ch.closed() && std::chrono::steady_clock::now() < until) wakeup.wait_until(until);
    ch.set_consumer(nullptr);
    return ch.closed();
  }

  // Reads a served result to its end-of-data (or its error), each event
  // waited for up to 10 s. Returns the data bytes; `events` gets the kinds.
  static std::string read_served(ServedResultReader& r, std::vector<EventKind>* events, std::string* error) {
    Wakeup wakeup;
    r.set_consumer(&wakeup);
    std::string bytes;
    auto until = std::chrono::steady_clock::now() + 10s;
    try {
      while (std::chrono::steady_clock::now() < until) {
        std::optional<ChannelEvent> ev = r.poll();
        if (!ev) {
          wakeup.wait_until(std::min(until, std::chrono::steady_clock::now() + 50ms));
          continue;
        }
        events->push_back(ev->kind);
        if (ev->kind == EventKind::kBuffer) bytes.append(ev->buffer.data(), ev->buffer.size());
        if (ev->kind == EventKind::kEndOfData) break;
      }
    } catch (const std::exception& e) {
      *error = e.what();
    }
    r.set_consumer(nullptr);
    return bytes;
  }

  NetworkBufferPool sender_pool_, receiver_pool_;
  DataPlane sender_, receiver_;
  std::string results_;
};

TEST_P(DataPlaneTest, BuffersAndEventsArriveInOrder) {
  auto out = sender_.outbound(receiver_.address(), key(0));
  ASSERT_TRUE(out.ok()) << out.status();
  auto in = receiver_.registry("job")->get(key(0));
  std::thread producer([&] {
    for (int i = 0; i < 100; ++i) {
      ASSERT_TRUE(push_value(**out, i));
      if (i % 10 == 9) {
        ChannelEvent barrier;
        barrier.kind = EventKind::kBarrier;
        barrier.checkpoint_id = i;
        barrier.timestamp_ms = 1000 + i;
        barrier.savepoint = true;
        ASSERT_TRUE((*out)->push(std::move(barrier)));
      }
    }
    ChannelEvent end;
    end.kind = EventKind::kEndOfData;
    ASSERT_TRUE((*out)->push(std::move(end)));
  });
  for (int i = 0; i < 100; ++i) {
    auto ev = next(*in);
    ASSERT_TRUE(ev.has_value()) << "buffer " << i;
    ASSERT_EQ(ev->kind, EventKind::kBuffer);
    int v;
    ASSERT_EQ(ev->buffer.size(), sizeof(v));
    std::memcpy(&v, ev->buffer.data(), sizeof(v));
    EXPECT_EQ(v, i);
    if (i % 10 == 9) {
      auto b = next(*in);
      ASSERT_TRUE(b.has_value());
      EXPECT_EQ(b->kind, EventKind::kBarrier);
      EXPECT_EQ(b->checkpoint_id, i);
      EXPECT_EQ(b->timestamp_ms, 1000 + i);
      EXPECT_TRUE(b->savepoint);
    }
  }
  auto end = next(*in);
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->kind, EventKind::kEndOfData);
  producer.join();
}

// Two channels share one connection. The consumer of the first never reads:
// its producer stops after the receiver's and its own queue are full, while
// the second channel carries far more than any buffer count.
// An unaligned checkpoint's barrier across the wire: it leaves the sender
// ahead of the buffers waiting there for credit, and at the receiver goes
// ahead of the buffers queued there too, carrying both in stream order.
TEST_P(DataPlaneTest, APriorityBarrierOvertakesBothEndsAndCarriesTheirData) {
  auto out = sender_.outbound(receiver_.address(), key(0));
  ASSERT_TRUE(out.ok()) << out.status();
  auto in = receiver_.registry("job")->get(key(0));
  const int n = 2 * kCapacity;
  for (int i = 0; i < n; ++i) ASSERT_TRUE(push_value(**out, i));
  // The receiver holds its credit's worth, the sender the rest.
  const auto until = std::chrono::steady_clock::now() + 10s;
  while ((in->queued_buffers() < kCapacity || (*out)->queued_buffers() > kCapacity) &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::yield();
  }
  ASSERT_EQ(in->queued_buffers(), kCapacity);
  ASSERT_EQ((*out)->queued_buffers(), kCapacity);
  ChannelEvent barrier;
  barrier.kind = EventKind::kBarrier;
  barrier.checkpoint_id = 7;
  barrier.priority = true;
  ASSERT_TRUE((*out)->push(std::move(barrier)));
  std::optional<ChannelEvent> b;
  const auto arrive_by = std::chrono::steady_clock::now() + 10s;
  while (!(b = in->poll_priority()) && std::chrono::steady_clock::now() < arrive_by) std::this_thread::yield();
  ASSERT_TRUE(b.has_value()) << "no priority barrier arrived";
  ASSERT_EQ(b->kind, EventKind::kBarrier);
  EXPECT_EQ(b->checkpoint_id, 7);
  EXPECT_TRUE(b->priority);
  ASSERT_NE(b->overtaken, nullptr);
  ASSERT_EQ(b->overtaken->size(), n * sizeof(int));
  for (int i = 0; i < n; ++i) {
    int v;
    std::memcpy(&v, b->overtaken->data() + i * sizeof(int), sizeof(v));
    EXPECT_EQ(v, i) << "overtaken buffer " << i;
  }
  // The data itself still follows, in order.
  for (int i = 0; i < n; ++i) {
    auto ev = next(*in);
    ASSERT_TRUE(ev.has_value()) << "buffer " << i;
    ASSERT_EQ(ev->kind, EventKind::kBuffer);
    int v;
    std::memcpy(&v, ev->buffer.data(), sizeof(v));
    EXPECT_EQ(v, i);
  }
}

// Buffer debloating across the wire: the size the consumer asks of its end
// of a remote channel reaches the producer's end.
TEST_P(DataPlaneTest, TheDebloatedBufferSizeReachesTheSender) {
  auto out = sender_.outbound(receiver_.address(), key(0));
  ASSERT_TRUE(out.ok()) << out.status();
  auto in = receiver_.registry("job")->get(key(0));
  ASSERT_TRUE(push_value(**out, 1));
  ASSERT_TRUE(next(*in).has_value());  // the channel is open at both ends
  in->set_target_buffer_size(700);
  const auto until = std::chrono::steady_clock::now() + 10s;
  while ((*out)->target_buffer_size() != 700 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  EXPECT_EQ((*out)->target_buffer_size(), 700);
  in->set_target_buffer_size(0);
  while ((*out)->target_buffer_size() != 0 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  EXPECT_EQ((*out)->target_buffer_size(), 0);
}

TEST_P(DataPlaneTest, SlowConsumerBackpressuresOnlyItsOwnChannel) {
  auto slow_out = sender_.outbound(receiver_.address(), key(0));
  auto fast_out = sender_.outbound(receiver_.address(), key(1));
  ASSERT_TRUE(slow_out.ok() && fast_out.ok());
  auto slow_in = receiver_.registry("job")->get(key(0));
  auto fast_in = receiver_.registry("job")->get(key(1));

  std::atomic<int> slow_pushed{0};
  std::thread slow_producer([&] {
    for (int i = 0; i < 1000; ++i) {
      if (!push_value(**slow_out, i)) return;  // closed at the end of the test
      slow_pushed = i + 1;
    }
  });
  std::thread fast_producer([&] {
    for (int i = 0; i < 1000; ++i) ASSERT_TRUE(push_value(**fast_out, i));
  });
  for (int i = 0; i < 1000; ++i) {
    auto ev = next(*fast_in);
    ASSERT_TRUE(ev.has_value()) << "fast channel stalled at buffer " << i;
    int v;
    std::memcpy(&v, ev->buffer.data(), sizeof(v));
    ASSERT_EQ(v, i);
  }
  fast_producer.join();
  // The slow channel holds its credit's worth at the receiver and a full
  // queue at the sender, plus the one buffer its producer is blocked on.
  EXPECT_LE(slow_pushed.load(), 2 * kCapacity + 1);
  EXPECT_GE(slow_pushed.load(), kCapacity);
  // Taking buffers grants credit: the slow channel moves again.
  for (int i = 0; i < 3 * kCapacity; ++i) {
    auto ev = next(*slow_in);
    ASSERT_TRUE(ev.has_value()) << "slow channel stalled at buffer " << i;
    int v;
    std::memcpy(&v, ev->buffer.data(), sizeof(v));
    ASSERT_EQ(v, i);
  }
  (*slow_out)->close();
  slow_producer.join();
}

TEST_P(DataPlaneTest, ClosingEitherEndClosesTheOther) {
  auto out = sender_.outbound(receiver_.address(), key(0));
  ASSERT_TRUE(out.ok());
  auto in = receiver_.registry("job")->get(key(0));
  ASSERT_TRUE(push_value(**out, 1));
  ASSERT_TRUE(next(*in).has_value());
  (*out)->close();  // the producer ended
  EXPECT_TRUE(closes(*in));

  auto out2 = sender_.outbound(receiver_.address(), key(1));
  ASSERT_TRUE(out2.ok());
  // The sending queue's wakeup belongs to the connection's writer; its close
  // listener tells this test.
  Wakeup producer_side;
  std::atomic<bool> producer_closed{false};
  (*out2)->set_listener({}, [&] {
    producer_closed = true;
    producer_side.notify();
  });
  auto in2 = receiver_.registry("job")->get(key(1));
  ASSERT_TRUE(push_value(**out2, 1));
  ASSERT_TRUE(next(*in2).has_value());
  in2->close();  // the consumer was cancelled: its producer's pushes fail
  auto until = std::chrono::steady_clock::now() + 10s;
  while (!producer_closed && std::chrono::steady_clock::now() < until) producer_side.wait_until(until);
  EXPECT_TRUE((*out2)->closed());
  EXPECT_FALSE(push_value(**out2, 2));
}

// A result file kept by the sender's process reaches the receiver's when it
// asks: every byte, in order with its events, although its frames are far
// larger than the receiver's 1 KiB buffers (and the channel holds 4).
TEST_P(DataPlaneTest, ResultFilesAreServedOnRequest) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  auto file = ResultFileWriter::create(result_file_path(results_, 2, 1, 0), /*durable=*/false);
  ASSERT_TRUE(file.ok()) << file.status();
  std::string written;
  std::vector<EventKind> expected_events;
  NetworkBufferPool big(4, 64 * 1024);
  std::atomic<bool> cancelled{false};
  for (int i = 0; i < 40; ++i) {
    Buffer b = big.request(cancelled);
    const size_t n = 1 + rng() % (64 * 1024 - 1);
    for (size_t k = 0; k < n; ++k) b.data()[k] = static_cast<char>(rng());
    b.set_size(n);
    written.append(b.data(), n);
    ChannelEvent ev;
    ev.buffer = std::move(b);
    (*file)->push(std::move(ev));
    if (i % 10 == 9) {
      ChannelEvent wm;
      wm.kind = EventKind::kWatermark;
      wm.timestamp_ms = i;
      (*file)->push(std::move(wm));
    }
  }
  ChannelEvent end;
  end.kind = EventKind::kEndOfData;
  (*file)->push(std::move(end));
  const ChannelKey k{"job", 3, 2, 1, 0};
  ASSERT_TRUE(receiver_.request_result(sender_.address(), k).ok());
  ServedResultReader reader(receiver_.registry("job")->get(k), "result e2-p1-c0");
  std::vector<EventKind> events;
  std::string error;
  const std::string got = read_served(reader, &events, &error);
  EXPECT_EQ(error, "");
  EXPECT_EQ(got.size(), written.size());
  EXPECT_TRUE(got == written) << "the served bytes differ from the file's";
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back(), EventKind::kEndOfData);
  EXPECT_EQ(std::count(events.begin(), events.end(), EventKind::kWatermark), 4);
}

// A result the sender does not hold, and a sender that goes away while
// serving: the consumer's read fails, naming the result, instead of waiting.
TEST_P(DataPlaneTest, AResultThatCannotBeServedFailsItsReader) {
  const ChannelKey missing{"job", 0, 7, 0, 0};
  ASSERT_TRUE(receiver_.request_result(sender_.address(), missing).ok());
  ServedResultReader none(receiver_.registry("job")->get(missing), "result e7-p0-c0 on the sender");
  std::vector<EventKind> events;
  std::string error;
  read_served(none, &events, &error);
  EXPECT_NE(error.find("result e7-p0-c0 on the sender ended before its end-of-data"), std::string::npos) << error;
  EXPECT_TRUE(events.empty());

  // A file far larger than the channel holds: the sender is still serving it
  // when it shuts down.
  auto file = ResultFileWriter::create(result_file_path(results_, 1, 0, 0), /*durable=*/false);
  ASSERT_TRUE(file.ok()) << file.status();
  for (int i = 0; i < 200; ++i) {
    std::vector<char> bytes(1000, static_cast<char>('a' + i % 26));  // copied into the file at once
    Buffer data(nullptr, bytes.data(), bytes.size());
    data.set_size(bytes.size());
    ChannelEvent ev;
    ev.buffer = std::move(data);
    (*file)->push(std::move(ev));
  }
  ChannelEvent end;
  end.kind = EventKind::kEndOfData;
  (*file)->push(std::move(end));
  const ChannelKey k{"job", 0, 1, 0, 0};
  ASSERT_TRUE(receiver_.request_result(sender_.address(), k).ok());
  ServedResultReader reader(receiver_.registry("job")->get(k), "result e1-p0-c0");
  auto first = next(*receiver_.registry("job")->get(k));
  ASSERT_TRUE(first.has_value());
  sender_.shutdown();
  events.clear();
  error.clear();
  read_served(reader, &events, &error);
  EXPECT_NE(error.find("result e1-p0-c0 ended before its end-of-data"), std::string::npos) << error;
}

// --failover task across processes: a buffer that begins inside a record
// keeps saying how many bytes it continues, a reset arrives as an event,
// and a producer's next attempt gets the sending queue its last one left
// open (a closed one is replaced).
TEST_P(DataPlaneTest, TaskFailoverMarksCrossTheWireAndOpenQueuesAreShared) {
  auto out = sender_.outbound(receiver_.address(), key(0));
  ASSERT_TRUE(out.ok()) << out.status();
  auto again = sender_.outbound(receiver_.address(), key(0));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(out->get(), again->get()) << "a second attempt got a second queue for one channel";
  std::atomic<bool> cancelled{false};
  Buffer b = sender_pool_.request(cancelled);
  std::memcpy(b.data(), "abcdefgh", 8);
  b.set_size(8);
  b.set_continued_bytes(5);
  ChannelEvent data;
  data.buffer = std::move(b);
  ASSERT_TRUE((*out)->push(std::move(data)));
  ChannelEvent reset;
  reset.kind = EventKind::kReset;
  ASSERT_TRUE((*out)->push(std::move(reset)));
  ASSERT_TRUE(push_value(**out, 7));
  auto in = receiver_.registry("job")->get(key(0));
  auto first = next(*in);
  ASSERT_TRUE(first.has_value());
  ASSERT_EQ(first->kind, EventKind::kBuffer);
  EXPECT_EQ(std::string(first->buffer.data(), first->buffer.size()), "abcdefgh");
  EXPECT_EQ(first->buffer.continued_bytes(), 5u);
  auto second = next(*in);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->kind, EventKind::kReset);
  auto third = next(*in);
  ASSERT_TRUE(third.has_value());
  EXPECT_EQ(third->buffer.continued_bytes(), 0u);
  (*out)->close();
  auto fresh = sender_.outbound(receiver_.address(), key(0));
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_NE(fresh->get(), out->get());
}

TEST_P(DataPlaneTest, ReleasedJobsChannelsComeBackClosed) {
  receiver_.release_job("job");
  EXPECT_TRUE(receiver_.registry("job")->get(key(0))->closed());
}

INSTANTIATE_TEST_SUITE_P(PlainAndTls, DataPlaneTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) { return p.param ? "tls" : "plain"; });

TEST(DataPlaneHandshakeTest, WrongSecretIsRefusedNamingTheCause) {
  NetworkBufferPool pool(8, 1024);
  DataPlane server("right", &pool, kCapacity), client("wrong", &pool, kCapacity);
  ASSERT_TRUE(server.listen("127.0.0.1", 0).ok());
  auto out = client.outbound(server.address(), ChannelKey{"job", 0, 0, 0, 0});
  ASSERT_FALSE(out.ok());
  EXPECT_TRUE(absl::IsPermissionDenied(out.status())) << out.status();
  EXPECT_NE(out.status().message().find("wrong cluster secret"), std::string_view::npos) << out.status();
}

TEST(DataPlaneHandshakeTest, UnreachablePeerIsNamed) {
  NetworkBufferPool pool(8, 1024);
  DataPlane client("s", &pool, kCapacity);
  auto out = client.outbound("127.0.0.1:1", ChannelKey{"job", 0, 0, 0, 0});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("127.0.0.1:1"), std::string_view::npos) << out.status();
  EXPECT_FALSE(parse_address("no-port").ok());
  EXPECT_FALSE(parse_address("host:99999").ok());
}

// Silent peers (connected, never a hello) get no thread and are dropped
// after the handshake deadline; beyond 64 waiting, the oldest go at once.
// Meanwhile a real peer connects and sends as usual.
// A peer of another protocol version (another weir) is refused with both
// versions named, whatever secret it carries.
TEST(DataPlaneHandshakeTest, AnotherProtocolVersionIsRefusedNamingBoth) {
  NetworkBufferPool pool(8, 1024);
  DataPlane server("s", &pool, kCapacity);
  ASSERT_TRUE(server.listen("127.0.0.1", 0).ok());
  std::string hello;
  const uint32_t length = 2;
  hello.append(reinterpret_cast<const char*>(&length), 4);
  hello.push_back(static_cast<char>(FrameType::kHello));
  hello.append(4, '\0');
  hello.push_back(static_cast<char>(kDataPlaneVersion + 1));
  hello.push_back('s');
  EXPECT_EQ(check_hello(hello, "s"), HelloState::kWrongVersion);
  hello[kHeaderBytesForTest] = static_cast<char>(kDataPlaneVersion);
  EXPECT_EQ(check_hello(hello, "s"), HelloState::kValid);
  hello[kHeaderBytesForTest] = static_cast<char>(kDataPlaneVersion + 1);

  auto fd = connect_tcp(server.address(), 5000);
  ASSERT_TRUE(fd.ok()) << fd.status();
  ASSERT_EQ(::send(*fd, hello.data(), hello.size(), MSG_NOSIGNAL), static_cast<ssize_t>(hello.size()));
  char header[kHeaderBytesForTest];
  ASSERT_EQ(::recv(*fd, header, sizeof(header), MSG_WAITALL), static_cast<ssize_t>(sizeof(header)));
  EXPECT_EQ(header[4], static_cast<char>(FrameType::kRefused));
  uint32_t n;
  std::memcpy(&n, header, 4);
  std::string why(n, '\0');
  ASSERT_EQ(::recv(*fd, why.data(), n, MSG_WAITALL), static_cast<ssize_t>(n));
  EXPECT_EQ(why, "data-plane protocol version " + std::to_string(kDataPlaneVersion + 1) +
                     ", but this process speaks version " + std::to_string(kDataPlaneVersion) +
                     " (every process of a cluster must run the same weir)");
  ::close(*fd);
}

TEST(DataPlaneHandshakeTest, SilentPeersAreDroppedAndDoNotBlockRealOnes) {
  NetworkBufferPool pool(16, 1024);
  DataPlane server("s", &pool, kCapacity), client("s", &pool, kCapacity);
  ASSERT_TRUE(server.listen("127.0.0.1", 0).ok());
  std::vector<int> silent;
  for (int i = 0; i < 150; ++i) {
    auto fd = connect_tcp(server.address(), 5000);
    ASSERT_TRUE(fd.ok()) << fd.status();
    silent.push_back(*fd);
  }
  auto out = client.outbound(server.address(), ChannelKey{"job", 0, 0, 0, 0});
  ASSERT_TRUE(out.ok()) << out.status();
  auto in = server.registry("job")->get(ChannelKey{"job", 0, 0, 0, 0});
  ChannelEvent end;
  end.kind = EventKind::kEndOfData;
  ASSERT_TRUE((*out)->push(std::move(end)));
  Wakeup wakeup;
  in->set_consumer(&wakeup);
  auto until = std::chrono::steady_clock::now() + 10s;
  std::optional<ChannelEvent> got;
  while (!(got = in->poll()) && std::chrono::steady_clock::now() < until) wakeup.wait_until(until);
  in->set_consumer(nullptr);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->kind, EventKind::kEndOfData);
  // Every silent connection is closed by the server: the 5 s deadline plus slack.
  for (int fd : silent) {
    pollfd p{fd, POLLIN, 0};
    ASSERT_EQ(::poll(&p, 1, 15000), 1) << "a silent connection was still open after 15 s";
    char c;
    EXPECT_LE(::recv(fd, &c, 1, 0), 0);
    ::close(fd);
  }
}

// A peer that accepts the connection but never answers the hello is an
// error within the handshake deadline, not a hang.
TEST(DataPlaneHandshakeTest, PeerThatNeverAnswersIsAnErrorNotAHang) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(::listen(fd, 8), 0);  // the kernel completes connections; nobody reads
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  NetworkBufferPool pool(8, 1024);
  DataPlane client("s", &pool, kCapacity);
  auto out = client.outbound("127.0.0.1:" + std::to_string(ntohs(addr.sin_port)), ChannelKey{"job", 0, 0, 0, 0});
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("no answer to the handshake"), std::string_view::npos) << out.status();
  ::close(fd);
}

// Found by fuzz_data_plane: an event frame claiming to be a data buffer was
// accepted (and would have reached the task as a buffer without data).
TEST(DataPlaneDecodeTest, EventFramesOfUnknownOrBufferKindAreMalformed) {
  std::string payload(18, '\0');
  payload[0] = static_cast<char>(EventKind::kBarrier);
  auto barrier = decode_event(payload);
  ASSERT_TRUE(barrier.has_value());
  EXPECT_EQ(barrier->kind, EventKind::kBarrier);
  payload[0] = static_cast<char>(EventKind::kReset);
  ASSERT_TRUE(decode_event(payload).has_value());
  payload[0] = static_cast<char>(EventKind::kRound);
  payload[17] = 16;
  auto round = decode_event(payload);
  ASSERT_TRUE(round.has_value());
  EXPECT_TRUE(round->dirty);
  EXPECT_EQ(decode_event(encode_event(*round))->dirty, true);
  payload[17] = 0;
  for (int kind : {0, 7, 200}) {
    payload[0] = static_cast<char>(kind);
    EXPECT_FALSE(decode_event(payload).has_value()) << "kind " << kind;
  }
  EXPECT_FALSE(decode_event(payload.substr(0, 17)).has_value());
  // A priority barrier carries a string of overtaken data; its length may
  // not run past the frame, and only a barrier may be a priority event.
  payload[0] = static_cast<char>(EventKind::kBarrier);
  payload[17] = 4;
  EXPECT_FALSE(decode_event(payload).has_value());
  std::string priority = payload + std::string("\x03\0\0\0abc", 7);
  auto carried = decode_event(priority);
  ASSERT_TRUE(carried.has_value());
  EXPECT_TRUE(carried->priority);
  ASSERT_NE(carried->overtaken, nullptr);
  EXPECT_EQ(*carried->overtaken, "abc");
  EXPECT_FALSE(decode_event(priority.substr(0, priority.size() - 1)).has_value());
  priority[0] = static_cast<char>(EventKind::kWatermark);
  EXPECT_FALSE(decode_event(priority).has_value());
  EXPECT_FALSE(decode_open("").has_value());
  EXPECT_EQ(check_hello(std::string("\0\0\x01\0\x0e\0\0\xe0\0clusr-secret", 21), "s"), HelloState::kMalformed);
}

}  // namespace data_plane_test
}  // namespace weir::network
