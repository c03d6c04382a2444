#include "cluster/protocol.h"

#include <tuple>

#include "network/data_plane.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace weir::cluster {
namespace {

absl::StatusOr<std::string> read_secret_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError("cannot read the secret file " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  if (!s.empty() && s.back() == '\n') s.pop_back();
  if (!s.empty() && s.back() == '\r') s.pop_back();
  if (s.empty()) return absl::InvalidArgumentError("the secret file " + path + " is empty");
  return s;
}

}  // namespace

namespace {

absl::StatusOr<std::string> long_enough(absl::StatusOr<std::string> secret, const std::string& from) {
  if (secret.ok() && secret->size() < kMinSecretBytes) {
    return absl::InvalidArgumentError("the cluster secret " + from + " is " + std::to_string(secret->size()) +
                                      " bytes; it needs at least " + std::to_string(kMinSecretBytes) +
                                      " (e.g. head -c 24 /dev/urandom | base64)");
  }
  return secret;
}

}  // namespace

absl::StatusOr<std::string> load_secret(const std::string& file) {
  if (!file.empty()) return long_enough(read_secret_file(file), "in " + file);
  if (const char* s = std::getenv("WEIR_SECRET"); s != nullptr && *s != '\0') {
    return long_enough(std::string(s), "in $WEIR_SECRET");
  }
  if (const char* f = std::getenv("WEIR_SECRET_FILE"); f != nullptr && *f != '\0') {
    return long_enough(read_secret_file(f), "in " + std::string(f));
  }
  return absl::InvalidArgumentError(
      "no cluster secret: pass --secret-file FILE or set WEIR_SECRET (or WEIR_SECRET_FILE)");
}

grpc::Status check_secret(const grpc::ServerContext& context, const std::string& secret) {
  const auto& md = context.client_metadata();
  auto it = md.find(kAuthMetadata);
  if (it != md.end() &&
      network::secrets_equal(std::string_view(it->second.data(), it->second.size()), "Bearer " + secret)) {
    return grpc::Status::OK;
  }
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                      it == md.end() ? "no cluster secret given" : "wrong cluster secret");
}

void add_secret(grpc::ClientContext* context, const std::string& secret) {
  context->AddMetadata(kAuthMetadata, "Bearer " + secret);
}

namespace {

struct Pems {
  std::string cert, key, ca;
};

absl::StatusOr<Pems> read_pems(const network::TlsFiles& tls) {
  Pems out;
  for (auto [path, flag, text] : {std::tuple{&tls.cert, "--tls-cert", &out.cert},
                                  std::tuple{&tls.key, "--tls-key", &out.key}, std::tuple{&tls.ca, "--tls-ca", &out.ca}}) {
    auto pem = network::read_pem(*path, flag);
    if (!pem.ok()) return pem.status();
    *text = *std::move(pem);
  }
  return out;
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> server_credentials(const network::TlsFiles& tls) {
  if (!tls.enabled()) return grpc::InsecureServerCredentials();
  auto pems = read_pems(tls);
  if (!pems.ok()) return pems.status();
  grpc::SslServerCredentialsOptions o(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  o.pem_root_certs = pems->ca;
  o.pem_key_cert_pairs.push_back({pems->key, pems->cert});
  return grpc::SslServerCredentials(o);
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> channel_credentials(const network::TlsFiles& tls) {
  if (!tls.enabled()) return grpc::InsecureChannelCredentials();
  auto pems = read_pems(tls);
  if (!pems.ok()) return pems.status();
  grpc::SslCredentialsOptions o;
  o.pem_root_certs = pems->ca;
  o.pem_private_key = pems->key;
  o.pem_cert_chain = pems->cert;
  return grpc::SslCredentials(o);
}

std::shared_ptr<grpc::Channel> make_channel(const std::string& address,
                                            std::shared_ptr<grpc::ChannelCredentials> credentials) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, 256 << 20);
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  return grpc::CreateCustomChannel(address, std::move(credentials), args);
}

proto::ExecutionId to_proto(const runtime::ExecutionId& id) {
  proto::ExecutionId p;
  p.set_vertex(id.vertex);
  p.set_subtask(id.subtask);
  p.set_attempt(id.attempt);
  return p;
}

runtime::ExecutionId from_proto(const proto::ExecutionId& id) {
  return runtime::ExecutionId{id.vertex(), id.subtask(), id.attempt()};
}

void to_proto(const std::string& job_id, const runtime::ExecutionId& id, const TaskMetricsSnapshot& m,
              proto::TaskMetrics* out) {
  out->set_job_id(job_id);
  *out->mutable_id() = to_proto(id);
  out->set_records_in(m.records_in);
  out->set_records_out(m.records_out);
  out->set_bytes_in(m.bytes_in);
  out->set_bytes_out(m.bytes_out);
  out->set_backpressured_ms(m.backpressured_ms);
  out->set_idle_ms(m.idle_ms);
  out->set_input_watermark(m.input_watermark);
  out->set_output_watermark(m.output_watermark);
  for (const auto& [name, v] : m.gauges) (*out->mutable_gauges())[name] = v;
}

TaskMetricsSnapshot from_proto(const proto::TaskMetrics& m) {
  TaskMetricsSnapshot s;
  s.records_in = m.records_in();
  s.records_out = m.records_out();
  s.bytes_in = m.bytes_in();
  s.bytes_out = m.bytes_out();
  s.backpressured_ms = m.backpressured_ms();
  s.idle_ms = m.idle_ms();
  s.input_watermark = m.input_watermark();
  s.output_watermark = m.output_watermark();
  for (const auto& [name, v] : m.gauges()) s.gauges[name] = v;
  return s;
}

std::string encode_operator_state(const detail::OperatorStateMap& state) {
  std::string bytes;
  ByteWriter w(&bytes);
  checkpoint::encode_operator_state(state, w);
  return bytes;
}

std::string encode_ack_states(int64_t checkpoint_id, const checkpoint::TaskAck& ack) {
  checkpoint::CheckpointMetadata m;
  m.checkpoint_id = checkpoint_id;
  for (const auto& s : ack.states) {
    checkpoint::OperatorStateHandles h;
    h.uid = s.uid;
    h.parallelism = s.parallelism;
    h.max_parallelism = s.max_parallelism;
    h.subtasks.push_back(s.handle);
    m.operators.push_back(std::move(h));
  }
  return checkpoint::encode_metadata(m);
}

absl::StatusOr<std::vector<checkpoint::AckedOperatorState>> decode_ack_states(std::string_view bytes) {
  auto m = checkpoint::decode_metadata(bytes, "checkpoint acknowledgement");
  if (!m.ok()) return m.status();
  std::vector<checkpoint::AckedOperatorState> out;
  for (auto& op : m->operators) {
    if (op.subtasks.size() != 1) {
      return absl::DataLossError("checkpoint acknowledgement: operator " + op.uid + " without one subtask");
    }
    out.push_back({op.uid, op.parallelism, op.max_parallelism, std::move(op.subtasks[0])});
  }
  return out;
}

absl::Status from_grpc(const grpc::Status& s) {
  if (s.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
}

}  // namespace weir::cluster
