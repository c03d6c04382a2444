// PostgreSQL sinks (libpq): rows exactly-once through two-phase commit, and
// changelog streams upserted by primary key; and a source reading a table
// once, resumable by primary key.
//
//   rows.sink_to(PostgresSink::builder().conninfo("host=db dbname=app").table("totals")
//                    .columns({"key", "total"}).transaction_prefix("totals-job").build(), "db");
//
// The rows a subtask receives between two checkpoint barriers are inserted
// in one transaction, which is prepared (PREPARE TRANSACTION) at the barrier
// and committed (COMMIT PREPARED) when that checkpoint completes. Prepared
// transactions survive a crash of weir and can be committed by any session,
// so a restored subtask commits those of the restored checkpoint, and rolls
// back every other prepared transaction of the sink (a later attempt's).
// Each transaction also inserts its id into weir_sink_commits, so a commit
// that happened just before a crash is recognised and never applied twice.
// Needs max_prepared_transactions > 0 on the server. docs/postgres.md.
//
// PostgresUpsertSink: a changelog (+I/+U insert or update the row of its
// key, -D deletes it, and so does -U unless its +U follows in the batch: a
// -U alone is a row a condition above an aggregation dropped) applied by
// primary key, batched: per batch the last change of each key, as one
// INSERT ... ON CONFLICT DO UPDATE and one DELETE, in one transaction.
// Batches are written when full and at every checkpoint barrier, so the
// checkpoint covers them; replaying changes after a restore writes the same
// rows again, so at-least-once delivery leaves the table equal to the final
// state of the changelog. The changes of one key must reach one sink subtask
// in order: key the stream by the primary key before the sink.
#ifndef WEIR_POSTGRES_H_
#define WEIR_POSTGRES_H_

#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "weir/formats.h"
#include "weir/functions.h"

namespace weir {

// One row: a value per column of the sink, in PostgreSQL's text format
// (nullopt: NULL). `kind` matters to the upsert sink; the two-phase sink
// inserts every row it gets.
struct PostgresRow {
  std::vector<std::optional<std::string>> values;
  RowKind kind = RowKind::kInsert;
  auto weir_fields() { return std::tie(values, kind); }
  // A row of a format (weir/formats.h), its values as text.
  static PostgresRow of(const Row& row);
};

struct PostgresSinkOptions {
  std::string conninfo;  // libpq connection string
  std::string table;
  std::vector<std::string> columns;
  // Names the sink's prepared transactions (<prefix>-<subtask>-<checkpoint>);
  // unique per sink writing to the database, kept across restarts.
  std::string transaction_prefix;
  int rows_per_statement = 500;

  absl::Status validate() const;
};

class PostgresSink final : public Sink<PostgresRow> {
 public:
  class Builder {
   public:
    Builder& conninfo(std::string c) { o_.conninfo = std::move(c); return *this; }
    Builder& table(std::string t) { o_.table = std::move(t); return *this; }
    Builder& columns(std::vector<std::string> c) { o_.columns = std::move(c); return *this; }
    Builder& transaction_prefix(std::string p) { o_.transaction_prefix = std::move(p); return *this; }
    const PostgresSinkOptions& options() const { return o_; }
    SinkFactory<PostgresRow> build() const;

   private:
    PostgresSinkOptions o_;
  };
  static Builder builder() { return Builder(); }

  explicit PostgresSink(PostgresSinkOptions options);
  ~PostgresSink() override;

  absl::Status open(OperatorContext& ctx) override;
  absl::Status write(const PostgresRow& row) override;
  absl::Status snapshot_state(int64_t checkpoint_id) override;
  void notify_checkpoint_complete(int64_t checkpoint_id) override;
  void close() override;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

struct PostgresUpsertSinkOptions {
  std::string conninfo;
  std::string table;
  std::vector<std::string> columns;
  std::vector<std::string> key_columns;  // the table's primary key (or a unique index), among columns
  int max_batch_rows = 1000;              // distinct keys held before a batch is written

  absl::Status validate() const;
};

class PostgresUpsertSink final : public Sink<PostgresRow> {
 public:
  class Builder {
   public:
    Builder& conninfo(std::string c) { o_.conninfo = std::move(c); return *this; }
    Builder& table(std::string t) { o_.table = std::move(t); return *this; }
    Builder& columns(std::vector<std::string> c) { o_.columns = std::move(c); return *this; }
    Builder& key_columns(std::vector<std::string> k) { o_.key_columns = std::move(k); return *this; }
    Builder& max_batch_rows(int n) { o_.max_batch_rows = n; return *this; }
    const PostgresUpsertSinkOptions& options() const { return o_; }
    SinkFactory<PostgresRow> build() const;

   private:
    PostgresUpsertSinkOptions o_;
  };
  static Builder builder() { return Builder(); }

  explicit PostgresUpsertSink(PostgresUpsertSinkOptions options);
  ~PostgresUpsertSink() override;

  absl::Status open(OperatorContext& ctx) override;
  absl::Status write(const PostgresRow& row) override;
  absl::Status finish() override;
  absl::Status snapshot_state(int64_t checkpoint_id) override;
  void close() override;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// PostgresSource: a table's rows, read once (a bounded source), in the
// order of its primary key, `fetch_size` rows per query (keyset paging:
// WHERE (key) > (last key read) ORDER BY key LIMIT n). A checkpoint keeps
// the last key emitted, so a restored source goes on after it: each row is
// emitted once into the job's state (rows the table gains or loses while
// it is read are seen or not, as their key falls). Subtask 0 reads the
// table; the others end at once. Values are PostgreSQL's text of
// `expressions` (each a SQL expression over the table's columns; default
// the column), as a PostgresRow.
//
//   env.from_source(PostgresSource::builder().conninfo("host=db dbname=app").table("rates")
//                       .columns({"currency", "rate"}).key_columns({"currency"}).build(), "rates")
struct PostgresSourceOptions {
  std::string conninfo;
  std::string table;
  std::vector<std::string> columns;
  std::vector<std::string> expressions;  // one per column, or none (the columns themselves)
  std::vector<std::string> key_columns;  // the table's primary key (or a unique NOT NULL index)
  int fetch_size = 1000;

  absl::Status validate() const;
};

class PostgresSource final : public Source<PostgresRow> {
 public:
  class Builder {
   public:
    Builder& conninfo(std::string c) { o_.conninfo = std::move(c); return *this; }
    Builder& table(std::string t) { o_.table = std::move(t); return *this; }
    Builder& columns(std::vector<std::string> c) { o_.columns = std::move(c); return *this; }
    Builder& expressions(std::vector<std::string> e) { o_.expressions = std::move(e); return *this; }
    Builder& key_columns(std::vector<std::string> k) { o_.key_columns = std::move(k); return *this; }
    Builder& fetch_size(int n) { o_.fetch_size = n; return *this; }
    const PostgresSourceOptions& options() const { return o_; }
    SourceFactory<PostgresRow> build() const;

   private:
    PostgresSourceOptions o_;
  };
  static Builder builder() { return Builder(); }

  explicit PostgresSource(PostgresSourceOptions options);
  ~PostgresSource() override;

  absl::Status open(OperatorContext& ctx) override;
  PollStatus poll(SourceOutput<PostgresRow>& out, int max_records) override;
  absl::Status snapshot_state(int64_t checkpoint_id) override;
  void close() override;
  bool bounded() const override { return true; }

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace weir

#endif  // WEIR_POSTGRES_H_
