#include "network/data_plane.h"

#include <openssl/ssl.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>

#include "common/rate_limited_log.h"
#include "common/wakeup.h"
#include "network/data_plane_wire.h"
#include "network/result_file.h"

namespace weir::network {
namespace {

using wire::frame;
using wire::Header;
using wire::kHeaderBytes;
using wire::kMaxControlPayload;
using wire::kMaxHelloPayload;
using wire::PayloadReader;
using wire::put_header;
using wire::put_i64;
using wire::put_key;
using wire::put_u32;
using wire::read_header;
using wire::tune_socket;

// A peer has this long from connecting to completing its hello, both ways.
constexpr auto kHandshakeTimeout = std::chrono::seconds(5);
// Connections that may wait for their hello at once; fewer when the
// process may open few descriptors (a quarter of them at most), so that
// unauthenticated peers leave the tasks room for their files.
constexpr size_t kMaxPendingHandshakes = 64;

size_t max_pending_handshakes() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return kMaxPendingHandshakes;
  return std::clamp<size_t>(static_cast<size_t>(limit.rlim_cur / 4), 4, kMaxPendingHandshakes);
}

std::string errno_text() { return std::strerror(errno); }

}  // namespace

// ---- sending side ------------------------------------------------------------

class DataPlane::Outbound {
 public:
  Outbound(DataPlane* plane, std::string address, std::unique_ptr<Socket> sock)
      : plane_(plane), address_(std::move(address)), sock_(std::move(sock)) {}
  ~Outbound() {
    stop();
    if (writer_.joinable()) writer_.join();
    if (reader_.joinable()) reader_.join();
  }

  void start() {
    writer_ = std::thread([this] { write_loop(); });
    reader_ = std::thread([this] { read_loop(); });
  }

  // The open queue of channel `key` on this connection, if any.
  std::shared_ptr<LocalChannel> find(const ChannelKey& key) {
    absl::MutexLock lock(&mu_);
    if (dead_) return nullptr;
    for (auto& [id, s] : senders_) {
      if (!(s->key < key) && !(key < s->key) && !s->queue->closed()) return s->queue;
    }
    return nullptr;
  }

  // False when the connection is dead.
  bool add(const ChannelKey& key, const std::shared_ptr<LocalChannel>& queue) {
    absl::MutexLock lock(&mu_);
    if (dead_) return false;
    auto s = std::make_shared<Sender>();
    s->id = next_id_++;
    s->key = key;
    s->queue = queue;
    queue->set_consumer(&wakeup_);
    senders_[s->id] = s;
    wakeup_.notify();
    return true;
  }

  bool dead() {
    absl::MutexLock lock(&mu_);
    return dead_;
  }

  // Queues a frame that belongs to no channel (a kServe request). False
  // when the connection is dead.
  bool send_control(std::string frame_bytes) {
    absl::MutexLock lock(&mu_);
    if (dead_) return false;
    control_ += frame_bytes;
    wakeup_.notify();
    return true;
  }

  void stop() {
    sock_->shutdown();
    fail("shut down");
  }

  const std::string& address() const { return address_; }

 private:
  struct Sender {
    uint32_t id = 0;
    ChannelKey key;
    std::shared_ptr<LocalChannel> queue;
    std::atomic<int64_t> credit{0};
    bool opened = false;  // writer thread only
  };

  // The connection is gone: every channel on it closes, so producers fail
  // at once rather than wait.
  void fail(const std::string& why) {
    std::map<uint32_t, std::shared_ptr<Sender>> senders;
    {
      absl::MutexLock lock(&mu_);
      if (dead_) return;
      dead_ = true;
      senders.swap(senders_);
    }
    if (!plane_->stopping_) spdlog::warn("data connection to {} lost: {}", address_, why);
    for (auto& [id, s] : senders) {
      s->queue->set_consumer(nullptr);
      s->queue->close();
    }
    wakeup_.notify();
    plane_->forget(this);
  }

