// The data plane's wire, for data_plane.cc and data_plane_wire.cc only: the
// frame header and the fields of payloads (little-endian fixed width, a
// string as u32 length and bytes), written with put_* and read with
// PayloadReader, and the TCP options of every data-plane socket. The frames
// themselves are described in data_plane.h (FrameType); its decoders
// (check_hello, decode_open, ...) are defined in data_plane_wire.cc.
#ifndef WEIR_NETWORK_DATA_PLANE_WIRE_H_
#define WEIR_NETWORK_DATA_PLANE_WIRE_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "network/data_plane.h"
#include "network/tls.h"

namespace weir::network::wire {

inline constexpr size_t kHeaderBytes = 9;  // u32 length | u8 type | u32 channel
inline constexpr uint32_t kMaxControlPayload = 64 * 1024;
// The longest secret a hello may carry.
inline constexpr uint32_t kMaxHelloPayload = 4096;

inline void put_u32(std::string& out, uint32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); }
inline void put_i32(std::string& out, int32_t v) { out.append(reinterpret_cast<const char*>(&v), 4); }
inline void put_i64(std::string& out, int64_t v) { out.append(reinterpret_cast<const char*>(&v), 8); }

// Appends a frame header for a payload of `n` bytes.
void put_header(std::string& out, FrameType type, uint32_t channel, size_t n);
// A whole frame.
std::string frame(FrameType type, uint32_t channel, std::string_view payload);
// A channel key as kOpen and kServe carry it.
void put_key(std::string& out, const ChannelKey& key);

struct Header {
  uint32_t length;
  FrameType type;
  uint32_t channel;
};

// The next frame's header; false when the socket ended or failed.
bool read_header(Socket& sock, Header* h);

// Reads the fixed-width fields of a payload.
class PayloadReader {
 public:
  explicit PayloadReader(std::string_view p) : p_(p) {}
  template <typename T>
  bool get(T* v) {
    if (p_.size() < sizeof(T)) return false;
    std::memcpy(v, p_.data(), sizeof(T));
    p_.remove_prefix(sizeof(T));
    return true;
  }
  bool get_string(std::string* s) {
    uint32_t n;
    if (!get(&n) || p_.size() < n) return false;
    s->assign(p_.data(), n);
    p_.remove_prefix(n);
    return true;
  }

 private:
  std::string_view p_;
};

// No batching delay; and a peer that vanished without closing (host down,
// cable pulled) fails the connection after about 10 s of unacknowledged data
// or of silence, instead of never.
void tune_socket(int fd);

}  // namespace weir::network::wire

#endif  // WEIR_NETWORK_DATA_PLANE_WIRE_H_
