// PostgresSink: two-phase commit over libpq. See weir/postgres.h and
// docs/postgres.md.
#include <libpq-fe.h>

#include <algorithm>
#include <map>
#include <set>
#include <string_view>

#include "common/test_points.h"
#include "connectors/pg_session.h"
#include "spdlog/spdlog.h"
#include "weir/postgres.h"

namespace weir {

absl::Status PostgresSinkOptions::validate() const {
  if (conninfo.empty()) return absl::InvalidArgumentError("postgres sink: no connection string");
  if (table.empty()) return absl::InvalidArgumentError("postgres sink: no table");
  if (columns.empty()) return absl::InvalidArgumentError("postgres sink to " + table + ": no columns");
  if (transaction_prefix.empty()) {
    return absl::InvalidArgumentError("postgres sink to " + table +
                                      ": needs a transaction prefix, unique to this sink");
  }
  if (rows_per_statement < 1) return absl::InvalidArgumentError("postgres sink: rows per statement must be >= 1");
  return absl::OkStatus();
}

SinkFactory<PostgresRow> PostgresSink::Builder::build() const {
  PostgresSinkOptions o = o_;
  return [o] { return std::make_unique<PostgresSink>(o); };
}

namespace {

using pg::PgSession;
using pg::Result;

// A prepared transaction of the sink, awaiting its checkpoint.
struct PreparedTransaction {
  int64_t checkpoint_id = 0;
  int32_t writer = 0;
  std::string gid;
  auto weir_fields() { return std::tie(checkpoint_id, writer, gid); }
};

constexpr char kCommitsTable[] = "weir_sink_commits";

}  // namespace

PostgresRow PostgresRow::of(const Row& row) {
  PostgresRow r;
  r.kind = row.kind;
  r.values.reserve(row.values.size());
  for (size_t i = 0; i < row.values.size(); ++i) r.values.push_back(row.text(i));
  return r;
}

class PostgresSink::Impl {
 public:
  explicit Impl(PostgresSinkOptions o) : o_(std::move(o)) {}
  ~Impl() { close(); }

  absl::Status open(OperatorContext& ctx) {
    absl::Status valid = o_.validate();
    if (!valid.ok()) return valid;
    subtask_ = ctx.subtask_index();
    sent_ = &ctx.metrics().counter(kSinkRecordsSent);
    committed_records_ = &ctx.metrics().counter(kSinkRecordsCommitted);
    committed_transactions_ = &ctx.metrics().counter(kSinkTransactionsCommitted);
    // Rows go through one connection, inside a transaction; prepared
    // transactions are committed through another (COMMIT PREPARED cannot
    // run inside a transaction).
    absl::Status s = data_.connect(o_.conninfo);
    if (s.ok()) s = ctl_.connect(o_.conninfo);
    if (!s.ok()) return s;
    auto prepared = data_.query("SHOW max_prepared_transactions");
    if (!prepared.ok()) return prepared.status();
    if (std::atoi(PQgetvalue(prepared->get(), 0, 0)) <= 0) {
      return absl::FailedPreconditionError("postgres " + data_.server() +
                                           ": max_prepared_transactions is 0; the exactly-once sink needs "
                                           "it above 0 (set it in postgresql.conf and restart the server)");
    }
    s = data_.probe(o_.table, o_.columns);
    if (s.ok()) {
      s = data_.exec(std::string("CREATE TABLE IF NOT EXISTS ") + kCommitsTable +
                     " (gid text PRIMARY KEY, committed_at timestamptz NOT NULL DEFAULT now())");
    }
    if (!s.ok()) return s;
    insert_prefix_ = "INSERT INTO " + data_.quote_ident(o_.table) + " (" + data_.column_list(o_.columns) + ") VALUES ";

    state_ = std::make_unique<OperatorListState<PreparedTransaction>>(ctx, "postgres-prepared",
                                                                      detail::Redistribution::kUnion);
    bool corrupt = false;
    std::vector<PreparedTransaction> restored = state_->get(&corrupt);
    if (corrupt) return absl::DataLossError("postgres sink to " + o_.table + ": restored state is corrupt");
    // Every subtask sees every restored transaction (union state) and takes
    // those of the writers that map to it, so a rescaled job finishes all.
    std::set<std::string> keep;
    for (const auto& t : restored) keep.insert(t.gid);
    std::sort(restored.begin(), restored.end(),
              [](const auto& a, const auto& b) { return a.checkpoint_id < b.checkpoint_id; });
    bool any = false;
    for (const auto& t : restored) {
      if (t.writer % ctx.parallelism() != subtask_) continue;
      any = true;
      s = commit_prepared(t.gid);
      if (!s.ok()) return s;
    }
    // Prepared transactions of this sink's writers that the checkpoint does
    // not hold belong to attempts after it: roll them back.
    // Matched by the exact prefix (no LIKE: its '_' and '%' would match
    // other sinks' names), then by the whole id grammar in writer_of().
    const std::string mine = o_.transaction_prefix + "-";
    auto left = ctl_.query("SELECT gid FROM pg_prepared_xacts WHERE left(gid, " + std::to_string(mine.size()) +
                           ") = " + ctl_.quote_literal(mine));
    if (!left.ok()) return left.status();
    for (int i = 0; i < PQntuples(left->get()); ++i) {
      std::string gid = PQgetvalue(left->get(), i, 0);
      int32_t writer = writer_of(gid);
      if (writer < 0 || keep.count(gid) || writer % ctx.parallelism() != subtask_) continue;
      s = ctl_.exec("ROLLBACK PREPARED " + ctl_.quote_literal(gid));
      if (!s.ok()) return s;
    }
    if (any) WEIR_CRASH_POINT(CrashPoint::kSinkRecovered);
    return data_.exec("BEGIN");
  }

