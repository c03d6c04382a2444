// Keyed state: values that belong to the key of the record being processed.
//
// A keyed function declares its state with a descriptor in open() and gets a
// handle; every access through the handle reads or writes the entry of the
// current key. Handles are confined to the task thread and valid until the
// function is closed. Which backend stores the entries (heap or RocksDB) is
// invisible here.
#ifndef WEIR_STATE_H_
#define WEIR_STATE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace weir {

template <typename T>
class ValueState {
 public:
  virtual ~ValueState() = default;
  virtual std::optional<T> value() const = 0;
  // The value without a copy, or null when absent.
  virtual const T* peek() const = 0;
  // The value in place, created as T{} when absent: changing it is the
  // update, without copying the value out and back.
  // peek() and modify() refer into the state: valid until the next call on
  // this state, and never beyond the current call into your function.
  virtual T& modify() = 0;
  virtual void update(const T& v) = 0;
  // Hands the value over; backends that keep objects move it in.
  virtual void update(T&& v) { update(static_cast<const T&>(v)); }
  virtual void clear() = 0;
  T value_or(T fallback) const {
    auto v = value();
    return v ? std::move(*v) : std::move(fallback);
  }
};

template <typename T>
class ListState {
 public:
  virtual ~ListState() = default;
  virtual std::vector<T> get() const = 0;
  virtual void add(const T& v) = 0;
  virtual void update(std::vector<T> values) = 0;
  virtual void clear() = 0;
};

template <typename K, typename V>
class MapState {
 public:
  virtual ~MapState() = default;
  virtual std::optional<V> get(const K& key) const = 0;
  virtual void put(const K& key, const V& value) = 0;
  virtual void remove(const K& key) = 0;
  virtual bool contains(const K& key) const = 0;
  virtual std::vector<std::pair<K, V>> entries() const = 0;
  virtual bool is_empty() const = 0;
  virtual void clear() = 0;
};

// Keeps one value per key, folding each add() in with `reduce`.
template <typename T>
class ReducingState {
 public:
  virtual ~ReducingState() = default;
  virtual std::optional<T> get() const = 0;
  virtual void add(const T& v) = 0;
  virtual void clear() = 0;
};

// Time-to-live of a state's entries, in processing time: of a value or
// reducing state's value, of each element of a list state, of each user
// key's value of a map state. An entry expires
// `ttl` after its last update (kOnCreateAndWrite) or its last read or
// update (kOnReadAndWrite). Expired entries are removed when accessed, left
// out of heap snapshots, and dropped by RocksDB compactions; until then
// kReturnExpiredIfNotCleanedUp still returns them. Turning TTL on or off for
// a state changes its stored format: a restore across that change fails
// naming the state.
struct StateTtlConfig {
  enum class UpdateType : uint8_t { kOnCreateAndWrite, kOnReadAndWrite };
  enum class Visibility : uint8_t { kNeverReturnExpired, kReturnExpiredIfNotCleanedUp };
  std::chrono::milliseconds ttl{0};  // 0: entries never expire
  UpdateType update_type = UpdateType::kOnCreateAndWrite;
  Visibility visibility = Visibility::kNeverReturnExpired;
  bool enabled() const { return ttl.count() > 0; }
};

// Descriptors name a state; the name is what checkpoints are keyed by inside
// an operator, so keep it stable across versions of a job. A state with a
// time-to-live is declared with with_ttl, e.g.
//   ctx.get_state(ValueStateDescriptor<int64_t>{"total"}.with_ttl(cfg))
// so a job compiles the TTL variant of a state only where it asks for it.
template <typename Descriptor>
struct WithTtl {
  Descriptor state;
  StateTtlConfig ttl;
};

template <typename T>
struct ValueStateDescriptor {
  std::string name;
  WithTtl<ValueStateDescriptor> with_ttl(StateTtlConfig ttl) const { return {*this, ttl}; }
};

template <typename T>
struct ListStateDescriptor {
  std::string name;
  WithTtl<ListStateDescriptor> with_ttl(StateTtlConfig ttl) const { return {*this, ttl}; }
};

template <typename K, typename V>
struct MapStateDescriptor {
  std::string name;
  WithTtl<MapStateDescriptor> with_ttl(StateTtlConfig ttl) const { return {*this, ttl}; }
};

template <typename T>
struct ReducingStateDescriptor {
  std::string name;
  std::function<T(const T&, const T&)> reduce;
  WithTtl<ReducingStateDescriptor> with_ttl(StateTtlConfig ttl) const { return {*this, ttl}; }
};

}  // namespace weir

#endif  // WEIR_STATE_H_
