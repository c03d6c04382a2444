#include "sql/parser.h"

#include <gtest/gtest.h>

#include "sql/planner.h"

namespace weir::sql {
namespace parser_test {

std::string error_of(const std::string& text) {
  auto s = parse_script(text);
  if (!s.ok()) return std::string(s.status().message());
  auto p = plan_script(*s);
  return p.ok() ? "" : std::string(p.status().message());
}

TEST(SqlParserTest, FlinkDdlIsTypedSyntaxWithPositions) {
  auto s = parse_script(
      "CREATE TABLE `Orders` (\n"
      "  id BIGINT,\n"
      "  `user` ROW<name STRING, `Age` INT NOT NULL>,\n"
      "  ts AS TO_TIMESTAMP_LTZ(id, 3),\n"
      "  rt TIMESTAMP(3) METADATA FROM 'timestamp' VIRTUAL,\n"
      "  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND,\n"
      "  PRIMARY KEY (id) NOT ENFORCED\n"
      ") COMMENT 'orders' PARTITIONED BY (id) WITH ('connector' = 'kafka', 'Topic' = 'o', scan.startup.mode = 'latest-offset');");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->statements.size(), 1u);
  ASSERT_TRUE(s->statements[0].typed.has_value());
  const auto& t = std::get<ast::CreateTable>(*s->statements[0].typed);
  EXPECT_EQ(t.name.text, "Orders");  // quoted: case kept
  ASSERT_EQ(t.columns.size(), 4u);
  EXPECT_EQ(t.columns[1].type.name, "ROW");
  ASSERT_EQ(t.columns[1].type.field_names.size(), 2u);
  EXPECT_EQ(t.columns[1].type.field_names[1].text, "Age");
  EXPECT_TRUE(t.columns[1].type.elements[1].not_null);
  EXPECT_EQ(t.columns[2].kind, ast::ColumnDef::Kind::kComputed);
  EXPECT_EQ(s->text.substr(t.columns[2].expr.begin, t.columns[2].expr.end - t.columns[2].expr.begin),
            "TO_TIMESTAMP_LTZ(id, 3)");
  EXPECT_EQ(t.columns[3].kind, ast::ColumnDef::Kind::kMetadata);
  EXPECT_EQ(t.columns[3].from, "timestamp");
  EXPECT_TRUE(t.columns[3].is_virtual);
  ASSERT_TRUE(t.watermark.has_value());
  EXPECT_EQ(t.watermark->column.text, "ts");
  ASSERT_EQ(t.primary_key.size(), 1u);
  ASSERT_EQ(t.partitioned_by.size(), 1u);
  ASSERT_EQ(t.options.size(), 3u);
  EXPECT_EQ(t.options[1].key, "topic");  // option keys are lower case
  EXPECT_EQ(t.options[2].key, "scan.startup.mode");
  EXPECT_EQ(t.options[2].value, "latest-offset");
}

TEST(SqlParserTest, StatementSetsGiveTheirInsertsAndKeepOrder) {
  auto s = parse_script(
      "CREATE TABLE a (x BIGINT) WITH ('connector' = 'values', 'rows' = '1');\n"
      "CREATE TABLE b (x BIGINT) WITH ('connector' = 'print');\n"
      "EXECUTE STATEMENT SET BEGIN\n"
      "  INSERT INTO b SELECT x FROM a;\n"
      "  INSERT INTO b SELECT x + 1 FROM a;\n"
      "END;\n"
      "BEGIN STATEMENT SET;\n"
      "INSERT INTO b SELECT x FROM a;\n"
      "END;\n"
      "SET 'table.exec.mini-batch.size' = '10';\n");
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->statements.size(), 6u);
  EXPECT_TRUE(s->statements[0].typed.has_value());
  EXPECT_TRUE(s->statements[1].typed.has_value());
  for (int i = 2; i < 5; ++i) EXPECT_TRUE(std::holds_alternative<ast::Insert>(s->statements[i].query)) << i;
  EXPECT_EQ(s->statements[3].text, "INSERT INTO b SELECT x + 1 FROM a");
  EXPECT_TRUE(std::holds_alternative<ast::Set>(*s->statements[5].typed));
  auto p = plan_script(*s);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->inserts.size(), 3u);
  EXPECT_EQ(p->settings.mini_batch_rows, 10);
}

