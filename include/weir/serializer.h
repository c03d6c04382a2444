// Serializers: how values cross a network channel or land in a snapshot.
//
// A type T is serializable when `weir::Serializer<T>` has
//   static void write(ByteWriter& out, const T& value);
//   static T read(ByteReader& in);
// Ready serializers exist for arithmetic types, enums, std::string,
// std::pair, std::tuple, std::vector, std::optional, and for aggregates that
// expose their fields with a member `auto weir_fields()` returning std::tie of
// them (the same function, const-qualified or not, serves both directions):
//
//   struct Bid { int64_t auction; std::string bidder;
//                auto weir_fields() { return std::tie(auction, bidder); } };
//
// Encoding: integers are little-endian fixed width, strings and containers are
// a varint length followed by the elements. The encoding is part of the
// checkpoint format (see src/checkpoint/format.h): DO NOT CHANGE without
// bumping the state format version.
//
// ByteWriter appends to a std::string it does not own; ByteReader reads a span
// it does not own and never reads past its end: a short or malformed input
// sets `ok() == false` and yields zero values instead of crashing, so callers
// check `ok()` once after a batch of reads.
#ifndef WEIR_SERIALIZER_H_
#define WEIR_SERIALIZER_H_

#include <concepts>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

namespace weir {

class ByteWriter {
 public:
  explicit ByteWriter(std::string* out) : out_(out) {}

  void put_bytes(const void* data, size_t n) {
    out_->append(static_cast<const char*>(data), n);
  }
  template <typename T>
    requires std::is_trivially_copyable_v<T>
  void put_fixed(T v) {
    put_bytes(&v, sizeof(v));
  }
  void put_varint(uint64_t v) {
    char buf[10];
    int n = 0;
    while (v >= 0x80) {
      buf[n++] = static_cast<char>(v | 0x80);
      v >>= 7;
    }
    buf[n++] = static_cast<char>(v);
    out_->append(buf, n);
  }
  void put_string(std::string_view s) {
    put_varint(s.size());
    put_bytes(s.data(), s.size());
  }
  size_t size() const { return out_->size(); }
  std::string* target() { return out_; }

 private:
  std::string* out_;  // not owned
};

class ByteReader {
 public:
  ByteReader(const char* data, size_t n) : p_(data), end_(data + n) {}
  explicit ByteReader(std::string_view s) : ByteReader(s.data(), s.size()) {}

  bool ok() const { return ok_; }
  bool at_end() const { return p_ == end_; }
  size_t remaining() const { return static_cast<size_t>(end_ - p_); }
  const char* position() const { return p_; }