  absl::Status write(const PostgresRow& row) {
    if (row.values.size() != o_.columns.size()) {
      return absl::InvalidArgumentError("postgres sink to " + o_.table + ": a row has " +
                                        std::to_string(row.values.size()) + " values for " +
                                        std::to_string(o_.columns.size()) + " columns");
    }
    batch_ += batched_ == 0 ? insert_prefix_ : ", ";
    batch_ += '(';
    for (size_t i = 0; i < row.values.size(); ++i) {
      if (i > 0) batch_ += ", ";
      batch_ += row.values[i] ? data_.quote_literal(*row.values[i]) : "NULL";
    }
    batch_ += ')';
    if (++batched_ >= o_.rows_per_statement) return flush();
    return absl::OkStatus();
  }

  absl::Status snapshot_state(int64_t checkpoint_id) {
    absl::Status s = flush();
    if (!s.ok()) return s;
    PreparedTransaction t;
    t.checkpoint_id = checkpoint_id;
    t.writer = subtask_;
    t.gid = o_.transaction_prefix + "-" + std::to_string(subtask_) + "-" + std::to_string(checkpoint_id);
    s = data_.exec(std::string("INSERT INTO ") + kCommitsTable + " (gid) VALUES (" + data_.quote_literal(t.gid) +
                   ") ON CONFLICT (gid) DO NOTHING");
    if (s.ok()) s = data_.exec("PREPARE TRANSACTION " + data_.quote_literal(t.gid));
    if (!s.ok()) return s;
    rows_of_[t.gid] = rows_in_transaction_;
    rows_in_transaction_ = 0;
    pending_.push_back(t);
    state_->update(pending_);
    WEIR_CRASH_POINT(CrashPoint::kSinkPreCommitted);
    return data_.exec("BEGIN");
  }

  void notify_checkpoint_complete(int64_t checkpoint_id) {
    size_t done = 0;
    for (; done < pending_.size() && pending_[done].checkpoint_id <= checkpoint_id; ++done) {
      absl::Status s = commit_prepared(pending_[done].gid);
      if (!s.ok()) {
        spdlog::warn("postgres sink to {}: {} not committed yet: {}", o_.table, pending_[done].gid,
                     std::string(s.message()));
        break;
      }
    }
    if (done == 0) return;
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<ptrdiff_t>(done));
    WEIR_CRASH_POINT(CrashPoint::kSinkPublished);
  }