  void write_loop() {
    std::string out;
    while (true) {
      std::vector<std::shared_ptr<Sender>> senders;
      {
        absl::MutexLock lock(&mu_);
        if (dead_) return;
        for (auto& [id, s] : senders_) senders.push_back(s);
        out += control_;
        control_.clear();
      }
      bool progress = false;
      for (auto& s : senders) {
        if (!s->opened) {
          std::string p;
          put_key(p, s->key);
          out += frame(FrameType::kOpen, s->id, p);
          s->opened = true;
        }
        while (auto ev = s->queue->poll_if(s->credit.load() > 0)) {
          progress = true;
          if (ev->kind == EventKind::kBuffer) {
            s->credit.fetch_sub(1);
            if (const uint64_t continued = ev->buffer.continued_bytes(); continued > 0) {
              put_header(out, FrameType::kBufferContinued, s->id, 8 + ev->buffer.size());
              put_i64(out, static_cast<int64_t>(continued));
            } else {
              put_header(out, FrameType::kBuffer, s->id, ev->buffer.size());
            }
            // Large buffers go straight from the pooled segment.
            if (!sock_->write_all(out.data(), out.size()) ||
                !sock_->write_all(ev->buffer.data(), ev->buffer.size())) {
              return fail(errno_text());
            }
            out.clear();
          } else {
            out += frame(FrameType::kEvent, s->id, encode_event(*ev));
          }
        }
        if (s->queue->closed()) {
          out += frame(FrameType::kClose, s->id, {});
          s->queue->set_consumer(nullptr);
          absl::MutexLock lock(&mu_);
          senders_.erase(s->id);
        }
      }
      if (!out.empty()) {
        if (!sock_->write_all(out.data(), out.size())) return fail(errno_text());
        out.clear();
      }
      if (!progress) wakeup_.wait_until(std::chrono::steady_clock::now() + std::chrono::milliseconds(200));
    }
  }

  void read_loop() {
    Header h;
    while (read_header(*sock_, &h)) {
      if (h.length > kMaxControlPayload) return fail("oversized frame from the receiver");
      std::string payload(h.length, '\0');
      if (!sock_->read_all(payload.data(), payload.size())) break;
      std::shared_ptr<Sender> s;
      {
        absl::MutexLock lock(&mu_);
        auto it = senders_.find(h.channel);
        if (it != senders_.end()) s = it->second;
      }
      if (s == nullptr) continue;  // closed meanwhile
      if (h.type == FrameType::kCredit) {
        uint32_t n = 0;
        PayloadReader(payload).get(&n);
        s->credit.fetch_add(n);
        wakeup_.notify();
      } else if (h.type == FrameType::kBufferSize) {
        uint32_t n = 0;
        PayloadReader(payload).get(&n);
        s->queue->set_target_buffer_size(static_cast<int>(std::min<uint32_t>(n, INT32_MAX)));
      } else if (h.type == FrameType::kClose) {
        s->queue->close();  // the consumer is gone: its producer fails on the next push
        wakeup_.notify();
      } else {
        return fail("unexpected frame type " + std::to_string(static_cast<int>(h.type)));
      }
    }
    fail("closed by the peer");
  }

  DataPlane* const plane_;
  const std::string address_;
  const std::unique_ptr<Socket> sock_;
  std::thread writer_, reader_;
  Wakeup wakeup_;
  absl::Mutex mu_;
  bool dead_ ABSL_GUARDED_BY(mu_) = false;
  uint32_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<uint32_t, std::shared_ptr<Sender>> senders_ ABSL_GUARDED_BY(mu_);
  std::string control_ ABSL_GUARDED_BY(mu_);  // frames of no channel, sent next
};

// ---- receiving side ----------------------------------------------------------

