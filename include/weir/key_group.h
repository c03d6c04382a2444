// Key groups: the unit in which keyed state is partitioned, stored,
// snapshotted and (later) redistributed when parallelism changes.
//
//   key_group(key)          = hash(key) % max_parallelism
//   operator_index(kg)      = kg * parallelism / max_parallelism
//   range(operator_index i) = the contiguous key groups that map to i
//
// The hash is xxh64 of the key's bytes (its serialized form for types other
// than arithmetic and strings), so it is the same in every process and every
// build: key groups are stored in checkpoints and must not move.
#ifndef WEIR_KEY_GROUP_H_
#define WEIR_KEY_GROUP_H_

#include <cassert>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "weir/serializer.h"

namespace weir {

// Default: 128, as in Flink for small jobs.
inline constexpr int kDefaultMaxParallelism = 128;

// Half-open range [start, end) of key groups. Immutable value type.
struct KeyGroupRange {
  int start = 0;
  int end = 0;

  int size() const { return end - start; }
  bool contains(int kg) const { return kg >= start && kg < end; }
  bool empty() const { return end <= start; }
  friend bool operator==(const KeyGroupRange&, const KeyGroupRange&) = default;
};

// Stable 64-bit hash of bytes (xxh64, seed 0).
uint64_t hash_bytes(const void* data, size_t n);

inline int key_group_for_hash(uint64_t hash, int max_parallelism) {
  return static_cast<int>(hash % static_cast<uint64_t>(max_parallelism));
}

inline int operator_index_for_key_group(int max_parallelism, int parallelism, int kg) {
  return static_cast<int>(static_cast<int64_t>(kg) * parallelism / max_parallelism);
}

// The key groups that operator_index_for_key_group maps to `index`.
inline KeyGroupRange key_group_range_for_operator(int max_parallelism, int parallelism,
                                                  int index) {
  assert(parallelism > 0 && parallelism <= max_parallelism);
  // Smallest kg with kg * p / maxp >= index, for index and index + 1.
  auto first = [&](int i) {
    return static_cast<int>((static_cast<int64_t>(i) * max_parallelism + parallelism - 1) /
                            parallelism);
  };
  return KeyGroupRange{first(index), first(index + 1)};
}

// Hash of a key, stable across processes.
template <typename K>
struct KeyHash {
  uint64_t operator()(const K& key) const {
    if constexpr (std::is_arithmetic_v<K> || std::is_enum_v<K>) {
      return hash_bytes(&key, sizeof(key));
    } else if constexpr (std::is_convertible_v<const K&, std::string_view>) {
      std::string_view s = key;
      return hash_bytes(s.data(), s.size());
    } else {
      std::string bytes = serialize_to_string(key);
      return hash_bytes(bytes.data(), bytes.size());
    }
  }
};

template <typename K>
int key_group_of(const K& key, int max_parallelism) {
  return key_group_for_hash(KeyHash<K>{}(key), max_parallelism);
}

}  // namespace weir

#endif  // WEIR_KEY_GROUP_H_
