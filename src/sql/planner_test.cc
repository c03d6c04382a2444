// The SQL front end's parse and plan: tables, types, projections and
// filters, constant folding, and errors that name line, column and the
// construct.
#include "sql/planner.h"

#include <gtest/gtest.h>

#include "sql/expression.h"
#include "testing/hostile_sql.h"

namespace weir::sql {
namespace planner_test {

constexpr const char* kBids =
    "CREATE TABLE bid (auction BIGINT NOT NULL, bidder BIGINT, price BIGINT, channel VARCHAR,\n"
    "                  url VARCHAR, date_time TIMESTAMP(3), extra VARCHAR)\n"
    "  WITH (connector = 'nexmark', watermark = 'date_time - INTERVAL ''4'' SECOND');\n";

absl::StatusOr<PlannedScript> plan(const std::string& text) {
  auto script = parse_script(text);
  if (!script.ok()) return script.status();
  return plan_script(*script);
}

std::string error_of(const std::string& text) {
  auto p = plan(text);
  EXPECT_FALSE(p.ok()) << text;
  return p.ok() ? "" : std::string(p.status().message());
}

TEST(SqlPlannerTest, TablesDeclareTypedColumnsOptionsAndEventTime) {
  auto p = plan(std::string(kBids) +
                "CREATE TABLE out (auction BIGINT, price DOUBLE, PRIMARY KEY (auction))\n"
                "  WITH (connector = 'filesystem', path = '/tmp/x', \"scan.records-per-second\" = 2);\n"
                "INSERT INTO out SELECT auction, price FROM bid;");
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->tables.size(), 2u);
  const TableDef& bid = p->tables[0];
  EXPECT_EQ(bid.connector(), "nexmark");
  ASSERT_EQ(bid.columns.size(), 7u);
  EXPECT_EQ(bid.columns[0].type, (Type{TypeKind::kBigInt, false}));
  EXPECT_EQ(bid.columns[3].type, (Type{TypeKind::kVarchar, true}));
  EXPECT_EQ(bid.columns[5].type.kind, TypeKind::kTimestamp);
  ASSERT_TRUE(bid.watermark.has_value());
  EXPECT_EQ(bid.watermark->column, "date_time");
  EXPECT_EQ(bid.watermark->delay_ms, 4000);
  const TableDef& out = p->tables[1];
  EXPECT_EQ(out.options.at("path"), "/tmp/x");
  EXPECT_EQ(out.options.at("scan.records-per-second"), "2");
  EXPECT_EQ(out.options.at("primary-key"), "auction");
  EXPECT_FALSE(out.columns[0].type.nullable);  // a primary key column is NOT NULL
  // BIGINT price goes into a DOUBLE column.
  EXPECT_EQ(p->inserts[0].root->input->columns[1].type.kind, TypeKind::kBigInt);
}

// Nexmark q1 and q2 as they are written (the conversion and the filter).
TEST(SqlPlannerTest, ProjectionAndFilterPlanWithTypes) {
  auto p = plan(std::string(kBids) +
                "CREATE TABLE q1 (auction BIGINT, bidder BIGINT, price DOUBLE, date_time TIMESTAMP(3), extra VARCHAR)"
                " WITH (connector = 'blackhole');\n"
                "INSERT INTO q1 SELECT auction, bidder, 0.908 * price AS price, date_time, extra FROM bid;\n"
                "CREATE TABLE q2 (auction BIGINT, price BIGINT) WITH (connector = 'print');\n"
                "INSERT INTO q2 SELECT auction, price FROM bid WHERE NO_SUCH_FN(url, 'c') = 2;");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(std::string(p.status().message()).find("line 7, column 53: unknown function NO_SUCH_FN"),
            std::string::npos)
      << p.status();

  p = plan(std::string(kBids) +
           "CREATE TABLE q1 (auction BIGINT, bidder BIGINT, price DECIMAL(23, 3), date_time TIMESTAMP(3), extra VARCHAR)"
           " WITH (connector = 'blackhole');\n"
           "INSERT INTO q1 SELECT auction, bidder, 0.908 * price AS price, date_time, extra FROM bid;\n"
           "CREATE TABLE q2 (auction BIGINT, price BIGINT) WITH (connector = 'print');\n"
           "INSERT INTO q2 SELECT b.auction, price FROM bid AS b WHERE MOD(auction, 123) = 0;");
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->inserts.size(), 2u);
  EXPECT_EQ(explain(*p->inserts[0].root),
            "Sink(q1) [auction BIGINT, bidder BIGINT, price DECIMAL(23, 3), date_time TIMESTAMP(3), extra VARCHAR]\n"
            "  Project(auction, bidder, (0.908 * price) AS price, date_time, extra) [auction BIGINT NOT NULL, "
            "bidder BIGINT, price DECIMAL(23, 3), date_time TIMESTAMP(3), extra VARCHAR]\n"
            "    Scan(bid) [auction BIGINT NOT NULL, bidder BIGINT, price BIGINT, date_time TIMESTAMP(3), "
            "extra VARCHAR]\n");  // channel and url are not read
  const PlanNode& project = *p->inserts[1].root->input;
  ASSERT_EQ(project.input->kind, PlanNode::Kind::kFilter);
  // The scan reads the two columns the filter and the projection use.
  EXPECT_EQ(project.input->input->column_names(), (std::vector<std::string>{"auction", "price"}));
  EXPECT_EQ(project.exprs[1].column, 1);
  EXPECT_EQ(project.input->exprs[0].to_string(project.input->column_names()), "((auction % 123) = 0)");
  EXPECT_EQ(project.input->exprs[0].type, (Type{TypeKind::kBoolean, false}));
}