TEST(SqlParserTest, ErrorsPointAtTheTextAsWritten) {
  const std::string tables =
      "CREATE TABLE t (a BIGINT, `b` STRING) WITH ('connector' = 'values', 'rows' = '1,x');\n"
      "CREATE TABLE o (a BIGINT) WITH ('connector' = 'print');\n";
  // After a subquery given a name (an insertion), columns stay the script's.
  EXPECT_EQ(error_of(tables + "INSERT INTO o SELECT a FROM (SELECT a FROM t) WHERE nope > 1;"),
            "line 3, column 53: no column nope");
  EXPECT_EQ(error_of(tables + "INSERT INTO o SELECT a FROM (SELECT a FROM t) WHERE a >;"),
            "line 3, column 56: syntax error at or near \";\"");
  EXPECT_EQ(error_of(tables + "INSERT INTO o SELECT `c` FROM t;"), "line 3, column 22: no column c");
  // Inside a computed column's expression and a watermark's.
  EXPECT_EQ(error_of("CREATE TABLE t (a BIGINT,\n  b AS a + `nope` * 2) WITH ('connector' = 'print');"),
            "line 2, column 12: no column nope");
  EXPECT_EQ(error_of("CREATE TABLE t (a BIGINT,\n  b AS a + ) WITH ('connector' = 'print');"),
            "line 2, column 11: syntax error at end of input");
  EXPECT_EQ(error_of("CREATE TABLE t (ts TIMESTAMP(3), WATERMARK FOR ts AS ts - 5) WITH ('connector' = 'print');"),
            "line 1, column 57: operator - does not apply to TIMESTAMP(3) and BIGINT");
  EXPECT_EQ(error_of("CREATE TABLE t (ts TIMESTAMP(3), WATERMARK FOR ts AS ts + INTERVAL '1' SECOND) WITH ('connector' = 'print');"),
            "line 1, column 54: the watermark must be a TIMESTAMP(3) column, or one minus a constant INTERVAL");
  EXPECT_EQ(error_of("CREATE TABLE t (a BIGINT,) WITH ('connector' = 'print');"),
            "line 1, column 26: expected a column name, found \")\"");
  EXPECT_EQ(error_of("CREATE TABLE t (a BIGINT) WITH ('connector' = 'print', 'connector' = 'print');"),
            "line 1, column 56: option 'connector' is given twice");
  EXPECT_EQ(error_of("CREATE TABLE t (a BIGINT) WITH ('connector' = 'print'"),
            "line 1, column 54: expected ')', found the end of the statement");
  EXPECT_EQ(error_of("CREATE TABLE t (a `x);"), "line 1, column 19: an identifier `... is not closed");
  EXPECT_EQ(error_of("CREATE TABLE t (a BIGINT PRIMARY KEY ENFORCED) WITH ('connector' = 'print');"),
            "line 1, column 38: PRIMARY KEY ... ENFORCED: Flink and weir take only NOT ENFORCED keys");
  EXPECT_EQ(error_of(tables + "EXECUTE STATEMENT SET BEGIN INSERT INTO o SELECT a FROM t;"),
            "the statement set (EXECUTE STATEMENT SET BEGIN ...) has no END");
  EXPECT_EQ(error_of(tables + "BEGIN STATEMENT SET; SET 'a' = 'b'; END;"),
            "line 3, column 22: a statement set holds INSERT statements only");
  EXPECT_EQ(error_of("CREATE TABLE t (a BIGINT) WITH ('connector' = 'print');\nUSE CATALOG c;"),
            "line 2, column 1: USE CATALOG is not supported yet (docs/sql.md, \"Flink compatibility\")");
  EXPECT_EQ(error_of("CREATE TABLE c.d.t (a BIGINT) WITH ('connector' = 'print');"),
            "line 1, column 14: catalogs and databases are not supported yet: c.d.t (name the table alone)");
}

