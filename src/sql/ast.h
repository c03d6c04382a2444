// The typed syntax of a script in Flink's dialect, as the parser
// (sql/parser.h) gives it and the binder and planners read it:
//
//  - declarations and the client's statements: CREATE TABLE (with its
//    options, computed and metadata columns, WATERMARK FOR, PRIMARY KEY ...
//    NOT ENFORCED, PARTITIONED BY, LIKE), SET, RESET, DROP, ALTER TABLE ...
//    SET/RESET, SHOW, DESCRIBE (`Statement`);
//  - queries: SELECT with its clauses, FROM items (tables, subqueries,
//    window table functions, joins), expressions, INSERT INTO ... SELECT and
//    CREATE VIEW (`QueryStatement`).
//
// Every node keeps the byte offset of its text in the script, for errors.
// Names are as written, unquoted ones folded to lower case. Nothing here
// is checked against a catalog: that is the binder's and planners' work.
//
// An expression inside a declaration (a computed column, a watermark) is
// kept as the span of its text; the planner has the parser read it
// (parse_expression) and binds it as it binds a query's.
#ifndef WEIR_SQL_AST_H_
#define WEIR_SQL_AST_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace weir::sql::ast {

// A name as written: `quoted` keeps its case (backquotes or double
// quotes); an unquoted name is folded to lower case, as the query parser
// folds it.
struct Name {
  std::string text;
  int offset = 0;
};

// A data type: its name in upper case ("BIGINT", "DECIMAL", "ROW",
// "ARRAY", ...), its numbers (VARCHAR(10): {10}; DECIMAL(23, 3): {23, 3}),
// its element or field types (ARRAY<T>: one; MAP<K, V>: two; ROW: one per
// field, with `field_names`), and NOT NULL.
struct DataType {
  std::string name;
  int offset = 0;
  std::vector<int> params;
  std::vector<DataType> elements;
  std::vector<Name> field_names;  // ROW only
  bool not_null = false;
  // TIMESTAMP WITH LOCAL TIME ZONE is "TIMESTAMP_LTZ"; WITH TIME ZONE is
  // refused by the parser.
};

// The span [begin, end) of an expression's text in the script.
struct ExprText {
  int begin = 0;
  int end = 0;
};

struct ColumnDef {
  enum class Kind : uint8_t { kPhysical, kComputed, kMetadata };
  Kind kind = Kind::kPhysical;
  Name name;
  DataType type;                    // kPhysical, kMetadata
  ExprText expr;                    // kComputed
  std::optional<std::string> from;  // kMetadata: METADATA FROM 'key'
  bool is_virtual = false;          // kMetadata: VIRTUAL
  bool primary_key = false;         // `c T PRIMARY KEY [NOT ENFORCED]`
};

struct Option {
  std::string key;  // lower case
  std::string value;
  int offset = 0;  // of the key
};

struct Watermark {
  Name column;
  ExprText expr;
  int offset = 0;  // of WATERMARK
};

struct CreateTable {
  Name name;
  int offset = 0;  // of CREATE
  bool temporary = false;
  bool if_not_exists = false;
  std::vector<ColumnDef> columns;
  std::optional<Watermark> watermark;
  std::vector<Name> primary_key;  // the table constraint's columns
  std::vector<Name> partitioned_by;
  std::vector<Option> options;
  // LIKE source [(INCLUDING | EXCLUDING | OVERWRITING ALL | OPTIONS | ...)]
  std::optional<Name> like;
  struct LikeOption {
    std::string how;   // "INCLUDING", "EXCLUDING", "OVERWRITING"
    std::string what;  // "ALL", "OPTIONS", "WATERMARKS", "GENERATED", "METADATA", "CONSTRAINTS", "PARTITIONS"
  };
  std::vector<LikeOption> like_options;
};

// SET 'key' = 'value' (SET "key" = value, SET key = value); SET alone
// lists the settings.
struct Set {
  std::optional<Option> option;
};

// RESET 'key'; RESET alone resets every setting.
struct Reset {
  std::optional<Name> key;
};

// DROP [TEMPORARY] TABLE | VIEW [IF EXISTS] name
struct Drop {
  bool view = false;
  bool if_exists = false;
  Name name;
};

// ALTER TABLE name SET ('k' = 'v', ...) | RESET ('k', ...) | RENAME TO new
struct AlterTable {
  Name name;
  std::vector<Option> set;
  std::vector<Name> reset;
  std::optional<Name> rename_to;
};