TEST(SqlPlannerTest, ConstantsAreFoldedAndSubqueriesInFromArePlanned) {
  auto p = plan(std::string(kBids) +
                "CREATE TABLE o (a BIGINT, t TIMESTAMP(3), s VARCHAR) WITH (connector = 'print');\n"
                "INSERT INTO o SELECT x + (2 * 3), TIMESTAMP '2020-01-01 00:00:01' + INTERVAL '1' MINUTE,\n"
                "  UPPER('ab') || CAST(1 + 1 AS VARCHAR)\n"
                "FROM (SELECT auction AS x FROM bid WHERE price IS NOT NULL) AS inner_q;");
  ASSERT_TRUE(p.ok()) << p.status();
  const PlanNode& project = *p->inserts[0].root->input;
  const auto in = project.input->column_names();
  EXPECT_EQ(project.exprs[0].to_string(in), "(x + 6)");
  EXPECT_EQ(project.exprs[1].to_string(in), "TIMESTAMP '2020-01-01 00:01:01.000'");
  EXPECT_EQ(project.exprs[2].to_string(in), "'AB2'");
  EXPECT_EQ(project.input->kind, PlanNode::Kind::kProject);  // the subquery
}

TEST(SqlPlannerTest, ExpressionsFollowSqlNullSemantics) {
  // Over a row (a BIGINT, b BIGINT, s VARCHAR) with b NULL.
  const Row row{RowKind::kInsert, {Value{int64_t{7}}, Value{}, Value{std::string("Hé")}}};
  const Type big{TypeKind::kBigInt, true}, boolean{TypeKind::kBoolean, true};
  auto a = Expr::column_ref(0, big), b = Expr::column_ref(1, big), s = Expr::column_ref(2, {TypeKind::kVarchar, true});
  auto t = Expr::constant(true, {TypeKind::kBoolean, false}), f = Expr::constant(false, {TypeKind::kBoolean, false});
  auto gt = Expr::call(Op::kGreater, boolean, {a, b});  // 7 > NULL: NULL
  EXPECT_EQ(*evaluate(Expr::call(Op::kAdd, big, {a, b}), row), Value{});
  EXPECT_EQ(*evaluate(gt, row), Value{});
  EXPECT_EQ(*evaluate(Expr::call(Op::kAnd, boolean, {gt, f}), row), Value{false});
  EXPECT_EQ(*evaluate(Expr::call(Op::kAnd, boolean, {gt, t}), row), Value{});
  EXPECT_EQ(*evaluate(Expr::call(Op::kOr, boolean, {gt, t}), row), Value{true});
  EXPECT_EQ(*evaluate(Expr::call(Op::kIsNull, {TypeKind::kBoolean, false}, {b}), row), Value{true});
  EXPECT_EQ(*evaluate(Expr::call(Op::kCoalesce, big, {b, a}), row), Value{int64_t{7}});
  EXPECT_EQ(*evaluate(Expr::call(Op::kCharLength, big, {s}), row), Value{int64_t{2}});
  Expr when_null = Expr::call(Op::kCase, big, {gt, a, b});
  when_null.has_else = true;
  EXPECT_EQ(*evaluate(when_null, row), Value{});  // a NULL condition is not true: the ELSE
  auto zero = Expr::constant(int64_t{0}, {TypeKind::kBigInt, false});
  auto div = evaluate(Expr::call(Op::kDivide, big, {a, zero}), row);
  ASSERT_FALSE(div.ok());
  EXPECT_EQ(div.status().message(), "division by zero");
  auto max = Expr::constant(INT64_MAX, {TypeKind::kBigInt, false});
  EXPECT_FALSE(evaluate(Expr::call(Op::kAdd, big, {max, a}), row).ok());
}

