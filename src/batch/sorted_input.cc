#include "batch/sorted_input.h"

#include <bit>
#include <cstring>
#include <utility>

#include "weir/key_group.h"

namespace weir::batch {
namespace {

static_assert(std::endian::native == std::endian::little, "the sort key is written by swapping bytes");

void put_big_endian(char* out, uint64_t v) {
  v = __builtin_bswap64(v);
  std::memcpy(out, &v, sizeof(v));
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
  char key[kKeySize];
  const auto kg = static_cast<uint16_t>(key_group_for_hash(key_hash, max_parallelism_));
  key[0] = static_cast<char>(kg >> 8);
  key[1] = static_cast<char>(kg);
  put_big_endian(key + 2, key_hash);
  // Flipping the sign bit orders signed numbers as unsigned bytes do.
  put_big_endian(key + 10, static_cast<uint64_t>(timestamp) ^ (uint64_t{1} << 63));
  key[18] = static_cast<char>(input);
  return sorter_.add(std::string_view(key, kKeySize), frame);
}

absl::Status SortedInput::finish() {
  absl::Status s = sorter_.finish();
  if (s.ok()) read_current();
  return s;
}

int SortedInput::input() const { return static_cast<unsigned char>(sorter_.key()[kKeySize - 1]); }

std::string_view SortedInput::frame() const { return sorter_.value(); }

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