// SHOW TABLES | VIEWS | CREATE TABLE t | CREATE VIEW v; DESCRIBE t
struct Show {
  enum class What : uint8_t { kTables, kViews, kCreateTable, kCreateView, kDescribe };
  What what = What::kTables;
  std::optional<Name> name;
};

using Statement = std::variant<CreateTable, Set, Reset, Drop, AlterTable, Show>;

// ---- Queries ------------------------------------------------------------------

// An owning pointer that copies what it points to: a child node of a tree
// of values (a subquery in an expression, an ELSE branch, ...).
template <typename T>
class Box {
 public:
  Box() = default;
  Box(T value) : p_(std::make_unique<T>(std::move(value))) {}  // NOLINT: implicit, as optional's
  Box(const Box& o) : p_(o.p_ ? std::make_unique<T>(*o.p_) : nullptr) {}
  Box& operator=(const Box& o) {
    if (this != &o) p_ = o.p_ ? std::make_unique<T>(*o.p_) : nullptr;
    return *this;
  }
  Box(Box&&) noexcept = default;
  Box& operator=(Box&&) noexcept = default;

  explicit operator bool() const { return p_ != nullptr; }
  const T& operator*() const { return *p_; }
  const T* operator->() const { return p_.get(); }
  T& operator*() { return *p_; }
  T* operator->() { return p_.get(); }

 private:
  std::unique_ptr<T> p_;
};

struct Select;
struct Over;

// A constant as written.
struct Literal {
  enum class Kind : uint8_t { kNull, kInteger, kNumber, kString, kBoolean };
  Kind kind = Kind::kNull;
  int64_t integer = 0;  // kInteger (one that fits 64 bits, sign included)
  // kNumber: as written ("1.25", "1e3", or an integer past 64 bits);
  // kString: the value.
  std::string text;
  bool boolean = false;  // kBoolean
};

struct Expr {
  enum class Kind : uint8_t {
    kColumn,       // `names`: c, t.c, row.field, t.row.field
    kStar,         // * (`names` empty) or t.* (`names`: t)
    kLiteral,      // `literal`
    kCast,         // CAST(args[0] AS `type`); INTERVAL '4' SECOND is a
                   // string cast to INTERVAL with `unit` "SECOND"
    kOperator,     // `op` over args: one (prefix - and +) or two
    kAnd,          // args
    kOr,           // args
    kNot,          // args[0]
    kIsNull,       // args[0] IS NULL (`negated`: IS NOT NULL)
    kLike,         // args[0] LIKE args[1] (`negated`: NOT LIKE)
    kIn,           // args[0] IN (args[1], ...) (`negated`: NOT IN)
    kBetween,      // args[0] BETWEEN args[1] AND args[2] (`negated`)
    kCase,         // CASE [subject] WHEN args[0] THEN args[1] ... [ELSE otherwise] END
    kCoalesce,     // args
    kNullIf,       // NULLIF(args[0], args[1])
    kFunction,     // names(args), with `distinct`, `star` (COUNT(*)),
                   // `filter` (FILTER (WHERE ...)) and `over`
    kSubquery,     // (SELECT ...): `query`; `what` says how it is used
                   // ("EXISTS", "IN (SELECT ...)", ...; empty: as a value)
    kNamedArg,     // names[0] => args[0]
    kArray,        // ARRAY[args...]
    kSubscript,    // args[0][args[1]]: an ARRAY's element (from 1) or a MAP's value
    kUnsupported,  // a construct weir does not read yet: `what` names it
  };
  Kind kind = Kind::kUnsupported;
  int offset = -1;
  std::vector<std::string> names;
  std::string op;
  Literal literal;
  DataType type;
  std::string unit;  // kCast to INTERVAL: "SECOND", "MINUTE", "HOUR", "DAY", "MONTH", "YEAR", or "?" (another)
  std::vector<Expr> args;
  Box<Expr> subject;    // kCase
  Box<Expr> otherwise;  // kCase
  Box<Expr> filter;     // kFunction
  Box<Over> over;       // kFunction
  Box<Select> query;    // kSubquery
  bool negated = false;
  bool distinct = false;  // kFunction: COUNT(DISTINCT x)
  bool star = false;      // kFunction: COUNT(*)
  bool ordered = false;   // kFunction: an aggregate's ORDER BY or WITHIN GROUP
  // kFunction: written in SQL's own syntax, not as a call: EXTRACT(u FROM
  // ts) is extract('u', ts), POSITION(a IN b) position(b, a), TRIM(...)
  // btrim/ltrim/rtrim(s [, characters]), CURRENT_TIMESTAMP
  // current_timestamp().
  bool sql_syntax = false;
  bool try_cast = false;  // kCast: TRY_CAST (NULL where the cast fails)
  std::string what;       // kUnsupported, kSubquery