// GROUP BY over a window table function: keys, aggregates, HAVING, the
// WHERE pushed below the window, the scan pruned to what is read (and the
// event time the window needs).
TEST(SqlPlannerTest, WindowAggregationPlansKeysAggregatesAndPushesFiltersDown) {
  auto p = plan(std::string(kBids) +
                "CREATE TABLE o (auction BIGINT, ws TIMESTAMP(3), n BIGINT, top BIGINT, mean BIGINT, d BIGINT)"
                " WITH (connector = 'print');\n"
                "INSERT INTO o SELECT auction, window_start, COUNT(*) AS n, MAX(price) + 1, AVG(price),\n"
                "  COUNT(DISTINCT bidder) FROM HOP(bid, DESCRIPTOR(date_time), INTERVAL '2' SECOND,\n"
                "  INTERVAL '10' SECOND) AS b WHERE b.price > 10\n"
                "GROUP BY auction, window_start, window_end HAVING COUNT(*) > 1 AND MAX(price) > 5;");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(explain(*p->inserts[0].root),
            "Sink(o) [auction BIGINT, ws TIMESTAMP(3), n BIGINT, top BIGINT, mean BIGINT, d BIGINT]\n"
            "  Project(auction, window_start, $agg0 AS n, ($agg1 + 1) AS EXPR$3, $agg2 AS EXPR$4, $agg3 AS EXPR$5) "
            "[auction BIGINT NOT NULL, window_start TIMESTAMP(3) NOT NULL, n BIGINT NOT NULL, EXPR$3 BIGINT, "
            "EXPR$4 BIGINT, EXPR$5 BIGINT NOT NULL]\n"
            "    Filter((($agg0 > 1) AND ($agg1 > 5))) [auction BIGINT NOT NULL, window_start TIMESTAMP(3) NOT NULL, "
            "window_end TIMESTAMP(3) NOT NULL, $agg0 BIGINT NOT NULL, $agg1 BIGINT, $agg2 BIGINT, $agg3 BIGINT NOT NULL]\n"
            "      Aggregate(keys: auction, window_start, window_end; COUNT(*), MAX(price), AVG(price), "
            "COUNT(DISTINCT bidder)) [auction BIGINT NOT NULL, window_start TIMESTAMP(3) NOT NULL, "
            "window_end TIMESTAMP(3) NOT NULL, $agg0 BIGINT NOT NULL, $agg1 BIGINT, $agg2 BIGINT, $agg3 BIGINT NOT NULL]\n"
            "        Window(HOP(date_time, slide 2000 ms, size 10000 ms)) [auction BIGINT NOT NULL, bidder BIGINT, "
            "price BIGINT, date_time TIMESTAMP(3), window_start TIMESTAMP(3) NOT NULL, window_end TIMESTAMP(3) NOT NULL, "
            "window_time TIMESTAMP(3) NOT NULL]\n"
            "          Filter((price > 10)) [auction BIGINT NOT NULL, bidder BIGINT, price BIGINT, date_time TIMESTAMP(3)]\n"
            "            Scan(bid) [auction BIGINT NOT NULL, bidder BIGINT, price BIGINT, date_time TIMESTAMP(3)]\n");
  // A window function alone adds the window's columns to every row.
  p = plan(std::string(kBids) +
           "CREATE TABLE o (auction BIGINT, ws TIMESTAMP(3), we TIMESTAMP(3)) WITH (connector = 'print');\n"
           "INSERT INTO o SELECT auction, window_start, window_end FROM TUMBLE(bid, DESCRIPTOR(date_time), "
           "INTERVAL '10' SECOND, INTERVAL '1' SECOND);");
  ASSERT_TRUE(p.ok()) << p.status();
  const PlanNode& window = *p->inserts[0].root->input->input;
  ASSERT_EQ(window.kind, PlanNode::Kind::kWindow);
  EXPECT_EQ(window.window->to_string(), "TUMBLE(date_time, size 10000 ms, offset 1000 ms)");
  EXPECT_EQ(window.column_names(),
            (std::vector<std::string>{"auction", "date_time", "window_start", "window_end", "window_time"}));
}

constexpr const char* kPeople =
    "CREATE TABLE person (id BIGINT, name VARCHAR, state VARCHAR, date_time TIMESTAMP(3))\n"
    "  WITH (connector = 'nexmark', watermark = 'date_time');\n";

