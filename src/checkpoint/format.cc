#include "checkpoint/format.h"

#include <xxhash.h>

#include <cstring>

#include "common/file_util.h"

namespace weir::checkpoint {
namespace {

constexpr std::string_view kStateMagic = "WEIRSTAT";
constexpr std::string_view kMetaMagic = "WEIRMETA";
constexpr size_t kHeaderSize = 12;
constexpr size_t kTrailerSize = 8;

void put_header(ByteWriter& w, std::string_view magic, uint32_t version) {
  w.put_bytes(magic.data(), magic.size());
  w.put_fixed<uint32_t>(version);
}

void put_trailer(std::string* out) {
  ByteWriter w(out);
  w.put_fixed<uint64_t>(hash_bytes(out->data(), out->size()));
}

// Checks magic, version and checksum; returns the body between header and
// trailer.
// xxh64 of `bytes`, in chunks; `hashed` (may be null) sees each chunk after.
uint64_t hash_in_chunks(std::string_view bytes, const std::function<void(std::string_view)>& hashed) {
  if (!hashed) return hash_bytes(bytes.data(), bytes.size());
  constexpr size_t kChunk = size_t{8} << 20;
  XXH64_state_t* state = XXH64_createState();
  XXH64_reset(state, 0);
  for (size_t off = 0; off < bytes.size(); off += kChunk) {
    std::string_view chunk = bytes.substr(off, kChunk);
    XXH64_update(state, chunk.data(), chunk.size());
    hashed(chunk);
  }
  uint64_t h = XXH64_digest(state);
  XXH64_freeState(state);
  return h;
}

absl::StatusOr<std::string_view> open_envelope(std::string_view bytes, std::string_view magic,
                                               uint32_t version, std::string_view what,
                                               const std::function<void(std::string_view)>& hashed = nullptr) {
  auto fail = [&](const std::string& why) {
    return absl::DataLossError(std::string(what) + ": " + why);
  };
  if (bytes.size() < kHeaderSize + kTrailerSize) return fail("truncated");
  if (bytes.substr(0, magic.size()) != magic) return fail("not a weir file (bad magic)");
  uint32_t v;
  std::memcpy(&v, bytes.data() + magic.size(), sizeof(v));
  if (v != version) {
    return fail("format version " + std::to_string(v) + ", expected " + std::to_string(version));
  }
  uint64_t stored;
  std::memcpy(&stored, bytes.data() + bytes.size() - kTrailerSize, sizeof(stored));
  if (stored != hash_in_chunks(bytes.substr(0, bytes.size() - kTrailerSize), hashed)) {
    return fail("checksum mismatch");
  }
  return bytes.substr(kHeaderSize, bytes.size() - kHeaderSize - kTrailerSize);
}

}  // namespace

std::string encode_metadata(const CheckpointMetadata& m) {
  std::string out;
  ByteWriter w(&out);
  put_header(w, kMetaMagic, kMetadataVersion);
  w.put_varint(m.checkpoint_id);
  w.put_fixed<int64_t>(m.timestamp_ms);
  w.put_fixed<uint8_t>(m.is_final ? 1 : 0);
  w.put_string(m.job_id);
  w.put_varint(m.operators.size());
  for (const auto& op : m.operators) {
    w.put_string(op.uid);
    w.put_varint(op.parallelism);
    w.put_varint(op.max_parallelism);
    w.put_varint(op.subtasks.size());
    for (const auto& s : op.subtasks) {
      w.put_varint(s.subtask);
      w.put_string(s.file);
      w.put_fixed<uint64_t>(s.file_size);
      w.put_fixed<uint64_t>(s.operator_state_offset);
      w.put_fixed<uint64_t>(s.operator_state_length);
      w.put_fixed<uint64_t>(s.operator_state_checksum);
      w.put_varint(s.key_groups.start);
      w.put_varint(s.key_groups.end);
      w.put_varint(s.kg_offsets.size());
      for (uint64_t o : s.kg_offsets) w.put_fixed<uint64_t>(o);
      w.put_varint(s.native_files.size());
      for (const NativeFile& f : s.native_files) {
        w.put_string(f.path);
        w.put_fixed<uint64_t>(f.size);
        w.put_fixed<uint8_t>(f.shared ? 1 : 0);
        w.put_fixed<uint64_t>(f.checksum);
      }
      w.put_varint(s.native_states.size());
      for (const detail::StateMeta& st : s.native_states) {
        w.put_string(st.name);
        w.put_fixed<uint8_t>(st.kind);
        w.put_string(st.type);
      }
      w.put_varint(s.changelog.size());
      for (const detail::ChangelogFile& f : s.changelog) {
        w.put_string(f.path);
        w.put_fixed<uint64_t>(f.size);
        w.put_fixed<uint8_t>(f.delta ? 1 : 0);
        w.put_varint(f.kg_offsets.size());
        for (uint64_t o : f.kg_offsets) w.put_fixed<uint64_t>(o);
      }
    }
  }
  put_trailer(&out);
  return out;
}

absl::Status verify_operator_state(std::string_view section, const OperatorSubtaskState& handle,
                                   const std::string& what) {
  if (section.size() != handle.operator_state_length) {
    return absl::DataLossError(what + ": operator state of " + std::to_string(section.size()) + " bytes, expected " +
                               std::to_string(handle.operator_state_length));
  }
  if (handle.has_operator_state_checksum && XXH64(section.data(), section.size(), 0) != handle.operator_state_checksum) {
    return absl::DataLossError(what + ": checksum mismatch in the operator state (the file is corrupted)");
  }
  return absl::OkStatus();
}

absl::StatusOr<CheckpointMetadata> decode_metadata(std::string_view bytes, std::string_view what) {
  // Versions 1 (no native state) and 2 (no type signatures) are read too.
  uint32_t version = kMetadataVersion;
  if (bytes.size() >= kHeaderSize) std::memcpy(&version, bytes.data() + kMetaMagic.size(), sizeof(version));
  if (version < 1 || version > kMetadataVersion) version = kMetadataVersion;
  auto body = open_envelope(bytes, kMetaMagic, version, what);
  if (!body.ok()) return body.status();
  ByteReader r(*body);
  CheckpointMetadata m;
  m.checkpoint_id = static_cast<int64_t>(r.get_varint());
  m.timestamp_ms = r.get_fixed<int64_t>();
  m.is_final = r.get_fixed<uint8_t>() != 0;
  m.job_id = r.get_string();
  uint64_t ops = r.get_length();
  for (uint64_t i = 0; i < ops && r.ok(); ++i) {
    OperatorStateHandles op;
    op.uid = r.get_string();
    op.parallelism = static_cast<int>(r.get_varint());
    op.max_parallelism = static_cast<int>(r.get_varint());
    uint64_t subtasks = r.get_length();
    for (uint64_t j = 0; j < subtasks && r.ok(); ++j) {
      OperatorSubtaskState s;
      s.subtask = static_cast<int>(r.get_varint());
      s.file = r.get_string();
      s.file_size = r.get_fixed<uint64_t>();
      s.operator_state_offset = r.get_fixed<uint64_t>();
      s.operator_state_length = r.get_fixed<uint64_t>();
      if (version >= 5) {
        s.operator_state_checksum = r.get_fixed<uint64_t>();
        s.has_operator_state_checksum = true;
      }
      s.key_groups.start = static_cast<int>(r.get_varint());
      s.key_groups.end = static_cast<int>(r.get_varint());
      uint64_t n = r.get_length();
      for (uint64_t k = 0; k < n && r.ok(); ++k) s.kg_offsets.push_back(r.get_fixed<uint64_t>());
      if (version >= 2) {
        uint64_t files = r.get_length();
        for (uint64_t k = 0; k < files && r.ok(); ++k) {
          NativeFile f;
          f.path = r.get_string();
          f.size = r.get_fixed<uint64_t>();
          f.shared = r.get_fixed<uint8_t>() != 0;
          if (version >= 4) {
            f.checksum = r.get_fixed<uint64_t>();
            f.has_checksum = true;
          }
          s.native_files.push_back(std::move(f));
        }
        uint64_t states = r.get_length();
        for (uint64_t k = 0; k < states && r.ok(); ++k) {
          detail::StateMeta st;
          st.name = r.get_string();
          st.kind = r.get_fixed<uint8_t>();
          if (version >= 3) st.type = r.get_string();
          s.native_states.push_back(std::move(st));
        }
      }
      if (version >= 6) {
        const uint64_t files = r.get_length();
        for (uint64_t k = 0; k < files && r.ok(); ++k) {
          detail::ChangelogFile f;
          f.path = r.get_string();
          f.size = r.get_fixed<uint64_t>();
          f.delta = r.get_fixed<uint8_t>() != 0;
          const uint64_t offsets = r.get_length();
          for (uint64_t o = 0; o < offsets && r.ok(); ++o) f.kg_offsets.push_back(r.get_fixed<uint64_t>());
          if (r.ok() && f.kg_offsets.size() != static_cast<size_t>(s.key_groups.size()) + 1) {
            return absl::DataLossError(std::string(what) + ": key-group index of changelog file " + f.path +
                                       " of operator " + op.uid + " is inconsistent");
          }
          s.changelog.push_back(std::move(f));
        }
        if (r.ok() && s.is_changelog() && s.changelog.front().delta) {
          return absl::DataLossError(std::string(what) + ": the changelog of operator " + op.uid +
                                     " does not begin with a base");
        }
      }
      if (r.ok() && !s.keyed_elsewhere() && s.kg_offsets.size() != static_cast<size_t>(s.key_groups.size()) + 1 &&
          !(s.key_groups.empty() && s.kg_offsets.empty())) {
        return absl::DataLossError(std::string(what) + ": key-group index of operator " + op.uid +
                                   " is inconsistent");
      }
      op.subtasks.push_back(std::move(s));
    }
    m.operators.push_back(std::move(op));
  }
  if (!r.ok() || !r.at_end()) return absl::DataLossError(std::string(what) + ": malformed body");
  return m;
}

void encode_operator_state(const detail::OperatorStateMap& state, ByteWriter& w) {
  w.put_varint(state.size());
  for (const auto& [name, list] : state) {
    w.put_string(name);
    w.put_fixed<uint8_t>(static_cast<uint8_t>(list.mode));
    w.put_varint(list.entries.size());
    for (const auto& e : list.entries) w.put_string(e);
  }
}

std::string encode_channel_state(const ChannelState& state) {
  std::string out;
  ByteWriter w(&out);
  w.put_varint(static_cast<uint64_t>(state.job_edge));
  w.put_varint(static_cast<uint64_t>(state.producer));
  w.put_varint(static_cast<uint64_t>(state.consumer));
  out.append(state.records);
  return out;
}

absl::StatusOr<ChannelState> decode_channel_state(std::string_view entry) {
  ByteReader r(entry);
  ChannelState s;
  const uint64_t edge = r.get_varint(), producer = r.get_varint(), consumer = r.get_varint();
  constexpr uint64_t kMax = 1 << 20;
  if (!r.ok() || edge > kMax || producer > kMax || consumer > kMax) {
    return absl::DataLossError("channel state entry is malformed");
  }
  s.job_edge = static_cast<int>(edge);
  s.producer = static_cast<int>(producer);
  s.consumer = static_cast<int>(consumer);
  s.records.assign(entry.substr(entry.size() - r.remaining()));
  return s;
}

absl::StatusOr<detail::OperatorStateMap> decode_operator_state(std::string_view bytes) {
  detail::OperatorStateMap state;
  ByteReader r(bytes);
  uint64_t lists = r.get_length();
  for (uint64_t i = 0; i < lists && r.ok(); ++i) {
    std::string name = r.get_string();
    detail::OperatorListStateData data;
    data.mode = static_cast<detail::Redistribution>(r.get_fixed<uint8_t>());
    uint64_t n = r.get_length();
    for (uint64_t j = 0; j < n && r.ok(); ++j) data.entries.push_back(r.get_string());
    state.emplace(std::move(name), std::move(data));
  }
  if (!r.ok() || !r.at_end()) return absl::DataLossError("operator state is malformed");
  return state;
}

namespace {

// A state file: header, `operator_state`, then the key groups of `keyed`
// when given (offsets into `kg_offsets`), then the checksum.
absl::Status write_file(const detail::OperatorStateMap& operator_state, const detail::KeyedStateSnapshot* keyed,
                        OperatorSubtaskState* handle, ByteSink* sink) {
  // Bytes go through `buf` (one section or key group at a time) into the
  // sink and the running checksum.
  XXH64_state_t* hash = XXH64_createState();
  XXH64_reset(hash, 0);
  uint64_t written = 0;
  std::string buf;
  ByteWriter w(&buf);
  auto flush = [&]() -> absl::Status {
    XXH64_update(hash, buf.data(), buf.size());
    written += buf.size();
    absl::Status s = sink->append(buf);
    buf.clear();
    return s;
  };
  absl::Status s;
  put_header(w, kStateMagic, kStateFileVersion);
  handle->operator_state_offset = buf.size();
  encode_operator_state(operator_state, w);
  handle->operator_state_length = buf.size() - handle->operator_state_offset;
  handle->operator_state_checksum =
      XXH64(buf.data() + handle->operator_state_offset, handle->operator_state_length, 0);
  handle->has_operator_state_checksum = true;
  handle->kg_offsets.clear();
  s = flush();
  if (s.ok() && keyed != nullptr) {
    handle->key_groups = keyed->range();
    for (int kg = handle->key_groups.start; kg < handle->key_groups.end && s.ok(); ++kg) {
      handle->kg_offsets.push_back(written);
      keyed->write_key_group(kg, w);
      s = flush();
    }
    handle->kg_offsets.push_back(written);
  }
  if (s.ok()) {
    w.put_fixed<uint64_t>(XXH64_digest(hash));
    written += buf.size();
    s = sink->append(buf);
  }
  XXH64_freeState(hash);
  handle->file_size = written;
  return s;
}

}  // namespace

absl::Status write_state_file(const detail::OperatorSnapshot& snap, OperatorSubtaskState* handle,
                              ByteSink* sink) {
  const detail::KeyedStateSnapshot* keyed = snap.keyed.get();
  // Native and changelog key groups live in files the metadata lists.
  const bool elsewhere = keyed != nullptr && (keyed->native() != nullptr || keyed->changelog() != nullptr);
  absl::Status s = write_file(snap.operator_state, elsewhere ? nullptr : keyed, handle, sink);
  handle->key_groups = keyed != nullptr ? keyed->range() : KeyGroupRange{};
  if (keyed == nullptr || elsewhere) handle->kg_offsets.clear();
  return s;
}

absl::Status write_changelog_file(const detail::KeyedStateSnapshot& keyed, detail::ChangelogFile* file,
                                  ByteSink* sink) {
  OperatorSubtaskState handle;
  absl::Status s = write_file({}, &keyed, &handle, sink);
  file->size = handle.file_size;
  file->kg_offsets = std::move(handle.kg_offsets);
  file->delta = keyed.changelog() != nullptr && keyed.changelog()->delta();
  return s;
}

std::string encode_state_file(const detail::OperatorSnapshot& snap, OperatorSubtaskState* handle) {
  struct StringSink final : ByteSink {
    std::string out;
    absl::Status append(std::string_view b) override {
      out.append(b);
      return absl::OkStatus();
    }
  } sink;
  (void)write_state_file(snap, handle, &sink);  // a string sink cannot fail
  return std::move(sink.out);
}

absl::StatusOr<uint64_t> checksum_file(const std::string& path) {
  auto file = MappedFile::open(path);
  if (!file.ok()) return file.status();
  // Pages leave the process as they are hashed: a large SST costs no memory.
  return hash_in_chunks((*file)->bytes(), [&file](std::string_view chunk) { (*file)->release(chunk); });
}

absl::Status verify_state_file(std::string_view bytes, std::string_view what,
                               const std::function<void(std::string_view)>& hashed) {
  // Version 1 differs only inside key-group blobs (no type signatures),
  // which their reader tells apart by a flag in the kind byte; version 2
  // only in holding no channel state.
  uint32_t version = kStateFileVersion;
  if (bytes.size() >= kHeaderSize) std::memcpy(&version, bytes.data() + kStateMagic.size(), sizeof(version));
  if (version < 1 || version > kStateFileVersion) version = kStateFileVersion;
  return open_envelope(bytes, kStateMagic, version, what, hashed).status();
}

}  // namespace weir::checkpoint
