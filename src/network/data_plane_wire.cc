#include "network/data_plane_wire.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace weir::network {
namespace wire {

void put_header(std::string& out, FrameType type, uint32_t channel, size_t n) {
  put_u32(out, static_cast<uint32_t>(n));
  out.push_back(static_cast<char>(type));
  put_u32(out, channel);
}

std::string frame(FrameType type, uint32_t channel, std::string_view payload) {
  std::string out;
  put_header(out, type, channel, payload.size());
  out.append(payload);
  return out;
}

void put_key(std::string& out, const ChannelKey& key) {
  put_u32(out, static_cast<uint32_t>(key.job_id.size()));
  out += key.job_id;
  put_i32(out, key.attempt);
  put_i32(out, key.job_edge);
  put_i32(out, key.producer);
  put_i32(out, key.consumer);
}

bool read_header(Socket& sock, Header* h) {
  char buf[kHeaderBytes];
  if (!sock.read_all(buf, sizeof(buf))) return false;
  std::memcpy(&h->length, buf, 4);
  h->type = static_cast<FrameType>(buf[4]);
  std::memcpy(&h->channel, buf + 5, 4);
  return true;
}

void tune_socket(int fd) {
  int one = 1, idle = 5, interval = 1, count = 5;
  unsigned int user_timeout_ms = 10000;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof(interval));
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof(count));
  ::setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof(user_timeout_ms));
}

}  // namespace wire

using wire::kHeaderBytes;
using wire::kMaxHelloPayload;
using wire::PayloadReader;
using wire::tune_socket;

bool secrets_equal(std::string_view a, std::string_view b) {
  unsigned diff = a.size() ^ b.size();
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    unsigned char x = i < a.size() ? a[i] : 0, y = i < b.size() ? b[i] : 0;
    diff |= x ^ y;
  }
  return diff == 0;
}

absl::StatusOr<std::pair<std::string, int>> parse_address(const std::string& address) {
  size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == address.size()) {
    return absl::InvalidArgumentError("address '" + address + "' is not HOST:PORT");
  }
  int port = 0;
  for (size_t i = colon + 1; i < address.size(); ++i) {
    if (address[i] < '0' || address[i] > '9' || port > 65535) {
      return absl::InvalidArgumentError("address '" + address + "' has no valid port");
    }
    port = port * 10 + (address[i] - '0');
  }
  if (port > 65535) return absl::InvalidArgumentError("address '" + address + "' has no valid port");
  return std::make_pair(address.substr(0, colon), port);
}

absl::StatusOr<int> connect_tcp(const std::string& address, int timeout_ms) {
  auto hp = parse_address(address);
  if (!hp.ok()) return hp.status();
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(hp->first.c_str(), std::to_string(hp->second).c_str(), &hints, &res);
  if (rc != 0) {
    return absl::UnavailableError("cannot resolve " + address + ": " + ::gai_strerror(rc));
  }
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    ::freeaddrinfo(res);
    return absl::UnavailableError("socket for " + address + ": " + std::strerror(errno));
  }
  rc = ::connect(fd, res->ai_addr, res->ai_addrlen);
  ::freeaddrinfo(res);
  if (rc != 0 && errno != EINPROGRESS) {
    std::string why = std::strerror(errno);
    ::close(fd);
    return absl::UnavailableError("cannot connect to " + address + ": " + why);
  }
  if (rc != 0) {
    pollfd p{fd, POLLOUT, 0};
    rc = ::poll(&p, 1, timeout_ms);
    int err = 0;
    socklen_t len = sizeof(err);
    if (rc == 1) ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (rc != 1 || err != 0) {
      std::string why = rc == 0 ? "timed out" : std::strerror(rc < 0 ? errno : err);
      ::close(fd);
      return absl::UnavailableError("cannot connect to " + address + ": " + why);
    }
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  tune_socket(fd);
  return fd;
}

HelloState check_hello(std::string_view bytes, std::string_view secret) {
  if (bytes.size() < kHeaderBytes) return HelloState::kIncomplete;
  uint32_t length;
  std::memcpy(&length, bytes.data(), 4);
  if (static_cast<FrameType>(bytes[4]) != FrameType::kHello || length > kMaxHelloPayload) {
    return HelloState::kMalformed;
  }
  if (bytes.size() < kHeaderBytes + length) return HelloState::kIncomplete;
  if (bytes.size() > kHeaderBytes + length) return HelloState::kMalformed;  // the peer must wait for the answer
  if (length < 1) return HelloState::kMalformed;
  if (static_cast<uint8_t>(bytes[kHeaderBytes]) != kDataPlaneVersion) return HelloState::kWrongVersion;
  return secrets_equal(bytes.substr(kHeaderBytes + 1), secret) ? HelloState::kValid : HelloState::kWrongSecret;
}

std::optional<ChannelKey> decode_open(std::string_view payload) {
  PayloadReader r(payload);
  ChannelKey key;
  if (!r.get_string(&key.job_id) || !r.get(&key.attempt) || !r.get(&key.job_edge) || !r.get(&key.producer) ||
      !r.get(&key.consumer)) {
    return std::nullopt;
  }
  return key;
}

std::optional<std::pair<ChannelKey, std::string>> decode_serve(std::string_view payload) {
  PayloadReader r(payload);
  std::pair<ChannelKey, std::string> out;
  ChannelKey& key = out.first;
  if (!r.get_string(&key.job_id) || !r.get(&key.attempt) || !r.get(&key.job_edge) || !r.get(&key.producer) ||
      !r.get(&key.consumer) || !r.get_string(&out.second) || out.second.empty()) {
    return std::nullopt;
  }
  return out;
}

std::string encode_event(const ChannelEvent& ev) {
  std::string p;
  p.push_back(static_cast<char>(ev.kind));
  wire::put_i64(p, ev.checkpoint_id);
  wire::put_i64(p, ev.timestamp_ms);
  p.push_back(static_cast<char>((ev.idle ? 1 : 0) | (ev.savepoint ? 2 : 0) | (ev.priority ? 4 : 0) |
                                (ev.final ? 8 : 0) | (ev.dirty ? 16 : 0)));
  if (ev.priority) {
    const std::string_view overtaken = ev.overtaken ? std::string_view(*ev.overtaken) : "";
    wire::put_u32(p, static_cast<uint32_t>(overtaken.size()));
    p.append(overtaken);
  }
  return p;
}

std::optional<ChannelEvent> decode_event(std::string_view payload) {
  PayloadReader r(payload);
  ChannelEvent ev;
  uint8_t kind = 0, flags = 0;
  if (!r.get(&kind) || !r.get(&ev.checkpoint_id) || !r.get(&ev.timestamp_ms) || !r.get(&flags)) return std::nullopt;
  // A buffer travels in its own frame type, never as an event.
  if (kind < static_cast<uint8_t>(EventKind::kBarrier) || kind > static_cast<uint8_t>(EventKind::kRound)) {
    return std::nullopt;
  }
  ev.kind = static_cast<EventKind>(kind);
  ev.idle = flags & 1;
  ev.savepoint = flags & 2;
  ev.priority = flags & 4;
  ev.final = flags & 8;
  ev.dirty = flags & 16;
  if (ev.priority) {
    if (ev.kind != EventKind::kBarrier) return std::nullopt;
    std::string overtaken;
    if (!r.get_string(&overtaken)) return std::nullopt;
    if (!overtaken.empty()) ev.overtaken = std::make_shared<const std::string>(std::move(overtaken));
  }
  return ev;
}

}  // namespace weir::network