class DataPlane::Inbound : public std::enable_shared_from_this<DataPlane::Inbound> {
 public:
  Inbound(DataPlane* plane, std::unique_ptr<Socket> sock, std::string peer)
      : plane_(plane), sock_(std::move(sock)), peer_(std::move(peer)) {}
  ~Inbound() {
    stop();
    if (thread_.joinable()) {
      // Its own thread held the last reference: it has finished with this.
      if (thread_.get_id() == std::this_thread::get_id()) {
        thread_.detach();
      } else {
        thread_.join();
      }
    }
  }
  void start() {
    // The thread keeps this alive while it runs: a channel's close listener
    // may hold a reference on this very thread (a channel closed before
    // its open arrived calls it at once), and must never be the last one
    // there. The plane joins before it lets go.
    thread_ = std::thread([self = shared_from_this()] { self->run(); });
  }
  void stop() {
    cancelled_ = true;
    sock_->shutdown();
  }
  bool done() const { return done_; }
  void join() {
    if (thread_.joinable()) thread_.join();
  }

 private:
  void send(const std::string& bytes) {
    absl::MutexLock lock(&write_mu_);
    sock_->write_all(bytes.data(), bytes.size());  // a dead socket shows on the read side
  }

  void grant(uint32_t channel, uint32_t n) {
    std::string p;
    put_u32(p, n);
    send(frame(FrameType::kCredit, channel, p));
  }

  void run() {
    serve();
    sock_->shutdown();  // the peer sees the end now, not when this is reaped
    // The sender is gone: its channels close, so consumers see it at once.
    for (auto& [id, ch] : channels_) {
      ch->set_listener({}, {});
      ch->set_target_listener({});
      ch->close();
    }
    channels_.clear();
    done_ = true;
    plane_->wake_acceptor();  // to be reaped now: its descriptor is released
  }

  // The peer passed the handshake (DataPlane::accept_loop).
  void serve() {
    Header h;
    while (read_header(*sock_, &h)) {
      if (h.type == FrameType::kBuffer || h.type == FrameType::kBufferContinued) {
        uint64_t continued = 0;
        if (h.type == FrameType::kBufferContinued) {
          if (h.length < 8 || !sock_->read_all(reinterpret_cast<char*>(&continued), 8)) return;
          h.length -= 8;
        }
        if (h.length > static_cast<uint32_t>(plane_->pool_->buffer_size())) {
          spdlog::warn("data connection from {}: buffer of {} bytes exceeds the buffer size", peer_, h.length);
          return;
        }
        Buffer b = plane_->pool_->request(cancelled_);
        if (!b) return;
        if (!sock_->read_all(b.data(), h.length)) return;
        b.set_size(h.length);
        b.set_continued_bytes(continued);
        auto it = channels_.find(h.channel);
        if (it == channels_.end()) continue;  // closed at this end; the buffer returns to the pool
        ChannelEvent ev;
        ev.kind = EventKind::kBuffer;
        ev.buffer = std::move(b);
        it->second->push(std::move(ev));  // never blocks: the sender spends credit
        continue;
      }
      // An unaligned barrier carries the data it overtook at the sender: at
      // most a channel's capacity of buffers and the one being filled.
      const uint64_t limit =
          h.type == FrameType::kEvent
              ? kMaxControlPayload + static_cast<uint64_t>(plane_->capacity_ + 1) * plane_->pool_->buffer_size()
              : kMaxControlPayload;
      if (h.length > limit) return;
      std::string payload(h.length, '\0');
      if (!sock_->read_all(payload.data(), payload.size())) return;
      if (h.type == FrameType::kOpen) {
        std::optional<ChannelKey> open = decode_open(payload);
        if (!open) {
          spdlog::warn("data connection from {}: malformed open frame", peer_);
          return;
        }
        const ChannelKey& key = *open;
        auto ch = plane_->registry(key.job_id)->get(key);
        const uint32_t id = h.channel;
        std::weak_ptr<Inbound> weak = weak_from_this();
        ch->set_listener(
            [weak, id] {
              if (auto self = weak.lock()) self->grant(id, 1);
            },
            [weak, id] {
              if (auto self = weak.lock()) self->send(frame(FrameType::kClose, id, {}));
            });
        // The consumer's debloated buffer size goes to the producer's end.
        ch->set_target_listener([weak, id](int bytes) {
          if (auto self = weak.lock()) {
            std::string p;
            put_u32(p, static_cast<uint32_t>(bytes));
            self->send(frame(FrameType::kBufferSize, id, p));
          }
        });
        channels_[id] = ch;
        grant(id, static_cast<uint32_t>(plane_->capacity_));
      } else if (h.type == FrameType::kServe) {
        auto serve = decode_serve(payload);
        if (!serve) {
          spdlog::warn("data connection from {}: malformed serve frame", peer_);
          return;
        }
        plane_->serve_result(serve->first, serve->second);
      } else if (h.type == FrameType::kEvent) {
        std::optional<ChannelEvent> ev = decode_event(payload);
        if (!ev) {
          spdlog::warn("data connection from {}: malformed event frame", peer_);
          return;
        }
        auto it = channels_.find(h.channel);
        if (it != channels_.end()) it->second->push(std::move(*ev));
      } else if (h.type == FrameType::kClose) {
        auto it = channels_.find(h.channel);
        if (it != channels_.end()) {
          it->second->set_listener({}, {});
          it->second->set_target_listener({});
          it->second->close();
          channels_.erase(it);
        }
      } else {
        spdlog::warn("data connection from {}: unexpected frame type {}", peer_, static_cast<int>(h.type));
        return;
      }
    }
  }

