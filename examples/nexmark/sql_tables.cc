#include "examples/nexmark/sql_tables.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
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

// The row of `x`: a value per getter. Flattened: every call it makes
// (the vector's growth, a value's move) inlined into this one loop, the
// hottest of a SQL Nexmark query's source.
template <typename T>
[[gnu::flatten]] Row row_of(const std::vector<std::function<Value(const T&)>>& get, const T& x) {
  Row r;
  r.values.reserve(get.size());
  for (const auto& g : get) r.values.push_back(g(x));
  return r;
}

template <typename T>
std::function<Row(const Event&)> to_row(std::vector<std::function<Value(const T&)>> get, const T Event::*member) {
  return [get = std::move(get), member](const Event& e) { return row_of(get, e.*member); };
}

absl::Status apply_options(const sql::TableDef& t, QueryOptions* o) {
  // The benchmark connector's names: one event rate (of event time).
  if (auto first = t.options.find("first-event.rate"), next = t.options.find("next-event.rate");
      first != t.options.end() && next != t.options.end() && first->second != next->second) {
    return absl::InvalidArgumentError("table " + t.name + ": 'first-event.rate' and 'next-event.rate' differ ('" +
                                      first->second + "', '" + next->second +
                                      "'): a changing rate is not supported yet (weir's generator has one)");
  }
  for (const auto& [name, value] : t.options) {
    int64_t* target = name == "events" || name == "events.num"                   ? &o->source.events
                      : name == "rate"                                           ? &o->source.rate_limit
                      : name == "event-rate" || name == "first-event.rate" || name == "next-event.rate" ? &o->generator.event_rate
                      : name == "person.proportion"                              ? &o->generator.person_proportion
                      : name == "auction.proportion"                             ? &o->generator.auction_proportion
                      : name == "bid.proportion"                                 ? &o->generator.bid_proportion
                      : name == "fail-every"                                     ? &o->source.fail_every
                                                                                 : nullptr;
    if (name == "seed") {
      if (!absl::SimpleAtoi(value, &o->source.seed)) return absl::InvalidArgumentError("table " + t.name + ": seed '" + value + "' is not a number");
      continue;
    }
    if (target == nullptr) {
      if (name == "connector" || name == "kind" || name == "watermark" || name == "primary-key") continue;
      return absl::InvalidArgumentError("table " + t.name + ": unknown option '" + name +
                                        "' of the nexmark connector (kind, events, rate, event-rate, seed, fail-every, "
                                        "watermark; first-event.rate, next-event.rate, events.num, person.proportion, "
                                        "auction.proportion, bid.proportion)");
    }
    if (!absl::SimpleAtoi(value, target) || *target < 0) {
      return absl::InvalidArgumentError("table " + t.name + ": " + name + " '" + value + "' is not a whole number");
    }
  }
  if (o->generator.person_proportion + o->generator.auction_proportion + o->generator.bid_proportion <= 0) {
    return absl::InvalidArgumentError("table " + t.name + ": the proportions of persons, auctions and bids add up to 0");
  }
  if (t.watermark) o->watermark_slack_ms = t.watermark->delay_ms;
  return absl::OkStatus();
}

// The Nexmark event table as the benchmark's DDL declares it: event_type
// (0 a person, 1 an auction, 2 a bid) and each kind's fields as the
// columns of a ROW (person.id, auction.seller, bid.price, ...: CREATE
// TABLE flattens a ROW into columns named row.field), the other kinds'
// NULL. With a pushed condition event_type = k, only events of kind k
// are rows.
bool is_event_table(const sql::TableDef& t) {
  for (const sql::Column& c : t.declared.empty() ? t.columns : t.declared) {
    if (c.name.find('.') != std::string::npos || absl::AsciiStrToLower(c.name) == "event_type") return true;
  }
  return false;
}

template <typename T>
absl::StatusOr<std::function<Value(const Event&)>> event_field(const sql::TableDef& t, const sql::Column& c,
                                                               const std::vector<FieldOf<T>>& fields, EventType type,
                                                               const T Event::*member, const std::string& field) {
  sql::TableDef one = t;
  one.columns = {{field, c.type}};
  auto g = getters(one, fields, c.name.substr(0, c.name.find('.')));
  if (!g.ok()) return g.status();
  return [get = std::move(g->front()), type, member](const Event& e) { return e.type == type ? get(e.*member) : Value{}; };
}