TEST(SqlParserTest, TypesNestedPastTheLimitAreRefusedWhereThePastOneIs) {
  std::string nested = "BIGINT";
  for (int i = 0; i < 5000; ++i) nested = "ROW<a " + nested + ">";
  EXPECT_EQ(error_of("CREATE TABLE t (r " + nested + ") WITH ('connector' = 'print');"),
            "line 1, column " + std::to_string(19 + 6 * kMaxSqlNesting) +
                ": types nest deeper than 200 levels (weir's limit; docs/sql.md \"Limits\")");
  std::string fine = "BIGINT", path = "r";
  for (int i = 0; i < 50; ++i) fine = "ROW<a" + std::to_string(i) + " " + fine + ">";
  for (int i = 49; i >= 0; --i) path += ".a" + std::to_string(i);
  const std::string tables = "CREATE TABLE t (r " + fine + ") WITH ('connector' = 'values', 'rows' = '1');\n"
                             "CREATE TABLE o (x BIGINT) WITH ('connector' = 'print');\n";
  EXPECT_EQ(error_of(tables + "INSERT INTO o SELECT " + path + " FROM t;"), "");
  EXPECT_EQ(error_of(tables + "INSERT INTO o SELECT t." + path + " FROM t;"), "");
  EXPECT_EQ(error_of(tables + "INSERT INTO o SELECT r.a49.a48.a47 FROM t;"), "line 3, column 22: no column r.a49.a48.a47");
}

TEST(SqlParserTest, AFileUrlIsALocalPath) {
  auto s = parse_script("CREATE TABLE f (a BIGINT) WITH ('connector' = 'filesystem', 'path' = 'file:///tmp/x', 'format' = 'csv');");
  ASSERT_TRUE(s.ok()) << s.status();
  PlanOptions declarations;
  declarations.declarations_only = true;
  auto p = plan_script(*s, declarations);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->tables[0].options.at("path"), "/tmp/x");
}

TEST(SqlParserTest, JdbcIsThePostgresConnectorWithLibpqsConninfo) {
  auto s = parse_script(
      "CREATE TABLE o (k STRING, n BIGINT, PRIMARY KEY (k) NOT ENFORCED) WITH ('connector' = 'jdbc', "
      "'url' = 'jdbc:postgresql://db.example:5433/shop', 'table-name' = 'counts', 'username' = 'weir', "
      "'password' = 'it''s');");
  ASSERT_TRUE(s.ok()) << s.status();
  PlanOptions declarations;
  declarations.declarations_only = true;
  auto p = plan_script(*s, declarations);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->tables.size(), 1u);
  EXPECT_EQ(p->tables[0].connector(), "postgres");
  EXPECT_EQ(p->tables[0].options.at("conninfo"),
            "host='db.example' dbname='shop' port='5433' user='weir' password='it\\'s'");
  EXPECT_EQ(p->tables[0].options.at("table-name"), "counts");
  EXPECT_FALSE(p->tables[0].options.contains("url"));
}

