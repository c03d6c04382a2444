// The data plane between TaskManager processes: channels whose producer and
// consumer run in different processes travel over TCP, carrying the same
// buffers, barriers, watermarks and end-of-data markers as local channels.
//
// Each side keeps a LocalChannel: the producer pushes into a bounded queue
// here, a writer thread drains it onto one connection per peer process, and
// the receiving process pushes what arrives into the consumer's channel from
// its ChannelRegistry. Flow control is credit-based per channel: the
// receiver grants one credit per data buffer its consumer has taken (and
// the channel's capacity at the start), the sender sends a data buffer only
// against a credit, so the receiving thread never blocks on a full channel
// and a slow consumer holds back only its own channel, never the others
// sharing the connection. Events need no credit.
//
// Every connection starts with a hello, `u8 protocol version | secret`; a
// peer of another version (refused naming both) or without the secret is
// refused before any channel opens. Handshakes run on the accepting thread
// without blocking, each within 5 s and at most 64 at once (a quarter of the
// process's descriptor limit if that is less), so silent or
// hostile peers hold neither threads nor the port; only authenticated
// connections get a reading thread. Running out of file descriptors pauses
// accepting for a moment (logged once), never for good.
//
// With set_tls every connection is mutual TLS first (each side shows a
// certificate the cluster's CA signed; the accepting thread runs the
// server handshake a step at a time, network/tls.h), and the hello and all
// frames travel inside it through a network::Socket.
//
// Blocking results stay on the process that wrote them. A consumer in
// another process asks that process for each subpartition it reads
// (request_result, a kServe frame); a thread there reads the result file
// and sends it back as an ordinary channel to the consumer's process, with
// the same credits, so serving a file is backpressured like a running
// producer and its buffers come from the same pool.
//
// Wire format (little-endian): frames of `u32 payload length | u8 type |
// u32 channel id | payload`; see FrameType.
#ifndef WEIR_NETWORK_DATA_PLANE_H_
#define WEIR_NETWORK_DATA_PLANE_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "network/buffer_pool.h"
#include "network/channel_registry.h"
#include "network/gated_acceptor.h"

namespace weir::network {

// DO NOT CHANGE values: the wire protocol uses them.
enum class FrameType : uint8_t {
  kHello = 1,    // client -> server: u8 protocol version | the shared secret
  kHelloOk = 2,  // server -> client
  kRefused = 3,  // server -> client: why, then the server closes
  kOpen = 4,     // sender -> receiver: channel id -> ChannelKey
  kBuffer = 5,   // sender -> receiver: one data buffer
  kEvent = 6,    // sender -> receiver: barrier, watermark, end of data, idle
  kClose = 7,    // either way: the channel is closed at the sending end
  kCredit = 8,   // receiver -> sender: u32 more buffers may be sent
  kServe = 9,    // consumer's process -> producer's: send result `ChannelKey` to the address that follows
  // sender -> receiver: a data buffer that begins inside a record, `u64
  // bytes continuing it | the buffer` (Buffer::continued_bytes)
  kBufferContinued = 10,
  // receiver -> sender: u32 bytes at which to send a buffer, the consumer's
  // debloated size (0: full buffers)
  kBufferSize = 11,
};

class DataPlane {
 public:
  // `pool` holds the buffers of received data; `channel_capacity` is the
  // data buffers a channel holds (its initial credit).
  DataPlane(std::string secret, NetworkBufferPool* pool, int channel_capacity);
  ~DataPlane();
  DataPlane(const DataPlane&) = delete;
  DataPlane& operator=(const DataPlane&) = delete;

  // Listens on host:port (0: any free port).
  // TLS on its connections (before listen): `server` for those it
  // accepts (requiring the peer's certificate), `client` for those it makes.
  // Default: plain TCP.
  void set_tls(std::shared_ptr<const TlsContext> server, std::shared_ptr<const TlsContext> client) {
    server_tls_ = std::move(server);
    client_tls_ = std::move(client);
  }
  absl::Status listen(const std::string& host, int port);
  // host:port peers connect to.
  const std::string& address() const { return address_; }

  // The channels of a job on this process, local and remotely fed.
  ChannelRegistry* registry(const std::string& job_id);
  // Closes the job's channels and forgets them; later arrivals for the job
  // find them closed, until admit_job.
  void release_job(const std::string& job_id);
  // The job is deployed here (again).
  void admit_job(const std::string& job_id);