// A join's condition and the WHERE above it: each side's own conjuncts go
// below it, equalities between the sides become keys (as one type), the
// rest its condition; each side reads only the columns used.
// A join on a side's PRIMARY KEY knows that side unique, and checks that
// side's own filter in the join instead of below it; a side whose key is
// not its whole primary key (or whose key is a DOUBLE cast) is not unique.
TEST(SqlPlannerTest, AJoinOnAPrimaryKeyKnowsItsSideUnique) {
  const std::string tables =
      "CREATE TABLE u (id BIGINT PRIMARY KEY, kind VARCHAR) WITH (connector = 'values', rows = '1,a');\n"
      "CREATE TABLE p (a BIGINT, b BIGINT, n VARCHAR, PRIMARY KEY (a, b)) WITH (connector = 'values', rows = '1,2,x');\n"
      "CREATE TABLE o (uid BIGINT, v DOUBLE) WITH (connector = 'values', rows = '1,10');\n"
      "CREATE TABLE x (a BIGINT, b DOUBLE, c VARCHAR) WITH (connector = 'print');\n";
  auto p = plan(tables + "INSERT INTO x SELECT uid, v, kind FROM o JOIN u ON o.uid = u.id WHERE u.kind <> 'b' AND v > 1;");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(explain(*p->inserts[0].root->input->input),
            "Join(uid = id; unique: right; right: (kind <> 'b')) [uid BIGINT, v DOUBLE, id BIGINT NOT NULL, kind VARCHAR]\n"
            "  Filter((v > 1)) [uid BIGINT, v DOUBLE]\n"
            "    Scan(o) [uid BIGINT, v DOUBLE]\n"
            "  Scan(u) [id BIGINT NOT NULL, kind VARCHAR]\n");
  p = plan(tables + "INSERT INTO x SELECT o.uid, o.v, p.n FROM o JOIN p ON o.uid = p.a;");
  ASSERT_TRUE(p.ok()) << p.status();
  const PlanNode& half = *p->inserts[0].root->input->input;
  ASSERT_EQ(half.kind, PlanNode::Kind::kJoin);
  EXPECT_FALSE(half.left_unique || half.right_unique);
  p = plan(tables + "INSERT INTO x SELECT o.uid, o.v, u.kind FROM o JOIN u ON o.v = u.id;");
  ASSERT_TRUE(p.ok()) << p.status();
  const PlanNode& as_double = *p->inserts[0].root->input->input;
  ASSERT_EQ(as_double.kind, PlanNode::Kind::kJoin);
  EXPECT_FALSE(as_double.right_unique);
}

TEST(SqlPlannerTest, JoinsTakeKeysFromConditionsAndPushTheRestDown) {
  auto p = plan(std::string(kBids) + kPeople +
                "CREATE TABLE o (name VARCHAR, price BIGINT) WITH (connector = 'print');\n"
                "INSERT INTO o SELECT P.name, B.price FROM bid B, person P\n"
                "WHERE B.bidder = P.id AND P.state IN ('OR', 'CA') AND B.price > P.id AND B.price BETWEEN 10 AND 99;\n"
                "INSERT INTO o SELECT name, price FROM bid JOIN (SELECT CAST(id AS DOUBLE) AS bidder, name FROM person) "
                "AS p USING (bidder);");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(explain(*p->inserts[0].root),
            "Sink(o) [name VARCHAR, price BIGINT]\n"
            "  Project(name, price) [name VARCHAR, price BIGINT]\n"
            "    Join(bidder = id; (price > id)) [bidder BIGINT, price BIGINT, id BIGINT, name VARCHAR]\n"
            "      Project(bidder, price) [bidder BIGINT, price BIGINT]\n"
            "        Filter(((price >= 10) AND (price <= 99))) [bidder BIGINT, price BIGINT]\n"
            "          Scan(bid) [bidder BIGINT, price BIGINT]\n"
            "      Project(id, name) [id BIGINT, name VARCHAR]\n"
            "        Filter(((state = 'OR') OR (state = 'CA'))) [id BIGINT, name VARCHAR, state VARCHAR]\n"
            "          Scan(person) [id BIGINT, name VARCHAR, state VARCHAR]\n");
  const PlanNode& j = *p->inserts[1].root->input->input;
  ASSERT_EQ(j.kind, PlanNode::Kind::kJoin);
  ASSERT_EQ(j.left_keys.size(), 1u);
  EXPECT_EQ(j.left_keys[0].type.kind, TypeKind::kDouble);  // BIGINT bidder as DOUBLE
  EXPECT_FALSE(j.window_join);
}