  DataPlane* const plane_;
  const std::unique_ptr<Socket> sock_;
  const std::string peer_;
  std::thread thread_;
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> done_{false};
  absl::Mutex write_mu_;
  std::map<uint32_t, std::shared_ptr<LocalChannel>> channels_;  // reading thread only
};

// ---- the plane -----------------------------------------------------------------

DataPlane::DataPlane(std::string secret, NetworkBufferPool* pool, int channel_capacity)
    : secret_(std::move(secret)),
      pool_(pool),
      capacity_(channel_capacity),
      acceptor_(GatedAcceptor::Options{"data port", kHandshakeTimeout, max_pending_handshakes(),
                                       max_pending_handshakes()},
                [this](GatedAcceptor::Connection& c, std::string* why) { return read_hello(c, why); },
                [this](GatedAcceptor::Connection c) { admit(std::move(c)); }, [this] { reap_inbound(); }) {}

DataPlane::~DataPlane() { shutdown(); }

absl::Status DataPlane::listen(const std::string& host, int port) {
  auto bound = acceptor_.listen(host, port);
  if (!bound.ok()) return bound.status();
  address_ = host + ":" + std::to_string(*bound);
  return absl::OkStatus();
}

void DataPlane::wake_acceptor() { acceptor_.wake(); }

// On the accepting thread: reads what a connection sent of its hello.
GatedAcceptor::Verdict DataPlane::read_hello(GatedAcceptor::Connection& c, std::string* why) {
  const size_t max = kHeaderBytes + kMaxHelloPayload + 1;
  if (server_tls_ != nullptr) {
    // TLS first (each side shows its certificate), then the hello through it.
    switch (tls_accept_step(c.fd, *server_tls_, &c.tls, why)) {
      case TlsAccept::kWait:
        return GatedAcceptor::Verdict::kWait;
      case TlsAccept::kPlain:
      case TlsAccept::kFailed:
        return GatedAcceptor::Verdict::kDrop;
      case TlsAccept::kReady:
        break;
    }
    if (tls_read_available(c.tls.get(), &c.bytes, max, why) < 0) {
      *why = "closed before the handshake (" + *why + ")";
      return GatedAcceptor::Verdict::kDrop;
    }
  } else {
    char buf[512];
    const size_t room = max - c.bytes.size();
    ssize_t r = ::recv(c.fd, buf, std::min(sizeof(buf), room), 0);
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      *why = "closed before the handshake";
      return GatedAcceptor::Verdict::kDrop;
    }
    if (r > 0) c.bytes.append(buf, static_cast<size_t>(r));
  }
  const HelloState state = check_hello(c.bytes, secret_);
  switch (state) {
    case HelloState::kIncomplete:
      return GatedAcceptor::Verdict::kWait;
    case HelloState::kMalformed:
      *why = "no handshake";
      return GatedAcceptor::Verdict::kDrop;
    case HelloState::kWrongSecret:
    case HelloState::kWrongVersion: {
      *why = state == HelloState::kWrongSecret
                 ? "wrong cluster secret"
                 : "data-plane protocol version " + std::to_string(static_cast<uint8_t>(c.bytes[kHeaderBytes])) +
                       ", but this process speaks version " + std::to_string(kDataPlaneVersion) +
                       " (every process of a cluster must run the same weir)";
      std::string refused = frame(FrameType::kRefused, 0, *why);
      // Best effort: the connection closes either way.
      if (c.tls != nullptr) {
        SSL_write(c.tls.get(), refused.data(), static_cast<int>(refused.size()));
      } else {
        ssize_t w = ::send(c.fd, refused.data(), refused.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        (void)w;
      }
      return GatedAcceptor::Verdict::kDrop;
    }
    case HelloState::kValid:
      break;
  }
  return GatedAcceptor::Verdict::kServe;
}

