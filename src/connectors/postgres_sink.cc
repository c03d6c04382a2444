// PostgresSink: two-phase commit over libpq. See weir/postgres.h and
// docs/postgres.md.
#include <libpq-fe.h>

#include <algorithm>
#include <set>

#include "common/test_points.h"
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

// A prepared transaction of the sink, awaiting its checkpoint.
struct PreparedTransaction {
  int64_t checkpoint_id = 0;
  int32_t writer = 0;
  std::string gid;
  auto weir_fields() { return std::tie(checkpoint_id, writer, gid); }
};

struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using Result = std::unique_ptr<PGresult, ResultDeleter>;

constexpr char kCommitsTable[] = "weir_sink_commits";

}  // namespace

class PostgresSink::Impl {
 public:
  explicit Impl(PostgresSinkOptions o) : o_(std::move(o)) {}
  ~Impl() { close(); }

  absl::Status open(OperatorContext& ctx) {
    absl::Status valid = o_.validate();
    if (!valid.ok()) return valid;
    subtask_ = ctx.subtask_index();
    // Rows go through one connection, inside a transaction; prepared
    // transactions are committed through another (COMMIT PREPARED cannot
    // run inside a transaction).
    conn_ = PQconnectdb(o_.conninfo.c_str());
    // Named by host and port, never by the connection string (it may hold a password).
    server_ = std::string(PQhost(conn_) ? PQhost(conn_) : "?") + ":" + (PQport(conn_) ? PQport(conn_) : "?");
    if (PQstatus(conn_) != CONNECTION_OK) return error(conn_, "cannot connect");
    ctl_ = PQconnectdb(o_.conninfo.c_str());
    if (PQstatus(ctl_) != CONNECTION_OK) return error(ctl_, "cannot connect");
    auto prepared = query("SHOW max_prepared_transactions");
    if (!prepared.ok()) return prepared.status();
    if (std::atoi(PQgetvalue(prepared->get(), 0, 0)) <= 0) {
      return absl::FailedPreconditionError("postgres " + server_ +
                                           ": max_prepared_transactions is 0; the exactly-once sink needs "
                                           "it above 0 (set it in postgresql.conf and restart the server)");
    }
    std::string cols;
    for (const auto& c : o_.columns) cols += (cols.empty() ? "" : ", ") + quote_ident(c);
    auto probe = query("SELECT " + cols + " FROM " + quote_ident(o_.table) + " LIMIT 0");
    if (!probe.ok()) return probe.status();
    auto made = query(std::string("CREATE TABLE IF NOT EXISTS ") + kCommitsTable +
                      " (gid text PRIMARY KEY, committed_at timestamptz NOT NULL DEFAULT now())");
    if (!made.ok()) return made.status();
    insert_prefix_ = "INSERT INTO " + quote_ident(o_.table) + " (" + cols + ") VALUES ";

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
      absl::Status s = commit_prepared(t.gid);
      if (!s.ok()) return s;
    }
    // Prepared transactions of this sink's writers that the checkpoint does
    // not hold belong to attempts after it: roll them back.
    auto left = query(ctl_, "SELECT gid FROM pg_prepared_xacts WHERE gid LIKE " +
                                quote_literal(o_.transaction_prefix + "-%"));
    if (!left.ok()) return left.status();
    for (int i = 0; i < PQntuples(left->get()); ++i) {
      std::string gid = PQgetvalue(left->get(), i, 0);
      int32_t writer = writer_of(gid);
      if (writer < 0 || keep.count(gid) || writer % ctx.parallelism() != subtask_) continue;
      auto r = query(ctl_, "ROLLBACK PREPARED " + quote_literal(gid));
      if (!r.ok()) return r.status();
    }
    if (any) WEIR_CRASH_POINT(CrashPoint::kSinkRecovered);
    return begin();
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
      batch_ += row.values[i] ? quote_literal(*row.values[i]) : "NULL";
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
    auto marker = query(std::string("INSERT INTO ") + kCommitsTable + " (gid) VALUES (" + quote_literal(t.gid) +
                        ") ON CONFLICT (gid) DO NOTHING");
    if (!marker.ok()) return marker.status();
    auto prepared = query("PREPARE TRANSACTION " + quote_literal(t.gid));
    if (!prepared.ok()) return prepared.status();
    pending_.push_back(t);
    state_->update(pending_);
    WEIR_CRASH_POINT(CrashPoint::kSinkPreCommitted);
    return begin();
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
    for (PGconn** c : {&conn_, &ctl_}) {
      if (*c != nullptr) PQfinish(*c);  // an open transaction rolls back; prepared ones stay
      *c = nullptr;
    }
  }

 private:
  absl::Status error(PGconn* conn, const std::string& what) const {
    std::string msg = conn ? PQerrorMessage(conn) : "no connection";
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    // libpq's message may span lines: one line per error.
    std::replace(msg.begin(), msg.end(), '\n', ' ');
    return absl::UnavailableError("postgres " + server_ + ": " + what + ": " + msg);
  }

  absl::StatusOr<Result> query(const std::string& sql) { return query(conn_, sql); }
  absl::StatusOr<Result> query(PGconn* conn, const std::string& sql) {
    Result r(PQexec(conn, sql.c_str()));
    ExecStatusType st = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
      std::string head = sql.substr(0, std::min<size_t>(sql.size(), 60));
      return error(conn, head + (sql.size() > 60 ? "..." : ""));
    }
    return r;
  }

  absl::Status begin() {
    auto r = query("BEGIN");
    return r.ok() ? absl::OkStatus() : r.status();
  }

  absl::Status flush() {
    if (batched_ == 0) return absl::OkStatus();
    auto r = query(batch_);
    batch_.clear();
    batched_ = 0;
    return r.ok() ? absl::OkStatus() : r.status();
  }

  // Commits a prepared transaction; one that no longer exists is fine if
  // its marker row shows it committed (a commit just before a crash).
  absl::Status commit_prepared(const std::string& gid) {
    auto exists = query(ctl_, "SELECT 1 FROM pg_prepared_xacts WHERE gid = " + quote_literal(gid));
    if (!exists.ok()) return exists.status();
    if (PQntuples(exists->get()) == 0) {
      auto marker = query(ctl_, std::string("SELECT 1 FROM ") + kCommitsTable + " WHERE gid = " + quote_literal(gid));
      if (!marker.ok()) return marker.status();
      if (PQntuples(marker->get()) == 1) return absl::OkStatus();  // committed before
      return absl::DataLossError("postgres " + server_ + ": prepared transaction " + gid +
                                 " of a completed checkpoint is gone and was not committed "
                                 "(rolled back outside weir?)");
    }
    auto r = query(ctl_, "COMMIT PREPARED " + quote_literal(gid));
    return r.ok() ? absl::OkStatus() : r.status();
  }

  int32_t writer_of(const std::string& gid) const {
    // <prefix>-<writer>-<checkpoint>
    std::string rest = gid.substr(o_.transaction_prefix.size() + 1);
    size_t dash = rest.find('-');
    if (dash == std::string::npos || dash == 0) return -1;
    for (size_t i = 0; i < dash; ++i) {
      if (rest[i] < '0' || rest[i] > '9') return -1;
    }
    return static_cast<int32_t>(std::atol(rest.substr(0, dash).c_str()));
  }

  std::string quote_ident(const std::string& s) const {
    char* q = PQescapeIdentifier(conn_, s.data(), s.size());
    std::string out = q ? q : "\"\"";
    PQfreemem(q);
    return out;
  }
  std::string quote_literal(const std::string& s) const {
    char* q = PQescapeLiteral(conn_, s.data(), s.size());
    std::string out = q ? q : "''";
    PQfreemem(q);
    return out;
  }

  const PostgresSinkOptions o_;
  int32_t subtask_ = 0;
  PGconn* conn_ = nullptr;  // rows
  PGconn* ctl_ = nullptr;   // commits and rollbacks of prepared transactions
  std::string server_;
  std::string insert_prefix_;
  std::string batch_;
  int batched_ = 0;
  std::vector<PreparedTransaction> pending_;
  std::unique_ptr<OperatorListState<PreparedTransaction>> state_;
};

PostgresSink::PostgresSink(PostgresSinkOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
PostgresSink::~PostgresSink() = default;
absl::Status PostgresSink::open(OperatorContext& ctx) { return impl_->open(ctx); }
absl::Status PostgresSink::write(const PostgresRow& row) { return impl_->write(row); }
absl::Status PostgresSink::snapshot_state(int64_t id) { return impl_->snapshot_state(id); }
void PostgresSink::notify_checkpoint_complete(int64_t id) { impl_->notify_checkpoint_complete(id); }
void PostgresSink::close() { impl_->close(); }

}  // namespace weir