  // The sending end of channel `key` towards the process at `address`: a
  // queue of `capacity` data buffers the producer pushes into. Connects on
  // first use; an error names the peer. A channel still open is the same
  // queue (--failover task: a producer's next attempt writes on where the
  // last stopped, as on a local channel).
  absl::StatusOr<std::shared_ptr<LocalChannel>> outbound(const std::string& address, const ChannelKey& key);

  // Where this process keeps the result file of the subpartition `key`
  // names (producer -> consumer of job edge key.job_edge), or an error when
  // it holds none. Set before listen.
  using ResultLocator = std::function<absl::StatusOr<std::string>(const ChannelKey&)>;
  void set_result_locator(ResultLocator locate) { locate_ = std::move(locate); }
  // Asks the process at `address`, which wrote the result, to send the
  // subpartition `key` names into this process's channel `key`
  // (registry(key.job_id)->get(key)). An error names the peer.
  absl::Status request_result(const std::string& address, const ChannelKey& key);

  // Closes every connection; channels on them close too.
  void shutdown();

 private:
  class Outbound;
  class Inbound;
  struct Pump;

  absl::StatusOr<std::shared_ptr<Outbound>> connection(const std::string& address);
  // Starts a thread sending the result `key` names to `reply_to`.
  void serve_result(const ChannelKey& key, const std::string& reply_to);
  void pump(Pump* p);
  // Stops the pumps of `job_id` (every job's when empty) and joins them.
  void stop_pumps(const std::string& job_id);
  GatedAcceptor::Verdict read_hello(GatedAcceptor::Connection& c, std::string* why);
  void admit(GatedAcceptor::Connection c);
  void reap_inbound();
  void wake_acceptor();
  void forget(Outbound* o);

  const std::string secret_;
  std::shared_ptr<const TlsContext> server_tls_, client_tls_;  // null: plain TCP
  NetworkBufferPool* const pool_;
  const int capacity_;
  std::string address_;
  std::atomic<bool> stopping_{false};

  // Runs the handshakes; declared last of what its callbacks use.
  GatedAcceptor acceptor_;

  absl::Mutex mu_;
  std::map<std::string, std::unique_ptr<ChannelRegistry>> registries_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> released_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<Outbound>> outbound_ ABSL_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<Inbound>> inbound_ ABSL_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<Outbound>> dead_outbound_ ABSL_GUARDED_BY(mu_);  // joined at shutdown
  ResultLocator locate_;
  std::vector<std::unique_ptr<Pump>> pumps_ ABSL_GUARDED_BY(mu_);
  // The channels of results requested, by the address asked.
  std::multimap<std::string, std::weak_ptr<LocalChannel>> requested_ ABSL_GUARDED_BY(mu_);
};

// Decoders of what peers send, each refusing (nullopt, kMalformed) what is
// not well formed.
enum class HelloState { kIncomplete, kValid, kWrongSecret, kWrongVersion, kMalformed };
// The data plane's protocol version, the first byte of every hello: a peer
// speaking another (a weir of another version) is refused, naming both.
inline constexpr uint8_t kDataPlaneVersion = 2;
// The bytes a connection sent so far against its expected hello frame.
HelloState check_hello(std::string_view bytes, std::string_view secret);
// The payload of a kOpen frame: the channel it opens.
std::optional<ChannelKey> decode_open(std::string_view payload);
// The payload of a kEvent frame: a barrier, watermark, end of data, idle
// marker, reset or round marker: `u8 kind | i64 checkpoint id (a round's
// number) | i64 timestamp | u8 flags (1 idle, 2 savepoint, 4 priority,
// 8 final, 16 dirty)`, and for a priority barrier the data it overtook at
// the sender as a string (u32 length | bytes).
std::string encode_event(const ChannelEvent& ev);
std::optional<ChannelEvent> decode_event(std::string_view payload);
// The payload of a kServe frame: the subpartition (as the channel that
// carries it back) and the address to send it to.
std::optional<std::pair<ChannelKey, std::string>> decode_serve(std::string_view payload);

// Splits "host:port"; an error names the address.
absl::StatusOr<std::pair<std::string, int>> parse_address(const std::string& address);
// Compares a given secret with the expected one in time independent of
// where they differ. Every port of the cluster checks secrets with it.
bool secrets_equal(std::string_view given, std::string_view expected);
// A connected TCP socket to host:port, or an error naming it.
absl::StatusOr<int> connect_tcp(const std::string& address, int timeout_ms);

}  // namespace weir::network

#endif  // WEIR_NETWORK_DATA_PLANE_H_