  void close() {
    data_.close();
    ctl_.close();
  }

 private:
  absl::Status flush() {
    if (batched_ == 0) return absl::OkStatus();
    absl::Status s = data_.exec(batch_);
    if (s.ok()) {
      sent_->inc(batched_);
      rows_in_transaction_ += batched_;
    }
    batch_.clear();
    batched_ = 0;
    return s;
  }

  // Commits a prepared transaction, and counts it (and its rows, when this
  // attempt prepared it) unless it had committed before.
  absl::Status commit_prepared(const std::string& gid) {
    auto now = commit_prepared_now(gid);
    if (!now.ok()) return now.status();
    auto rows = rows_of_.find(gid);
    if (*now) {
      committed_transactions_->inc();
      if (rows != rows_of_.end()) committed_records_->inc(rows->second);
    }
    if (rows != rows_of_.end()) rows_of_.erase(rows);
    return absl::OkStatus();
  }

  // Commits a prepared transaction: true; one that no longer exists is fine
  // (false) if its marker row shows it committed (a commit just before a
  // crash).
  absl::StatusOr<bool> commit_prepared_now(const std::string& gid) {
    auto exists = ctl_.query("SELECT 1 FROM pg_prepared_xacts WHERE gid = " + ctl_.quote_literal(gid));
    if (!exists.ok()) return exists.status();
    if (PQntuples(exists->get()) == 0) {
      auto marker = ctl_.query(std::string("SELECT 1 FROM ") + kCommitsTable + " WHERE gid = " + ctl_.quote_literal(gid));
      if (!marker.ok()) return marker.status();
      if (PQntuples(marker->get()) == 1) return false;  // committed before
      return absl::DataLossError("postgres " + ctl_.server() + ": prepared transaction " + gid +
                                 " of a completed checkpoint is gone and was not committed "
                                 "(rolled back outside weir?)");
    }
    absl::Status s = ctl_.exec("COMMIT PREPARED " + ctl_.quote_literal(gid));
    if (!s.ok()) return s;
    return true;
  }