// On the accepting thread: an authenticated peer gets its reading thread.
void DataPlane::admit(GatedAcceptor::Connection c) {
  ::fcntl(c.fd, F_SETFL, ::fcntl(c.fd, F_GETFL) & ~O_NONBLOCK);
  tune_socket(c.fd);
  auto sock = std::make_unique<Socket>(c.fd, c.tls);
  std::string ok = frame(FrameType::kHelloOk, 0, {});
  if (!sock->write_all(ok.data(), ok.size())) return;  // `sock` closes the descriptor
  auto in = std::make_shared<Inbound>(this, std::move(sock), c.peer());
  absl::MutexLock lock(&mu_);
  if (stopping_) return;  // `in` closes the descriptor
  inbound_.push_back(in);
  in->start();
}

// On the accepting thread, when an inbound connection ended: releases it.
void DataPlane::reap_inbound() {
  absl::MutexLock lock(&mu_);
  std::erase_if(inbound_, [](const std::shared_ptr<Inbound>& c) {
    if (!c->done()) return false;
    c->join();
    return true;
  });
}

ChannelRegistry* DataPlane::registry(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  auto& r = registries_[job_id];
  if (r == nullptr) {
    r = std::make_unique<ChannelRegistry>(capacity_);
    if (released_.count(job_id)) r->release(job_id, INT32_MAX);
  }
  return r.get();
}

void DataPlane::release_job(const std::string& job_id) {
  {
    absl::MutexLock lock(&mu_);
    released_.insert(job_id);
    auto it = registries_.find(job_id);
    if (it != registries_.end()) it->second->release(job_id, INT32_MAX);
  }
  stop_pumps(job_id);
}

void DataPlane::admit_job(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  if (released_.erase(job_id) == 0) return;
  auto it = registries_.find(job_id);
  if (it != registries_.end()) it->second->reopen(job_id);  // kept: readers may hold it
}

absl::StatusOr<std::shared_ptr<DataPlane::Outbound>> DataPlane::connection(const std::string& address) {
  std::shared_ptr<Outbound> conn;
  {
    absl::MutexLock lock(&mu_);
    auto it = outbound_.find(address);
    if (it != outbound_.end()) conn = it->second;
  }
  if (conn == nullptr) {
    auto fd = connect_tcp(address, 5000);
    if (!fd.ok()) return absl::UnavailableError("data connection: " + std::string(fd.status().message()));
    std::shared_ptr<SSL> ssl;
    if (client_tls_ != nullptr) {
      auto hp = parse_address(address);
      auto session = hp.ok() ? tls_connect(*fd, *client_tls_, hp->first, kHandshakeTimeout) : hp.status();
      if (!session.ok()) {
        ::close(*fd);
        return absl::UnavailableError("data connection to " + address + ": " + std::string(session.status().message()));
      }
      ssl = *std::move(session);
    }
    auto sock = std::make_unique<Socket>(*fd, std::move(ssl));
    std::string hello = frame(FrameType::kHello, 0, std::string(1, static_cast<char>(kDataPlaneVersion)) + secret_);
    Header h{};
    sock->set_read_timeout(kHandshakeTimeout);
    if (!sock->write_all(hello.data(), hello.size()) || !read_header(*sock, &h)) {
      std::string why = errno == EAGAIN || errno == EWOULDBLOCK ? "no answer to the handshake within 5 s"
                                                                : "closed during the handshake";
      return absl::UnavailableError("data connection to " + address + ": " + why);
    }
    if (h.type != FrameType::kHelloOk) {
      std::string why(std::min<uint32_t>(h.length, kMaxControlPayload), '\0');
      sock->read_all(why.data(), why.size());
      return absl::PermissionDeniedError("data connection to " + address + " refused: " + why);
    }
    sock->set_read_timeout(std::chrono::milliseconds(0));
    conn = std::make_shared<Outbound>(this, address, std::move(sock));
    absl::MutexLock lock(&mu_);
    if (stopping_) return absl::CancelledError("the data plane is shut down");
    auto [it, inserted] = outbound_.emplace(address, conn);
    if (inserted) {
      conn->start();
    } else {
      dead_outbound_.push_back(conn);  // lost a race; the other connection serves
      conn = it->second;
    }
  }
  return conn;
}

