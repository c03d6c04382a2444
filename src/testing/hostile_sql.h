// SQL scripts built to exhaust whatever plans them (the planner's unit
// tests, `weir sql`, a JobManager), each with the refusal it must get:
// expressions and queries nested thousands deep, views that double at
// every level, and a long IN list that must plan, not be refused.
#ifndef WEIR_TESTING_HOSTILE_SQL_H_
#define WEIR_TESTING_HOSTILE_SQL_H_

#include <string>
#include <vector>

namespace weir::testing {

struct HostileSql {
  std::string name;
  std::string text;
  std::string refusal;  // a fragment of the error; "" when it plans
};

// The tables the scripts read and write: t (a BIGINT, s VARCHAR) from
// 'values', o (a BIGINT) and os (s VARCHAR) to 'print'.
inline std::string hostile_sql_tables() {
  return "CREATE TABLE t (a BIGINT, s VARCHAR) WITH (connector = 'values', rows = '1,x');\n"
         "CREATE TABLE o (a BIGINT) WITH (connector = 'print');\n"
         "CREATE TABLE os (s VARCHAR) WITH (connector = 'print');\n";
}

// `term` `n` times, `op` between them.
inline std::string sql_chain(const std::string& term, const std::string& op, int n) {
  std::string out = term;
  for (int i = 1; i < n; ++i) out += op + term;
  return out;
}

inline std::vector<HostileSql> hostile_sql_scripts() {
  const std::string head = hostile_sql_tables();
  std::vector<HostileSql> out;
  out.push_back({"5000 terms of +", head + "INSERT INTO o SELECT " + sql_chain("a", "+", 5000) + " FROM t;",
                 "nests expressions or queries deeper than 200 levels"});
  out.push_back({"50000 terms of ||", head + "INSERT INTO os SELECT " + sql_chain("s", " || ", 50000) + " FROM t;",
                 "nests expressions or queries deeper than 200 levels"});
  std::string nested = "SELECT a FROM t";
  for (int i = 0; i < 1500; ++i) nested = "SELECT a FROM (" + nested + ") AS q" + std::to_string(i);
  out.push_back({"1500 nested subqueries", head + "INSERT INTO o " + nested + ";", "deeper than 200 levels"});
  std::string doubling = head + "CREATE VIEW v0 AS SELECT a FROM t;\n";
  for (int i = 1; i <= 18; ++i) {
    doubling += "CREATE VIEW v" + std::to_string(i) + " AS SELECT a FROM v" + std::to_string(i - 1) +
                " UNION ALL SELECT a FROM v" + std::to_string(i - 1) + ";\n";
  }
  out.push_back({"18 doubling views", doubling + "INSERT INTO o SELECT a FROM v18;",
                 "reads more than 1000 tables, views and subqueries"});
  std::string chained = head + "CREATE VIEW w0 AS SELECT a FROM t;\n";
  for (int i = 1; i < 70; ++i) {
    chained += "CREATE VIEW w" + std::to_string(i) + " AS SELECT a FROM w" + std::to_string(i - 1) + ";\n";
  }
  out.push_back({"70 chained views", chained + "INSERT INTO o SELECT a FROM w69;",
                 "subqueries and views nest deeper than 64 levels"});
  std::string in = "0";
  for (int i = 1; i < 10000; ++i) in += ", " + std::to_string(i);
  out.push_back({"IN with 10000 values", head + "INSERT INTO o SELECT a FROM t WHERE a IN (" + in + ");", ""});
  return out;
}

}  // namespace weir::testing

#endif  // WEIR_TESTING_HOSTILE_SQL_H_