TEST(SqlParserTest, TheNexmarkEventTableReachesTheSourceAndPrunesThroughViews) {
  auto s = parse_script(
      "CREATE TABLE e (event_type INT, bid ROW<auction BIGINT, price BIGINT, `dateTime` TIMESTAMP(3), extra STRING>,\n"
      "  person ROW<id BIGINT, `dateTime` TIMESTAMP(3)>,\n"
      "  `dateTime` AS CASE WHEN event_type = 0 THEN person.`dateTime` ELSE bid.`dateTime` END,\n"
      "  WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND) WITH ('connector' = 'nexmark');\n"
      "CREATE VIEW bid AS SELECT bid.auction, bid.price, `dateTime`, bid.extra FROM e WHERE event_type = 2;\n"
      "CREATE TABLE o (auction BIGINT, price BIGINT) WITH ('connector' = 'blackhole');\n"
      "INSERT INTO o SELECT auction, price FROM bid WHERE price > 10;");
  ASSERT_TRUE(s.ok()) << s.status();
  auto p = plan_script(*s);
  ASSERT_TRUE(p.ok()) << p.status();
  // The condition on event_type is the source's (not checked again), the
  // CASE folded away, and the scan reads the two columns the query does.
  const std::string plan = explain(*p->inserts[0].root);
  EXPECT_EQ(plan.find("event_type"), std::string::npos) << plan;
  EXPECT_EQ(plan.find("CASE"), std::string::npos) << plan;
  EXPECT_NE(plan.find("Filter((price > 10))"), std::string::npos) << plan;
  EXPECT_NE(plan.find("\n          Scan(e) [bid.auction BIGINT, bid.price BIGINT]\n"), std::string::npos) << plan;
  // Without the view's condition the source gives every event: checked.
  auto all = parse_script(s->text.substr(0, s->text.find("CREATE VIEW")) +
                          "CREATE TABLE o (t TIMESTAMP(3)) WITH ('connector' = 'blackhole');\n"
                          "INSERT INTO o SELECT `dateTime` FROM e WHERE event_type = 2 OR bid.price > 3;");
  ASSERT_TRUE(all.ok()) << all.status();
  auto q = plan_script(*all);
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_NE(explain(*q->inserts[0].root).find("CASE WHEN (event_type = 0)"), std::string::npos) << explain(*q->inserts[0].root);
}

TEST(SqlParserTest, QueriesAreTypedSyntaxWithPositions) {
  const std::string text =
      "INSERT INTO o SELECT a.x, -7, 1.25, CASE WHEN x IN (1, 2) THEN 'y' ELSE NULL END AS c, COUNT(DISTINCT y),\n"
      "  SUM(z) FILTER (WHERE z > 0) OVER (PARTITION BY k ORDER BY ts ROWS 3 PRECEDING)\n"
      "FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '4' SECOND)) AS a (x, y) JOIN u USING (k)\n"
      "WHERE NOT y BETWEEN 1 AND 2 GROUP BY x";
  auto s = parse_script(text);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->statements.size(), 1u);
  const auto* insert = std::get_if<ast::Insert>(&s->statements[0].query);
  ASSERT_NE(insert, nullptr);
  EXPECT_EQ(insert->table.text, "o");
  EXPECT_EQ(insert->table.offset, static_cast<int>(text.find("o SELECT")));
  const ast::Select& q = insert->query;
  ASSERT_EQ(q.targets.size(), 6u);
  EXPECT_EQ(q.targets[0].expr.kind, ast::Expr::Kind::kColumn);
  EXPECT_EQ(q.targets[0].expr.names, (std::vector<std::string>{"a", "x"}));
  EXPECT_EQ(q.targets[0].expr.offset, static_cast<int>(text.find("a.x")));
  // A negative integer is read from the text (PostgreSQL's tree leaves it out).
  EXPECT_EQ(q.targets[1].expr.literal.kind, ast::Literal::Kind::kInteger);
  EXPECT_EQ(q.targets[1].expr.literal.integer, -7);
  EXPECT_EQ(q.targets[2].expr.literal.kind, ast::Literal::Kind::kNumber);
  EXPECT_EQ(q.targets[2].expr.literal.text, "1.25");
  const ast::Expr& c = q.targets[3].expr;
  EXPECT_EQ(q.targets[3].alias, "c");
  ASSERT_EQ(c.kind, ast::Expr::Kind::kCase);
  ASSERT_EQ(c.args.size(), 2u);  // WHEN, THEN
  EXPECT_EQ(c.args[0].kind, ast::Expr::Kind::kIn);
  EXPECT_EQ(c.args[0].args.size(), 3u);  // x, 1, 2
  ASSERT_TRUE(c.otherwise);
  EXPECT_EQ(c.otherwise->literal.kind, ast::Literal::Kind::kNull);
  EXPECT_TRUE(q.targets[4].expr.distinct);
  const ast::Expr& sum = q.targets[5].expr;
  ASSERT_TRUE(sum.filter);
  ASSERT_TRUE(sum.over);
  EXPECT_EQ(sum.over->unit, ast::Over::Unit::kRows);
  EXPECT_EQ(sum.over->start, ast::Over::Start::kPreceding);
  ASSERT_TRUE(sum.over->preceding);
  EXPECT_EQ(sum.over->preceding->literal.integer, 3);
  ASSERT_EQ(q.from.size(), 1u);
  const ast::TableRef& join = q.from[0];
  ASSERT_EQ(join.kind, ast::TableRef::Kind::kJoin);
  EXPECT_EQ(join.using_columns, (std::vector<std::string>{"k"}));
  const ast::TableRef& window = *join.left;
  ASSERT_EQ(window.kind, ast::TableRef::Kind::kFunction);
  EXPECT_EQ(window.alias, "a");
  EXPECT_EQ(window.alias_columns, (std::vector<std::string>{"x", "y"}));
  ASSERT_EQ(window.call->args.size(), 3u);
  EXPECT_EQ(window.call->args[0].names, (std::vector<std::string>{"t"}));  // TABLE t
  EXPECT_EQ(window.call->args[2].kind, ast::Expr::Kind::kCast);
  EXPECT_EQ(window.call->args[2].unit, "SECOND");
  EXPECT_EQ(join.right->name, "u");
  ASSERT_TRUE(q.where.has_value());
  EXPECT_EQ(q.where->kind, ast::Expr::Kind::kNot);
  EXPECT_EQ(q.where->args[0].kind, ast::Expr::Kind::kBetween);
  ASSERT_EQ(q.group_by.size(), 1u);
}