absl::StatusOr<std::shared_ptr<LocalChannel>> DataPlane::outbound(const std::string& address,
                                                                  const ChannelKey& key) {
  for (int tries = 0; tries < 2; ++tries) {
    auto conn = connection(address);
    if (!conn.ok()) return conn.status();
    if (auto open = (*conn)->find(key)) return open;
    auto queue = std::make_shared<LocalChannel>(capacity_);
    if ((*conn)->add(key, queue)) return queue;
  }
  return absl::UnavailableError("data connection to " + address + " keeps failing");
}

absl::Status DataPlane::request_result(const std::string& address, const ChannelKey& key) {
  {
    // Should the connection to `address` fail before the result has
    // arrived, the channel closes, and its consumer fails.
    auto channel = registry(key.job_id)->get(key);
    absl::MutexLock lock(&mu_);
    std::erase_if(requested_, [](const auto& r) { return r.second.expired(); });
    requested_.emplace(address, channel);
  }
  std::string p;
  put_key(p, key);
  put_u32(p, static_cast<uint32_t>(address_.size()));
  p += address_;
  for (int tries = 0; tries < 2; ++tries) {
    auto conn = connection(address);
    if (!conn.ok()) return conn.status();
    if ((*conn)->send_control(frame(FrameType::kServe, 0, p))) return absl::OkStatus();
  }
  return absl::UnavailableError("data connection to " + address + " keeps failing");
}

// ---- serving results -----------------------------------------------------------

struct DataPlane::Pump {
  ChannelKey key;
  std::string reply_to;
  std::thread thread;
  std::atomic<bool> abort{false};
  std::atomic<bool> done{false};
  absl::Mutex mu;
  std::shared_ptr<LocalChannel> out ABSL_GUARDED_BY(mu);

  void stop() {
    abort = true;
    absl::MutexLock lock(&mu);
    if (out != nullptr) out->wake_producer();
  }
};

void DataPlane::serve_result(const ChannelKey& key, const std::string& reply_to) {
  std::vector<std::unique_ptr<Pump>> finished;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;  // the requester's connection closes: it fails its request
    for (auto& p : pumps_) {
      if (p->done) finished.push_back(std::move(p));
    }
    std::erase(pumps_, nullptr);
    auto p = std::make_unique<Pump>();
    p->key = key;
    p->reply_to = reply_to;
    Pump* raw = p.get();
    p->thread = std::thread([this, raw] { pump(raw); });
    pumps_.push_back(std::move(p));
  }
  for (auto& f : finished) f->thread.join();
}