  // The last part of a function's name, or "".
  const std::string& name() const {
    static const std::string kNone;
    return names.empty() ? kNone : names.back();
  }
};

struct SortItem {
  Expr expr;
  bool descending = false;
  bool nulls_order = false;  // NULLS FIRST or NULLS LAST given
  int offset = -1;
};

// A window of OVER (...): PARTITION BY, ORDER BY and its frame.
struct Over {
  int offset = -1;
  std::string name;  // OVER w: the SELECT's WINDOW w (nothing else is set)
  std::string base;  // OVER (w ...): a window extending another
  std::vector<Expr> partition_by;
  std::vector<SortItem> order_by;
  enum class Unit : uint8_t { kRange, kRows, kGroups };
  enum class Start : uint8_t { kUnboundedPreceding, kPreceding, kOther };
  Unit unit = Unit::kRange;
  Start start = Start::kUnboundedPreceding;
  Box<Expr> preceding;  // Start::kPreceding: its offset
  bool ends_at_current_row = true;
  bool exclude = false;  // EXCLUDE ...
};

// An item of FROM.
struct TableRef {
  enum class Kind : uint8_t {
    kTable,        // `name`
    kSubquery,     // (SELECT ...): `query`
    kFunction,     // a table function (TUMBLE(...), ...): `call`
    kJoin,         // left JOIN right ON / USING
    kUnsupported,  // `what` names it
  };
  enum class JoinType : uint8_t { kInner, kLeft, kRight, kFull, kOther };
  Kind kind = Kind::kUnsupported;
  int offset = -1;
  std::string name;
  std::optional<std::string> alias;
  std::vector<std::string> alias_columns;  // AS a (c1, c2, ...)
  bool ordinality = false;                 // kFunction: WITH ORDINALITY
  Box<Select> query;
  Box<Expr> call;
  JoinType join_type = JoinType::kInner;
  bool natural = false;
  std::vector<std::string> using_columns;
  Box<Expr> on;
  Box<TableRef> left, right;
  std::string what;
};

// SELECT ..., or a set operation of two.
struct Select {
  int offset = -1;
  enum class SetOp : uint8_t { kNone, kUnion, kIntersect, kExcept };
  SetOp set_op = SetOp::kNone;
  bool all = false;  // UNION ALL
  Box<Select> left, right;

  bool distinct = false;
  struct Target {
    Expr expr;
    std::string alias;  // AS name; empty: none
    int offset = -1;
  };
  std::vector<Target> targets;
  std::vector<TableRef> from;
  std::optional<Expr> where;
  std::vector<Expr> group_by;  // GROUPING SETS etc. are kUnsupported items
  std::optional<Expr> having;
  struct NamedWindow {
    std::string name;
    Over over;
  };
  std::vector<NamedWindow> windows;  // WINDOW w AS (...)
  std::vector<SortItem> order_by;
  std::optional<Expr> limit;  // LIMIT ALL: a NULL literal
  // Clauses weir does not read yet (WITH, VALUES, OFFSET, DISTINCT ON,
  // FETCH, FOR UPDATE, ...), by name, in the order written.
  struct Clause {
    std::string name;
    int offset = -1;
  };
  std::vector<Clause> unsupported;
};

// INSERT INTO table SELECT ...
struct Insert {
  Name table;
  bool has_columns = false;  // INSERT INTO t (a, b) ...
  Select query;
};

// CREATE VIEW name [(c, ...)] AS SELECT ...
struct CreateView {
  Name name;
  std::vector<std::string> columns;
  bool or_replace = false;
  Select query;
};

// A statement PostgreSQL's grammar reads that weir does not run (UPDATE,
// DELETE, ...): `what` names it.
struct OtherStatement {
  std::string what;
};

using QueryStatement = std::variant<Select, Insert, CreateView, OtherStatement>;

}  // namespace weir::sql::ast

#endif  // WEIR_SQL_AST_H_
