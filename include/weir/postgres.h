// PostgreSQL sink with exactly-once output through two-phase commit (libpq).
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
#ifndef WEIR_POSTGRES_H_
#define WEIR_POSTGRES_H_

#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "weir/functions.h"

namespace weir {

// One row: a value per column of the sink, in PostgreSQL's text format
// (nullopt: NULL).
struct PostgresRow {
  std::vector<std::optional<std::string>> values;
  auto weir_fields() { return std::tie(values); }
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

}  // namespace weir

#endif  // WEIR_POSTGRES_H_