TEST(SqlParserTest, WhatTheSyntaxHasButWeirDoesNotRunIsRefusedByName) {
  const std::string tables =
      "CREATE TABLE t (a BIGINT, b BIGINT) WITH ('connector' = 'values', 'rows' = '1,2');\n"
      "CREATE TABLE o (a BIGINT) WITH ('connector' = 'print');\n";
  EXPECT_EQ(error_of(tables + "INSERT INTO o SELECT a FROM t WHERE a IS DISTINCT FROM b;"),
            "line 3, column 39: IS DISTINCT FROM is not supported yet");
  EXPECT_EQ(error_of(tables + "INSERT INTO o SELECT a FROM t WHERE EXISTS (SELECT a FROM t);"),
            "line 3, column 37: EXISTS (SELECT ...) is not supported yet");
  EXPECT_EQ(error_of(tables + "INSERT INTO o SELECT GREATEST(a, b) FROM t;"),
            "line 3, column 22: GREATEST and LEAST is not supported yet");
  EXPECT_EQ(error_of(tables + "INSERT INTO o SELECT a FROM t WHERE a IN (SELECT b FROM t);"),
            "line 3, column 39: IN (SELECT ...) is not supported yet");
  EXPECT_EQ(error_of(tables + "INSERT INTO o SELECT UPPER(DISTINCT a) FROM t;"),
            "line 3, column 22: UPPER is no aggregate: DISTINCT, FILTER and ORDER BY belong to aggregates");
}

TEST(SqlParserTest, AFromItemsColumnsTakeTheirAliasNames) {
  auto s = parse_script(
      "CREATE TABLE t (a BIGINT, b BIGINT) WITH ('connector' = 'values', 'rows' = '1,2');\n"
      "CREATE TABLE o (x BIGINT, y BIGINT) WITH ('connector' = 'print');\n"
      "INSERT INTO o SELECT p.x, q.y FROM t AS p (x, y) JOIN (SELECT a, b FROM t) AS q (x, y) ON p.x = q.x;");
  ASSERT_TRUE(s.ok()) << s.status();
  auto p = plan_script(*s);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(error_of(s->text.substr(0, s->text.find("INSERT")) + "INSERT INTO o SELECT a, b FROM t AS p (x, y, z);"),
            "line 3, column 32: p names 3 columns, it has 2");
}

}  // namespace parser_test
}  // namespace weir::sql