// An outer join's ON pushes only the padded side's own conjuncts below it;
// the preserved side's stay in the join, a WHERE above stays above, and the
// padded side's columns are nullable (so IS NULL above is not folded away).
TEST(SqlPlannerTest, AnOuterJoinKeepsItsPreservedSidesConditionsAndPadsTheOther) {
  auto p = plan(std::string(kBids) + kPeople +
                "CREATE TABLE o (name VARCHAR, price BIGINT) WITH (connector = 'print');\n"
                "INSERT INTO o SELECT P.name, B.price FROM person P LEFT JOIN bid B\n"
                "ON B.bidder = P.id AND P.state = 'OR' AND B.price > 10 WHERE B.price IS NULL;");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(explain(*p->inserts[0].root),
            "Sink(o) [name VARCHAR, price BIGINT]\n"
            "  Project(name, price) [name VARCHAR, price BIGINT]\n"
            "    Filter(price IS NULL) [id BIGINT, name VARCHAR, state VARCHAR, bidder BIGINT, price BIGINT]\n"
            "      LeftJoin(id = bidder; (state = 'OR')) [id BIGINT, name VARCHAR, state VARCHAR, bidder BIGINT, price BIGINT]\n"
            "        Project(id, name, state) [id BIGINT, name VARCHAR, state VARCHAR]\n"
            "          Scan(person) [id BIGINT, name VARCHAR, state VARCHAR]\n"
            "        Project(bidder, price) [bidder BIGINT, price BIGINT]\n"
            "          Filter((price > 10)) [bidder BIGINT, price BIGINT]\n"
            "            Scan(bid) [bidder BIGINT, price BIGINT]\n");
  EXPECT_TRUE(is_updating(*p->inserts[0].root->input));
}

// Two windowed inputs joined on both window bounds: a window join, whose
// rows are windowed in turn (a GROUP BY of its bounds is a window
// aggregation); on one bound only, a regular join.
TEST(SqlPlannerTest, AJoinOnBothWindowBoundsIsAWindowJoin) {
  const std::string windowed =
      std::string(kBids) + kPeople +
      "CREATE TABLE o (id BIGINT, n BIGINT) WITH (connector = 'print');\n"
      "INSERT INTO o SELECT P.id, COUNT(*) FROM\n"
      " (SELECT id, window_start AS s, window_end AS e FROM TUMBLE(person, DESCRIPTOR(date_time), INTERVAL '10' SECOND)\n"
      "  GROUP BY id, window_start, window_end) P\n"
      "JOIN (SELECT bidder, window_start, window_end FROM TUMBLE(bid, DESCRIPTOR(date_time), INTERVAL '10' SECOND)) B\n"
      "ON P.id = B.bidder AND P.s = B.window_start";
  auto p = plan(windowed + " AND P.e = B.window_end GROUP BY P.id, P.s, P.e;");
  ASSERT_TRUE(p.ok()) << p.status();
  const PlanNode& agg = *p->inserts[0].root->input->input;
  ASSERT_EQ(agg.kind, PlanNode::Kind::kAggregate);
  ASSERT_EQ(agg.input->kind, PlanNode::Kind::kJoin);
  EXPECT_TRUE(agg.input->window_join);
  EXPECT_FALSE(is_updating(agg));
  // On one bound only: a regular join, and its GROUP BY an updating one.
  p = plan(windowed + " GROUP BY P.id, P.s, P.e;");
  ASSERT_TRUE(p.ok()) << p.status();
  const PlanNode& regular = *p->inserts[0].root->input->input;
  ASSERT_EQ(regular.input->kind, PlanNode::Kind::kJoin);
  EXPECT_FALSE(regular.input->window_join);
  EXPECT_TRUE(is_updating(regular));
}

