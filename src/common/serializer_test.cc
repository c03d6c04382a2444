#include "weir/serializer.h"

#include <gtest/gtest.h>

#include <limits>
#include <map>

namespace weir {
namespace {

struct Trade {
  int64_t id = 0;
  std::string symbol;
  double price = 0;
  std::vector<int32_t> fills;
  std::optional<std::string> note;
  auto weir_fields() { return std::tie(id, symbol, price, fills, note); }
  bool operator==(const Trade&) const = default;
};

template <typename T>
T round_trip(const T& v) {
  std::string bytes = serialize_to_string(v);
  auto back = deserialize_from_string<T>(bytes);
  EXPECT_TRUE(back.has_value());
  return back.value_or(T{});
}

TEST(SerializerTest, RoundTripsArithmeticAndStrings) {
  EXPECT_EQ(round_trip<int64_t>(std::numeric_limits<int64_t>::min()),
            std::numeric_limits<int64_t>::min());
  EXPECT_EQ(round_trip<uint8_t>(255), 255);
  EXPECT_EQ(round_trip<double>(-1.5), -1.5);
  EXPECT_EQ(round_trip<bool>(true), true);
  EXPECT_EQ(round_trip<std::string>(""), "");
  EXPECT_EQ(round_trip<std::string>(std::string(100000, 'x')), std::string(100000, 'x'));
}

TEST(SerializerTest, RoundTripsCompositesAndAggregates) {
  std::pair<std::string, int> p{"a", 7};
  EXPECT_EQ(round_trip(p), p);
  std::tuple<int, std::string, double> t{1, "two", 3.0};
  EXPECT_EQ(round_trip(t), t);
  std::vector<std::string> v{"x", "", "zz"};
  EXPECT_EQ(round_trip(v), v);
  Trade tr{42, "WEIR", 9.75, {1, 2, 3}, std::string("late")};
  EXPECT_EQ(round_trip(tr), tr);
  Trade empty;
  EXPECT_EQ(round_trip(empty), empty);
}

TEST(SerializerTest, TruncatedInputIsReportedNotCrashed) {
  Trade tr{42, "WEIR", 9.75, {1, 2, 3}, std::string("late")};
  std::string bytes = serialize_to_string(tr);
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(deserialize_from_string<Trade>(bytes.substr(0, n)).has_value()) << "prefix " << n;
  }
}

TEST(SerializerTest, HugeLengthPrefixFailsWithoutAllocating) {
  std::string bytes;
  ByteWriter w(&bytes);
  w.put_varint(uint64_t{1} << 60);  // a vector claiming 2^60 elements
  EXPECT_FALSE(deserialize_from_string<std::vector<int64_t>>(bytes).has_value());
}

TEST(SerializerTest, TrailingBytesAreAnError) {
  std::string bytes = serialize_to_string<int32_t>(5) + "x";
  EXPECT_FALSE(deserialize_from_string<int32_t>(bytes).has_value());
}

TEST(SerializerTest, VarintBoundaries) {
  for (uint64_t v : {uint64_t{0}, uint64_t{127}, uint64_t{128}, uint64_t{16383}, uint64_t{16384},
                     std::numeric_limits<uint64_t>::max()}) {
    std::string s;
    ByteWriter w(&s);
    w.put_varint(v);
    ByteReader r(s);
    EXPECT_EQ(r.get_varint(), v);
    EXPECT_TRUE(r.ok() && r.at_end());
  }
}

// Signatures describe the encoding's structure: equal for types that decode
// each other's bytes, different otherwise.
TEST(SerializerTest, TypeSignaturesFollowTheEncoding) {
  EXPECT_EQ(type_signature<int64_t>(), "i64");
  EXPECT_EQ(type_signature<uint8_t>(), "u8");
  EXPECT_EQ(type_signature<double>(), "f64");
  EXPECT_EQ(type_signature<bool>(), "bool");
  EXPECT_EQ(type_signature<std::string>(), "str");
  EXPECT_EQ((type_signature<std::pair<int32_t, std::string>>()), "(i32,str)");
  EXPECT_EQ((type_signature<std::tuple<int64_t, double, bool>>()), "(i64,f64,bool)");
  EXPECT_EQ(type_signature<std::vector<std::optional<float>>>(), "[f32?]");
  EXPECT_EQ(type_signature<Trade>(), "{i64,str,f64,[i32],str?}");
  EXPECT_NE(type_signature<int64_t>(), type_signature<double>());
  EXPECT_NE(type_signature<int64_t>(), type_signature<uint64_t>());
}

}  // namespace
}  // namespace weir
