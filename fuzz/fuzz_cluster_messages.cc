// What an authenticated TaskManager sends the JobManager, and what a new
// leader reads back from the HA store: any bytes either decode or give an
// error, never a crash. The first byte picks the surface: a
// TaskManagerMessage and the encodings inside it (a checkpoint
// acknowledgement's operator states, a source's positions), a job record,
// or a completed checkpoint's pointer in ZooKeeper ("<id>\0<value>").
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "checkpoint/format.h"
#include "cluster/ha_store.h"
#include "cluster/protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0: {
      weir::cluster::proto::TaskManagerMessage m;
      if (!m.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return 0;
      if (m.has_ack()) {
        auto states = weir::cluster::decode_ack_states(m.ack().states());
        if (!states.ok() && states.status().message().empty()) __builtin_trap();
      }
      if (m.has_source_positions()) {
        auto positions = weir::checkpoint::decode_operator_state(m.source_positions().positions());
        if (!positions.ok() && positions.status().message().empty()) __builtin_trap();
      }
      break;
    }
    case 1: {
      auto record = weir::cluster::HaStore::parse_record("0123456789abcdef0123456789abcdef", bytes);
      if (record.ok() && record->job_id() != "0123456789abcdef0123456789abcdef") __builtin_trap();
      break;
    }
    default: {
      const size_t cut = bytes.find('\0');
      if (cut == std::string_view::npos) return 0;
      auto pointer = weir::cluster::HaStore::parse_pointer(bytes.substr(0, cut), bytes.substr(cut + 1));
      if (pointer.ok() && (pointer->id < 0 || pointer->location.empty())) __builtin_trap();
      break;
    }
  }
  return 0;
}