// ROW_NUMBER() with WHERE rn <= N above it: a rank of N rows per
// partition; the other conditions stay above it; the scan is pruned.
TEST(SqlPlannerTest, RowNumberWithALimitAboveIsATopN) {
  auto p = plan(std::string(kBids) +
                "CREATE TABLE o (auction BIGINT, price BIGINT, r BIGINT) WITH (connector = 'print');\n"
                "INSERT INTO o SELECT auction, price, r FROM (SELECT auction, price, ROW_NUMBER() OVER (PARTITION BY "
                "auction ORDER BY price DESC, date_time) AS r FROM bid WHERE price > 10) AS t WHERE r <= 3 AND price < 99;");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(explain(*p->inserts[0].root),
            "Sink(o) [auction BIGINT, price BIGINT, r BIGINT]\n"
            "  Project(auction, price, r) [auction BIGINT NOT NULL, price BIGINT, r BIGINT NOT NULL]\n"
            "    Filter((price < 99)) [auction BIGINT NOT NULL, price BIGINT, r BIGINT NOT NULL]\n"
            "      Project(auction, price, $rn AS r) [auction BIGINT NOT NULL, price BIGINT, r BIGINT NOT NULL]\n"
            "        Rank(partition: auction; order: price DESC, date_time; rows 1..3) [auction BIGINT NOT NULL, "
            "price BIGINT, date_time TIMESTAMP(3), $rn BIGINT NOT NULL]\n"
            "          Filter((price > 10)) [auction BIGINT NOT NULL, price BIGINT, date_time TIMESTAMP(3)]\n"
            "            Scan(bid) [auction BIGINT NOT NULL, price BIGINT, date_time TIMESTAMP(3)]\n");
  EXPECT_TRUE(is_updating(*p->inserts[0].root));
  const std::string ranked = std::string(kBids) +
                             "CREATE TABLE o (auction BIGINT, r BIGINT) WITH (connector = 'print');\n"
                             "INSERT INTO o SELECT auction, r FROM (SELECT auction, ";
  EXPECT_EQ(error_of(ranked + "ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price) AS r FROM bid) AS t;"),
            "line 5, column 1: ROW_NUMBER() without WHERE rn <= N in the query around it (TOP-N) is not supported yet");
  EXPECT_EQ(error_of(ranked + "NTILE(2) OVER (PARTITION BY auction ORDER BY price) AS r FROM bid) AS t WHERE r <= 2;"),
            "line 5, column 55: NTILE() OVER (...) is not supported yet (ROW_NUMBER(), RANK() and DENSE_RANK() OVER "
            "(...) are, for TOP-N)");
  EXPECT_EQ(error_of(ranked + "DENSE_RANK() OVER (PARTITION BY auction) AS r FROM bid) AS t WHERE r <= 2;"),
            "line 5, column 55: DENSE_RANK() needs an ORDER BY in its OVER (...)");
  EXPECT_EQ(error_of(ranked + "RANK() OVER (PARTITION BY auction ORDER BY price) AS r FROM bid) AS t;"),
            "line 5, column 1: RANK() without WHERE rn <= N in the query around it (TOP-N) is not supported yet");
  EXPECT_EQ(error_of(ranked + "ROW_NUMBER() OVER (PARTITION BY auction) AS r FROM bid) AS t WHERE r <= 2;"),
            "line 5, column 55: ROW_NUMBER() needs an ORDER BY in its OVER (...)");
}

TEST(SqlPlannerTest, WindowAndGroupByErrorsNameWhatIsWrong) {
  const std::string bid = std::string(kBids) + "CREATE TABLE o (a BIGINT, n BIGINT) WITH (connector = 'print');\n";
  const std::string hop = " FROM HOP(bid, DESCRIPTOR(date_time), INTERVAL '2' SECOND, INTERVAL '10' SECOND) ";
  EXPECT_EQ(error_of(bid + "INSERT INTO o SELECT auction, COUNT(*)" + hop + "GROUP BY auction, window_start;"),
            "line 5, column 129: GROUP BY over HOP(date_time, slide 2000 ms, size 10000 ms) needs both window_start "
            "and window_end");
  EXPECT_EQ(error_of(bid + "INSERT INTO o SELECT bidder, COUNT(*)" + hop + "GROUP BY auction, window_start, window_end;"),
            "line 5, column 22: column bidder is neither grouped (GROUP BY) nor inside an aggregate");
  EXPECT_EQ(error_of(bid + "INSERT INTO o SELECT *" + hop + "GROUP BY auction, window_start, window_end;"),
            "line 5, column 22: SELECT * with GROUP BY: name the grouped columns and aggregates");
  EXPECT_EQ(error_of(bid + "INSERT INTO o SELECT auction, SUM(channel)" + hop + "GROUP BY auction, window_start, window_end;"),
            "line 5, column 31: SUM of VARCHAR: it needs BIGINT, DECIMAL or DOUBLE");
  EXPECT_EQ(error_of(bid + "INSERT INTO o SELECT auction, COUNT(*) FROM HOP(bid, DESCRIPTOR(price), INTERVAL '2' SECOND, "
                           "INTERVAL '10' SECOND) GROUP BY auction, window_start, window_end;"),
            "line 5, column 65: HOP: price is not the event time of table bid (its watermark is on date_time)");
  EXPECT_EQ(error_of(bid + "INSERT INTO o SELECT auction, COUNT(*) FROM HOP(bid, DESCRIPTOR(date_time), INTERVAL '3' SECOND, "
                           "INTERVAL '10' SECOND) GROUP BY auction, window_start, window_end;"),
            "line 5, column 45: HOP: the size (10000 ms) must be a multiple of the slide (3000 ms)");
  EXPECT_EQ(error_of(bid + "INSERT INTO o SELECT auction, COUNT(*) FROM TUMBLE(bid, date_time, INTERVAL '3' SECOND) "
                           "GROUP BY auction, window_start, window_end;"),
            "line 5, column 57: TUMBLE: the second argument is DESCRIPTOR(time column)");
  EXPECT_EQ(error_of(bid + "INSERT INTO o SELECT auction, COUNT(*) FROM TUMBLE(bid, DESCRIPTOR(date_time), INTERVAL '0' SECOND) "
                           "GROUP BY auction, window_start, window_end;"),
            "line 5, column 89: TUMBLE: a window's length must be positive");
  EXPECT_EQ(error_of("CREATE TABLE t (a BIGINT, ts TIMESTAMP(3)) WITH (connector = 'print');\n"
                     "INSERT INTO t SELECT a, window_start FROM TUMBLE(t, DESCRIPTOR(ts), INTERVAL '1' SECOND);"),
            "line 2, column 53: TUMBLE: table t has no event time (declare its watermark option)");
}

