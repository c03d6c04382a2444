#include "sql/table_options.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_join.h"
#include "common/nearest.h"

namespace weir::sql {
namespace {

struct Known {
  std::vector<std::string> keys;
  std::vector<std::string> prefixes;     // "properties." takes any key after it
  std::vector<std::string> not_yet;      // Flink's options weir does not take yet
  bool formats = false;                  // takes 'format' and the format's own options
};

const std::map<std::string, Known>& connectors() {
  static const std::map<std::string, Known> kKnown = {
      {"nexmark",
       {{"kind", "events", "rate", "event-rate", "seed", "fail-every", "first-event.rate", "next-event.rate", "events.num",
         "person.proportion", "auction.proportion", "bid.proportion"},
        {},
        {"max-events", "event.rate.unit"},
        false}},
      {"values", {{"rows", "scan.parallelism"}, {}, {"data-id", "bounded", "changelog-mode"}, false}},
      {"datagen", {{"rows-per-second", "number-of-rows"}, {"fields."}, {"scan.parallelism"}, false}},
      {"filesystem",
       {{"path", "scan.records-per-second"},
        {},
        {"sink.rolling-policy.file-size", "sink.rolling-policy.rollover-interval", "sink.rolling-policy.check-interval",
         "sink.partition-commit.trigger", "sink.partition-commit.delay", "sink.partition-commit.policy.kind",
         "partition.time-extractor.timestamp-pattern", "source.monitor-interval", "auto-compaction"},
        true}},
      {"kafka",
       {{"topic", "topic-pattern", "scan.startup.mode", "scan.startup.timestamp-millis", "scan.bounded.mode",
         "scan.records-per-second", "scan.watermark.idle-timeout", "value.format", "key.format", "sink.delivery-guarantee",
         "sink.transactional-id-prefix", "metadata.timestamp"},
        {"properties."},
        {"key.fields", "key.fields-prefix", "value.fields-include", "sink.partitioner", "scan.startup.specific-offsets",
         "scan.topic-partition-discovery.interval", "sink.parallelism"},
        true}},
      {"upsert-kafka",  // the kafka connector's, the key of its records being the PRIMARY KEY
       {{"topic", "topic-pattern", "scan.startup.mode", "scan.startup.timestamp-millis", "scan.bounded.mode",
         "scan.records-per-second", "scan.watermark.idle-timeout", "value.format", "key.format", "sink.delivery-guarantee",
         "sink.transactional-id-prefix", "metadata.timestamp"},
        {"properties."},
        {"key.fields-prefix", "value.fields-include", "sink.buffer-flush.max-rows", "sink.buffer-flush.interval",
         "sink.parallelism"},
        true}},
      {"postgres",
       {{"conninfo", "table-name", "sink.transaction-prefix", "scan.fetch-size"},
        {},
        {"sink.parallelism", "scan.partition.column", "scan.partition.num", "scan.partition.lower-bound",
         "scan.partition.upper-bound", "scan.auto-commit", "lookup.cache", "lookup.cache.max-rows", "lookup.cache.ttl",
         "lookup.partial-cache.max-rows", "lookup.partial-cache.expire-after-write",
         "lookup.partial-cache.expire-after-access", "lookup.max-retries", "sink.buffer-flush.max-rows",
         "sink.buffer-flush.interval", "sink.max-retries"},
        false}},
      {"print", {{}, {}, {"print-identifier", "standard-error", "sink.parallelism"}, false}},
      {"blackhole", {{}, {}, {}, false}},
  };
  return kKnown;
}

// Every table's options (weir's own: the event time as an option, and the
// planner's notes of PRIMARY KEY and PARTITIONED BY).
const std::vector<std::string>& common() {
  static const std::vector<std::string> kCommon = {"connector", "watermark", "primary-key", "partition-by"};
  return kCommon;
}

// The options of each format, after its name ("json.ignore-parse-errors").
const std::map<std::string, std::vector<std::string>>& formats() {
  static const std::map<std::string, std::vector<std::string>> kFormats = {
      {"json", {"ignore-parse-errors", "fail-on-missing-field", "timestamp-format.standard"}},
      {"csv", {"ignore-parse-errors"}},
      {"raw", {}},
      {"changelog-csv", {}},
  };
  return kFormats;
}

// "jdbc:postgresql://host[:port]/db[?...]" -> libpq's conninfo words.
absl::Status jdbc_conninfo(std::map<std::string, std::string>* o) {
  const std::string url = o->contains("url") ? o->at("url") : "";
  const std::string kPrefix = "jdbc:postgresql://";
  if (!absl::StartsWith(url, kPrefix)) {
    return absl::InvalidArgumentError("the jdbc connector's 'url' must be 'jdbc:postgresql://host[:port]/database' "
                                      "(weir's jdbc is PostgreSQL), not '" + url + "'");
  }
  std::string rest = url.substr(kPrefix.size());
  if (const size_t q = rest.find('?'); q != std::string::npos) {
    return absl::InvalidArgumentError("the jdbc connector's 'url': parameters after '?' are not supported yet ('" + url + "')");
  }
  const size_t slash = rest.find('/');
  if (slash == std::string::npos || slash + 1 == rest.size()) {
    return absl::InvalidArgumentError("the jdbc connector's 'url' names no database: '" + url + "'");
  }
  std::string host = rest.substr(0, slash), port;
  const std::string db = rest.substr(slash + 1);
  if (const size_t colon = host.rfind(':'); colon != std::string::npos) {
    port = host.substr(colon + 1);
    host = host.substr(0, colon);
    int p = 0;
    if (!absl::SimpleAtoi(port, &p) || p < 1 || p > 65535) {
      return absl::InvalidArgumentError("the jdbc connector's 'url' has no port number after ':': '" + url + "'");
    }
  }
  // libpq's conninfo: a value in single quotes, ' and \ escaped.
  auto word = [](const std::string& key, const std::string& value) {
    std::string v;
    for (char c : value) {
      if (c == '\'' || c == '\\') v += '\\';
      v += c;
    }
    return key + "='" + v + "'";
  };
  std::vector<std::string> words = {word("host", host), word("dbname", db)};
  if (!port.empty()) words.push_back(word("port", port));
  if (auto u = o->find("username"); u != o->end()) words.push_back(word("user", u->second));
  if (auto p = o->find("password"); p != o->end()) words.push_back(word("password", p->second));
  (*o)["conninfo"] = absl::StrJoin(words, " ");
  (*o)["connector"] = "postgres";
  for (const char* k : {"url", "username", "password"}) o->erase(k);
  if (auto d = o->find("driver"); d != o->end()) {
    if (d->second != "org.postgresql.Driver") {
      return absl::InvalidArgumentError("the jdbc connector's 'driver' '" + d->second + "': weir's jdbc is PostgreSQL (org.postgresql.Driver)");
    }
    o->erase(d);
  }
  return absl::OkStatus();
}

}  // namespace

const std::vector<std::string>& known_connectors() {
  static const std::vector<std::string> kNames = {"nexmark",  "values", "datagen", "filesystem", "kafka", "upsert-kafka",
                                                  "postgres", "jdbc",   "print",   "blackhole"};
  return kNames;
}

absl::Status normalize_options(std::map<std::string, std::string>* o) {
  for (const auto& [legacy, now] : std::vector<std::pair<std::string, std::string>>{
           {"connector.type", "connector"}, {"connector.path", "path"}, {"format.type", "format"}}) {
    auto it = o->find(legacy);
    if (it == o->end()) continue;
    if (o->contains(now)) return absl::InvalidArgumentError("both '" + legacy + "' and '" + now + "' are given");
    (*o)[now] = it->second;
    o->erase(legacy);
  }
  if (auto c = o->find("connector"); c != o->end() && c->second == "jdbc") return jdbc_conninfo(o);
  // A filesystem path as Flink writes it: file:///tmp/x is /tmp/x.
  if (auto c = o->find("connector"); c != o->end() && c->second == "filesystem") {
    if (auto p = o->find("path"); p != o->end()) {
      if (absl::StartsWith(p->second, "file://")) {
        p->second = p->second.substr(std::string("file://").size());
      } else if (const size_t scheme = p->second.find("://"); scheme != std::string::npos) {
        return absl::InvalidArgumentError("the filesystem connector's 'path' '" + p->second + "': " +
                                          p->second.substr(0, scheme) + ":// is not supported yet (a local path or file:// is)");
      }
    }
  }
  return absl::OkStatus();
}

bool source_applies_equality(const std::string& connector, const std::string& column) {
  return connector == "nexmark" && absl::EqualsIgnoreCase(column, "event_type");
}

std::vector<std::string> source_unique_keys(const TableDef& t) {
  if (t.connector() != "nexmark" || t.index_of("event_type") < 0) return {};
  std::vector<std::string> keys;
  for (const char* k : {"person.id", "auction.id"}) {
    if (t.index_of(k) >= 0) keys.emplace_back(k);
  }
  return keys;
}

std::string nearest(const std::string& key, const std::vector<std::string>& known) { return nearest_name(key, known); }

std::string check_formats(const std::string& connector, const std::map<std::string, std::string>& options) {
  auto it = connectors().find(connector);
  if (it == connectors().end() || !it->second.formats) return "";
  const std::vector<std::string> takes = connector == "filesystem" ? std::vector<std::string>{"csv", "changelog-csv"}
                                                                   : std::vector<std::string>{"json", "csv", "raw"};
  for (const char* which : {"format", "key.format", "value.format"}) {
    auto f = options.find(which);
    if (f == options.end()) continue;
    if (std::find(takes.begin(), takes.end(), f->second) != takes.end()) continue;
    static const std::vector<std::string> kFlinks = {"avro", "avro-confluent", "debezium-json", "canal-json", "maxwell-json",
                                                     "ogg-json", "parquet", "orc", "protobuf", "debezium-avro-confluent"};
    if (std::find(kFlinks.begin(), kFlinks.end(), f->second) != kFlinks.end()) {
      return "'" + std::string(which) + "' = '" + f->second + "' is not supported yet by the " + connector + " connector (" +
             absl::StrJoin(takes, ", ") + " are)";
    }
    const std::string near = nearest(f->second, takes);
    return "unknown '" + std::string(which) + "' '" + f->second + "' of the " + connector + " connector" +
           (near.empty() ? " (" + absl::StrJoin(takes, ", ") + " are known)" : " (did you mean '" + near + "'?)");
  }
  if (connector == "kafka" && !options.contains("format") && !options.contains("value.format")) {
    return "the " + connector + " connector needs 'format' (or 'value.format') = 'json', 'csv' or 'raw'";
  }
  return "";
}

std::string check_option(const std::string& connector, const std::map<std::string, std::string>& options,
                         const std::string& key) {
  auto it = connectors().find(connector);
  if (it == connectors().end()) return "";  // the connector itself is refused elsewhere
  const Known& k = it->second;
  std::vector<std::string> known = common();
  known.insert(known.end(), k.keys.begin(), k.keys.end());
  if (k.formats) {
    known.push_back("format");
    // The formats the table names, and their options as written alone
    // ('json.x') or for the key or the value ('key.json.x').
    for (const char* which : {"format", "key.format", "value.format"}) {
      auto f = options.find(which);
      if (f == options.end()) continue;
      auto of = formats().find(f->second);
      if (of == formats().end()) continue;
      const std::string prefix = std::string(which) == "format" ? "" : std::string(which).substr(0, std::string(which).find('.') + 1);
      for (const std::string& x : of->second) known.push_back(prefix + f->second + "." + x);
    }
  }
  if (std::find(known.begin(), known.end(), key) != known.end()) return "";
  for (const std::string& p : k.prefixes) {
    if (absl::StartsWith(key, p) && key.size() > p.size()) return "";
  }
  if (std::find(k.not_yet.begin(), k.not_yet.end(), key) != k.not_yet.end()) {
    return "option '" + key + "' of the " + connector + " connector is not supported yet (docs/sql.md, \"Flink compatibility\")";
  }
  std::string message = "unknown option '" + key + "' of the " + connector + " connector";
  const std::string near = nearest(key, known);
  if (!near.empty()) {
    message += " (did you mean '" + near + "'?)";
  } else {
    std::vector<std::string> own(k.keys);
    if (k.formats) own.push_back("format");
    for (const std::string& p : k.prefixes) own.push_back(p + "*");
    message += own.empty() ? " (it takes none)" : " (it takes " + absl::StrJoin(own, ", ") + ")";
  }
  return message;
}

}  // namespace weir::sql
