#include "batch/sorted_input.h"

#include <cstring>
#include <utility>

#include "weir/key_group.h"

namespace weir::batch {
namespace {

void put_big_endian(std::string* out, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i) out->push_back(static_cast<char>(v >> (8 * i)));
}

}  // namespace

SortedInput::SortedInput(ExternalSorter::Options options, int max_parallelism)
    : sorter_(std::move(options)), max_parallelism_(max_parallelism) {}

absl::Status SortedInput::add(int input, uint64_t key_hash, std::string_view frame) {
  int64_t timestamp;
  if (frame.size() < sizeof(timestamp)) {
    return absl::DataLossError("a record of " + std::to_string(frame.size()) + " bytes has no timestamp");
  }
  std::memcpy(&timestamp, frame.data(), sizeof(timestamp));
  key_.clear();
  put_big_endian(&key_, static_cast<uint64_t>(key_group_for_hash(key_hash, max_parallelism_)), 2);
  put_big_endian(&key_, key_hash, 8);
  // Flipping the sign bit orders signed numbers as unsigned bytes do.
  put_big_endian(&key_, static_cast<uint64_t>(timestamp) ^ (uint64_t{1} << 63), 8);
  value_.clear();
  value_.push_back(static_cast<char>(input));
  value_.append(frame);
  return sorter_.add(key_, value_);
}

absl::Status SortedInput::finish() {
  absl::Status s = sorter_.finish();
  if (s.ok()) read_current();
  return s;
}

int SortedInput::input() const { return static_cast<unsigned char>(sorter_.value()[0]); }

std::string_view SortedInput::frame() const { return sorter_.value().substr(1); }

int SortedInput::key_group() const {
  std::string_view k = sorter_.key();
  return (static_cast<unsigned char>(k[0]) << 8) | static_cast<unsigned char>(k[1]);
}

void SortedInput::next() {
  sorter_.next();
  read_current();
}

void SortedInput::read_current() {
  if (!sorter_.valid()) return;
  std::string_view k = sorter_.key();
  same_key_ = has_previous_ && std::memcmp(previous_, k.data(), kBlockKeySize) == 0;
  std::memcpy(previous_, k.data(), kBlockKeySize);
  has_previous_ = true;
}

}  // namespace weir::batch
