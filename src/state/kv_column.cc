// KvColumn (weir/detail/kv_state.h): the untyped part of the RocksDB
// backend's state tables, compiled once instead of once per state type.
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "weir/detail/kv_state.h"

namespace weir::detail {
namespace {

class ColumnSnapshot final : public TableSnapshot {
 public:
  ColumnSnapshot(std::shared_ptr<const KvView> view, int cf, int64_t min_stamp)
      : view_(std::move(view)), cf_(cf), min_stamp_(min_stamp) {}
  void write_entries(int kg, ByteWriter& out) const override {
    write_canonical_entries(
        [this](int cf, std::string_view prefix, const KvVisitor& fn) { view_->scan(cf, prefix, fn); }, cf_, kg, out,
        min_stamp_);
  }

 private:
  const std::shared_ptr<const KvView> view_;
  const int cf_;
  const int64_t min_stamp_;  // TTL entries below it are expired
};

}  // namespace

void write_canonical_entries(const KvScan& scan, int cf, int kg, ByteWriter& out, int64_t min_stamp) {
  std::string prefix;
  put_key_group_prefix(&prefix, kg);
  std::string entries;
  uint64_t count = 0;
  scan(cf, prefix, [&](std::string_view k, std::string_view v) {
    if (min_stamp != INT64_MIN) {
      int64_t stamp = INT64_MIN;
      if (v.size() >= sizeof(stamp)) std::memcpy(&stamp, v.data(), sizeof(stamp));
      if (stamp < min_stamp) return;
    }
    entries.append(k.substr(kKeyGroupPrefixSize));
    entries.append(v);
    ++count;
  });
  out.put_varint(count);
  out.put_bytes(entries.data(), entries.size());
}

KvColumn::KvColumn(const std::string& name, std::shared_ptr<KvStore> store, int64_t ttl_ms)
    : store_(std::move(store)), cf_(store_->column(name, ttl_ms)) {}

std::shared_ptr<const TableSnapshot> KvColumn::snapshot(int64_t min_stamp) const {
  return std::make_shared<ColumnSnapshot>(store_->pin(), cf_, min_stamp);
}

namespace {

// Steps over `n` entries (key, value) in Serializer format, which the skip
// functions decode to find their ends, calling `fn` with each one's key and
// value bytes. False when they do not decode.
template <typename Fn>
bool for_each_entry(ByteReader& in, uint64_t n, KvColumn::Skip skip_key, KvColumn::Skip skip_value, Fn fn) {
  for (uint64_t i = 0; i < n && in.ok(); ++i) {
    const char* k0 = in.position();
    skip_key(in);
    const char* v0 = in.position();
    skip_value(in);
    if (!in.ok()) return false;
    fn(std::string_view(k0, static_cast<size_t>(v0 - k0)), std::string_view(v0, static_cast<size_t>(in.position() - v0)));
  }
  return in.ok();
}

}  // namespace

bool KvColumn::restore_entries(int kg, ByteReader& in, Skip skip_key, Skip skip_value) {
  std::string prefix;
  put_key_group_prefix(&prefix, kg);
  store_->erase_prefix(cf_, prefix);
  uint64_t n = in.get_length();
  std::vector<std::pair<std::string, std::string_view>> entries;
  entries.reserve(n);
  const bool decoded = for_each_entry(in, n, skip_key, skip_value, [&](std::string_view k, std::string_view v) {
    std::string key = prefix;
    key.append(k);
    entries.emplace_back(std::move(key), v);
  });
  if (!decoded) return false;
  // In key order, the last of equal keys winning (as puts in order would).
  sort_keeping_last(entries);
  store_->bulk_put(cf_, entries);
  return true;
}

bool KvColumn::apply_changes(int kg, ByteReader& in, Skip skip_key, Skip skip_value) {
  std::string prefix;
  put_key_group_prefix(&prefix, kg);
  const uint8_t flags = in.get_fixed<uint8_t>();
  if (!in.ok()) return false;
  if ((flags & kChangesCleared) != 0) store_->erase_prefix(cf_, prefix);
  std::string key;
  const uint64_t removed = in.get_length();
  for (uint64_t i = 0; i < removed && in.ok(); ++i) {
    const char* k0 = in.position();
    skip_key(in);
    if (!in.ok()) return false;
    key = prefix;
    key.append(k0, static_cast<size_t>(in.position() - k0));
    store_->erase(cf_, key);
  }
  std::string bytes;
  std::vector<Span> spans;
  const bool decoded =
      for_each_entry(in, in.get_length(), skip_key, skip_value, [&](std::string_view k, std::string_view v) {
        Span s;
        s.key = bytes.size();
        bytes.append(prefix);
        bytes.append(k);
        s.value = bytes.size();
        bytes.append(v);
        s.end = bytes.size();
        spans.push_back(s);
      });
  if (!decoded) return false;
  write_all(bytes, spans);  // keys are unique within a changes blob
  return true;
}

void KvColumn::write_all(const std::string& bytes, std::vector<Span>& spans) {
  auto key = [&bytes](const Span& s) { return std::string_view(bytes.data() + s.key, s.value - s.key); };
  std::sort(spans.begin(), spans.end(), [&](const Span& a, const Span& b) { return key(a) < key(b); });
  // In writes of a bounded number of entries: a write's batch is a copy of
  // its entries, and the memory a write-back takes stays small beside the
  // cache whatever the number of dirty entries.
  constexpr size_t kEntriesPerWrite = 8192;
  std::vector<std::pair<std::string_view, std::string_view>> entries;
  entries.reserve(std::min(spans.size(), kEntriesPerWrite));
  for (size_t i = 0; i < spans.size(); i += kEntriesPerWrite) {
    entries.clear();
    for (size_t j = i; j < std::min(spans.size(), i + kEntriesPerWrite); ++j) {
      const Span& s = spans[j];
      entries.emplace_back(key(s), std::string_view(bytes.data() + s.value, s.end - s.value));
    }
    store_->put_all(cf_, entries);
  }
}

[[noreturn]] void KvColumn::undecodable(const std::string& name, const char* what) {
  throw std::runtime_error("state '" + name + "': a stored " + std::string(what) +
                           " does not decode as its declared type");
}

}  // namespace weir::detail