TEST(SqlPlannerTest, ErrorsNameLineColumnAndWhat) {
  const std::string bid = kBids;  // three lines
  EXPECT_EQ(error_of(bid + "INSERT INTO bid SELECT auction, FROM bid;"),
            "line 4, column 33: syntax error at or near \"FROM\"");
  EXPECT_EQ(error_of(bid + "INSERT INTO nowhere SELECT auction FROM bid;"),
            "line 4, column 13: no table nowhere (declare it with CREATE TABLE)");
  EXPECT_EQ(error_of(bid + "CREATE TABLE o (a BIGINT) WITH (connector = 'print');\n"
                           "INSERT INTO o SELECT nope FROM bid;"),
            "line 5, column 22: no column nope");
  EXPECT_EQ(error_of(bid + "CREATE TABLE o (a BIGINT) WITH (connector = 'print');\n"
                           "INSERT INTO o SELECT channel + 1 FROM bid;"),
            "line 5, column 30: operator + does not apply to VARCHAR and BIGINT");
  EXPECT_EQ(error_of(bid + "CREATE TABLE o (a BIGINT) WITH (connector = 'print');\n"
                           "INSERT INTO o SELECT channel FROM bid;"),
            "line 5, column 1: INSERT INTO o: column a is BIGINT, the query gives VARCHAR (channel)");
  EXPECT_EQ(error_of(bid + "CREATE TABLE o (a BIGINT) WITH (connector = 'print');\n"
                           "INSERT INTO o SELECT auction FROM bid WHERE price;"),
            "line 5, column 45: WHERE needs a BOOLEAN, not BIGINT");
  EXPECT_EQ(error_of(bid + "CREATE TABLE o (a BIGINT, n BIGINT) WITH (connector = 'print');\n"
                           "INSERT INTO o SELECT a, n FROM (SELECT auction AS a, n, PERCENT_RANK() OVER (PARTITION BY n "
                           "ORDER BY auction) AS rn FROM (SELECT auction, COUNT(*) AS n FROM bid GROUP BY auction) AS c) "
                           "AS r WHERE rn <= 1;"),
            "line 5, column 57: PERCENT_RANK() OVER (...) is not supported yet (ROW_NUMBER(), RANK() and DENSE_RANK() "
            "OVER (...) are, for TOP-N)");
  EXPECT_EQ(error_of(bid + "CREATE TABLE o (a BIGINT, n BIGINT) WITH (connector = 'print');\n"
                           "INSERT INTO o SELECT c.auction, c.n FROM (SELECT auction, COUNT(*) AS n FROM bid GROUP BY auction) "
                           "AS c RIGHT JOIN bid USING (auction);"),
            "line 5, column 116: USING in a RIGHT or FULL JOIN (ON is) is not supported yet");
  EXPECT_EQ(error_of(bid + "CREATE TABLE o (n BIGINT) WITH (connector = 'print');\n"
                           "INSERT INTO o SELECT COUNT(*) FROM bid WHERE MAX(price) > 1;"),
            "line 5, column 46: the aggregate MAX is not allowed here (only in the select list and HAVING, not nested)");
  EXPECT_EQ(error_of(bid + "CREATE TABLE o (a BIGINT) WITH (connector = 'print');\n"
                           "INSERT INTO o SELECT auction FROM CUMULATE(bid, DESCRIPTOR(date_time), INTERVAL '3' SECOND, "
                           "INTERVAL '10' SECOND);"),
            "line 5, column 35: CUMULATE: the size (10000 ms) must be a multiple of the step (3000 ms)");
  EXPECT_EQ(error_of("CREATE TABLE t (a BIGINT);\nINSERT INTO t SELECT a FROM t;"),
            "line 1, column 1: table t has no connector: WITH ('connector' = 'nexmark' | 'values' | 'datagen' | 'filesystem' | 'kafka' | "
            "'upsert-kafka' | 'postgres' | 'jdbc' | 'print' | 'blackhole', ...)");
  EXPECT_EQ(error_of("CREATE TABLE t (a BIGINT) WITH (connector = 'jbdc');"),
            "line 1, column 33: table t: unknown connector 'jbdc' (did you mean 'jdbc'?)");
  EXPECT_EQ(error_of("CREATE TABLE t (a BIGINT) WITH (connector = 'jdbc', url = 'jdbc:mysql://h/db');"),
            "line 1, column 33: table t: the jdbc connector's 'url' must be 'jdbc:postgresql://host[:port]/database' "
            "(weir's jdbc is PostgreSQL), not 'jdbc:mysql://h/db'");
  EXPECT_EQ(error_of("CREATE TABLE t (a TIMESTAMP(6)) WITH (connector = 'print');"),
            "line 1, column 19: TIMESTAMP(6): weir's timestamps hold milliseconds (TIMESTAMP(3))");
  EXPECT_EQ(error_of(bid + "CREATE TABLE o (a BIGINT) WITH (connector = 'print');\n"
                           "INSERT INTO o SELECT auction / 0 FROM bid WHERE 1 / 0 = 1;"),
            "line 5, column 51: division by zero");
  EXPECT_EQ(error_of("CREATE TABLE t (ts TIMESTAMP(3)) WITH (connector = 'print', watermark = '-- ts');"),
            "line 1, column 61: table t: watermark '-- ts': not an expression (ts or ts - INTERVAL 'n' SECOND)");
  EXPECT_EQ(error_of("CREATE TABLE t (ts TIMESTAMP(3)) WITH (connector = 'print', watermark = 'ts FROM t');"),
            "line 1, column 61: table t: watermark 'ts FROM t': not an expression (ts or ts - INTERVAL 'n' SECOND)");
  EXPECT_EQ(error_of(bid), "the script has no INSERT INTO ... SELECT: nothing to run");
}

