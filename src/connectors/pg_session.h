// A libpq connection for the PostgreSQL connectors (postgres_sink.cc,
// postgres_source.cc): statements, quoting, and errors named by the
// server's host and port, never by the connection string (it may hold a
// password).
#ifndef WEIR_CONNECTORS_PG_SESSION_H_
#define WEIR_CONNECTORS_PG_SESSION_H_

#include <libpq-fe.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace weir::pg {

struct ResultDeleter {
  void operator()(PGresult* r) const { PQclear(r); }
};
using Result = std::unique_ptr<PGresult, ResultDeleter>;

inline std::string escaped(PGconn* conn, const std::string& s, bool identifier) {
  char* q = identifier ? PQescapeIdentifier(conn, s.data(), s.size()) : PQescapeLiteral(conn, s.data(), s.size());
  std::string out = q ? q : (identifier ? "\"\"" : "''");
  PQfreemem(q);
  return out;
}

class PgSession {
 public:
  ~PgSession() { close(); }

  absl::Status connect(const std::string& conninfo) {
    conn_ = PQconnectdb(conninfo.c_str());
    server_ = std::string(PQhost(conn_) ? PQhost(conn_) : "?") + ":" + (PQport(conn_) ? PQport(conn_) : "?");
    if (PQstatus(conn_) != CONNECTION_OK) return error("cannot connect");
    // The server's notices ("relation ... already exists, skipping") are
    // not the user's business: libpq would print each on stderr.
    PQsetNoticeProcessor(conn_, [](void*, const char*) {}, nullptr);
    return absl::OkStatus();
  }
  void close() {
    if (conn_ != nullptr) PQfinish(conn_);  // an open transaction rolls back; prepared ones stay
    conn_ = nullptr;
  }
  const std::string& server() const { return server_; }

  absl::StatusOr<Result> query(const std::string& sql) {
    Result r(PQexec(conn_, sql.c_str()));
    ExecStatusType st = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
      std::string head = sql.substr(0, std::min<size_t>(sql.size(), 60));
      return error(head + (sql.size() > 60 ? "..." : ""));
    }
    return r;
  }
  // `sql` with parameters $1, $2, ... as text (their types the server's
  // inference).
  absl::StatusOr<Result> query(const std::string& sql, const std::vector<std::string>& params) {
    std::vector<const char*> values;
    for (const std::string& p : params) values.push_back(p.c_str());
    Result r(PQexecParams(conn_, sql.c_str(), static_cast<int>(values.size()), nullptr, values.data(), nullptr, nullptr, 0));
    ExecStatusType st = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
      std::string head = sql.substr(0, std::min<size_t>(sql.size(), 60));
      return error(head + (sql.size() > 60 ? "..." : ""));
    }
    return r;
  }
  absl::Status exec(const std::string& sql) {
    auto r = query(sql);
    return r.ok() ? absl::OkStatus() : r.status();
  }

  std::string quote_ident(const std::string& s) const { return escaped(conn_, s, true); }
  std::string quote_literal(const std::string& s) const { return escaped(conn_, s, false); }
  std::string column_list(const std::vector<std::string>& columns) const {
    std::string cols;
    for (const auto& c : columns) cols += (cols.empty() ? "" : ", ") + quote_ident(c);
    return cols;
  }
  // Fails naming the column when `table` lacks one of `columns`.
  absl::Status probe(const std::string& table, const std::vector<std::string>& columns) {
    return exec("SELECT " + column_list(columns) + " FROM " + quote_ident(table) + " LIMIT 0");
  }

 private:
  absl::Status error(const std::string& what) const {
    std::string msg = conn_ ? PQerrorMessage(conn_) : "no connection";
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    // libpq's message may span lines: one line per error.
    std::replace(msg.begin(), msg.end(), '\n', ' ');
    return absl::UnavailableError("postgres " + server_ + ": " + what + ": " + msg);
  }

  PGconn* conn_ = nullptr;
  std::string server_;
};

}  // namespace weir::pg

#endif  // WEIR_CONNECTORS_PG_SESSION_H_
