// PostgreSQL tables (sql/job_builder.h): 'postgres', a sink through
// weir/postgres.h, its options named as Flink's JDBC connector names its.
#include "absl/strings/str_split.h"
#include "sql/connector_tables.h"
#include "sql/expression.h"
#include "sql/keys.h"
#include "weir/postgres.h"

namespace weir::sql {
namespace {

// The rows as PostgreSQL reads text: TIMESTAMP as '2020-01-01 00:00:01.000'
// (UTC), INTERVAL as milliseconds, the rest as a format writes it.
PostgresRow postgres_row(const Row& r, const std::vector<TypeKind>& kinds) {
  PostgresRow p = PostgresRow::of(r);
  for (size_t i = 0; i < r.values.size(); ++i) {
    if (kinds[i] == TypeKind::kTimestamp && std::holds_alternative<int64_t>(r.values[i])) {
      p.values[i] = timestamp_text(std::get<int64_t>(r.values[i]));
    }
  }
  return p;
}

// Changes of one key reach one sink subtask, in order.
class ByKey final : public KeyedProcessFunction<std::string, Row, PostgresRow> {
 public:
  explicit ByKey(std::vector<TypeKind> kinds) : kinds_(std::move(kinds)) {}
  void process_element(const Row& row, Context&, Collector<PostgresRow>& out) override {
    out.collect(postgres_row(row, kinds_));
  }

 private:
  const std::vector<TypeKind> kinds_;
};

absl::Status postgres_sink(const DataStream<Row>& rows, bool updating, const TableDef& t, const std::string& uid) {
  const std::string conninfo = table_option(t, "conninfo");
  if (conninfo.empty()) return table_error(t, "the postgres connector needs conninfo = 'host=... dbname=...' (libpq's)");
  const std::string table = table_option(t, "table-name", t.name);
  std::vector<std::string> columns;
  std::vector<TypeKind> kinds;
  for (const Column& c : t.columns) columns.push_back(c.name), kinds.push_back(c.type.kind);
  auto pk = t.options.find("primary-key");
  if (pk == t.options.end()) {
    if (updating) {
      return table_error(t, "the query's result is updating (a GROUP BY without a window): declare the table's PRIMARY KEY, "
                    "and the postgres connector upserts by it");
    }
    // Inserts, exactly once: one prepared transaction per checkpoint.
    PostgresSink::Builder b = PostgresSink::builder();
    b.conninfo(conninfo).table(table).columns(columns).transaction_prefix(
        table_option(t, "sink.transaction-prefix", "weir-" + t.name));
    absl::Status valid = b.options().validate();
    if (!valid.ok()) return table_error(t, std::string(valid.message()));
    DataStream<PostgresRow> out = rows.map([kinds](const Row& r) { return postgres_row(r, kinds); }, "postgres-row");
    out.uid(uid + "-row");
    out.sink_to(b.build(), "postgres-" + t.name).uid(uid);
    return absl::OkStatus();
  }
  // By primary key: each key's last change upserted (or deleted).
  std::vector<std::string> key_columns = absl::StrSplit(pk->second, ',');
  PostgresUpsertSink::Builder b = PostgresUpsertSink::builder();
  b.conninfo(conninfo).table(table).columns(columns).key_columns(key_columns);
  absl::Status valid = b.options().validate();
  if (!valid.ok()) return table_error(t, std::string(valid.message()));
  std::vector<Expr> keys;
  for (const std::string& k : key_columns) {
    const int i = t.index_of(k);
    keys.push_back(Expr::column_ref(i, t.columns[static_cast<size_t>(i)].type));
  }
  std::vector<std::string> names;
  for (const Column& c : t.columns) names.push_back(c.name);
  auto encoder = std::make_shared<const KeyEncoder>(keys, names, "PRIMARY KEY");
  DataStream<PostgresRow> out = rows.key_by([encoder](const Row& r) { return encoder->encode(r); })
                                    .process<PostgresRow>([kinds] { return std::make_unique<ByKey>(kinds); },
                                                          "postgres-by-key");
  out.uid(uid + "-by-key");
  out.sink_to(b.build(), "postgres-" + t.name).uid(uid);
  return absl::OkStatus();
}

}  // namespace

void add_postgres_tables(TableConnectors* c) { c->sinks["postgres"] = postgres_sink; }

}  // namespace weir::sql