absl::StatusOr<std::function<Row(const Event&)>> event_row(const sql::TableDef& t) {
  std::vector<std::function<Value(const Event&)>> get;
  for (const sql::Column& c : t.columns) {
    const std::string name = absl::AsciiStrToLower(c.name);
    if (name == "event_type") {
      if (c.type.kind != TypeKind::kBigInt) {
        return absl::InvalidArgumentError("table " + t.name + ": column event_type is " + std::string(sql::type_name(c.type.kind)) +
                                          ", the Nexmark event's kind an INT");
      }
      get.push_back([](const Event& e) { return Value{static_cast<int64_t>(e.type)}; });
      continue;
    }
    const size_t dot = name.find('.');
    const std::string kind = dot == std::string::npos ? "" : name.substr(0, dot);
    const std::string field = dot == std::string::npos ? "" : c.name.substr(dot + 1);
    absl::StatusOr<std::function<Value(const Event&)>> g = absl::InvalidArgumentError(
        "table " + t.name + ": column " + c.name + " is none of a Nexmark event's (event_type, and the fields of ROW " +
        "columns person, auction and bid)");
    if (kind == "person") g = event_field(t, c, person_fields(), EventType::kPerson, &Event::person, field);
    if (kind == "auction") g = event_field(t, c, auction_fields(), EventType::kAuction, &Event::auction, field);
    if (kind == "bid") g = event_field(t, c, bid_fields(), EventType::kBid, &Event::bid, field);
    if (!g.ok()) return g.status();
    get.push_back(*std::move(g));
  }
  return [get = std::move(get)](const Event& e) {
    Row r;
    r.values.reserve(get.size());
    for (const auto& g : get) r.values.push_back(g(e));
    return r;
  };
}

// The rows of events of one kind (a pushed event_type = k): that kind's
// fields read straight from the event, the other kinds' NULL.
template <typename T>
absl::StatusOr<std::function<Row(const Event&)>> pinned_row(const sql::TableDef& t, const std::vector<FieldOf<T>>& fields,
                                                            EventType type, const T Event::*member,
                                                            const std::string& kind) {
  auto checked = event_row(t);  // every column valid, as without the condition
  if (!checked.ok()) return checked.status();
  struct Part {
    enum class What : uint8_t { kField, kEventType, kNull } what;
    std::function<Value(const T&)> get;
  };
  std::vector<Part> parts;
  for (const sql::Column& c : t.columns) {
    const std::string name = absl::AsciiStrToLower(c.name);
    if (name == "event_type") {
      parts.push_back({Part::What::kEventType, nullptr});
    } else if (absl::StartsWith(name, kind + ".")) {
      sql::TableDef one = t;
      one.columns = {{c.name.substr(kind.size() + 1), c.type}};
      auto g = getters(one, fields, kind);
      if (!g.ok()) return g.status();
      parts.push_back({Part::What::kField, std::move(g->front())});
    } else {
      parts.push_back({Part::What::kNull, nullptr});
    }
  }
  // Only the kind's own fields (what a query of one kind reads): the rows
  // as a table of that kind makes them, no case per column.
  if (std::all_of(parts.begin(), parts.end(), [](const Part& p) { return p.what == Part::What::kField; })) {
    std::vector<std::function<Value(const T&)>> get;
    for (Part& p : parts) get.push_back(std::move(p.get));
    return to_row(std::move(get), member);
  }
  return [parts = std::move(parts), type, member](const Event& e) {
    Row r;
    r.values.reserve(parts.size());
    for (const Part& p : parts) {
      switch (p.what) {
        case Part::What::kField: r.values.push_back(p.get(e.*member)); break;
        case Part::What::kEventType: r.values.push_back(Value{static_cast<int64_t>(type)}); break;
        case Part::What::kNull: r.values.emplace_back(); break;
      }
    }
    return r;
  };
}

}  // namespace

sql::TableSource nexmark_table_source(QueryOptions defaults) {
  return [defaults](StreamEnvironment& env, const sql::TableDef& t, const std::string& uid) -> absl::StatusOr<DataStream<Row>> {
    QueryOptions o = defaults;
    absl::Status s = apply_options(t, &o);
    if (!s.ok()) return s;
    if (is_event_table(t)) {
      std::optional<EventType> only;  // a pushed event_type = k
      for (const auto& [column, value] : t.equal_to) {
        const int64_t* k = std::get_if<int64_t>(&value);
        if (absl::AsciiStrToLower(column) != "event_type" || k == nullptr) continue;
        if (*k < 0 || *k > 2 || (only && *only != static_cast<EventType>(*k))) {
          only = std::nullopt;  // no event is of it: the filter above leaves none
          break;
        }
        only = static_cast<EventType>(*k);
      }
      auto convert = !only                         ? event_row(t)
                     : *only == EventType::kBid    ? pinned_row(t, bid_fields(), EventType::kBid, &Event::bid, "bid")
                     : *only == EventType::kAuction ? pinned_row(t, auction_fields(), EventType::kAuction, &Event::auction, "auction")
                                                    : pinned_row(t, person_fields(), EventType::kPerson, &Event::person, "person");
      if (!convert.ok()) return convert.status();
      DataStream<Row> rows = internal::events(env, o, uid + "-source")
                                 .flat_map<Row>(
                                     [only, convert = *std::move(convert)](const Event& e, Collector<Row>& out) {
                                       if (!only || e.type == *only) out.collect(convert(e));
                                     },
                                     "FROM " + t.name +
                                         (only ? std::string(*only == EventType::kBid       ? " (bids)"
                                                             : *only == EventType::kAuction ? " (auctions)"
                                                                                            : " (persons)")
                                               : std::string()));
      rows.uid(uid);
      return rows;
    }
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
                                   "FROM " + t.name);
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
