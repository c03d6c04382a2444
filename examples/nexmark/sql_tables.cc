#include "examples/nexmark/sql_tables.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "examples/nexmark/query_util.h"
#include "weir/connectors.h"

namespace weir::nexmark {
namespace {

using sql::TypeKind;

enum class FieldKind { kNumber, kTime, kText };

template <typename T>
struct FieldOf {
  const char* name;
  FieldKind kind;
  std::function<Value(const T&)> get;
};

template <typename T>
FieldOf<T> number(const char* name, int64_t T::*m) {
  return {name, FieldKind::kNumber, [m](const T& x) { return Value{x.*m}; }};
}
template <typename T>
FieldOf<T> time(const char* name, int64_t T::*m) {
  return {name, FieldKind::kTime, [m](const T& x) { return Value{x.*m}; }};
}
template <typename T>
FieldOf<T> text(const char* name, std::string T::*m) {
  return {name, FieldKind::kText, [m](const T& x) { return Value{x.*m}; }};
}

const std::vector<FieldOf<Bid>>& bid_fields() {
  static const std::vector<FieldOf<Bid>> f = {
      number("auction", &Bid::auction), number("bidder", &Bid::bidder), number("price", &Bid::price),
      text("channel", &Bid::channel),   text("url", &Bid::url),          time("date_time", &Bid::date_time),
      text("extra", &Bid::extra)};
  return f;
}
const std::vector<FieldOf<Auction>>& auction_fields() {
  static const std::vector<FieldOf<Auction>> f = {
      number("id", &Auction::id),          text("item_name", &Auction::item_name),
      text("description", &Auction::description), number("initial_bid", &Auction::initial_bid),
      number("reserve", &Auction::reserve), time("date_time", &Auction::date_time),
      time("expires", &Auction::expires),   number("seller", &Auction::seller),
      number("category", &Auction::category), text("extra", &Auction::extra)};
  return f;
}
const std::vector<FieldOf<Person>>& person_fields() {
  static const std::vector<FieldOf<Person>> f = {
      number("id", &Person::id),     text("name", &Person::name),   text("email_address", &Person::email),
      text("credit_card", &Person::credit_card), text("city", &Person::city), text("state", &Person::state),
      time("date_time", &Person::date_time),     text("extra", &Person::extra)};
  return f;
}

std::string normalized(std::string s) {
  s = absl::AsciiStrToLower(s);
  s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
  return s;
}

// The getters of the table's columns, in its order; an error names the
// column and what it could be.
template <typename T>
absl::StatusOr<std::vector<std::function<Value(const T&)>>> getters(const sql::TableDef& t,
                                                                    const std::vector<FieldOf<T>>& fields,
                                                                    const std::string& kind) {
  std::vector<std::function<Value(const T&)>> out;
  for (const sql::Column& c : t.columns) {
    const FieldOf<T>* f = nullptr;
    for (const auto& x : fields) {
      if (normalized(x.name) == normalized(c.name)) f = &x;
    }
    if (f == nullptr) {
      std::vector<std::string> names;
      for (const auto& x : fields) names.push_back(x.name);
      return absl::InvalidArgumentError("table " + t.name + ": a Nexmark " + kind + " has no field " + c.name +
                                        " (it has " + absl::StrJoin(names, ", ") + ")");
    }
    const TypeKind k = c.type.kind;
    const bool ok = f->kind == FieldKind::kText ? k == TypeKind::kVarchar
                    : f->kind == FieldKind::kTime ? (k == TypeKind::kTimestamp || k == TypeKind::kBigInt)
                                                  : k == TypeKind::kBigInt;
    if (!ok) {
      const char* want = f->kind == FieldKind::kText ? "VARCHAR" : f->kind == FieldKind::kTime ? "TIMESTAMP(3) or BIGINT" : "BIGINT";
      return absl::InvalidArgumentError("table " + t.name + ": column " + c.name + " is " +
                                        std::string(sql::type_name(k)) + ", the Nexmark field " + f->name + " " + want);
    }
    out.push_back(f->get);
  }
  return out;
}

template <typename T>
std::function<Row(const Event&)> to_row(std::vector<std::function<Value(const T&)>> get, const T Event::*member) {
  return [get = std::move(get), member](const Event& e) {
    Row r;
    r.values.reserve(get.size());
    for (const auto& g : get) r.values.push_back(g(e.*member));
    return r;
  };
}

absl::Status apply_options(const sql::TableDef& t, QueryOptions* o) {
  for (const auto& [name, value] : t.options) {
    int64_t* target = name == "events"       ? &o->source.events
                      : name == "rate"       ? &o->source.rate_limit
                      : name == "event-rate" ? &o->generator.event_rate
                      : name == "fail-every" ? &o->source.fail_every
                                             : nullptr;
    if (name == "seed") {
      if (!absl::SimpleAtoi(value, &o->source.seed)) return absl::InvalidArgumentError("table " + t.name + ": seed '" + value + "' is not a number");
      continue;
    }
    if (target == nullptr) {
      if (name == "connector" || name == "kind" || name == "watermark" || name == "primary-key") continue;
      return absl::InvalidArgumentError("table " + t.name + ": unknown option '" + name +
                                        "' of the nexmark connector (kind, events, rate, event-rate, seed, fail-every, watermark)");
    }
    if (!absl::SimpleAtoi(value, target) || *target < 0) {
      return absl::InvalidArgumentError("table " + t.name + ": " + name + " '" + value + "' is not a whole number");
    }
  }
  if (t.watermark) o->watermark_slack_ms = t.watermark->delay_ms;
  return absl::OkStatus();
}

}  // namespace

sql::TableSource nexmark_table_source(QueryOptions defaults) {
  return [defaults](StreamEnvironment& env, const sql::TableDef& t, const std::string& uid) -> absl::StatusOr<DataStream<Row>> {
    QueryOptions o = defaults;
    absl::Status s = apply_options(t, &o);
    if (!s.ok()) return s;
    auto kind_it = t.options.find("kind");
    const std::string kind = absl::AsciiStrToLower(kind_it != t.options.end() ? kind_it->second : t.name);
    std::function<Row(const Event&)> convert;
    EventType type;
    if (kind == "bid") {
      auto g = getters(t, bid_fields(), kind);
      if (!g.ok()) return g.status();
      convert = to_row(*std::move(g), &Event::bid);
      type = EventType::kBid;
    } else if (kind == "auction") {
      auto g = getters(t, auction_fields(), kind);
      if (!g.ok()) return g.status();
      convert = to_row(*std::move(g), &Event::auction);
      type = EventType::kAuction;
    } else if (kind == "person") {
      auto g = getters(t, person_fields(), kind);
      if (!g.ok()) return g.status();
      convert = to_row(*std::move(g), &Event::person);
      type = EventType::kPerson;
    } else {
      return absl::InvalidArgumentError("table " + t.name + ": a Nexmark table is of kind 'bid', 'auction' or "
                                        "'person' (option kind, or the table's name), not '" + kind + "'");
    }
    DataStream<Row> rows = internal::events(env, o, uid + "-source")
                               .flat_map<Row>(
                                   [type, convert](const Event& e, Collector<Row>& out) {
                                     if (e.type == type) out.collect(convert(e));
                                   },
                                   "to-rows");
    rows.uid(uid);
    return rows;
  };
}

absl::Status build_query_sql(StreamEnvironment& env, const QueryOptions& options) {
  const std::string* text = query_sql(options.query);
  if (text == nullptr) {
    std::vector<std::string> have = sql_queries();
    return absl::InvalidArgumentError("nexmark: no SQL text for query " + options.query + " (--api sql has " +
                                      absl::StrJoin(have, ", ") + ")");
  }
  auto script = sql::parse_script(tables_sql() + "\n" + *text);
  if (!script.ok()) return script.status();
  auto planned = sql::plan_script(*script);
  if (!planned.ok()) return planned.status();
  // The results: the table the (one) INSERT writes goes where the
  // DataStream queries' rows go.
  const std::string results = planned->inserts.front().root->table;
  for (sql::TableDef& t : planned->tables) {
    if (t.name == results) t.options["connector"] = "weir-nexmark-results";
    // q13's side input: the file of --side-input (or the one generated).
    if (t.name == "side_input" && !options.side_input.empty()) t.options["path"] = options.side_input;
  }
  sql::TableConnectors connectors = sql::TableConnectors::built_in();
  connectors.sources["nexmark"] = nexmark_table_source(options);
  // The results as the DataStream queries write theirs: each value's text
  // (NULL empty), comma-separated, unquoted; an updating result's rows
  // after their kind ("+U,...").
  // A partitioned table (q10) goes to the partitions' subdirectories of
  // --output, its partition columns in the paths, not in the lines.
  connectors.sinks["weir-nexmark-results"] = [options](const DataStream<Row>& rows, bool updating,
                                                      const sql::TableDef& t, const std::string& uid) {
    std::vector<std::string> names;
    std::vector<int> parts;
    if (auto by = t.options.find("partition-by"); by != t.options.end() && !options.output_dir.empty()) {
      for (absl::string_view c : absl::StrSplit(by->second, ',')) {
        names.emplace_back(c);
        parts.push_back(t.index_of(names.back()));
      }
    }
    DataStream<std::string> lines = rows.map(
        [updating, names, parts](const Row& r) {
          std::string s;
          if (updating) internal::add(s, std::string(row_kind_name(r.kind)));
          for (size_t i = 0; i < r.values.size(); ++i) {
            if (std::find(parts.begin(), parts.end(), static_cast<int>(i)) != parts.end()) continue;
            // Integers and strings (the most) without a copy of their text.
            if (const auto* n = std::get_if<int64_t>(&r.values[i])) {
              internal::add(s, *n);
            } else if (const auto* text = std::get_if<std::string>(&r.values[i])) {
              internal::add(s, *text);
            } else {
              internal::add(s, r.text(i).value_or(""));
            }
          }
          if (parts.empty()) return internal::finish(std::move(s));
          std::vector<std::optional<std::string>> values;
          for (int p : parts) values.push_back(r.text(static_cast<size_t>(p)));
          return sql::partition_path(names, values) + '\0' + internal::finish(std::move(s));
        },
        "result-lines");
    lines.uid(uid + "-format");
    if (parts.empty()) {
      internal::sink(lines, options, uid);
      return absl::OkStatus();
    }
    const std::string dir = options.output_dir;
    lines
        .sink_to(
            [dir] {
              return std::make_unique<ExactlyOnceFileSink>(dir, kResultPrefix, ExactlyOnceFileSink::PartitionPrefixed{});
            },
            "partitioned-files")
        .uid(uid);
    return absl::OkStatus();
  };
  return sql::build_job(*planned, connectors, env);
}

}  // namespace weir::nexmark