  bool get_bytes(void* dst, size_t n) {
    if (!ok_ || remaining() < n) return fail();
    std::memcpy(dst, p_, n);
    p_ += n;
    return true;
  }
  template <typename T>
    requires std::is_trivially_copyable_v<T>
  T get_fixed() {
    T v{};
    get_bytes(&v, sizeof(v));
    return v;
  }
  uint64_t get_varint() {
    uint64_t v = 0;
    for (int shift = 0; shift <= 63; shift += 7) {
      if (!ok_ || p_ == end_) {
        fail();
        return 0;
      }
      uint8_t b = static_cast<uint8_t>(*p_++);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    fail();
    return 0;
  }
  std::string_view get_string_view() {
    uint64_t n = get_varint();
    if (!ok_ || remaining() < n) {
      fail();
      return {};
    }
    std::string_view s(p_, n);
    p_ += n;
    return s;
  }
  std::string get_string() { return std::string(get_string_view()); }
  // Bounds a container length read from input, so a corrupt length cannot
  // trigger a huge allocation: each element needs at least one byte.
  uint64_t get_length() {
    uint64_t n = get_varint();
    if (n > remaining()) {
      fail();
      return 0;
    }
    return n;
  }
  bool fail() {
    ok_ = false;
    p_ = end_;
    return false;
  }

 private:
  const char* p_;
  const char* end_;
  bool ok_ = true;
};

template <typename T>
struct Serializer;

template <typename T>
concept Serializable = requires(ByteWriter& w, ByteReader& r, const T& v) {
  { Serializer<T>::write(w, v) };
  { Serializer<T>::read(r) } -> std::convertible_to<T>;
};

template <typename T>
  requires(std::is_arithmetic_v<T> || std::is_enum_v<T>)
struct Serializer<T> {
  static void write(ByteWriter& out, const T& v) { out.put_fixed(v); }
  static T read(ByteReader& in) { return in.get_fixed<T>(); }
};

template <>
struct Serializer<std::string> {
  static void write(ByteWriter& out, const std::string& v) { out.put_string(v); }
  static std::string read(ByteReader& in) { return in.get_string(); }
};

template <typename A, typename B>
struct Serializer<std::pair<A, B>> {
  static void write(ByteWriter& out, const std::pair<A, B>& v) {
    Serializer<A>::write(out, v.first);
    Serializer<B>::write(out, v.second);
  }
  static std::pair<A, B> read(ByteReader& in) {
    A a = Serializer<A>::read(in);
    B b = Serializer<B>::read(in);
    return {std::move(a), std::move(b)};
  }
};

template <typename... Ts>
struct Serializer<std::tuple<Ts...>> {
  static void write(ByteWriter& out, const std::tuple<Ts...>& v) {
    std::apply([&](const auto&... e) { (Serializer<std::decay_t<decltype(e)>>::write(out, e), ...); },
               v);
  }
  static std::tuple<Ts...> read(ByteReader& in) {
    // Braced initialisation evaluates left to right.
    return std::tuple<Ts...>{Serializer<Ts>::read(in)...};
  }
};

template <typename T>
struct Serializer<std::vector<T>> {
  static void write(ByteWriter& out, const std::vector<T>& v) {
    out.put_varint(v.size());
    for (const T& e : v) Serializer<T>::write(out, e);
  }
  static std::vector<T> read(ByteReader& in) {
    std::vector<T> v;
    uint64_t n = in.get_length();
    v.reserve(n);
    for (uint64_t i = 0; i < n && in.ok(); ++i) v.push_back(Serializer<T>::read(in));
    return v;
  }
};

template <typename T>
struct Serializer<std::optional<T>> {
  static void write(ByteWriter& out, const std::optional<T>& v) {
    out.put_fixed<uint8_t>(v.has_value() ? 1 : 0);
    if (v) Serializer<T>::write(out, *v);
  }
  static std::optional<T> read(ByteReader& in) {
    if (in.get_fixed<uint8_t>() == 0) return std::nullopt;
    return Serializer<T>::read(in);
  }
};

// Aggregates that list their fields with `auto weir_fields()`.
template <typename T>
concept HasWeirFields = requires(T& t) { t.weir_fields(); };

template <typename T>
  requires HasWeirFields<T> && std::is_default_constructible_v<T>
struct Serializer<T> {
  static void write(ByteWriter& out, const T& v) {
    auto fields = const_cast<T&>(v).weir_fields();
    std::apply([&](auto&... f) { (Serializer<std::decay_t<decltype(f)>>::write(out, f), ...); },
               fields);
  }
  static T read(ByteReader& in) {
    T v{};
    auto fields = v.weir_fields();
    std::apply([&](auto&... f) { ((f = Serializer<std::decay_t<decltype(f)>>::read(in)), ...); },
               fields);
    return v;
  }
};

// The structure of T's encoding as a short string ("i64", "str", "[f64]",
// "{i64,str}", "(i32,str)", "u8?"), stored with each state in checkpoints so
// a restore detects a state whose type changed incompatibly. Two types with
// the same signature decode each other's bytes. A custom Serializer<T>
// declares its own with `static std::string signature()`; without one the
// compiler's type name stands in.
template <typename T>
std::string type_signature();

namespace internal {
template <typename T>
struct IsStdString : std::false_type {};
template <>
struct IsStdString<std::string> : std::true_type {};
template <typename T>
struct SignatureOf {
  static std::string get() {
    if constexpr (requires { { Serializer<T>::signature() } -> std::convertible_to<std::string>; }) {
      return Serializer<T>::signature();
    } else if constexpr (std::is_same_v<T, bool>) {
      return "bool";
    } else if constexpr (std::is_enum_v<T>) {
      return "enum:" + type_signature<std::underlying_type_t<T>>();
    } else if constexpr (std::is_floating_point_v<T>) {
      return "f" + std::to_string(sizeof(T) * 8);
    } else if constexpr (std::is_integral_v<T>) {
      return (std::is_signed_v<T> ? "i" : "u") + std::to_string(sizeof(T) * 8);
    } else if constexpr (IsStdString<T>::value) {
      return "str";
    } else if constexpr (HasWeirFields<T>) {
      using Fields = decltype(std::declval<T&>().weir_fields());
      return "{" + join<Fields>(std::make_index_sequence<std::tuple_size_v<Fields>>{}) + "}";
    } else {
      return std::string("type:") + typeid(T).name();
    }
  }
  template <typename Tuple, size_t... I>
  static std::string join(std::index_sequence<I...>) {
    std::string out;
    ((out += (I == 0 ? "" : ",") + type_signature<std::decay_t<std::tuple_element_t<I, Tuple>>>()), ...);
    return out;
  }
};
template <typename A, typename B>
struct SignatureOf<std::pair<A, B>> {
  static std::string get() { return "(" + type_signature<A>() + "," + type_signature<B>() + ")"; }
};
template <typename... Ts>
struct SignatureOf<std::tuple<Ts...>> {
  static std::string get() {
    std::string out;
    ((out += (out.empty() ? "" : ",") + type_signature<Ts>()), ...);
    return "(" + out + ")";
  }
};
template <typename T>
struct SignatureOf<std::vector<T>> {
  static std::string get() { return "[" + type_signature<T>() + "]"; }
};
template <typename T>
struct SignatureOf<std::optional<T>> {
  static std::string get() { return type_signature<T>() + "?"; }
};
}  // namespace internal

template <typename T>
std::string type_signature() {
  return internal::SignatureOf<T>::get();
}

// Convenience: serialize one value to a fresh string, and back.
template <Serializable T>
std::string serialize_to_string(const T& v) {
  std::string s;
  ByteWriter w(&s);
  Serializer<T>::write(w, v);
  return s;
}

template <Serializable T>
std::optional<T> deserialize_from_string(std::string_view s) {
  ByteReader r(s);
  T v = Serializer<T>::read(r);
  if (!r.ok() || !r.at_end()) return std::nullopt;
  return v;
}

}  // namespace weir

#endif  // WEIR_SERIALIZER_H_
