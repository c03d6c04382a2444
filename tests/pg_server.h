// A throwaway PostgreSQL 15 server for a test: initdb + pg_ctl in a
// directory of its own, on a Unix socket, stopped and removed with it.
#ifndef WEIR_TESTS_PG_SERVER_H_
#define WEIR_TESTS_PG_SERVER_H_

#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/process.h"

namespace weir::testing {

inline const std::string kPgBin = "/usr/lib/postgresql/15/bin/";

// A PostgreSQL server for one test (as the postgres user when the test runs
// as root: the server refuses root), stopped with it.
class PgServer {
 public:
  // Its files and socket live in a short directory of its own (a socket's
  // path is limited to about 100 bytes).
  explicit PgServer(int max_prepared) {
    char tmpl[] = "/tmp/weir-pg.XXXXXX";
    dir_ = ::mkdtemp(tmpl) ? tmpl : "/tmp/weir-pg";
    if (::geteuid() == 0) {
      launcher_ = {"/usr/sbin/runuser", "-u", "postgres", "--"};
      run({"/bin/chown", "postgres", dir_}, /*as_server=*/false);
    }
    port_ = std::to_string(20000 + (::getpid() % 20000));
    ok_ = run({kPgBin + "initdb", "-D", dir_ + "/data", "-A", "trust", "-U", "weir", "--no-sync"}) == 0 &&
          run({kPgBin + "pg_ctl", "-D", dir_ + "/data", "-w", "-l", dir_ + "/log", "-o",
               "-p " + port_ + " -k " + dir_ + " -c listen_addresses='' -c max_prepared_transactions=" +
                   std::to_string(max_prepared) + " -c fsync=off"}, true, "start") == 0;
  }
  ~PgServer() {
    if (ok_) run({kPgBin + "pg_ctl", "-D", dir_ + "/data", "-m", "immediate"}, true, "stop");
    if (std::getenv("WEIR_KEEP_TEST_DIRS") == nullptr) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
    }
  }
  bool ok() const { return ok_; }
  std::string log() const { return slurp(dir_ + "/log"); }
  std::string conninfo() const { return "host=" + dir_ + " port=" + port_ + " user=weir dbname=postgres"; }

  // Runs `sql`; returns the rows of its result, each a tab-joined line.
  std::vector<std::string> sql(const std::string& sql) {
    PGconn* c = PQconnectdb(conninfo().c_str());
    std::vector<std::string> rows;
    EXPECT_EQ(PQstatus(c), CONNECTION_OK) << PQerrorMessage(c);
    PGresult* r = PQexec(c, sql.c_str());
    ExecStatusType st = PQresultStatus(r);
    EXPECT_TRUE(st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) << sql << ": " << PQerrorMessage(c);
    for (int i = 0; st == PGRES_TUPLES_OK && i < PQntuples(r); ++i) {
      std::string line;
      for (int j = 0; j < PQnfields(r); ++j) line += (j ? "\t" : "") + std::string(PQgetvalue(r, i, j));
      rows.push_back(line);
    }
    PQclear(r);
    PQfinish(c);
    return rows;
  }

 private:
  int run(std::vector<std::string> args, bool as_server = true, const std::string& last = "") {
    if (!last.empty()) args.push_back(last);
    std::vector<std::string> full = as_server ? launcher_ : std::vector<std::string>{};
    full.insert(full.end(), args.begin(), args.end());
    Child c(full, dir_ + "/cmd");
    return c.wait();
  }

  std::string dir_;
  std::vector<std::string> launcher_;
  std::string port_;
  bool ok_ = false;
};

}  // namespace weir::testing

#endif  // WEIR_TESTS_PG_SERVER_H_
