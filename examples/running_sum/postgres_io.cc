// running-sum into PostgreSQL: the sums as rows (key, sum, count), every
// one inserted exactly once, or upserted by key.
#include "examples/running_sum/running_sum.h"
#include "weir/postgres.h"

namespace weir::examples {

void sink_to_postgres(const DataStream<std::string>& sums, const RunningSumOptions& o) {
  auto rows = sums.map(
      [](const std::string& line) {
        // key,sum,count: the key may hold commas, the numbers do not.
        size_t b = line.rfind(',');
        size_t a = line.rfind(',', b - 1);
        PostgresRow r;
        r.kind = RowKind::kUpdateAfter;
        r.values = {line.substr(0, a), line.substr(a + 1, b - a - 1), line.substr(b + 1)};
        return r;
      },
      "to-row");
  rows.uid("to-row").parallelism(o.parallelism);
  if (o.postgres_upsert) {
    // The sums of a key come from one running-sum subtask, in order, and
    // reach the sink through forward edges: one sink subtask per key.
    rows.sink_to(PostgresUpsertSink::builder()
                     .conninfo(o.postgres)
                     .table(o.output_table)
                     .columns({"key", "sum", "count"})
                     .key_columns({"key"})
                     .build(),
                 "postgres-upsert")
        .uid("postgres-upsert")
        .parallelism(o.parallelism);
    return;
  }
  rows.sink_to(PostgresSink::builder()
                   .conninfo(o.postgres)
                   .table(o.output_table)
                   .columns({"key", "sum", "count"})
                   .transaction_prefix("weir-running-sum-" + o.output_table)
                   .build(),
               "postgres-sink")
      .uid("postgres-sink")
      .parallelism(o.parallelism);
}

}  // namespace weir::examples
