// Formats: CSV, JSON and raw records to rows and back, the reasons given for
// records they cannot read, and decode_rows in a job (rejects reach their
// side output, nothing is dropped).
#include "weir/formats.h"

#include <gtest/gtest.h>

#include <random>

#include "testing/committing_sink.h"
#include "testing/seed.h"
#include "weir/connectors.h"
#include "weir/weir.h"

namespace weir {
namespace {

const Schema kOrders{{"id", FieldType::kString, false},
                     {"amount", FieldType::kInt64},
                     {"price", FieldType::kDouble},
                     {"paid", FieldType::kBool}};

Row row(RowKind kind, std::vector<Value> values) { return Row{kind, std::move(values)}; }

TEST(FormatsTest, CsvReadsQuotedFieldsNullsAndTypes) {
  auto csv = csv_format(kOrders);
  ASSERT_TRUE(csv->status().ok());
  Row r;
  ASSERT_TRUE(csv->decode("a-1,12,2.5,true", &r).ok());
  EXPECT_EQ(r, row(RowKind::kInsert, {std::string("a-1"), int64_t{12}, 2.5, true}));
  ASSERT_TRUE(csv->decode("\"x,\"\"y\"\"\",+7,,FALSE\r\n", &r).ok());
  EXPECT_EQ(r, row(RowKind::kInsert, {std::string("x,\"y\""), int64_t{7}, std::monostate{}, false}));
  ASSERT_TRUE(csv->decode("\"\",,,", &r).ok());  // a quoted empty string is not NULL
  EXPECT_EQ(r, row(RowKind::kInsert, {std::string(), std::monostate{}, std::monostate{}, std::monostate{}}));
}

TEST(FormatsTest, CsvNamesTheFieldOfEveryError) {
  auto csv = csv_format(kOrders);
  Row r;
  auto reason = [&](std::string_view bytes) { return std::string(csv->decode(bytes, &r).message()); };
  EXPECT_EQ(reason("a,x1,2,true"), "field amount: 'x1' is not a BIGINT");
  EXPECT_EQ(reason("a,99999999999999999999,2,true"), "field amount: '99999999999999999999' is out of range for BIGINT");
  EXPECT_EQ(reason("a,1,two,true"), "field price: 'two' is not a DOUBLE");
  EXPECT_EQ(reason("a,1,2,yes"), "field paid: 'yes' is not a BOOLEAN (true or false)");
  EXPECT_EQ(reason(",1,2,true"), "field id: NULL in a NOT NULL column");
  EXPECT_EQ(reason("a,1,2"), "expected 4 fields, found 3");
  EXPECT_EQ(reason("a,1,2,true,extra"), "expected 4 fields, found 5");
  EXPECT_EQ(reason("\"a,1,2,true"), "field id: a quote is not closed");
  EXPECT_EQ(reason("\"a\"b,1,2,true"), "field id: text after a closing quote");
  EXPECT_EQ(reason("a,1\"2,2,true"), "field amount: a quote inside an unquoted field");
}

TEST(FormatsTest, CsvChangelogCarriesTheRowKind) {
  auto csv = csv_format(Schema{{"k", FieldType::kString}, {"n", FieldType::kInt64}}, CsvOptions{';', true});
  Row r;
  ASSERT_TRUE(csv->decode("-U;k1;4", &r).ok());
  EXPECT_EQ(r, row(RowKind::kUpdateBefore, {std::string("k1"), int64_t{4}}));
  EXPECT_EQ(csv->encode(row(RowKind::kDelete, {std::string("a;b"), int64_t{-3}})), "-D;\"a;b\";-3");
  EXPECT_EQ(std::string(csv->decode("*X;k;1", &r).message()), "row kind: '*X' is not one of +I, -U, +U, -D");
}

TEST(FormatsTest, JsonReadsFieldsByNameAndNamesMismatches) {
  auto json = json_format(kOrders);
  Row r;
  ASSERT_TRUE(json->decode(R"({"paid":false,"amount":3,"id":"o\"1","extra":[1,2]})", &r).ok());
  EXPECT_EQ(r, row(RowKind::kInsert, {std::string("o\"1"), int64_t{3}, std::monostate{}, false}));
  ASSERT_TRUE(json->decode(R"({"id":"o","price":4,"amount":null})", &r).ok());
  EXPECT_EQ(r, row(RowKind::kInsert, {std::string("o"), std::monostate{}, 4.0, std::monostate{}}));
  auto reason = [&](std::string_view bytes) { return std::string(json->decode(bytes, &r).message()); };
  EXPECT_EQ(reason(R"({"id":"o","amount":"3"})"), "field amount: expected BIGINT, got a string");
  EXPECT_EQ(reason(R"({"id":"o","amount":1.5})"), "field amount: expected BIGINT, got a number");
  EXPECT_EQ(reason(R"({"id":"o","amount":18446744073709551615})"),
            "field amount: 18446744073709551615 is out of range for BIGINT");
  EXPECT_EQ(reason(R"({"id":7})"), "field id: expected STRING, got an integer");
  EXPECT_EQ(reason(R"({"amount":7})"), "field id: missing in a NOT NULL column");
  EXPECT_EQ(reason(R"({"id":null})"), "field id: NULL in a NOT NULL column");
  EXPECT_EQ(reason(R"({"id":"o","paid":1})"), "field paid: expected BOOLEAN, got an integer");
  EXPECT_EQ(reason(R"([1,2])"), "not a JSON object but an array");
  EXPECT_EQ(reason(R"({"id":)").rfind("not JSON: ", 0), 0u) << reason(R"({"id":)");
}

TEST(FormatsTest, JsonFieldsHoldAnyJsonValueAsItsText) {
  auto json = json_format(Schema{{"id", FieldType::kInt64}, {"doc", FieldType::kJson}});
  Row r;
  ASSERT_TRUE(json->decode(R"({"id":1,"doc":{"b":[1, "x"],"a":null}})", &r).ok());
  EXPECT_EQ(r, row(RowKind::kInsert, {int64_t{1}, std::string(R"({"a":null,"b":[1,"x"]})")}));
  ASSERT_TRUE(json->decode(R"({"id":2,"doc":"text"})", &r).ok());
  EXPECT_EQ(r.values[1], Value{std::string(R"("text")")});  // a string too: its JSON text
  ASSERT_TRUE(json->decode(R"({"id":3,"doc":null})", &r).ok());
  EXPECT_EQ(r.values[1], Value{});
  // Written as the JSON value, not as a string of it; CSV writes the text.
  EXPECT_EQ(json->encode(row(RowKind::kInsert, {int64_t{4}, std::string("[1,2]")})), R"({"id":4,"doc":[1,2]})");
  auto csv = csv_format(Schema{{"id", FieldType::kInt64}, {"doc", FieldType::kJson}});
  EXPECT_EQ(csv->encode(row(RowKind::kInsert, {int64_t{4}, std::string("[1,2]")})), R"(4,"[1,2]")");
  ASSERT_TRUE(csv->decode(R"(5,"{""k"":1}")", &r).ok());
  EXPECT_EQ(r.values[1], Value{std::string(R"({"k":1})")});
}

TEST(FormatsTest, JsonChangelogAndEncoding) {
  auto json = json_format(Schema{{"k", FieldType::kString}, {"n", FieldType::kInt64}}, JsonOptions{"op"});
  Row r;
  ASSERT_TRUE(json->decode(R"({"op":"+U","k":"a","n":2})", &r).ok());
  EXPECT_EQ(r.kind, RowKind::kUpdateAfter);
  EXPECT_EQ(json->encode(row(RowKind::kDelete, {std::string("a\n\x01"), std::monostate{}})),
            "{\"op\":\"-D\",\"k\":\"a\\n\\u0001\",\"n\":null}");
  EXPECT_EQ(std::string(json->decode(R"({"k":"a","n":2})", &r).message()),
            "field op: no row kind (+I, -U, +U, -D)");
  auto clash = json_format(Schema{{"op", FieldType::kString}}, JsonOptions{"op"});
  EXPECT_FALSE(clash->status().ok());
  EXPECT_EQ(std::string(clash->decode("{}", &r).message()), std::string(clash->status().message()));
  EXPECT_FALSE(csv_format(Schema{{"a", FieldType::kString}, {"a", FieldType::kInt64}})->status().ok());
}

TEST(FormatsTest, RawIsTheBytes) {
  auto raw = raw_format("line");
  Row r;
  ASSERT_TRUE(raw->decode(std::string_view("a,\"b\0", 5), &r).ok());
  EXPECT_EQ(r.string(0), std::string("a,\"b\0", 5));
  EXPECT_EQ(raw->encode(r), std::string("a,\"b\0", 5));
}

// Random rows of the schema survive encode and decode in every format.
TEST(FormatsTest, RandomRowsRoundTrip) {
  const uint64_t seed = testing::test_seed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const Schema schema{{"s", FieldType::kString}, {"i", FieldType::kInt64}, {"d", FieldType::kDouble},
                      {"b", FieldType::kBool}};
  const std::vector<std::string> alphabet = {"a", "b", ",", ";", "|", "\"", "\n", "\r", "\t", "\\", " ", "{", "}",
                                            ":", "\x01", "\xc3\xa9"};
  auto random_row = [&](bool changelog) {
    Row r;
    r.kind = changelog ? static_cast<RowKind>(rng() % 4) : RowKind::kInsert;
    auto null = [&] { return rng() % 5 == 0; };
    std::string s;
    for (size_t n = rng() % 12; n > 0; --n) s += alphabet[rng() % alphabet.size()];
    r.values.push_back(null() ? Value{} : Value{s});
    r.values.push_back(null() ? Value{} : Value{static_cast<int64_t>(rng())});
    double d = static_cast<double>(static_cast<int64_t>(rng())) / static_cast<double>(1 + rng() % 1000);
    r.values.push_back(null() ? Value{} : Value{d});
    r.values.push_back(null() ? Value{} : Value{rng() % 2 == 0});
    return r;
  };
  const std::vector<std::pair<std::string, std::shared_ptr<const Format>>> formats = {
      {"csv", csv_format(schema)},
      {"csv changelog", csv_format(schema, CsvOptions{'|', true})},
      {"json", json_format(schema)},
      {"json changelog", json_format(schema, JsonOptions{"op"})}};
  for (const auto& [name, format] : formats) {
    const bool changelog = name.find("changelog") != std::string::npos;
    for (int i = 0; i < 2000; ++i) {
      Row in = random_row(changelog), out;
      std::string bytes = format->encode(in);
      absl::Status s = format->decode(bytes, &out);
      ASSERT_TRUE(s.ok()) << name << ": " << s << " for " << bytes;
      ASSERT_EQ(out, in) << name << ": " << bytes;
      ASSERT_EQ(deserialize_from_string<Row>(serialize_to_string(in)), in);
    }
  }
}

// In a job: good lines become rows, each bad one reaches the rejects side
// output with its line number and reason; none is lost.
TEST(FormatsTest, DecodeRowsRoutesBadRecordsToTheRejects) {
  testing::CollectingSink<Row>::Rows rows;
  testing::CollectingSink<Rejected>::Rows rejects;
  testing::CollectingSink<std::string>::Rows encoded;
  JobConfig config;
  config.default_parallelism = 2;
  StreamEnvironment env(config);
  auto lines = env.from_source<TextLine>([] {
    return std::make_unique<GeneratorSource<TextLine>>(
        [](int64_t i) {
          TextLine l;
          l.line_number = i + 1;
          l.text = i % 10 == 3 ? "k" + std::to_string(i) + ",not-a-number" : "k" + std::to_string(i % 7) + "," + std::to_string(i);
          return l;
        },
        1000);
  });
  OutputTag<Rejected> bad{"bad-lines"};
  auto decoded = decode_rows(lines, csv_format(Schema{{"key", FieldType::kString}, {"n", FieldType::kInt64}}), bad);
  decoded.sink_to([&] { return std::make_unique<testing::CollectingSink<Row>>(&rows); });
  encode_rows(decoded, json_format(Schema{{"key", FieldType::kString}, {"n", FieldType::kInt64}}))
      .sink_to([&] { return std::make_unique<testing::CollectingSink<std::string>>(&encoded); });
  decoded.get_side_output(bad).sink_to([&] { return std::make_unique<testing::CollectingSink<Rejected>>(&rejects); });
  auto r = env.execute("decode");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->status, JobStatus::kFinished);
  ASSERT_EQ(rows.rows.size(), 900u);
  ASSERT_EQ(rejects.rows.size(), 100u);
  int64_t sum = 0;
  for (const Row& row : rows.rows) sum += row.int64(1);
  int64_t expected = 0;
  for (int64_t i = 0; i < 1000; ++i) expected += i % 10 == 3 ? 0 : i;
  EXPECT_EQ(sum, expected);
  std::set<std::string> origins;
  for (const Rejected& x : rejects.rows) {
    EXPECT_EQ(x.reason, "field n: 'not-a-number' is not a BIGINT");
    origins.insert(x.origin);
  }
  EXPECT_EQ(origins.size(), 100u);
  EXPECT_EQ(origins.count("line 4"), 1u);
  EXPECT_EQ(origins.count("line 994"), 1u);
  ASSERT_EQ(encoded.rows.size(), 900u);
  EXPECT_EQ(std::count(encoded.rows.begin(), encoded.rows.end(), std::string(R"({"key":"k0","n":994})")), 1);
}

// Nothing reads the rejects: the job still runs to its end with every good
// row (the rejects are counted and logged, not a failure).
TEST(FormatsTest, UnreadRejectsDoNotStopTheJob) {
  testing::CollectingSink<Row>::Rows rows;
  StreamEnvironment env;
  auto lines = env.from_source<TextLine>([] {
    return std::make_unique<GeneratorSource<TextLine>>(
        [](int64_t i) { return TextLine{i + 1, i % 2 == 0 ? std::to_string(i) : "x"}; }, 100);
  });
  decode_rows(lines, csv_format(Schema{{"n", FieldType::kInt64}}), OutputTag<Rejected>{"unread"})
      .sink_to([&] { return std::make_unique<testing::CollectingSink<Row>>(&rows); });
  auto r = env.execute("unread-rejects");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, JobStatus::kFinished);
  EXPECT_EQ(rows.rows.size(), 50u);
}

}  // namespace
}  // namespace weir