void DataPlane::pump(Pump* p) {
  const std::string what = "result e" + std::to_string(p->key.job_edge) + "-p" + std::to_string(p->key.producer) +
                           "-c" + std::to_string(p->key.consumer) + " of job " + p->key.job_id;
  auto out = outbound(p->reply_to, p->key);
  if (!out.ok()) {
    spdlog::warn("cannot serve {} to {}: {}", what, p->reply_to, std::string(out.status().message()));
    p->done = true;
    return;
  }
  {
    absl::MutexLock lock(&p->mu);
    p->out = *out;
  }
  LocalChannel& ch = **out;
  // The consumer sees its channel close before end-of-data and fails.
  auto refuse = [&](const std::string& why) {
    if (!p->abort) spdlog::warn("cannot serve {} to {}: {}", what, p->reply_to, why);
    ch.close();
    p->done = true;
  };
  // The consumer closed its end (it failed or was cancelled): nothing to say.
  auto gone = [&] {
    if (!p->abort) spdlog::info("stopped serving {} to {}: the consumer went away", what, p->reply_to);
    p->done = true;
  };
  absl::StatusOr<std::string> path =
      locate_ ? locate_(p->key) : absl::NotFoundError("this process keeps no results");
  if (!path.ok()) return refuse(std::string(path.status().message()));
  auto reader = ResultFileReader::open(*path);
  if (!reader.ok()) return refuse(std::string(reader.status().message()));
  try {
    while (std::optional<ChannelEvent> ev = (*reader)->poll()) {
      if (ev->kind != EventKind::kBuffer) {
        if (!ch.push(std::move(*ev), nullptr, &p->abort)) return gone();
        continue;
      }
      // A file's frames are larger than network buffers: the record framing
      // spans buffers anyway, so they are cut anywhere.
      for (size_t at = 0; at < ev->buffer.size();) {
        Buffer b = pool_->request(p->abort);
        if (!b) return gone();  // stopped
        const size_t n = std::min(b.capacity(), ev->buffer.size() - at);
        std::memcpy(b.data(), ev->buffer.data() + at, n);
        b.set_size(n);
        at += n;
        ChannelEvent piece;
        piece.buffer = std::move(b);
        if (!ch.push(std::move(piece), nullptr, &p->abort)) return gone();
      }
    }
  } catch (const std::exception& e) {
    return refuse(e.what());
  }
  // Served: the channel stays open until the consumer closes it (closing
  // here would drop what is still queued).
  p->done = true;
}

void DataPlane::stop_pumps(const std::string& job_id) {
  std::vector<std::unique_ptr<Pump>> stopped;
  {
    absl::MutexLock lock(&mu_);
    for (auto& p : pumps_) {
      if (job_id.empty() || p->key.job_id == job_id) stopped.push_back(std::move(p));
    }
    std::erase(pumps_, nullptr);
  }
  for (auto& p : stopped) p->stop();
  if (!stopped.empty()) pool_->wake_all();
  for (auto& p : stopped) p->thread.join();
}

void DataPlane::forget(Outbound* o) {
  std::vector<std::shared_ptr<LocalChannel>> orphaned;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = outbound_.begin(); it != outbound_.end(); ++it) {
      if (it->second.get() == o) {
        dead_outbound_.push_back(it->second);  // joined at shutdown, not on its own thread
        outbound_.erase(it);
        break;
      }
    }
    auto [first, last] = requested_.equal_range(o->address());
    for (auto it = first; it != last; ++it) {
      if (auto c = it->second.lock()) orphaned.push_back(std::move(c));
    }
    requested_.erase(first, last);
  }
  for (auto& c : orphaned) c->close();
}

void DataPlane::shutdown() {
  if (stopping_.exchange(true)) return;
  acceptor_.shutdown();
  stop_pumps("");
  std::vector<std::shared_ptr<Outbound>> out;
  std::vector<std::shared_ptr<Inbound>> in;
  {
    absl::MutexLock lock(&mu_);
    for (auto& [a, o] : outbound_) out.push_back(o);
    outbound_.clear();
    in.swap(inbound_);
  }
  for (auto& o : out) o->stop();
  for (auto& i : in) i->stop();
  pool_->wake_all();
  out.clear();
  for (auto& i : in) i->join();
  in.clear();
  std::vector<std::shared_ptr<Outbound>> dead;
  {
    absl::MutexLock lock(&mu_);
    dead.swap(dead_outbound_);
  }
  dead.clear();
  absl::MutexLock lock(&mu_);
  for (auto& [job, r] : registries_) r->release(job, INT32_MAX);
}

}  // namespace weir::network