  // The writer of one of this sink's transaction ids, exactly
  // <prefix>-<writer>-<checkpoint> with both numbers in decimal digits, or
  // -1. The grammar is what keeps sinks apart: the ids of a sink whose
  // prefix is "t-1" ("t-1-0-5") have one number more than those of "t".
  int32_t writer_of(const std::string& gid) const {
    const std::string& prefix = o_.transaction_prefix;
    if (gid.size() <= prefix.size() + 1 || gid.compare(0, prefix.size(), prefix) != 0 || gid[prefix.size()] != '-') {
      return -1;
    }
    const std::string rest = gid.substr(prefix.size() + 1);
    const size_t dash = rest.find('-');
    auto digits = [](std::string_view s) {
      return !s.empty() && s.size() <= 18 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    if (dash == std::string::npos || !digits(std::string_view(rest).substr(0, dash)) ||
        !digits(std::string_view(rest).substr(dash + 1)) || dash > 9) {
      return -1;
    }
    return static_cast<int32_t>(std::atol(rest.substr(0, dash).c_str()));
  }

  const PostgresSinkOptions o_;
  int32_t subtask_ = 0;
  PgSession data_;  // rows
  PgSession ctl_;   // commits and rollbacks of prepared transactions
  std::string insert_prefix_;
  std::string batch_;
  int batched_ = 0;
  std::vector<PreparedTransaction> pending_;
  std::unique_ptr<OperatorListState<PreparedTransaction>> state_;
  // The sink's metrics (weir/metrics.h kSinkRecordsSent, ...): rows in the
  // open transaction, and in each transaction this attempt prepared (one
  // recovered from a checkpoint counts as a transaction, its rows unknown).
  Counter* sent_ = nullptr;
  Counter* committed_records_ = nullptr;
  Counter* committed_transactions_ = nullptr;
  int64_t rows_in_transaction_ = 0;
  std::map<std::string, int64_t> rows_of_;
};

PostgresSink::PostgresSink(PostgresSinkOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
PostgresSink::~PostgresSink() = default;
absl::Status PostgresSink::open(OperatorContext& ctx) { return impl_->open(ctx); }
absl::Status PostgresSink::write(const PostgresRow& row) { return impl_->write(row); }
absl::Status PostgresSink::snapshot_state(int64_t id) { return impl_->snapshot_state(id); }
void PostgresSink::notify_checkpoint_complete(int64_t id) { impl_->notify_checkpoint_complete(id); }
void PostgresSink::close() { impl_->close(); }

absl::Status PostgresUpsertSinkOptions::validate() const {
  if (conninfo.empty()) return absl::InvalidArgumentError("postgres upsert sink: no connection string");
  if (table.empty()) return absl::InvalidArgumentError("postgres upsert sink: no table");
  if (columns.empty()) return absl::InvalidArgumentError("postgres upsert sink to " + table + ": no columns");
  if (key_columns.empty()) {
    return absl::InvalidArgumentError("postgres upsert sink to " + table + ": no key columns (its primary key)");
  }
  for (const auto& k : key_columns) {
    if (std::find(columns.begin(), columns.end(), k) == columns.end()) {
      return absl::InvalidArgumentError("postgres upsert sink to " + table + ": key column " + k +
                                        " is not among the columns");
    }
  }
  if (max_batch_rows < 1) return absl::InvalidArgumentError("postgres upsert sink: max batch rows must be >= 1");
  return absl::OkStatus();
}

SinkFactory<PostgresRow> PostgresUpsertSink::Builder::build() const {
  PostgresUpsertSinkOptions o = o_;
  return [o] { return std::make_unique<PostgresUpsertSink>(o); };
}

class PostgresUpsertSink::Impl {
 public:
  explicit Impl(PostgresUpsertSinkOptions o) : o_(std::move(o)) {}

  absl::Status open(OperatorContext& ctx) {
    sent_ = &ctx.metrics().counter(kSinkRecordsSent);
    committed_records_ = &ctx.metrics().counter(kSinkRecordsCommitted);
    committed_transactions_ = &ctx.metrics().counter(kSinkTransactionsCommitted);
    absl::Status s = o_.validate();
    if (s.ok()) s = db_.connect(o_.conninfo);
    if (s.ok()) s = db_.probe(o_.table, o_.columns);
    if (!s.ok()) return s;
    for (const auto& k : o_.key_columns) key_index_.push_back(column_of(k));
    const std::string table = db_.quote_ident(o_.table);
    const std::string into = "INSERT INTO " + table + " (" + db_.column_list(o_.columns) + ")";
    insert_prefix_ = into + " VALUES ";
    std::string updates;
    for (const auto& c : o_.columns) {
      if (std::find(o_.key_columns.begin(), o_.key_columns.end(), c) != o_.key_columns.end()) continue;
      updates += (updates.empty() ? "" : ", ") + db_.quote_ident(c) + " = EXCLUDED." + db_.quote_ident(c);
    }
    const std::string keys = db_.column_list(o_.key_columns);
    on_conflict_ = " ON CONFLICT (" + keys + ") " + (updates.empty() ? "DO NOTHING" : "DO UPDATE SET " + updates);
    delete_prefix_ = "DELETE FROM " + table + " WHERE (" + keys + ") IN (";
    // The key must be the primary key or a unique index: PostgreSQL plans
    // the ON CONFLICT clause only then. Say so now, not at the first batch.
    s = db_.exec("EXPLAIN " + into + " SELECT " +
                 db_.column_list(o_.columns) + " FROM " + table + " WHERE false" + on_conflict_);
    if (!s.ok()) {
      return absl::FailedPreconditionError(std::string(s.message()) + " (the key columns (" + keys +
                                           ") must be the table's primary key or a unique index)");
    }
    return absl::OkStatus();
  }

  absl::Status write(const PostgresRow& row) {
    if (row.values.size() != o_.columns.size()) {
      return absl::InvalidArgumentError("postgres upsert sink to " + o_.table + ": a row has " +
                                        std::to_string(row.values.size()) + " values for " +
                                        std::to_string(o_.columns.size()) + " columns");
    }
    std::string key;
    for (size_t i : key_index_) {
      if (!row.values[i]) {
        return absl::InvalidArgumentError("postgres upsert sink to " + o_.table + ": key column " +
                                          o_.columns[i] + " is NULL");
      }
      key += std::to_string(row.values[i]->size()) + ":" + *row.values[i];
    }
    // The last change of a key in a batch is the one that counts. A -U is
    // the key's row leaving: a delete, unless its +U follows (none does
    // when a condition above the aggregation dropped the new row).
    auto [at, fresh] = batch_.insert_or_assign(std::move(key), row);
    if (row.kind == RowKind::kUpdateBefore) at->second.kind = RowKind::kDelete;
    if (static_cast<int>(batch_.size()) >= o_.max_batch_rows) return flush();
    return absl::OkStatus();
  }

  absl::Status flush() {
    if (batch_.empty()) return absl::OkStatus();
    std::string upserts, deletes;
    for (const auto& [key, row] : batch_) {
      if (row.kind == RowKind::kDelete) {
        deletes += deletes.empty() ? delete_prefix_ : ", ";
        deletes += '(';
        for (size_t n = 0; n < key_index_.size(); ++n) {
          deletes += (n ? ", " : "") + db_.quote_literal(*row.values[key_index_[n]]);
        }
        deletes += ')';
      } else {
        upserts += upserts.empty() ? insert_prefix_ : ", ";
        upserts += '(';
        for (size_t i = 0; i < row.values.size(); ++i) {
          upserts += (i ? ", " : "") + (row.values[i] ? db_.quote_literal(*row.values[i]) : std::string("NULL"));
        }
        upserts += ')';
      }
    }
    absl::Status s = db_.exec("BEGIN");
    if (s.ok() && !upserts.empty()) s = db_.exec(upserts + on_conflict_);
    if (s.ok() && !deletes.empty()) s = db_.exec(deletes + ")");
    if (s.ok()) s = db_.exec("COMMIT");
    if (!s.ok()) return s;  // the task fails; the connection's end rolls back
    const int64_t rows = static_cast<int64_t>(batch_.size());
    sent_->inc(rows);
    committed_records_->inc(rows);
    committed_transactions_->inc();
    batch_.clear();
    return absl::OkStatus();
  }

  void close() { db_.close(); }

 private:
  size_t column_of(const std::string& name) const {
    return static_cast<size_t>(std::find(o_.columns.begin(), o_.columns.end(), name) - o_.columns.begin());
  }

  const PostgresUpsertSinkOptions o_;
  PgSession db_;
  std::vector<size_t> key_index_;
  std::string insert_prefix_, on_conflict_, delete_prefix_;
  std::map<std::string, PostgresRow> batch_;  // by key
  // The sink's metrics (weir/metrics.h kSinkRecordsSent, ...): rows upserted
  // or deleted, each batch one transaction.
  Counter* sent_ = nullptr;
  Counter* committed_records_ = nullptr;
  Counter* committed_transactions_ = nullptr;
};

PostgresUpsertSink::PostgresUpsertSink(PostgresUpsertSinkOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}
PostgresUpsertSink::~PostgresUpsertSink() = default;
absl::Status PostgresUpsertSink::open(OperatorContext& ctx) { return impl_->open(ctx); }
absl::Status PostgresUpsertSink::write(const PostgresRow& row) { return impl_->write(row); }
absl::Status PostgresUpsertSink::finish() { return impl_->flush(); }
absl::Status PostgresUpsertSink::snapshot_state(int64_t) {
  absl::Status s = impl_->flush();
  if (s.ok()) WEIR_CRASH_POINT(CrashPoint::kSinkPreCommitted);
  return s;
}
void PostgresUpsertSink::close() { impl_->close(); }

}  // namespace weir