// Scripts built to exhaust the planner: each is refused with its position
// (no stack overflow, no unbounded time or memory), or planned in time
// linear in its size.
TEST(SqlPlannerTest, HostileScriptsAreRefusedWithTheirPositionOrPlannedLinearly) {
  for (const testing::HostileSql& h : testing::hostile_sql_scripts()) {
    SCOPED_TRACE(h.name);
    auto p = plan(h.text);
    if (h.refusal.empty()) {
      ASSERT_TRUE(p.ok()) << p.status();
      continue;
    }
    ASSERT_FALSE(p.ok());
    const std::string e(p.status().message());
    EXPECT_NE(e.find(h.refusal), std::string::npos) << e;
    EXPECT_EQ(e.rfind("line ", 0), 0u) << e;
  }
  // Within the limit, a long chain plans; the chain of 5,000 is refused on
  // its own line.
  const std::string head = testing::hostile_sql_tables();
  EXPECT_TRUE(plan(head + "INSERT INTO o SELECT " + testing::sql_chain("a", "+", 60) + " FROM t;").ok());
  EXPECT_EQ(error_of(head + "INSERT INTO o SELECT " + testing::sql_chain("a", "+", 5000) + " FROM t;").rfind(
                "line 4, column ", 0),
            0u);
  // a IN (0, ..., 9999): one OR of the comparisons.
  std::string in = "0";
  for (int i = 1; i < 10000; ++i) in += ", " + std::to_string(i);
  auto p = plan(head + "INSERT INTO o SELECT a FROM t WHERE a IN (" + in + ");");
  ASSERT_TRUE(p.ok()) << p.status();
  const PlanNode* n = p->inserts[0].root.get();
  while (n != nullptr && n->kind != PlanNode::Kind::kFilter) n = n->input.get();
  ASSERT_NE(n, nullptr) << explain(*p);
  EXPECT_EQ(n->exprs[0].op, Op::kOr);
  EXPECT_EQ(n->exprs[0].args.size(), 10000u);
  // Many conditions AND-ed are one AND, not a chain as deep as they are many.
  std::string conditions = "a <> 0";
  for (int i = 1; i < 5000; ++i) conditions += " AND a <> " + std::to_string(i);
  p = plan(head + "INSERT INTO o SELECT a FROM t WHERE " + conditions + ";");
  ASSERT_TRUE(p.ok()) << p.status();
  n = p->inserts[0].root.get();
  while (n != nullptr && n->kind != PlanNode::Kind::kFilter) n = n->input.get();
  ASSERT_NE(n, nullptr);
  EXPECT_LE(expression_depth(n->exprs[0]), 3);
}

}  // namespace planner_test
}  // namespace weir::sql
